"""A bookie HTTP server for tests: the GC endpoints of one bookie over its seeded ledger directories, 127.0.0.1 only.

``with BookieServer("bookie-1:3181", [dir0, dir1], ledger_exists=fn) as b:`` then ``b.url``. Endpoints, answered
as upstream's (apache/bookkeeper master at 9590a97f, ``bookkeeper-server/.../server/http/service/``):

* ``PUT /api/v1/bookie/gc`` (``TriggerGCService``): a blank body forces a GC with the bookie's suspension flags;
  a JSON body ``{"forceMajor", "forceMinor"}`` (each defaulting to "not suspended", read with
  ``Boolean.parseBoolean`` of its string form) forces one with those; a body that is not a JSON object is
  ``400 Failed to handle the request, exception: ...``; the answer is the JSON string
  ``Triggered GC on BookieServer: <id>``. As ``GarbageCollectorThread.enableForceGC``, a request while a forced
  run is pending changes nothing (still 200). ``GET`` answers ``{"is_in_force_gc": "true"|"false"}``; other
  methods 405. The 400 and 405 bodies are plain text, not JSON (``response.setBody(String)``); a body JSON cannot
  read as an object is ``Failed to deserialize Object from Json string`` (``JsonUtil.fromJson``), a flag given as
  ``null`` fails on ``null.toString()`` (400 too).
* ``GET /api/v1/config/server_config`` (``ConfigurationService``, ``AbstractConfiguration.asJson``): the
  configuration, every value ``toString()`` of its property: a list (more than one ledger directory) reads
  ``[/a, /b]`` (``AbstractCollection.toString``), one value reads as itself.
* ``GET|PUT /api/v1/bookie/gc/suspend_compaction`` (``SuspendCompactionService``) and ``resume_compaction``.
  Suspension is per ledger directory (one ``GarbageCollectorThread`` each, ``SingleDirectoryDbLedgerStorage``;
  ``suspended[i]``, the disk monitor's ``diskAlmostFull`` suspends one directory's major compaction): a PUT
  suspends or resumes every directory, GET answers a kind suspended only when every directory's is
  (``DbLedgerStorage.isMajorGcSuspended``: ``allMatch``). A blank forced-GC body runs each directory with its own
  flags (``enableForceGC()``); explicit flags override them in every directory.
* ``GET /api/v1/bookie/gc_details`` (``GCDetailsService``): one object per ledger directory.
* ``GET /api/v1/bookie/info``: free and total space.

The forced run does to the directories what ``GarbageCollectorThread.runWithFlags(true, suspendMajor,
suspendMinor)`` does, per ledger directory: ledger GC (every ledger of the local ``ledgers`` index whose metadata
``ledger_exists`` says is gone is removed from the index: ``ScanAndCompareGarbageCollector``), entry-log GC (a
flushed log, i.e. every log but the newest, whose ledgers are no longer in the local index is deleted:
``doGcEntryLogs``), then at most one compaction (major, else minor, under upstream's rule on the configuration's
``forceAllowCompaction`` and thresholds): a log whose live fraction is below the threshold has its live records
appended to the active log and is deleted (``EntryLogCompactor``). The location index is not rewritten (the
seeded directories have none). Test controls: ``hold`` (an Event the run waits on: a GC that does not end),
``runs`` (what each forced run did), ``calls`` [(method, path, status)].
"""

from __future__ import annotations

import json
import struct
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from pulsar_ops.model.gc_config import GcConfig, gc_config
from pulsar_ops.testing.entrylog_writer import STORAGE_FLAGS_KEY, write_entry_log

HEADER = 1024
ALIGN = 4096
GC = "/api/v1/bookie/gc"
Record = tuple[int, int, bytes]  # ledger id, entry id, payload

# Pulsar's conf/bookkeeper.conf GC keys (what a bookie started by Pulsar's scripts reports)
PULSAR_GC_CONFIG = {
    "gcWaitTime": "900000",
    "minorCompactionThreshold": "0.2",
    "minorCompactionInterval": "3600",
    "majorCompactionThreshold": "0.5",
    "majorCompactionInterval": "86400",
    "forceAllowCompaction": "true",
}


class _Text(str):
    """A plain-text answer (upstream's error bodies), sent as is rather than as a JSON string."""


def java_to_string(values: Sequence[str]) -> str:
    """``toString()`` of a commons-configuration property: one value as itself, a list as ``[a, b]``."""
    return values[0] if len(values) == 1 else "[" + ", ".join(values) + "]"


def read_records(path: Path) -> tuple[list[Record], str]:
    """Every entry record of a log (map batches, the Direct logger's header record and padding skipped), and the
    logger (``direct`` when the header carries the 3068-byte dummy record)."""
    data = path.read_bytes()
    logger = "default"
    if len(data) >= HEADER + 12 and struct.unpack_from(">iq", data, HEADER) == (ALIGN - HEADER - 4, -1):
        logger = "direct"
    out: list[Record] = []
    pos = HEADER
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 0:
            nxt = (pos + ALIGN - 1) & ~(ALIGN - 1)
            if nxt == pos:
                break
            pos = nxt
            continue
        if n == 0 or pos + 4 + n > len(data):
            break
        lid, eid = struct.unpack_from(">qq", data, pos + 4) if n >= 16 else (-1, 0)
        if lid >= 0:
            out.append((lid, eid, data[pos + 20 : pos + 4 + n]))
        pos += 4 + n
    return out, logger


def _logs(ledger_dir: Path) -> list[tuple[int, Path]]:
    cur = ledger_dir / "current"
    out = []
    for p in cur.glob("*.log"):
        try:
            out.append((int(p.name[:-4], 16), p))
        except ValueError:
            continue
    return sorted(out)


def _index(ledger_dir: Path) -> tuple[Any, set[int]]:
    from rocksdict import Options, Rdict

    opts = Options(raw_mode=True)
    db = Rdict(str(ledger_dir / "current" / "ledgers"), opts)
    keys = [cast(bytes, k) for k in db.keys()]  # noqa: SIM118 - an Rdict, not a dict
    ids = {struct.unpack(">q", k)[0] for k in keys if k != STORAGE_FLAGS_KEY}
    return db, {i for i in ids if i >= 0}


def _size(records: Iterable[Record]) -> int:
    return sum(20 + len(p) for _, _, p in records)  # L + 4, as EntryLogMetadata counts an entry


@dataclass
class DirGc:
    """What one forced run did in one ledger directory."""

    ledger_dir: str
    suspend_major: bool = False  # the flags this directory's run was given (runWithFlags)
    suspend_minor: bool = False
    ledgers_deleted: list[int] = field(default_factory=list)
    logs_deleted: list[int] = field(default_factory=list)
    compaction: str | None = None
    logs_compacted: list[int] = field(default_factory=list)
    freed_bytes: int = 0


def collect(
    ledger_dir: Path, ledger_exists: Callable[[set[int]], set[int]], cfg: GcConfig, suspend_major: bool,
    suspend_minor: bool,
) -> DirGc:  # fmt: skip
    """One forced ``runWithFlags(true, suspendMajor, suspendMinor)`` on one directory."""
    res = DirGc(str(ledger_dir), suspend_major, suspend_minor)
    db, local = _index(ledger_dir)
    try:
        gone = sorted(local - ledger_exists(set(local)))
        for lid in gone:
            del db[struct.pack(">q", lid)]
        db.flush()
    finally:
        db.close()
    res.ledgers_deleted = gone
    live = local - set(gone)
    logs = _logs(ledger_dir)
    if not logs:
        return res
    active_id, active_path = logs[-1]
    meta: dict[int, tuple[Path, list[Record], int]] = {}
    for log_id, path in logs[:-1]:
        recs, _ = read_records(path)
        total = _size(recs)
        kept = [r for r in recs if r[0] in live]
        if not kept:
            res.logs_deleted.append(log_id)
            res.freed_bytes += total
            path.unlink()
            continue
        meta[log_id] = (path, kept, total)
    major = not suspend_major and (cfg.force_major_allowed or cfg.major_enabled)
    minor = not major and not suspend_minor and (cfg.force_minor_allowed or cfg.minor_enabled)
    if not (major or minor):
        return res
    res.compaction = "major" if major else "minor"
    threshold = cfg.major_compaction_threshold if major else cfg.minor_compaction_threshold
    survivors: list[Record] = []
    for log_id, (path, kept, total) in sorted(meta.items()):
        usage = _size(kept) / total if total else 0.0
        if usage < threshold:
            survivors.extend(kept)
            res.logs_compacted.append(log_id)
            res.freed_bytes += total - _size(kept)
            path.unlink()
    if survivors:  # appended to the active log (the one being written), which keeps no map until rollover
        recs, logger = read_records(active_path)
        write_entry_log(active_path, active_id, [*recs, *survivors], logger=logger, with_map=False)  # type: ignore[arg-type]
    return res


class BookieServer:
    def __init__(
        self,
        bookie_id: str,
        ledger_dirs: Sequence[str | Path],
        *,
        ledger_exists: Callable[[set[int]], set[int]],
        config: Mapping[str, str] | None = None,
        free: int = 50 << 30,
        total: int = 100 << 30,
    ) -> None:
        self.bookie_id = bookie_id
        self.ledger_dirs = [Path(d) for d in ledger_dirs]
        self.ledger_exists = ledger_exists
        self.config: dict[str, str] = {
            "bookieId": bookie_id,
            "ledgerDirectories": java_to_string([str(d) for d in self.ledger_dirs]),
            **PULSAR_GC_CONFIG,
            **(config or {}),
        }
        self.free, self.total = free, total
        # per ledger directory, as each directory's GarbageCollectorThread holds its own
        self.suspended = [{"major": False, "minor": False} for _ in self.ledger_dirs]
        self.hold: threading.Event | None = None
        self.runs: list[list[DirGc]] = []
        self.calls: list[tuple[str, str, int]] = []
        self.counters = {"major": 0, "minor": 0}
        self._force = False
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def in_force_gc(self) -> bool:
        with self._lock:
            return self._force

    def settings(self) -> GcConfig:
        from pulsar_ops.model.gc_config import GC_KEYS

        return gc_config({k: v for k, v in self.config.items() if k in GC_KEYS})

    def all_suspended(self, kind: str) -> bool:
        """``DbLedgerStorage.is{Major,Minor}GcSuspended``: every directory's (allMatch)."""
        return all(s[kind] for s in self.suspended)

    def force_gc(self, force_major: bool | None, force_minor: bool | None) -> None:
        """``enableForceGC(forceMajor, forceMinor)`` in every directory, only when no forced run is pending; None
        (a blank body: ``enableForceGC()``): each directory's own suspension flag."""
        with self._lock:
            if self._force:
                return
            self._force = True
        flags = [
            (
                s["major"] if force_major is None else not force_major,
                s["minor"] if force_minor is None else not force_minor,
            )
            for s in self.suspended
        ]
        t = threading.Thread(target=self._run, args=(flags,), daemon=True)
        self._threads.append(t)
        t.start()

    def _run(self, flags: list[tuple[bool, bool]]) -> None:
        try:
            if self.hold is not None:
                self.hold.wait()
            cfg = self.settings()
            done = [collect(d, self.ledger_exists, cfg, *f) for d, f in zip(self.ledger_dirs, flags, strict=True)]
            for r in done:
                if r.compaction:
                    self.counters[r.compaction] += 1
            self.runs.append(done)
        finally:
            with self._lock:
                self._force = False

    def wait_idle(self, timeout: float = 30.0) -> None:
        for t in list(self._threads):
            t.join(timeout)

    def _handle(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if path == GC:
            if method == "GET":
                return 200, {"is_in_force_gc": str(self.in_force_gc()).lower()}
            if method != "PUT":
                return 405, _Text("Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state.")
            text = body.decode("utf-8", "replace")
            if not text.strip():
                self.force_gc(None, None)
            else:
                try:
                    doc = json.loads(text)
                except ValueError:
                    doc = None
                if not isinstance(doc, dict):  # Jackson's readValue(body, HashMap.class) refuses it
                    return 400, _Text(
                        "Failed to handle the request, exception: Failed to deserialize Object from Json string"
                    )
                if any(k in doc and doc[k] is None for k in ("forceMajor", "forceMinor")):
                    return 400, _Text("Failed to handle the request, exception: null")  # null.toString()
                fm = str(doc.get("forceMajor", not self.all_suspended("major"))).lower() == "true"
                fmi = str(doc.get("forceMinor", not self.all_suspended("minor"))).lower() == "true"
                self.force_gc(fm, fmi)
            return 200, f"Triggered GC on BookieServer: {self.bookie_id}"
        if path == "/api/v1/config/server_config" and method == "GET":
            return 200, dict(self.config)
        if path in (f"{GC}/suspend_compaction", f"{GC}/resume_compaction"):
            if method == "GET":
                return 200, {
                    "isMajorGcSuspended": str(self.all_suspended("major")).lower(),
                    "isMinorGcSuspended": str(self.all_suspended("minor")).lower(),
                }
            if method == "PUT":
                doc = json.loads(body or b"{}")
                suspend = path.endswith("suspend_compaction")
                verb = "suspend" if suspend else "resume"
                keys = {kind: f"{verb}{kind.title()}" for kind in ("major", "minor")}
                if all(doc.get(k) is None for k in keys.values()):  # Suspend/ResumeCompactionService
                    return 400, _Text(f"No {keys['major']} or {keys['minor']} params found")
                for kind, key in keys.items():
                    if doc.get(key) is True:  # DbLedgerStorage forwards to every directory
                        for d in self.suspended:
                            d[kind] = suspend
                return 200, "ok"
        if path == "/api/v1/bookie/gc_details" and method == "GET":
            return 200, [
                {
                    "forceCompacting": self.in_force_gc(),
                    "majorCompacting": False,
                    "minorCompacting": False,
                    "majorCompactionCounter": self.counters["major"],
                    "minorCompactionCounter": self.counters["minor"],
                }
                for _ in self.ledger_dirs
            ]
        if path == "/api/v1/bookie/info" and method == "GET":
            return 200, {"freeSpace": self.free, "totalSpace": self.total}
        return 404, None

    def __enter__(self) -> BookieServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _do(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                status, doc = server._handle(self.command, self.path.partition("?")[0], body)
                server.calls.append((self.command, self.path, status))
                data = b"" if doc is None else doc.encode() if isinstance(doc, _Text) else json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _do

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self.hold is not None:
            self.hold.set()
        self.wait_idle()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def zk_ledger_exists(zk: Any, ledgers_root: str = "/ledgers") -> Callable[[set[int]], set[int]]:
    """``ledger_exists`` over a ZooKeeper (kazoo client): the ids whose ledger metadata znode exists."""
    from pulsar_ops.formats.ledger_path import ledger_path

    def check(ids: set[int]) -> set[int]:
        return {i for i in ids if zk.exists(ledger_path(i, ledgers_root)) is not None}

    return check


@contextmanager
def seeded_bookies(zk_hosts: str, bookie_dirs: Path, ledgers_root: str = "/ledgers") -> Iterator[dict[str, str]]:
    """A :class:`BookieServer` for every bookie a seeder wrote under ``bookie_dirs`` (its ``bookies.json``), over
    one ZooKeeper connection; yields bookie id -> URL (what ``apply --bookie-http`` takes)."""
    from pulsar_ops.testing.bookie_dirs import LAYOUT_FILE
    from pulsar_ops.zkconn import connected

    layout = json.loads((Path(bookie_dirs) / LAYOUT_FILE).read_text())["bookies"]
    with connected(zk_hosts) as zk, ExitStack() as stack:
        exists = zk_ledger_exists(zk, ledgers_root)
        servers = [
            stack.enter_context(BookieServer(b["bookie_id"], b["ledger_dirs"], ledger_exists=exists)) for b in layout
        ]
        yield {s.bookie_id: s.url for s in servers}
