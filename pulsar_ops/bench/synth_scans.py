"""`pulsar-ops bench synth-scans`: SYNTHETIC bookie scans of a snapshot, for timing the storage stage at scale.

Seeding 600,000 topics with their bookies' directories and scanning them takes 40+ minutes; the storage stage only
needs what `scan-bookie` would have written. This writes, for each bookie named in the snapshot's ``bk_ledgers``
(``bookies`` column), the scan directory a real scan of that bookie would produce: the same three Parquet tables
(``bookiescan/schema.py``, through ``bookiescan.writer``'s Arrow schemas) and a ``manifest.json`` that
``audit/bookie_scans.read_scan`` accepts. Nothing is read from a disk: it is a model, marked ``synthetic`` in
its manifest, never a substitute for a scan when auditing a real cluster.

The layout it models (bookie-storage.md; DbLedgerStorage with two ledger directories, a ledger in directory
``ledgerId mod 2``; logs of ``logSizeLimit`` = 1 GiB):

* every (ledger, bookie of its ensembles) of a closed ledger holds ``length * Q / members`` bytes, written into
  the directory's logs in ctime order; a ledger crossing a log's end is split over two (or more) logs; a log's
  mtime is the newest ctime in it, never later than one hour before the scrape started; every third log has no
  ledgers map (``read_via`` scan, reason ``no-map``), as after a crash before rollover;
* an open ledger's first three entries (124 bytes each) are in its directory's active log (no map, written a
  minute before the scan started);
* the local index lists every ledger with bytes on the bookie.

Planted storage defects (each returned as ground truth, :class:`Planted`), per bookie and directory:

* log 1, ten days old: only deleted ledgers (ids above every id in the snapshot), half still in the local
  index: ``unreclaimed-ledger-data`` per (bookie, ledger), ``stale-entry-log`` (0 % live);
* log 2, ten days old: deleted ledgers' bytes and 10 % of one live ledger: ``unreclaimed-ledger-data`` and
  ``stale-entry-log`` (below the minor threshold);
* per bookie, ``missing`` closed single-ensemble ledgers (at least E entries, older than a day) left out of its
  logs and index: ``ledger-data-missing``.

Columnar (numpy and pyarrow) throughout: 9.1M (ledger, bookie) pairs of the 600K snapshot take seconds.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from pulsar_ops import __version__
from pulsar_ops.audit.manifest import read_manifest
from pulsar_ops.bookiescan import schema
from pulsar_ops.bookiescan.writer import _int64, _repeat, arrow_schema, write_manifest
from pulsar_ops.errors import ConfigError

LOG_BYTES = 1 << 30  # logSizeLimit's default
DIRS = 2
ENTRY = 124  # an open ledger's entry as its active log holds it: 100 bytes of payload, 8 + 8 + 4 framing
OPEN_ENTRIES = 3
FIRST_LOG = 16  # ids of the healthy logs start here; 1 and 2 are the planted old logs
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
SCAN_AFTER_MS = 60_000  # the scans start this long after the scrape finished
MARK = "synthetic: pulsar-ops bench synth-scans (a model of a scan, not read from a bookie's disk)"

I64 = npt.NDArray[np.int64]


@dataclass
class Planted:
    """What the audit over the synthetic scans must find (beside nothing else of the storage kinds)."""

    unreclaimed: set[tuple[str, int]] = field(default_factory=set)  # (bookie, ledger id)
    stale: set[str] = field(default_factory=set)  # finding path: <bookie>:<ledger_dir>/<file>
    missing: set[tuple[int, str]] = field(default_factory=set)  # (ledger id, bookie)

    def to_json(self) -> dict[str, Any]:
        return {
            "unreclaimed-ledger-data": sorted([b, lid] for b, lid in self.unreclaimed),
            "stale-entry-log": sorted(self.stale),
            "ledger-data-missing": sorted([lid, b] for lid, b in self.missing),
        }


@dataclass
class SynthResult:
    scans: list[Path]
    planted: Planted
    pairs: int
    logs: int
    seconds: float


def slug(bookie: str) -> str:
    return bookie.replace(":", "_").replace("/", "_")


def _i64(a: Any) -> I64:
    return np.asarray(a, dtype=np.int64)


def _ledgers(snapshot: Path) -> pa.Table:
    d = Path(snapshot) / "tables" / "bk_ledgers"
    if not d.is_dir() or not any(d.glob("*.parquet")):
        raise ConfigError(
            f"--snapshot {snapshot}: no bk_ledgers table (not a pulsar-ops snapshot, or /ledgers was empty)",
            hint="scrape the cluster first: `pulsar-ops scrape --out DIR`",
        )
    cols = ["ledger_id", "state", "last_entry_id", "length", "ensemble_size", "write_quorum", "bookies", "ctime_ms"]
    return ds.dataset(d, format="parquet").to_table(columns=cols)


def synthesize(
    snapshot: Path,
    out: Path,
    bookies: int | None = None,
    *,
    missing: int = 3,
    deleted_per_log: int = 20,
    log_bytes: int = LOG_BYTES,
    seed: int = 1,
) -> SynthResult:
    """Write one synthetic scan per bookie (the first ``bookies`` by name; all when None) under ``out/<bookie>``."""
    t0 = time.monotonic()
    manifest = read_manifest(Path(snapshot))  # the refusals of every snapshot reader
    snap_started = int(manifest["started_at_ms"])
    scan_at = int(manifest["finished_at_ms"]) + SCAN_AFTER_MS
    t = _ledgers(snapshot)
    lists = t.column("bookies").combine_chunks()
    members = pc.list_flatten(lists).dictionary_encode()
    parent = _i64(pc.list_parent_indices(lists))
    names = [str(x) for x in members.dictionary.to_pylist()]
    order = sorted(range(len(names)), key=lambda i: names[i])
    chosen = order if bookies is None else order[:bookies]
    if not chosen:
        raise ConfigError(f"--snapshot {snapshot}: no bookie in bk_ledgers", hint="scrape a cluster with ledgers")
    code = _i64(members.indices)
    lid_all = _i64(t.column("ledger_id"))
    closed_all = np.asarray(pc.equal(t.column("state"), "CLOSED").to_numpy(zero_copy_only=False), dtype=bool)
    last_all = _i64(t.column("last_entry_id"))
    ctime_all = _i64(t.column("ctime_ms"))
    nmem = _i64(pc.list_value_length(lists))
    e_all = _i64(t.column("ensemble_size"))
    q_all = _i64(t.column("write_quorum"))
    share = np.maximum(_i64(t.column("length")) * q_all // np.maximum(nmem, 1), ENTRY)
    pairs_lid, pairs_closed = lid_all[parent], closed_all[parent] & (last_all[parent] >= 0)
    pairs_bytes = np.where(pairs_closed, share[parent], OPEN_ENTRIES * ENTRY)
    pairs_ctime = ctime_all[parent]
    rng = np.random.default_rng(seed)
    planted = Planted()
    next_deleted = int(lid_all.max(initial=0)) + 1_000
    out = Path(out)
    scans: list[Path] = []
    total_pairs = total_logs = 0
    eligible = closed_all & (nmem == e_all) & (last_all + 1 >= e_all) & (ctime_all <= scan_at - DAY_MS)
    for bi, c in enumerate(chosen):
        bookie = names[c]
        here = code == c
        drop = np.zeros(int(here.sum()), dtype=bool)
        cand = np.flatnonzero(eligible[parent[here]])
        if missing and cand.size:
            pick = rng.choice(cand, size=min(missing, cand.size), replace=False)
            drop[pick] = True
            planted.missing.update((int(x), bookie) for x in pairs_lid[here][pick])
        keep = ~drop
        lid = pairs_lid[here][keep]
        closed = pairs_closed[here][keep]
        nbytes = pairs_bytes[here][keep]
        ctime = pairs_ctime[here][keep]
        logger = schema.LOGGER_DIRECT if bi % 2 else schema.LOGGER_DEFAULT
        dirs = [f"/data/bookkeeper/ledgers-{d}" for d in range(DIRS)]
        logs: list[dict[str, Any]] = []
        pair_parts: list[tuple[str, I64, I64, I64]] = []
        index_parts: list[tuple[str, I64]] = []
        for d, ledger_dir in enumerate(dirs):
            in_dir = lid % DIRS == d
            cl = np.flatnonzero(in_dir & closed)
            cl = cl[np.lexsort((lid[cl], ctime[cl]))]
            p_log, p_lid, p_bytes, l_ids, l_mtime = _split_logs(lid[cl], nbytes[cl], ctime[cl], log_bytes)
            l_mtime = np.minimum(l_mtime, snap_started - HOUR_MS)
            last_log = int(l_ids.max(initial=FIRST_LOG - 1))
            deleted, dead_lids, dead_bytes, dead_logs = _planted_logs(
                next_deleted, deleted_per_log, lid[cl], nbytes[cl]
            )
            next_deleted += len(deleted)
            op = np.flatnonzero(in_dir & ~closed)
            active = last_log + 1
            all_log = np.concatenate([p_log, dead_logs, np.full(op.size, active, dtype=np.int64)])
            all_lid = np.concatenate([p_lid, dead_lids, lid[op]])
            all_bytes = np.concatenate([p_bytes, dead_bytes, nbytes[op]])
            pair_parts.append((ledger_dir, all_log, all_lid, all_bytes))
            in_index = np.concatenate([np.unique(lid[in_dir]), _i64(deleted[::2])])
            index_parts.append((ledger_dir, in_index))
            planted.unreclaimed.update((bookie, int(x)) for x in deleted)
            for lg in (1, 2):
                planted.stale.add(f"{bookie}:{ledger_dir}/current/{lg:x}.log")
            mtimes = {int(i): int(m) for i, m in zip(l_ids, l_mtime, strict=True)}
            mtimes.update({1: scan_at - 10 * DAY_MS, 2: scan_at - 10 * DAY_MS, active: scan_at - 60_000})
            logs += _log_rows(bookie, ledger_dir, d, bi, logger, all_log, all_lid, all_bytes, mtimes, active)
        target = out / slug(bookie)
        n = _write_scan(target, bookie, dirs, logs, pair_parts, index_parts, logger, scan_at)
        total_pairs += n
        total_logs += len(logs)
        scans.append(target)
    return SynthResult(scans, planted, total_pairs, total_logs, round(time.monotonic() - t0, 2))


def _split_logs(lid: I64, nbytes: I64, ctime: I64, log_bytes: int) -> tuple[I64, I64, I64, I64, I64]:
    """Pairs written in order into logs of ``log_bytes``: (log id, ledger id, bytes) per part, and each log's id
    and mtime (its newest ledger's ctime)."""
    if lid.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e, e, e, e
    end = np.cumsum(nbytes)
    start = end - nbytes
    first = start // log_bytes
    last = (end - 1) // log_bytes
    parts = last - first + 1
    idx = np.repeat(np.arange(lid.size), parts)
    offset = np.arange(idx.size) - np.repeat(np.cumsum(parts) - parts, parts)
    log = first[idx] + offset
    lo = np.maximum(start[idx], log * log_bytes)
    hi = np.minimum(end[idx], (log + 1) * log_bytes)
    ids, first_at = np.unique(log, return_index=True)
    newest = np.maximum.reduceat(ctime[idx], first_at)
    return log + FIRST_LOG, lid[idx], hi - lo, ids + FIRST_LOG, _i64(newest)


def _planted_logs(next_id: int, per_log: int, live_lid: I64, live_bytes: I64) -> tuple[I64, I64, I64, I64]:
    """Logs 1 (deleted ledgers only) and 2 (deleted ledgers and 10 % of one live ledger): the deleted ids, and
    the pairs (ledger, bytes, log)."""
    deleted = np.arange(next_id, next_id + 2 * per_log, dtype=np.int64)
    each = 1 << 20
    lids = [deleted]
    sizes = [np.full(deleted.size, each, dtype=np.int64)]
    logs = [np.repeat(_i64([1, 2]), per_log)]
    if live_lid.size:
        lids.append(live_lid[:1])
        sizes.append(_i64([max(1, per_log * each // 9)]))  # 10 % of log 2 live
        logs.append(_i64([2]))
    return deleted, np.concatenate(lids), np.concatenate(sizes), np.concatenate(logs)


def _log_rows(
    bookie: str,
    ledger_dir: str,
    d: int,
    bi: int,
    logger: str,
    log: I64,
    lid: I64,
    nbytes: I64,
    mtimes: dict[int, int],
    active: int,
) -> list[dict[str, Any]]:
    """``entry_logs`` rows of one directory (a few thousand: per-log Python is fine here)."""
    ids, inv = np.unique(log, return_inverse=True)
    data = np.bincount(inv, weights=nbytes.astype(np.float64)).astype(np.int64)
    count = np.bincount(inv)
    header = 4096 if logger == schema.LOGGER_DIRECT else 1024
    rows = []
    for k, i in enumerate(ids.tolist()):
        with_map = i != active and (i % 3 != 1 or i <= 2)
        rows.append(
            {
                "bookie_id": bookie,
                "ledger_dir": ledger_dir,
                "log_id": i,
                "file": f"current/{i:x}.log",
                "file_bytes": int(data[k]) + header + (16 * int(count[k]) + 16 if with_map else 0),
                "data_bytes": int(data[k]),
                "mtime_ms": mtimes.get(i, 0),
                "inode": (bi * DIRS + d) * 10_000_000 + i,
                "logger": logger,
                "header_version": 1,
                "read_via": schema.READ_MAP if with_map else schema.READ_SCAN,
                "reason": None if with_map else ("active" if i == active else "no-map"),
                "ledgers": int(count[k]),
                "compacting": False,
            }
        )
    return rows


def _write_scan(
    target: Path,
    bookie: str,
    dirs: list[str],
    logs: list[dict[str, Any]],
    pair_parts: list[tuple[str, I64, I64, I64]],
    index_parts: list[tuple[str, I64]],
    logger: str,
    scan_at: int,
) -> int:
    target.mkdir(parents=True, exist_ok=True)
    name = schema.ENTRY_LOG_LEDGERS.name
    sch = arrow_schema(name)
    batches = [
        pa.record_batch(
            [_repeat(bookie, log.size), _repeat(ld, log.size), _int64(log), _int64(lid), _int64(nb)], schema=sch
        )
        for ld, log, lid, nb in pair_parts
    ]
    pairs = pa.Table.from_batches(batches, schema=sch)
    pq.write_table(pairs, target / schema.table_file(name), compression="zstd", row_group_size=1_000_000)
    name = schema.ENTRY_LOGS.name
    pq.write_table(
        pa.Table.from_pylist(logs, schema=arrow_schema(name)), target / schema.table_file(name), compression="zstd"
    )
    name = schema.LOCAL_INDEX.name
    sch = arrow_schema(name)
    index = []
    for ld, ids in index_parts:
        falses = pa.array(np.zeros(ids.size, dtype=bool))
        index.append(
            pa.record_batch(
                [
                    _repeat(bookie, ids.size),
                    _repeat(ld, ids.size),
                    _int64(ids),
                    pa.array(np.ones(ids.size, bool)),
                    falses,
                    falses,
                ],
                schema=sch,
            )
        )
    rows_index = sum(b.num_rows for b in index)
    pq.write_table(pa.Table.from_batches(index, schema=sch), target / schema.table_file(name), compression="zstd")
    name = schema.SKIPPED_LOGS.name
    pq.write_table(arrow_schema(name).empty_table(), target / schema.table_file(name), compression="zstd")
    counts = {"map": sum(1 for r in logs if r["read_via"] == schema.READ_MAP)}
    counts["scanned"] = len(logs) - counts["map"]
    counts["skipped"] = 0
    write_manifest(
        target,
        {
            "format": schema.FORMAT,
            "format_version": schema.FORMAT_VERSION,
            "tool_version": __version__,
            "synthetic": MARK,
            "bookie_id": bookie,
            "ledger_dirs": dirs,
            "index_dirs": dirs,
            "started_at_ms": scan_at,
            "finished_at_ms": scan_at + 1_000,
            "complete": True,
            "index": {
                "status": schema.INDEX_READ,
                "reason": None,
                "binding": "synthetic",
                "dirs": [
                    {"index_dir": ld, "status": schema.INDEX_READ, "reason": None, "rows": int(ids.size)}
                    for ld, ids in index_parts
                ],
            },
            "logs": counts,
            "skipped": {"total": 0, "by_reason": {}, "first": [], "table": schema.table_file(name)},
            "tables": {
                schema.ENTRY_LOGS.name: len(logs),
                schema.ENTRY_LOG_LEDGERS.name: pairs.num_rows,
                schema.LOCAL_INDEX.name: rows_index,
                schema.SKIPPED_LOGS.name: 0,
            },
            "settings": {"max_scan_mb_s": 0},
            "bookie_config": None,
            "last_ids": {ld: max((r["log_id"] for r in logs if r["ledger_dir"] == ld), default=None) for ld in dirs},
            "bytes_scanned": 0,
            "bytes_read_headers_and_maps": 0,
            "throttled_s": 0.0,
            "pages_released": 0,
            "logger": logger,
            "pid": os.getpid(),
        },
    )
    return int(pairs.num_rows)
