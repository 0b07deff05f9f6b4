"""Build hook: compile the optional native hot path ``pulsar_ops/_native.c`` with the interpreter's C compiler.

It is optional by design: without a compiler (or with ``PULSAR_OPS_NO_NATIVE=1``) the build goes on with a
warning and pulsar-ops runs its pure-Python path, which gives the same results, only slower
(``pulsar_ops.scrape.native.STATUS`` and ``pulsar-ops bench scrape`` say which one runs). An editable install
(``pip install -e .``) puts the module next to its source; a wheel gets it as a platform-specific file.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("pulsar_ops") / "_native.c"


STRICT_ENV = "PULSAR_OPS_NATIVE_STRICT"  # CI: warnings are errors, and a failed compile fails the install


def _strict() -> bool:
    return os.environ.get(STRICT_ENV, "").strip() not in ("", "0")


def _compile(src: Path, out: Path) -> None:
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    warn = ["-Wall", "-Wextra", "-Werror"] if _strict() else ["-Wall"]
    cmd = [*cc, "-O2", "-fPIC", "-shared", *warn, "-I", sysconfig.get_paths()["include"], str(src), "-o", str(out)]
    if sys.platform == "darwin":
        cmd[len(cc) : len(cc)] = ["-undefined", "dynamic_lookup"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


class NativeBuildHook(BuildHookInterface):  # type: ignore[misc]  # hatchling ships no type information
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        name = "_native" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
        in_tree = root / "pulsar_ops" / name
        if version == "editable":
            in_tree.unlink(missing_ok=True)  # never leave a stale build behind a failed one
        if os.environ.get("PULSAR_OPS_NO_NATIVE", "").strip() not in ("", "0"):
            self.app.display_warning("pulsar-ops: PULSAR_OPS_NO_NATIVE set; the pure-Python path will run")
            return
        out = in_tree if version == "editable" else Path(tempfile.mkdtemp(prefix="pulsar-ops-native-")) / name
        try:
            _compile(root / SOURCE, out)
        except (OSError, subprocess.CalledProcessError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            if _strict():
                raise RuntimeError(
                    f"pulsar-ops: {STRICT_ENV}=1 and the native hot path did not compile: {detail}"
                ) from e
            self.app.display_warning(
                f"pulsar-ops: the native hot path did not compile; the pure-Python path will run ({detail.strip()})"
            )
            return
        if version != "editable":
            build_data["force_include"][str(out)] = f"pulsar_ops/{name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
