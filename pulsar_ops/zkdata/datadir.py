"""Read a ZooKeeper data directory (or a copy / backup of one) into a replayed ``DataTree``. File reads only:
no network, no kazoo.

Which files, as upstream's ``persistence/FileTxnSnapLog.restore`` picks them:

* ``FileSnap.findNValidSnapshots`` / ``deserialize``: the snapshots (``snapshot.<hex zxid>[.gz|.snappy]``, zxid
  from the name: ``Util.getZxidFromName``) newest first; the first one that passes ``SnapStream.isValidSnapshot``
  and reads through its checksum(s) wins; a corrupt newest snapshot falls back to the previous one (upstream
  logs "problem reading snap file" and tries the next). The fallback is recorded, never silent. Two snapshots
  can carry the same zxid (e.g. one plain and one compressed after ``zookeeper.snapshot.compression.method``
  changed): the one written last (file mtime, then name) is tried first.
* ``FileTxnLog.getLogFiles(logDirList, snapshotZxid)``: the log whose starting zxid is the largest one <= the
  snapshot's, and every later log. Records below the snapshot's zxid are skipped (``FileTxnIterator.init``).
  The record *at* the snapshot's zxid is replayed too: the replay is idempotent, and a 3.4 snapshot taken
  during a multi is named after the multi's zxid while holding only part of it (ZOOKEEPER-3127; fixed in 3.6 by
  ``DataTree.processTxn`` updating ``lastProcessedZxid`` only after the whole multi).
* A log that ends with a partial record (the server died while appending) ends there and the next log is read,
  as ``FileTxnIterator.next`` does on EOF; in the last log that is where the replay stops. A checksum
  mismatch, an undecodable record or a gap in the zxids of one epoch stops the replay at the last complete
  transaction before it, and ``stop`` says where.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ZkDataDirError
from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata import txnlog as T
from pulsar_ops.zkdata.stream import (
    EMIT_BATCH,
    Emit,
    EmitMany,
    EmitPacked,
    Partial,
    PartlyEmitted,
    SnapshotFile,
    doomed,
    emit_replayed,
    load_partial,
    touched,
)
from pulsar_ops.zkdata.tree import DataTree

SNAP_PREFIX = "snapshot"  # FileSnap.SNAPSHOT_FILE_PREFIX
LOG_PREFIX = "log"  # FileTxnLog.LOG_FILE_PREFIX
VERSION_DIR = "version-2"  # FileTxnSnapLog.version + VERSION
MAX_SNAPSHOTS_TRIED = 100  # FileSnap.deserialize: "we run through 100 snapshots (not all of them)"


@dataclass
class DataDirState:
    """The replayed tree and how it was obtained (recorded in the snapshot manifest)."""

    tree: DataTree
    directory: str
    snapshot: str
    snapshot_zxid: int
    compression: str
    dbid: int
    sessions: int
    fallbacks: list[dict[str, str]] = field(default_factory=list)  # newer snapshots skipped, and why
    logs: list[str] = field(default_factory=list)
    stop: dict[str, Any] | None = None  # where and why the replay stopped early (None: every log read whole)
    partial_logs: list[dict[str, Any]] = field(default_factory=list)  # logs ending with a partial record
    log_directory: str | None = None  # the logs' directory when it is not ``directory`` (zoo.cfg dataLogDir)

    @property
    def zxid(self) -> int:
        return self.tree.zxid

    @property
    def last_txn_time_ms(self) -> int | None:
        return self.tree.stats.last_time_ms

    def to_json(self) -> dict[str, Any]:
        t = self.tree
        doc: dict[str, Any] = {
            "directory": self.directory,
            "snapshot": self.snapshot,
            "snapshot_zxid": self.snapshot_zxid,
            "snapshot_compression": self.compression or "none",
            "dbid": self.dbid,
            "sessions": self.sessions,
            "fallbacks": self.fallbacks,
            "logs": self.logs,
            "log_directory": self.log_directory or self.directory,
            "replayed_txns": t.stats.applied,
            "ignored_op_failures": t.stats.ignored_errors,
            "failed_multis": t.stats.failed_multis,
            "zxid": self.zxid,
            "last_txn_time_ms": self.last_txn_time_ms,
            "stopped_early": self.stop,
            "partial_logs": self.partial_logs,
        }
        chk = t.pending_digest
        doc["digest"] = (
            None
            if chk is None
            else {"zxid": chk.zxid, "expected": chk.expected, "computed": chk.computed, "matched": chk.matched}
        )
        return doc


def _files(d: Path, prefix: str) -> list[tuple[int, Path]]:
    out = []
    for p in d.iterdir():
        z = S.zxid_from_name(p.name, prefix)
        if z >= 0 and p.is_file():
            out.append((z, p))
    return out


def locate(directory: Path) -> Path:
    """The directory holding the snapshot and log files: ``DIR/version-2`` (a dataDir), or DIR itself."""
    d = Path(directory)
    if not d.is_dir():
        raise ZkDataDirError(f"{d} is not a directory")
    v2 = d / VERSION_DIR
    if v2.is_dir():
        return v2
    if _files(d, SNAP_PREFIX) or _files(d, LOG_PREFIX):
        return d
    raise ZkDataDirError(
        f"{d} holds no ZooKeeper data: neither {VERSION_DIR}/ nor snapshot.* / log.* files",
        hint="pass the server's dataDir (zoo.cfg dataDir=), the directory holding version-2/",
    )


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError as e:
        raise ZkDataDirError(f"cannot read {p}: {e.strerror or e}") from e


def load_snapshot_file(p: Path) -> tuple[DataTree, S.SnapshotHeader, S.SnapshotTrailer, str]:
    """One snapshot file into a tree (raises SnapshotCorrupt)."""
    raw = _read(p)
    comp = S.compression_of(p.name)
    if not S.looks_valid(raw, comp):
        raise S.SnapshotCorrupt("fails upstream's isValidSnapshot (no compression magic or no trailing '/')")
    buf = S.decompress(raw, comp)
    del raw
    stream = S.SnapshotStream(buf)
    header = stream.header()
    # the digest is only computed when the file has one: a pass over the stream's tail first tells
    tree = DataTree.load(stream.nodes(), with_digest=True)
    trailer = stream.trailer()
    _point_tree(tree, trailer, S.zxid_from_name(p.name, SNAP_PREFIX))
    return tree, header, trailer, comp


def _point_tree(tree: DataTree, trailer: S.SnapshotTrailer, snap_zxid: int) -> None:
    tree.zxid = snap_zxid
    d = trailer.digest
    # DataTree.deserializeZxidDigest: a zero zxid is "empty"; a digest older than the snapshot is not compared
    if d is not None and d.zxid > 0 and d.zxid >= snap_zxid and d.version == 2:
        tree.expect_digest(d.zxid, d.digest)
    else:
        tree.digest = None


def _snapshot_arg(path: Path) -> Path:
    """The ``--zk-snapshot FILE`` argument checked (the one home of these checks for both readers): a file named
    ``snapshot.<hex zxid>[.gz|.snappy]``."""
    p = Path(path)
    if not p.is_file():
        raise ZkDataDirError(f"{p} is not a file", hint="pass --zk-snapshot DIR/version-2/snapshot.<zxid>")
    if S.zxid_from_name(p.name, SNAP_PREFIX) < 0:
        raise ZkDataDirError(
            f"{p.name} is not named snapshot.<hex zxid>[.gz|.snappy]",
            hint="keep the file's name: its zxid and compression come from it (upstream Util.getZxidFromName)",
        )
    return p


@contextlib.contextmanager
def _reading_snapshot_arg(p: Path) -> Iterator[None]:
    """A ``--zk-snapshot FILE`` that cannot be read or is not a valid snapshot: ZkDataDirError."""
    try:
        yield
    except OSError as e:
        raise ZkDataDirError(f"cannot read {p}: {e.strerror or e}") from e
    except S.SnapshotCorrupt as e:
        raise ZkDataDirError(f"{p} is not a valid snapshot: {e}", hint="pass an older snapshot file") from None


def read_snapshot_only(path: Path) -> DataDirState:
    """``--zk-snapshot FILE``: one snapshot, no logs (its point in time is the zxid in its name)."""
    p = _snapshot_arg(path)
    with _reading_snapshot_arg(p):
        tree, header, _trailer, comp = load_snapshot_file(p)
    return DataDirState(tree, str(p.parent), p.name, tree.zxid, comp, header.dbid, len(header.sessions))


def _epoch(zxid: int) -> int:
    return zxid >> 32


def read_data_dir(directory: Path) -> DataDirState:
    d = locate(directory)
    snaps = _files(d, SNAP_PREFIX)
    if not snaps:
        raise ZkDataDirError(
            f"{d} holds no snapshot.* file (an empty or never-started data directory)",
            hint="pass the dataDir of a server that has run (it writes snapshot.0 when it first starts)",
        )
    snaps.sort(key=lambda zp: (zp[0], zp[1].stat().st_mtime_ns, zp[1].name), reverse=True)
    fallbacks: list[dict[str, str]] = []
    chosen = None
    for _z, p in snaps[:MAX_SNAPSHOTS_TRIED]:
        try:
            chosen = (p, *load_snapshot_file(p))
            break
        except S.SnapshotCorrupt as e:
            fallbacks.append({"snapshot": p.name, "reason": str(e)})
    if chosen is None:
        raise ZkDataDirError(
            f"{d}: no valid snapshot ({len(fallbacks)} tried: "
            + "; ".join(f"{f['snapshot']}: {f['reason']}" for f in fallbacks[:3])
            + ")",
            hint="restore the data directory from another server or an older backup",
        )
    p, tree, header, _trailer, comp = chosen
    state = DataDirState(tree, str(d), p.name, tree.zxid, comp, header.dbid, len(header.sessions), fallbacks)
    _replay_logs(d, state)
    return state


@dataclass
class LogTail:
    """The transactions to replay after a snapshot, in order, and where reading them stopped."""

    txns: list[T.Txn] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    stop: dict[str, Any] | None = None
    partial_logs: list[dict[str, Any]] = field(default_factory=list)


def collect_logs(d: Path, snap_zxid: int) -> LogTail:
    """The transactions after ``snap_zxid`` (``FileTxnLog.getLogFiles`` + ``FileTxnIterator``), read file by file
    (never a whole log in memory), up to the last complete one."""
    tail = LogTail()
    logs = sorted(_files(d, LOG_PREFIX))
    start = 0
    for z, _p in logs:  # FileTxnLog.getLogFiles
        if z > snap_zxid:
            break
        start = max(start, z)
    prev = snap_zxid
    todo = [(z, p) for z, p in logs if z >= start]
    txns = tail.txns
    for i, (_z, p) in enumerate(todo):
        last = i == len(todo) - 1
        tail.logs.append(p.name)
        try:
            with open(p, "rb") as f:
                records, end = T.read_log_file(f, os.fstat(f.fileno()).st_size, start_zxid=snap_zxid)
        except OSError as e:
            raise ZkDataDirError(f"cannot read {p}: {e.strerror or e}") from e
        except T.TxnLogCorrupt as e:
            tail.stop = {"log": p.name, "offset": 0, "reason": "bad-header", "detail": str(e), "zxid": prev}
            return tail
        for rec in records:
            z = rec.txn.zxid
            if z <= prev and not (z == snap_zxid and not txns):
                continue  # already applied (overlapping logs)
            if z > prev + 1 and _epoch(z) == _epoch(prev) and prev != 0:
                tail.stop = {
                    "log": p.name,
                    "offset": rec.offset,
                    "reason": "gap",
                    "detail": f"zxid {prev + 1:#x}..{z - 1:#x} missing (a log file is missing?)",
                    "zxid": prev,
                }
                return tail
            txns.append(rec.txn)
            prev = max(prev, z)
        if end.reason == "partial" and not last:
            tail.partial_logs.append({"log": p.name, "offset": end.offset, "detail": end.detail, "zxid": prev})
        elif not end.clean:  # a partial record at the end of the last log is where the replay ends
            tail.stop = {"log": p.name, "offset": end.offset, "reason": end.reason, "detail": end.detail, "zxid": prev}
            return tail
    return tail


def _replay_logs(d: Path, state: DataDirState) -> None:
    tail = collect_logs(d, state.snapshot_zxid)
    for txn in tail.txns:
        state.tree.apply(txn)
    state.logs, state.stop, state.partial_logs = tail.logs, tail.stop, tail.partial_logs


@dataclass
class Streamed:
    """A data directory read in streaming mode (``zkdata.stream``): the replayed partial tree in ``state.tree``,
    and the snapshot file pass 2 streams again."""

    state: DataDirState
    part: Partial
    snapshot_file: Path
    emitted: bool = False  # one-pass mode: every node under the roots was emitted (no pass 2)


@dataclass(frozen=True)
class OnePass:
    """One-pass mode's arguments: the walked roots (snapshot path -> store) and where the nodes go."""

    roots: dict[str, str]
    emit: Emit
    emit_many: EmitMany | None = None  # pass 1's nodes a list at a time (``load_partial``); None: by ``emit``
    batch: int = EMIT_BATCH  # at most this many per ``emit_many`` call
    # the native walk's lists as packed chunks instead (``load_partial``), their paths without the first ``cut`` chars
    emit_packed: EmitPacked | None = None
    cut: int = 0


def _load_streamed(
    p: Path, tail: LogTail | None, keep: set[str], keep_children: set[str], one: OnePass | None = None
) -> tuple[Partial, S.SnapshotHeader]:
    txns = tail.txns if tail is not None else []
    paths, sessions = touched(txns)
    with SnapshotFile(p) as snap:
        part, header, trailer = load_partial(
            snap,
            paths | keep,
            keep_children,
            sessions,
            roots=None if one is None else one.roots,
            emit=None if one is None else one.emit,
            doomed_paths=None if one is None else doomed(txns),
            emit_many=None if one is None else one.emit_many,
            emit_batch=EMIT_BATCH if one is None else one.batch,
            emit_packed=None if one is None else one.emit_packed,
            cut=0 if one is None else one.cut,
        )
    _point_tree(part.tree, trailer, S.zxid_from_name(p.name, SNAP_PREFIX))
    return part, header


def stream_data_dir(
    directory: Path,
    keep: set[str],
    keep_children: set[str],
    log_directory: Path | None = None,
    one: OnePass | None = None,
) -> Streamed:
    """``read_data_dir`` without the whole tree in memory: the same snapshot choice (a corrupt newest snapshot
    falls back, recorded), the same logs and replay, on a partial tree holding ``keep`` (snapshot paths, the
    root is ``""``), the children of ``keep_children`` and whatever the replay touches. ``log_directory``: the
    transaction logs' directory when the server keeps them apart (zoo.cfg ``dataLogDir``; ``FileTxnSnapLog``
    takes the snapshots from ``dataDir/version-2`` and the logs from ``dataLogDir/version-2``).

    ``one`` (one-pass mode, ``zkdata.stream``): the newest snapshot's nodes are emitted as it is verified, the
    rest after the replay (``Streamed.emitted``). A corrupt newest snapshot found before anything was emitted
    falls back as above (in two passes); found after, it raises ``PartlyEmitted``: the caller discards what it
    received and calls again without ``one``."""
    d = locate(directory)
    dl = d if log_directory is None else locate(log_directory)
    snaps = _files(d, SNAP_PREFIX)
    if not snaps:
        raise ZkDataDirError(
            f"{d} holds no snapshot.* file (an empty or never-started data directory)",
            hint="pass the dataDir of a server that has run (it writes snapshot.0 when it first starts)",
        )
    snaps.sort(key=lambda zp: (zp[0], zp[1].stat().st_mtime_ns, zp[1].name), reverse=True)
    fallbacks: list[dict[str, str]] = []
    tails: dict[int, LogTail] = {}
    for i, (z, p) in enumerate(snaps[:MAX_SNAPSHOTS_TRIED]):
        tail = tails.get(z)
        if tail is None:
            tail = tails[z] = collect_logs(dl, z)
        mode = one if i == 0 else None
        try:
            part, header = _load_streamed(p, tail, keep, keep_children, mode)
        except OSError as e:
            raise ZkDataDirError(f"cannot read {p}: {e.strerror or e}") from e
        except PartlyEmitted:
            raise
        except S.SnapshotCorrupt as e:
            fallbacks.append({"snapshot": p.name, "reason": str(e)})
            continue
        tree = part.tree
        state = DataDirState(
            tree, str(d), p.name, tree.zxid, S.compression_of(p.name), header.dbid, len(header.sessions), fallbacks
        )
        for txn in tail.txns:
            tree.apply(txn)
        state.logs, state.stop, state.partial_logs = tail.logs, tail.stop, tail.partial_logs
        state.log_directory = str(dl) if dl != d else None
        if mode is not None:
            emit_replayed(part, mode.roots, mode.emit)
        return Streamed(state, part, p, emitted=mode is not None)
    raise ZkDataDirError(
        f"{d}: no valid snapshot ({len(fallbacks)} tried: "
        + "; ".join(f"{f['snapshot']}: {f['reason']}" for f in fallbacks[:3])
        + ")",
        hint="restore the data directory from another server or an older backup",
    )


def stream_snapshot_only(path: Path, keep: set[str], keep_children: set[str], one: OnePass | None = None) -> Streamed:
    """``read_snapshot_only`` in streaming mode (``one``: as in :func:`stream_data_dir`; a corrupt file is an
    error either way, ``PartlyEmitted`` included, as the caller must discard what it received)."""
    p = _snapshot_arg(path)
    with _reading_snapshot_arg(p):
        part, header = _load_streamed(p, None, keep, keep_children, one)
    tree = part.tree
    state = DataDirState(
        tree, str(p.parent), p.name, tree.zxid, S.compression_of(p.name), header.dbid, len(header.sessions)
    )
    if one is not None:
        emit_replayed(part, one.roots, one.emit)
    return Streamed(state, part, p, emitted=one is not None)


def describe_size(directory: Path) -> int:
    """Total bytes of the snapshot and log files (for the bench's report)."""
    d = locate(directory)
    return sum(os.path.getsize(p) for _z, p in _files(d, SNAP_PREFIX) + _files(d, LOG_PREFIX))


__all__ = [
    "DataDirState",
    "LogTail",
    "OnePass",
    "Streamed",
    "collect_logs",
    "load_snapshot_file",
    "locate",
    "read_data_dir",
    "read_snapshot_only",
    "stream_data_dir",
    "stream_snapshot_only",
]
