"""`scan-bookie`: read every entry log and the local ledger index of one bookie into a scan directory.

Read-only towards the bookie: files are opened ``O_RDONLY`` (with ``O_NOATIME`` when permitted), read with
``pread``, and their pages dropped from the page cache afterwards (``posix_fadvise(DONTNEED)``) so the bookie's
own cache is not evicted; the RocksDB index is opened on a private copy (``local_index``). Nothing is created,
renamed or written under a ledger or index directory, and ``--out`` may not lie inside one.

Logs are listed as upstream lists them (``DefaultEntryLogger``: names ending in ``.log``, id = hex before the
first dot, ``fileName2LogId``; ``LedgerDirUtil.FILE_PATTERN`` / ``COMPACTED_FILE_PATTERN``;
``TransactionalEntryLogCompactor.COMPACTING_SUFFIX``). A log that disappears before or while it is read (GC
deleted it) is skipped as ``vanished``: its bytes are gone from the disk. A read error skips the log and makes
the scan incomplete.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops import __version__
from pulsar_ops.bookiescan import schema
from pulsar_ops.bookiescan.entrylog import DEFAULT_CHUNK, LogRead, read_entry_log
from pulsar_ops.bookiescan.local_index import IndexRead, binding, read_local_index
from pulsar_ops.bookiescan.writer import ScanWriter, write_manifest
from pulsar_ops.errors import ConfigError

LOG_RE = re.compile(r"^([0-9a-fA-F]+)\.log$")
COMPACTING_RE = re.compile(r"^([0-9a-fA-F]+)\.log\.compacting$")
COMPACTED_RE = re.compile(r"^([0-9a-fA-F]+)\.log\.([0-9a-fA-F]+)\.compacted$")
DEFAULT_MAX_SCAN_MB_S = 100.0


@dataclass(frozen=True)
class LogFile:
    ledger_dir: str
    path: Path
    rel: str
    log_id: int
    compacting: bool


@dataclass
class ScanProgress:
    logs_done: int = 0
    logs_total: int = 0
    pairs: int = 0
    bytes_scanned: int = 0
    bytes_meta: int = 0
    seconds: float = 0.0


@dataclass
class ScanConfig:
    ledger_dirs: list[Path]
    bookie_id: str
    out: Path
    index_dirs: list[Path] | None = None
    max_scan_mb_s: float = DEFAULT_MAX_SCAN_MB_S
    chunk: int = DEFAULT_CHUNK
    force_scan: bool = False  # scan every log even when its map is valid (bench, tests)
    progress: Callable[[ScanProgress], None] | None = None
    # test hook: called with each log's path after it was opened and before it is read
    on_open: Callable[[Path], None] | None = field(default=None, repr=False)
    # the bookie's own configuration, as the manifest records it (bookie_conf.config_doc); None: not given
    bookie_config: dict[str, Any] | None = None


class ByteThrottle:
    """At most ``mb_per_s`` MB (10^6 bytes) per second on average over the scanned path (token bucket, half a
    second of burst). 0 or less: unlimited."""

    def __init__(self, mb_per_s: float, sleep: Callable[[float], None] = time.sleep) -> None:
        self.rate = mb_per_s * 1e6
        self.capacity = self.rate * 0.5
        self.tokens = self.capacity
        self.last = time.monotonic()
        self.sleep = sleep
        self.slept = 0.0

    def __call__(self, n: int) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.tokens -= n
        if self.tokens < 0:
            wait = -self.tokens / self.rate
            self.sleep(wait)
            self.slept += wait


def list_logs(ledger_dir: Path) -> tuple[list[LogFile], list[tuple[str, str]]]:
    """Entry-log files under ``<ledger_dir>/current`` and the ``.log`` names that carry no hex id."""
    cur = Path(ledger_dir) / "current"
    files: list[LogFile] = []
    bad: list[tuple[str, str]] = []
    label = str(ledger_dir)
    with os.scandir(cur) as it:
        for ent in it:
            name = ent.name
            m = LOG_RE.match(name)
            compacting = False
            if m is None:
                m = COMPACTING_RE.match(name) or COMPACTED_RE.match(name)
                compacting = m is not None
            if m is None:
                if name.endswith(".log"):
                    bad.append((f"current/{name}", "bad-name"))
                continue
            try:
                if not ent.is_file(follow_symlinks=False):
                    continue
            except FileNotFoundError:
                continue
            files.append(LogFile(label, cur / name, f"current/{name}", int(m.group(1), 16), compacting))
    files.sort(key=lambda f: (f.log_id, f.rel))
    return files, bad


def read_last_id(ledger_dir: Path) -> int | None:
    try:
        text = (Path(ledger_dir) / "current" / "lastId").read_text(encoding="ascii").strip()
        return int(text, 16)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _open_ro(path: Path) -> int:
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except PermissionError:  # O_NOATIME needs the file's owner or CAP_FOWNER
            pass
    return os.open(path, flags)


# Pages the kernel may have read ahead past what was asked (its read-ahead window is 128 KiB by default).
READAHEAD_MARGIN = 256 * 1024


def _drop_cache(fd: int, ranges: tuple[tuple[int, int], ...] = ((0, 0),)) -> None:
    """``posix_fadvise(DONTNEED)`` over what was read (the whole file for a scan; the header and the map, plus
    a read-ahead margin, for a map read: dropping a whole 1 GiB file's range costs ~1 ms even when nothing of it
    is cached)."""
    with contextlib.suppress(OSError, AttributeError):
        for offset, length in ranges:
            os.posix_fadvise(fd, offset, length + READAHEAD_MARGIN if length else 0, os.POSIX_FADV_DONTNEED)


def _check_dirs(cfg: ScanConfig) -> tuple[list[Path], list[Path]]:
    if not cfg.ledger_dirs:
        raise ConfigError("--ledger-dirs is empty", hint="pass the bookie's ledgerDirectories, comma-separated")
    if not cfg.bookie_id:
        raise ConfigError("--bookie-id is empty", hint="pass the bookie's id as in /ledgers/available (host:port)")
    resolved = [Path(d).resolve() for d in cfg.ledger_dirs]
    if len(set(resolved)) != len(resolved):
        raise ConfigError(
            "--ledger-dirs names a directory twice",
            code="bookie-dir-invalid",
            hint="pass each ledgerDirectories entry once",
        )
    for d in cfg.ledger_dirs:
        if not (Path(d) / "current").is_dir():
            raise ConfigError(
                f"{d} has no current/ directory: not a bookie ledger directory",
                code="bookie-dir-invalid",
                hint="pass the bookie's ledgerDirectories entries (scan-bookie looks under DIR/current), "
                "e.g. --ledger-dirs /pulsar/data/bookkeeper/ledgers",
            )
    index_dirs = list(cfg.index_dirs) if cfg.index_dirs else list(cfg.ledger_dirs)
    if len(index_dirs) != len(cfg.ledger_dirs):
        raise ConfigError(
            f"{len(index_dirs)} index dir(s) for {len(cfg.ledger_dirs)} ledger dir(s)",
            code="bookie-dir-invalid",
            hint="DbLedgerStorage needs as many indexDirectories as ledgerDirectories; pass them in the same order",
        )
    out = Path(cfg.out).resolve()
    for d in [*cfg.ledger_dirs, *index_dirs]:
        root = Path(d).resolve()
        if out == root or root in out.parents:
            raise ConfigError(
                f"--out {cfg.out} is inside the scanned directory {d}",
                hint="scan-bookie never writes into the bookie's directories: pass --out somewhere else",
            )
    if Path(cfg.out).exists() and any(Path(cfg.out).iterdir()):
        raise ConfigError(f"--out {cfg.out} is not empty", hint="pass --out NEW_DIR, or remove the old scan")
    return list(cfg.ledger_dirs), index_dirs


class _Releaser:
    """Drops the pages of each read log and closes it on one background thread: ``posix_fadvise(DONTNEED)``
    drains the kernel's per-CPU page lists, ~0.1-0.2 ms a call, which would otherwise be most of a map read."""

    MAX_PENDING = 64  # open descriptors waiting for the thread (stays far below the usual 1024 limit)

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fadvise")
        self._pending = threading.BoundedSemaphore(self.MAX_PENDING)

    def _run(self, fd: int, ranges: tuple[tuple[int, int], ...]) -> None:
        try:
            _drop_cache(fd, ranges)
        finally:
            os.close(fd)
            self._pending.release()

    def release(self, fd: int, ranges: tuple[tuple[int, int], ...] = ((0, 0),)) -> None:
        self._pending.acquire()
        self._pool.submit(self._run, fd, ranges)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _read_one(
    lf: LogFile, cfg: ScanConfig, throttle: ByteThrottle, releaser: _Releaser
) -> tuple[os.stat_result | None, LogRead | str]:
    """(stat, read) or (stat or None, skip reason). The descriptor is handed to ``releaser`` (drop pages, close)."""
    try:
        fd = _open_ro(lf.path)
    except FileNotFoundError:
        return None, "vanished"
    except OSError as e:
        return None, f"open-error:{errno.errorcode.get(e.errno or 0, str(e.errno))}"
    ranges: tuple[tuple[int, int], ...] = ((0, 0),)
    try:
        st = os.fstat(fd)
        if cfg.on_open is not None:
            cfg.on_open(lf.path)
        try:
            got = read_entry_log(fd, st.st_size, chunk=cfg.chunk, throttle=throttle, force_scan=cfg.force_scan)
        except OSError as e:
            return st, f"read-error:{errno.errorcode.get(e.errno or 0, str(e.errno))}"
        ranges = got.read_ranges
        if os.fstat(fd).st_nlink == 0:  # deleted by GC while we read it: its bytes are leaving the disk
            return st, "vanished"
        return st, got
    finally:
        releaser.release(fd, ranges)


def _index_summary(reads: list[IndexRead]) -> tuple[dict[str, Any], bool]:
    """The manifest's ``index`` object and whether the index side is complete."""
    statuses = {r.status for r in reads}
    reasons = [f"{r.index_dir}: {r.reason}" for r in reads if r.reason]
    if schema.INDEX_ERROR in statuses:
        status = schema.INDEX_ERROR
    elif schema.INDEX_UNAVAILABLE in statuses:
        status = schema.INDEX_UNAVAILABLE
    elif schema.INDEX_READ in statuses:
        status = schema.INDEX_READ
    else:
        status = schema.INDEX_ABSENT
    complete = status in (schema.INDEX_READ, schema.INDEX_ABSENT)
    doc = {
        "status": status,
        "reason": "; ".join(reasons) if reasons else None,
        "binding": binding(),
        "dirs": [
            {"index_dir": r.index_dir, "status": r.status, "reason": r.reason, "rows": len(r.rows)} for r in reads
        ],
    }
    return doc, complete


def scan(cfg: ScanConfig) -> dict[str, Any]:
    """Scan one bookie into ``cfg.out``; returns the manifest document (written last)."""
    ledger_dirs, index_dirs = _check_dirs(cfg)
    started = time.time()
    t0 = time.monotonic()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    writer = ScanWriter(out)
    throttle = ByteThrottle(cfg.max_scan_mb_s)
    prog = ScanProgress()
    listed: list[tuple[Path, list[LogFile], list[tuple[str, str]]]] = []
    for d in ledger_dirs:
        files, bad = list_logs(d)
        listed.append((d, files, bad))
        prog.logs_total += len(files)
    counts = {"map": 0, "scanned": 0, "skipped": 0}
    skipped: list[dict[str, str]] = []
    last_ids: dict[str, int | None] = {}
    releaser = _Releaser()
    try:
        for d, files, bad in listed:
            label = str(d)
            last_ids[label] = read_last_id(d)
            for rel, reason in bad:
                skipped.append({"ledger_dir": label, "file": rel, "reason": reason})
                counts["skipped"] += 1
            rows: list[list[Any]] = []
            for lf in files:
                st, got = _read_one(lf, cfg, throttle, releaser)
                mtime_ms = st.st_mtime_ns // 1_000_000 if st else 0
                base = [cfg.bookie_id, label, lf.log_id, lf.rel, st.st_size if st else 0]
                if isinstance(got, str):
                    counts["skipped"] += 1
                    skipped.append({"ledger_dir": label, "file": lf.rel, "reason": got})
                    rows.append([*base, 0, mtime_ms, st.st_ino if st else 0, schema.LOGGER_DEFAULT, None,
                                 schema.READ_SKIPPED, got, 0, lf.compacting])  # fmt: skip
                else:
                    counts["map" if got.read_via == schema.READ_MAP else "scanned"] += 1
                    if not lf.compacting:
                        writer.add_pairs(cfg.bookie_id, label, lf.log_id, got.ledger_ids, got.ledger_bytes)
                        prog.pairs += got.ledgers
                    prog.bytes_scanned += got.bytes_read
                    prog.bytes_meta += got.meta_bytes_read
                    rows.append([*base, got.data_bytes, mtime_ms, st.st_ino if st else 0, got.logger,
                                 got.header_version, got.read_via, got.reason, got.ledgers, lf.compacting])  # fmt: skip
                prog.logs_done += 1
                if cfg.progress is not None:
                    prog.seconds = time.monotonic() - t0
                    cfg.progress(prog)
            _mark_active(rows)
            for row in rows:
                writer.add_entry_log(tuple(row))
    finally:
        releaser.close()
    # a log GC deleted is gone from the disk, not unknown: only the other skips make the scan partial
    errors = sum(1 for s in skipped if s["reason"] != "vanished")
    reads: list[IndexRead] = []
    with tempfile.TemporaryDirectory(prefix=".index-copy-", dir=out) as scratch:
        for idir in index_dirs:
            ir = read_local_index(idir, Path(scratch))
            reads.append(ir)
            for x in ir.rows:
                writer.add_index_row((cfg.bookie_id, ir.index_dir, x.ledger_id, x.exists, x.fenced, x.limbo))
    index_doc, index_complete = _index_summary(reads)
    tables = writer.close()
    finished = time.time()
    manifest: dict[str, Any] = {
        "format": schema.FORMAT,
        "format_version": schema.FORMAT_VERSION,
        "tool_version": __version__,
        "bookie_id": cfg.bookie_id,
        "ledger_dirs": [str(d) for d in ledger_dirs],
        "index_dirs": [str(d) for d in index_dirs],
        "started_at_ms": int(started * 1000),
        "finished_at_ms": int(finished * 1000),
        "complete": errors == 0 and index_complete,
        "index": index_doc,
        "logs": counts,
        "skipped": skipped,
        "tables": tables,
        "settings": {"max_scan_mb_s": cfg.max_scan_mb_s},
        "bookie_config": cfg.bookie_config,
        "last_ids": last_ids,
        "bytes_scanned": prog.bytes_scanned,
        "bytes_read_headers_and_maps": prog.bytes_meta,
        "throttled_s": round(throttle.slept, 3),
    }
    write_manifest(out, manifest)
    return manifest


def _mark_active(rows: list[list[Any]]) -> None:
    """A log without a map that is the most recently modified log of its directory is the active one."""
    logs = [r for r in rows if not r[13] and r[9] != schema.READ_SKIPPED]
    if not logs:
        return
    newest = max(logs, key=lambda r: (r[6], r[2]))
    reason = newest[11]
    if isinstance(reason, str) and reason.startswith("no-map"):
        newest[11] = "active" + reason[len("no-map") :]
