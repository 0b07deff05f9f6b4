"""`scan-bookie`: read every entry log and the local ledger index of one bookie into a scan directory.

Read-only towards the bookie and bounded (``fileio``, ``pairs``): only regular files are opened (``O_RDONLY |
O_NONBLOCK | O_NOFOLLOW``, ``O_NOATIME`` when permitted, checked with ``fstat`` on the descriptor), read with
``pread`` through one throttle (maps and scans alike), and only the pages the scan brought into the page cache
are released (``mincore`` before, ``posix_fadvise(DONTNEED)`` after): the bookie's cached pages stay. Per-ledger
sums stay in bounded memory (spilled under ``--out`` beyond). The RocksDB index is opened on a private copy
(``local_index``). Nothing is created, renamed or written under a ledger or index directory, and ``--out`` may
not have one of them, by device and inode, among its ancestors (symlinks and bind mounts included).

Logs are listed as upstream lists them (``listing``). A log that disappears before or while it is read (GC
deleted it) is skipped as ``vanished``: its bytes are gone from the disk. A read error skips the log and makes
the scan incomplete; so does every other name that looks like a log and is not read (``listing``), and a
directory that cannot be listed. Every such name is a row of ``skipped_logs`` (streamed, as ``entry_logs`` is),
and the manifest counts them by reason.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops import __version__
from pulsar_ops.bookiescan import schema
from pulsar_ops.bookiescan.entrylog import DEFAULT_CHUNK, LogRead, read_entry_log
from pulsar_ops.bookiescan.fileio import NotRegular, file_kind, open_regular, page_cache, read_small
from pulsar_ops.bookiescan.listing import MAX_LOG_ID, LogFile, LogList, list_logs
from pulsar_ops.bookiescan.listing import errno_name as _errno_name
from pulsar_ops.bookiescan.local_index import IndexRead, binding, read_local_index
from pulsar_ops.bookiescan.pairs import DEFAULT_LIMIT, SpillError
from pulsar_ops.bookiescan.writer import ScanWriter, write_manifest
from pulsar_ops.errors import ConfigError
from pulsar_ops.formats.bookie_id import valid_bookie_id

DEFAULT_MAX_SCAN_MB_S = 100.0
MIN_MAX_SCAN_MB_S = 1.0  # the floor: below it a scan of one 1 GiB log would take more than 18 minutes
DIR_WALK_MAX = 10_000  # directories collected under the bookie's dirs for the --out ancestor check


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
    sums_limit: int = DEFAULT_LIMIT  # (ledger, bytes) pairs held in memory per log before spilling
    progress: Callable[[ScanProgress], None] | None = None
    # test hook: called with each log's path after it was opened and before it is read
    on_open: Callable[[Path], None] | None = field(default=None, repr=False)
    # the bookie's own configuration, as the manifest records it (bookie_conf.config_doc); None: not given
    bookie_config: dict[str, Any] | None = None
    # more of the bookie's directories --out may not be inside (its configuration's journal directories, and the
    # ledger and index directories it names that this scan leaves out)
    protect_dirs: list[Path] = field(default_factory=list)


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


def read_last_id(ledger_dir: Path) -> int | None:
    """``current/lastId`` (``DefaultEntryLogger.readLastLogId``: the first line, hex), read as a regular file of
    at most 4 KiB; None when absent, not a regular file, unreadable or not a ``long``."""
    try:
        raw = read_small(Path(ledger_dir) / "current" / "lastId")
        value = int(raw.decode("ascii").splitlines()[0].strip(), 16)
    except (OSError, ValueError, UnicodeDecodeError, IndexError):
        return None
    return value if 0 <= value <= MAX_LOG_ID else None


def _stat_key(path: Path | str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _bookie_dir_keys(roots: Iterable[Path]) -> set[tuple[int, int]]:
    """(st_dev, st_ino) of each bookie directory and the directories under it (a few levels, not following
    symlinks): a bind mount or symlink alias of any of them has the same pair."""
    keys: set[tuple[int, int]] = set()
    starts: list[tuple[str, int]] = []
    for root in roots:
        # the configured dir and the layout's own names, symlinks followed (a symlinked current/ is the bookie's)
        for sub, depth in (("", 0), ("current", 1), ("current/ledgers", 2), ("current/locations", 2)):
            path = os.path.join(root, sub) if sub else str(root)
            try:
                if os.path.isdir(path):
                    keys.add(_stat_key(path))
                    starts.append((path, depth))
            except OSError:
                continue
    for start in starts:
        stack = [start]
        while stack and len(keys) < DIR_WALK_MAX:
            path, depth = stack.pop()
            if depth >= 3:
                continue
            try:
                with os.scandir(path) as it:
                    for ent in it:
                        if ent.is_dir(follow_symlinks=False):
                            st = ent.stat(follow_symlinks=False)
                            keys.add((st.st_dev, st.st_ino))
                            stack.append((ent.path, depth + 1))
            except OSError:
                continue
    return keys


_LAYOUT = ("", "current", "current/ledgers", "current/locations")  # a bookie dir and its layout's directories


def _nearest_existing(out: Path) -> Path:
    """``out`` or its nearest existing ancestor (OSError other than ENOENT propagates)."""
    q = Path(os.path.abspath(out))
    while True:
        try:
            os.stat(q)
            return q
        except FileNotFoundError:
            if q.parent == q:
                raise
            q = q.parent


def _out_ancestor_keys(out: Path) -> list[tuple[int, int]]:
    """(st_dev, st_ino) of the nearest existing ancestor of ``out`` (itself included) and of every physical
    (``..``) and lexical ancestor above it."""
    q = _nearest_existing(out)
    keys: list[tuple[int, int]] = []
    cur = str(q)
    for _ in range(256):
        k = _stat_key(cur)
        if k in keys:
            break
        keys.append(k)
        cur = os.path.join(cur, "..")
    for a in [q, *q.parents]:
        k = _stat_key(a)
        if k not in keys:
            keys.append(k)
    return keys


MOUNTINFO = "/proc/self/mountinfo"
MOUNTINFO_MAX = 16 * 1024 * 1024
_OCTAL = re.compile(r"\\([0-7]{3})")


Mount = tuple[int, str, str]  # (st_dev, the directory of the filesystem it shows, its mount point)


def _mount_table() -> list[Mount]:
    """``/proc/self/mountinfo`` as (device, root, mount point) rows, read once per check; empty when it cannot be
    read."""
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read(MOUNTINFO_MAX).splitlines()
    except OSError:
        return []
    table: list[Mount] = []
    for line in lines:
        f = line.split(" ")
        if len(f) < 5:
            continue
        try:
            major, minor = (int(x) for x in f[2].split(":"))
        except ValueError:
            continue
        root, mnt = (_OCTAL.sub(lambda m: chr(int(m.group(1), 8)), x) for x in (f[3], f[4]))
        table.append((os.makedev(major, minor), root, mnt))
    return table


def _fs_location(path: Path | str, table: list[Mount]) -> tuple[int, str] | None:
    """(st_dev, the directory's path inside its filesystem) of an existing path, by the mount table: the mount's
    root field says which directory of the filesystem a (bind) mount shows, so every alias of a directory, however
    deep, has one location. None when it cannot be told (no mountinfo, a device number the mount table does not
    list, e.g. btrfs subvolumes): the inode check alone then applies."""
    try:
        real = os.path.realpath(path)
        dev = os.stat(real).st_dev
    except OSError:
        return None
    best: tuple[str, str] | None = None
    for mdev, root, mnt in table:
        if mdev != dev:
            continue
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and (best is None or len(mnt) >= len(best[1])):
            best = (root, mnt)  # the last of equal mount points is the one on top
    if best is None:
        return None
    return dev, os.path.normpath(os.path.join(best[0], os.path.relpath(real, best[1])))


def _under(loc: tuple[int, str], top: tuple[int, str]) -> bool:
    return loc[0] == top[0] and (loc[1] == top[1] or loc[1].startswith(top[1].rstrip("/") + "/"))


def _out_error(
    msg: str, hint: str = "pass --out NEW_DIR on a writable filesystem outside the bookie's directories"
) -> ConfigError:
    return ConfigError(msg, code="scan-out-invalid", hint=hint)


def check_throttle(mb_s: float) -> None:
    if not math.isfinite(mb_s) or mb_s < 0 or 0 < mb_s < MIN_MAX_SCAN_MB_S:
        raise ConfigError(
            f"--max-scan-mb-s {mb_s}: must be 0 (unlimited) or at least {MIN_MAX_SCAN_MB_S:g}",
            code="scan-throttle-invalid",
            hint=f"pass --max-scan-mb-s {DEFAULT_MAX_SCAN_MB_S:g} (the default), or 0 for no limit",
        )


def _check_dirs(cfg: ScanConfig) -> tuple[list[Path], list[Path]]:
    if not cfg.ledger_dirs:
        raise ConfigError("--ledger-dirs is empty", hint="pass the bookie's ledgerDirectories, comma-separated")
    if not cfg.bookie_id:
        raise ConfigError("--bookie-id is empty", hint="pass the bookie's id as in /ledgers/available (host:port)")
    if not valid_bookie_id(cfg.bookie_id):  # it names the scan's rows and files: the bookie's own form only
        raise ConfigError(
            f"--bookie-id {cfg.bookie_id!r} is not a BookieId (letters, digits and :-_. only, not 'readonly')",
            code="bookie-id-invalid",
            hint="pass the bookie's id as in /ledgers/available (host:port, or its bookieId)",
        )
    check_throttle(cfg.max_scan_mb_s)
    for d in [*cfg.ledger_dirs, *(cfg.index_dirs or [])]:
        try:
            str(d).encode("utf-8")
        except UnicodeEncodeError:  # the manifest and tables store it as text
            raise ConfigError(
                f"{str(d).encode('utf-8', 'backslashreplace').decode()}: not valid UTF-8",
                code="bookie-dir-invalid",
                hint="pass the directory as the bookie's configuration names it (bookkeeper.conf is text), or "
                "scan it through a symlink with a UTF-8 name",
            ) from None
    keys: list[tuple[int, int]] = []
    for d in cfg.ledger_dirs:
        try:
            st = os.stat(Path(d) / "current")
            is_dir = os.path.isdir(Path(d) / "current")
        except PermissionError:  # listing it will fail too: reported there, the scope partial
            continue
        except OSError as e:
            raise ConfigError(
                f"{d} has no readable current/ directory ({_errno_name(e)}): not a bookie ledger directory",
                code="bookie-dir-invalid",
                hint="pass the bookie's ledgerDirectories entries (scan-bookie looks under DIR/current), "
                "e.g. --ledger-dirs /pulsar/data/bookkeeper/ledgers",
            ) from None
        if not is_dir:
            raise ConfigError(
                f"{d} has no current/ directory: not a bookie ledger directory",
                code="bookie-dir-invalid",
                hint="pass the bookie's ledgerDirectories entries (scan-bookie looks under DIR/current), "
                "e.g. --ledger-dirs /pulsar/data/bookkeeper/ledgers",
            )
        keys.append((st.st_dev, st.st_ino))
    if len(set(keys)) != len(keys):
        raise ConfigError(
            "--ledger-dirs names a directory twice",
            code="bookie-dir-invalid",
            hint="pass each ledgerDirectories entry once",
        )
    index_dirs = list(cfg.index_dirs) if cfg.index_dirs else list(cfg.ledger_dirs)
    if len(index_dirs) != len(cfg.ledger_dirs):
        raise ConfigError(
            f"{len(index_dirs)} index dir(s) for {len(cfg.ledger_dirs)} ledger dir(s)",
            code="bookie-dir-invalid",
            hint="DbLedgerStorage needs as many indexDirectories as ledgerDirectories; pass them in the same order",
        )
    _check_out(cfg.out, [*cfg.ledger_dirs, *index_dirs, *cfg.protect_dirs])
    return list(cfg.ledger_dirs), index_dirs


def _check_out(out: Path, bookie_dirs: list[Path]) -> None:
    """Refuse ``--out`` when one of its ancestors IS (device and inode) a bookie directory, or it is not a usable
    directory. String comparison of paths misses symlinked components and bind-mount aliases; inodes do not."""
    bookie = _bookie_dir_keys(bookie_dirs)
    try:
        ancestors = _out_ancestor_keys(Path(out))
    except OSError as e:
        raise _out_error(f"--out {out}: {_errno_name(e)} ({e.strerror})") from None
    hit = next((k for k in ancestors if k in bookie), None)
    if hit is None:  # a bind-mount alias of a directory deeper than the walk: by location in the filesystem
        table = _mount_table()
        out_loc = _fs_location(_nearest_existing(Path(out)), table)
        tops = [_fs_location(os.path.join(d, sub), table) for d in bookie_dirs for sub in _LAYOUT]
        if out_loc is not None and any(t is not None and _under(out_loc, t) for t in tops):
            hit = (out_loc[0], 0)
    if hit is not None:
        raise ConfigError(
            f"--out {out} is inside the scanned directory tree or the bookie's other directories (a ledger, index "
            "or journal directory is among its ancestors)",
            hint="scan-bookie never writes into the bookie's directories: pass --out somewhere else",
        )
    o = Path(out)
    try:
        st = os.lstat(o)
    except FileNotFoundError:
        return
    except OSError as e:
        raise _out_error(f"--out {out}: {_errno_name(e)} ({e.strerror})") from None
    if not os.path.isdir(o):
        raise _out_error(f"--out {out} exists and is not a directory ({file_kind(st.st_mode)})")
    try:
        nonempty = any(os.scandir(o))
    except OSError as e:
        raise _out_error(f"--out {out} cannot be listed: {_errno_name(e)}") from None
    if nonempty:
        raise ConfigError(f"--out {out} is not empty", hint="pass --out NEW_DIR, or remove the old scan")


def _prepare_out(out: Path) -> None:
    """Create ``--out`` and prove it writable before anything is read."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise _out_error(f"--out {out} cannot be written: {_errno_name(e)} ({e.strerror})") from None


def _read_one(
    lf: LogFile, cfg: ScanConfig, throttle: ByteThrottle, spill: Path
) -> tuple[os.stat_result | None, LogRead | str]:
    """(stat, read) or (stat or None, skip reason). Only a regular file is read (``open_regular``)."""
    try:
        fd, st = open_regular(lf.path)
    except FileNotFoundError:
        return None, "vanished"
    except NotRegular as e:
        return None, f"not-regular:{e.kind}"
    except OSError as e:
        return None, f"open-error:{_errno_name(e)}"
    try:
        if cfg.on_open is not None:
            cfg.on_open(lf.path)
        try:
            got = read_entry_log(
                fd,
                st.st_size,
                chunk=cfg.chunk,
                throttle=throttle,
                force_scan=cfg.force_scan,
                cache=page_cache(),
                spill_root=spill,
                sums_limit=cfg.sums_limit,
            )
        except SpillError:
            raise  # the output's problem (scan(): scan-out-invalid), not the log's
        except OSError as e:
            return st, f"read-error:{_errno_name(e)}"
        if os.fstat(fd).st_nlink == 0:  # deleted by GC while we read it: its bytes are leaving the disk
            got.close()
            return st, "vanished"
        return st, got
    finally:
        os.close(fd)


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
        "dirs": [{"index_dir": r.index_dir, "status": r.status, "reason": r.reason, "rows": r.count} for r in reads],
    }
    return doc, complete


def scan(cfg: ScanConfig) -> dict[str, Any]:
    """Scan one bookie into ``cfg.out``; returns the manifest document (written last)."""
    ledger_dirs, index_dirs = _check_dirs(cfg)
    started = time.time()
    t0 = time.monotonic()
    out = Path(cfg.out)
    _prepare_out(out)
    writer = ScanWriter(out)
    try:
        return _scan_into(cfg, ledger_dirs, index_dirs, out, writer, started, t0)
    except OSError as e:  # what reads the bookie reports its own errors: one escaping is from writing --out
        writer.abort()
        raise _out_error(
            f"--out {out}: {_errno_name(e) if e.errno else 'write failed'} ({e.strerror or e}) while writing the scan",
            hint="free space under --out or pass --out NEW_DIR on a filesystem with room (a log's sums spill up to "
            "16 bytes per ledger), then run scan-bookie again",
        ) from None
    except BaseException:
        writer.abort()
        raise


def _scan_into(
    cfg: ScanConfig,
    ledger_dirs: list[Path],
    index_dirs: list[Path],
    out: Path,
    writer: ScanWriter,
    started: float,
    t0: float,
) -> dict[str, Any]:
    spill = Path(tempfile.mkdtemp(prefix=".spill-", dir=out))
    throttle = ByteThrottle(cfg.max_scan_mb_s)
    prog = ScanProgress()
    listed: list[tuple[Path, LogList | None]] = []
    for d in ledger_dirs:
        label = str(d)

        def bad(rel: str, reason: str, label: str = label) -> None:
            writer.add_skipped(cfg.bookie_id, label, rel, reason)

        try:
            logs: LogList | None = list_logs(d, bad)
        except OSError as e:  # unreadable, vanished or looping directory: this directory's scope is unknown
            logs = None
            bad("current/", f"list-error:{_errno_name(e)}")
        listed.append((d, logs))
        prog.logs_total += len(logs) if logs is not None else 0
    counts = {"map": 0, "scanned": 0, "skipped": 0}
    last_ids: dict[str, int | None] = {}
    pages_released = 0
    try:
        for d, logs in listed:
            label = str(d)
            last_ids[label] = read_last_id(d)
            rows = _DirRows(writer.add_entry_log)
            for lf in logs if logs is not None else ():
                st, got = _read_one(lf, cfg, throttle, spill)
                mtime_ms = st.st_mtime_ns // 1_000_000 if st else 0
                base = [cfg.bookie_id, label, lf.log_id, lf.rel, st.st_size if st else 0]
                if isinstance(got, str):
                    writer.add_skipped(cfg.bookie_id, label, lf.rel, got)
                    rows.add([*base, 0, mtime_ms, st.st_ino if st else 0, schema.LOGGER_DEFAULT, None,
                              schema.READ_SKIPPED, got, 0, lf.compacting])  # fmt: skip
                else:
                    try:
                        counts["map" if got.read_via == schema.READ_MAP else "scanned"] += 1
                        if not lf.compacting:
                            for ids, sizes in got.sums.chunks():
                                writer.add_pairs(cfg.bookie_id, label, lf.log_id, ids, sizes)
                            prog.pairs += got.ledgers
                        prog.bytes_scanned += got.bytes_read
                        prog.bytes_meta += got.meta_bytes_read
                        pages_released += got.pages_released
                        ino = st.st_ino if st else 0
                        rows.add([*base, got.data_bytes, mtime_ms, ino, got.logger, got.header_version,
                                  got.read_via, got.reason, got.ledgers, lf.compacting])  # fmt: skip
                    finally:
                        got.close()
                prog.logs_done += 1
                if cfg.progress is not None:
                    prog.seconds = time.monotonic() - t0
                    cfg.progress(prog)
            rows.finish()
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    skipped = writer.skipped_summary()
    counts["skipped"] = skipped["total"]
    errors = schema.errors_among(skipped["by_reason"])
    reads: list[IndexRead] = []
    with tempfile.TemporaryDirectory(prefix=".index-copy-", dir=out) as scratch:
        for idir in index_dirs:
            ir = read_local_index(idir, Path(scratch))
            reads.append(ir)
            writer.add_index_chunks(cfg.bookie_id, ir.index_dir, ir.chunks())  # before the scratch is removed
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
        "pages_released": pages_released,
    }
    write_manifest(out, manifest)
    return manifest


class _DirRows:
    """One ledger directory's ``entry_logs`` rows, written as they come but for the newest (mtime, id) plain log
    read so far, held back: at the directory's end it is the active log when it has no map (its reason
    ``no-map...`` becomes ``active...``). Equal keys keep the first, as ``max`` would."""

    def __init__(self, write: Callable[[tuple[Any, ...]], None]) -> None:
        self.write = write
        self.held: list[Any] | None = None

    def add(self, row: list[Any]) -> None:
        if row[13] or row[9] == schema.READ_SKIPPED:
            self.write(tuple(row))
        elif self.held is None:
            self.held = row
        elif (row[6], row[2]) > (self.held[6], self.held[2]):
            self.write(tuple(self.held))
            self.held = row
        else:
            self.write(tuple(row))

    def finish(self) -> None:
        if self.held is None:
            return
        reason = self.held[11]
        if isinstance(reason, str) and reason.startswith("no-map"):
            self.held[11] = "active" + reason[len("no-map") :]
        self.write(tuple(self.held))
        self.held = None
