"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no extra Python packages).

Chromium reads commands on fd 3 and writes replies and events on fd 4, each a JSON message ending in NUL.
bash (dash cannot redirect fds above 9) maps our pipe ends to those numbers, so no ``preexec_fn`` is needed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# A guard against a wedged browser, not a performance assertion.
HANG_GUARD_SECONDS = 90.0


class CdpError(RuntimeError):
    pass


def find_chromium() -> str | None:
    env = os.environ.get("PULSAR_OPS_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with a private profile, driven over the debugging pipe."""

    def __init__(self, executable: str, profile_dir: Path, log_path: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        args = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--metrics-recording-only",
            "--mute-audio",
            "--hide-scrollbars",
            "--window-size=1400,1000",
            f"--user-data-dir={profile_dir}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        script = f'exec "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c", script, "bash", *args],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            pass_fds=(to_browser_r, from_browser_w),
            start_new_session=True,  # its own process group, so a wedged browser can be ended whole
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    # ----------------------------------------------------------------------------------------- protocol

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        want = self._next_id
        while True:
            reply = self._read_message()
            if reply.get("id") == want:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str | None = None) -> dict[str, Any]:
        for i, ev in enumerate(self.events):
            if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                return self.events.pop(i)
        while True:
            ev = self._read_message()
            if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                return ev
            self.events.append(ev)

    def _read_message(self) -> dict[str, Any]:
        deadline = time.monotonic() + HANG_GUARD_SECONDS
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("no message from Chromium (hang guard)")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError(f"Chromium closed the pipe (exit code {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    # ------------------------------------------------------------------------------------------ helpers

    def new_page(self) -> str:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session: str = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        res = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session,
        )
        if "exceptionDetails" in res:
            raise CdpError(f"evaluate failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(OSError):
                    os.write(self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=15)
        finally:
            for fd in (self._to_browser, self._from_browser):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._log.close()
