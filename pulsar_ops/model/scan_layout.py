"""Measured entry-log layouts: a bookie's ``scan-bookie`` output read into what the GC model needs.

A scan directory (contract: ``pulsar_ops/bookiescan/schema.py``) holds ``entry_logs.parquet``,
``entry_log_ledgers.parquet`` and ``manifest.json`` (written last). :func:`read_scan` validates the manifest and
reads both tables into arrays; :func:`measured_bookie_layout` turns one scan into a :class:`BookieLayout` for a
given deletion schedule. A log is identified by (bookie, ledger_dir, log_id): DbLedgerStorage runs one entry
logger per ledger directory (upstream ``bookie/storage/ldb/DbLedgerStorage.java`` ``initialize`` builds one
``SingleDirectoryDbLedgerStorage`` per ``ledgerDirectories`` entry, each with its own entry logger), so one id can
exist in two directories.

What goes into the layout, per ledger directory:

* every entry log that was read (``read_via`` map or scan), its total the scanned ``data_bytes`` (sum of
  ``L + 4`` over its entries, as upstream's ``EntryLogMetadata`` counts them; never less than its ledgers' sum);
* the log that ``scan-bookie`` marked ``active`` (no map, the newest of its directory) is the active log: GC
  never deletes or compacts it (upstream ``bookie/GarbageCollectorThread.java`` ``extractMetaFromEntryLogs``
  takes only ``entryLogger.getFlushedLogIds()``);
* not: transactional-compaction files (their entries are copies of another log's), logs that vanished during
  the scan (GC deleted them), logs skipped for an error (their ledgers are unknown: said in the notes, and the
  scan's manifest then says it is incomplete).

Ledgers found on the disk but absent from the snapshot's metadata (already deleted, or created after the
snapshot) are kept as live bytes: the model never frees data it cannot attribute to a planned deletion, and the
audit's ``unreclaimed-ledger-data`` finding is the place that tells which they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pulsar_ops.bookiescan import schema
from pulsar_ops.errors import ModelError
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import BookieLayout, Layout

I64 = npt.NDArray[np.int64]
BoolArr = npt.NDArray[np.bool_]

_HINT = "pass the OUT directory of a finished `pulsar-ops scan-bookie --ledger-dirs DIR --bookie-id ID --out OUT`"
_LOG_ID_BITS = 32  # upstream log ids are ints; the (dir, id) key packs them below the directory index


@dataclass
class BookieScan:
    """One scan: the logs the GC model can use and their (ledger, bytes) pairs."""

    path: str
    bookie_id: str
    complete: bool
    finished_at_ms: int
    ledger_dirs: tuple[str, ...]
    log_dirs: I64  # per log: index into ledger_dirs
    log_ids: I64
    data_bytes: I64
    active: BoolArr
    pair_log: I64  # per (log, ledger) pair: index into the log arrays
    pair_ledger: I64
    pair_bytes: I64
    notes: list[str] = field(default_factory=list)
    # ``scan-bookie --bookie-config``: the GC keys the file sets (manifest ``bookie_config.gc``) and the file;
    # None: the scan was not given the bookie's configuration (or predates recording its GC keys)
    config_gc: dict[str, str] | None = None
    config_source: str | None = None

    @property
    def n_logs(self) -> int:
        return int(self.log_ids.shape[0])

    def source_json(self) -> dict[str, Any]:
        return {
            "source": "measured",
            "scan": self.path,
            "complete": self.complete,
            "scan_finished_at_ms": self.finished_at_ms,
            "ledger_dirs": list(self.ledger_dirs),
            "entry_logs": self.n_logs,
            "data_bytes": int(self.data_bytes.sum()),
            "notes": list(self.notes),
        }


def _bad(path: Path, why: str) -> ModelError:
    return ModelError(f"--bookie-scan {path}: {why}", hint=_HINT)


def _manifest(path: Path) -> dict[str, Any]:
    mf = path / schema.MANIFEST_NAME
    try:
        doc = json.loads(mf.read_text())
    except FileNotFoundError:
        raise _bad(path, f"no {schema.MANIFEST_NAME} (not a scan directory, or the scan did not finish)") from None
    except OSError as e:
        raise _bad(path, f"cannot read {schema.MANIFEST_NAME}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise _bad(path, f"{schema.MANIFEST_NAME} is not valid JSON: {e.msg}") from None
    if not isinstance(doc, dict) or doc.get("format") != schema.FORMAT:
        raise _bad(path, f"{schema.MANIFEST_NAME} is not a {schema.FORMAT} manifest")
    if doc.get("format_version") not in schema.READ_VERSIONS:
        raise _bad(
            path,
            f"scan format version {doc.get('format_version')!r}; this pulsar-ops reads "
            + ", ".join(map(str, schema.READ_VERSIONS)),
        )
    if not isinstance(doc.get("bookie_id"), str) or not doc["bookie_id"]:
        raise _bad(path, "the manifest has no bookie_id")
    return doc


def _read_table(path: Path, name: str, columns: Sequence[str]) -> dict[str, Any]:
    import pyarrow.parquet as pq

    f = path / schema.table_file(name)
    try:
        t = pq.read_table(f, columns=list(columns))
    except FileNotFoundError:
        raise _bad(path, f"{schema.table_file(name)} is missing") from None
    except Exception as e:  # pyarrow raises ArrowInvalid, OSError, KeyError for a damaged table
        raise _bad(path, f"cannot read {schema.table_file(name)}: {e}") from None
    return {c: t.column(c) for c in columns}


def _ints(col: Any) -> I64:
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)


def read_scan(path: Path) -> BookieScan:
    """Validate a scan directory's manifest and read its entry-log tables. Incomplete scans are read too (their
    notes say why); a directory without a manifest, of another format or with a damaged table is refused."""
    path = Path(path)
    doc = _manifest(path)
    notes: list[str] = []
    complete = bool(doc.get("complete"))
    if not complete:
        errs = schema.skipped_errors(doc)
        why = [f"{errs} log(s) not read"] if errs else []
        idx = doc.get("index") or {}
        if isinstance(idx, dict) and idx.get("status") in (schema.INDEX_ERROR, schema.INDEX_UNAVAILABLE):
            why.append(f"local index {idx.get('status')}")
        notes.append(
            "incomplete scan (" + (", ".join(why) or "see its manifest") + "): the layout holds only what was read"
        )
    logs = _read_table(
        path, "entry_logs", ("ledger_dir", "log_id", "data_bytes", "read_via", "reason", "compacting", "file_bytes")
    )
    pairs = _read_table(path, "entry_log_ledgers", ("ledger_dir", "log_id", "ledger_id", "bytes"))
    dirs_cfg = [str(d) for d in doc.get("ledger_dirs") or ()]
    ldir = [str(x) for x in logs["ledger_dir"].to_pylist()]
    dirs = tuple(dict.fromkeys([*dirs_cfg, *ldir]))
    dir_index = {d: i for i, d in enumerate(dirs)}
    read_via = logs["read_via"].to_pylist()
    reason = logs["reason"].to_pylist()
    compacting = np.asarray(logs["compacting"].to_pylist(), dtype=np.bool_)
    file_bytes = _ints(logs["file_bytes"])
    skipped = np.asarray([v == schema.READ_SKIPPED for v in read_via], dtype=np.bool_)
    vanished = np.asarray([r == "vanished" for r in reason], dtype=np.bool_)
    unread = skipped & ~vanished & ~compacting
    if unread.any():
        notes.append(
            f"{int(unread.sum())} entry log(s) ({int(file_bytes[unread].sum())} file bytes) skipped for an error: "
            "their ledgers are unknown and they are left out of the layout"
        )
    keep = ~compacting & ~skipped
    dir_arr = np.asarray([dir_index[d] for d in ldir], dtype=np.int64)[keep]
    ids = _ints(logs["log_id"])[keep]
    data = _ints(logs["data_bytes"])[keep]
    active = np.asarray([isinstance(r, str) and r.startswith("active") for r in reason], dtype=np.bool_)[keep]
    if ids.size and (ids.min() < 0 or ids.max() >= 1 << _LOG_ID_BITS):
        raise _bad(path, "an entry-log id outside 0..2^32-1")
    key = (dir_arr << _LOG_ID_BITS) | ids
    order = np.argsort(key, kind="stable")
    if key.size and (np.diff(key[order]) == 0).any():
        raise _bad(path, "the same (ledger_dir, log_id) listed twice in entry_logs")
    p_dir_names = [str(x) for x in pairs["ledger_dir"].to_pylist()]
    p_dir = np.asarray([dir_index.get(d, -1) for d in p_dir_names], dtype=np.int64)
    p_log = _ints(pairs["log_id"])
    p_key = np.where((p_dir >= 0) & (p_log >= 0) & (p_log < 1 << _LOG_ID_BITS), (p_dir << _LOG_ID_BITS) | p_log, -1)
    if key.size:
        pos_c = np.minimum(np.searchsorted(key[order], p_key), key.size - 1)
        found = (p_key >= 0) & (key[order][pos_c] == p_key)
    else:
        pos_c = np.zeros(p_key.size, dtype=np.int64)
        found = np.zeros(p_key.size, dtype=np.bool_)
    if (~found).any():
        notes.append(f"{int((~found).sum())} (log, ledger) row(s) name a log not read or not listed: ignored")
    pair_log = order[pos_c][found].astype(np.int64) if key.size else np.zeros(0, np.int64)
    pair_ledger = _ints(pairs["ledger_id"])[found]
    pair_bytes = _ints(pairs["bytes"])[found]
    summed = np.bincount(pair_log, weights=pair_bytes, minlength=ids.size).astype(np.int64)
    data = np.maximum(data, summed)
    config_gc, config_source = _config_gc(doc.get("bookie_config"), path)
    return BookieScan(
        path=str(path),
        bookie_id=str(doc["bookie_id"]),
        complete=complete,
        finished_at_ms=int(doc.get("finished_at_ms") or 0),
        ledger_dirs=dirs,
        log_dirs=dir_arr,
        log_ids=ids,
        data_bytes=data,
        active=active,
        pair_log=pair_log,
        pair_ledger=pair_ledger,
        pair_bytes=pair_bytes,
        notes=notes,
        config_gc=config_gc,
        config_source=config_source,
    )


def _config_gc(doc: Any, path: Path) -> tuple[dict[str, str] | None, str | None]:
    """The manifest's ``bookie_config.gc`` (GC keys -> string values) and ``bookie_config.source``; (None, None)
    without a configuration or from a scan-bookie that did not record its GC keys."""
    if not isinstance(doc, dict) or "gc" not in doc:
        return None, None
    gc = doc.get("gc")
    if not isinstance(gc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in gc.items()):
        raise _bad(path, "manifest.json bookie_config.gc must be an object of strings")
    source = doc.get("source")
    return dict(gc), source if isinstance(source, str) else None


def read_scans(paths: Sequence[Path]) -> dict[str, BookieScan]:
    """bookie id -> scan; two scans of one bookie are refused (which one is the layout would be a guess)."""
    out: dict[str, BookieScan] = {}
    for p in paths:
        s = read_scan(Path(p))
        if s.bookie_id in out:
            raise ModelError(
                f"two --bookie-scan directories for bookie {s.bookie_id}: {out[s.bookie_id].path} and {s.path}",
                hint="pass one scan per bookie (the newest)",
            )
        out[s.bookie_id] = s
    return out


def _groups_of(ledgers: I64, group_times: Sequence[int], delete_at: Mapping[int, int]) -> I64:
    """Per ledger: its deletion group (index into ``group_times``), -1 when it is not deleted."""
    if not delete_at:
        return np.full(ledgers.shape[0], -1, dtype=np.int64)
    gi = {t: i for i, t in enumerate(group_times)}
    del_ids = np.fromiter(delete_at.keys(), dtype=np.int64, count=len(delete_at))
    del_g = np.fromiter((gi[t] for t in delete_at.values()), dtype=np.int64, count=len(delete_at))
    o = np.argsort(del_ids)
    del_ids, del_g = del_ids[o], del_g[o]
    pos = np.minimum(np.searchsorted(del_ids, ledgers), del_ids.size - 1)
    return np.where(del_ids[pos] == ledgers, del_g[pos], -1)


def measured_bookie_layout(
    scan: BookieScan,
    group_times: Sequence[int],
    delete_at: Mapping[int, int],
    *,
    disk_bytes: int | None = None,
    known_ledgers: I64 | None = None,
) -> BookieLayout:
    """The scan as a layout for the deletion schedule ``delete_at`` (ledger -> time; ``group_times`` are the
    distinct times ascending, as ``layout.delete_groups`` returns them). ``known_ledgers`` (the snapshot's ledger
    ids, sorted) only adds a note on how many bytes belong to ledgers the snapshot does not list."""
    n_groups = len(group_times)
    g = _groups_of(scan.pair_ledger, group_times, delete_at)
    groups = np.zeros((scan.n_logs, n_groups), dtype=np.int64)
    sel = g >= 0
    if n_groups and sel.any():
        np.add.at(groups, (scan.pair_log[sel], g[sel]), scan.pair_bytes[sel])
    notes = [f"measured: scan {scan.path}", *scan.notes]
    if known_ledgers is not None and scan.pair_ledger.size:
        pos = np.minimum(np.searchsorted(known_ledgers, scan.pair_ledger), max(known_ledgers.size - 1, 0))
        unknown = (known_ledgers[pos] != scan.pair_ledger) if known_ledgers.size else np.ones_like(sel)
        if unknown.any():
            notes.append(
                f"{int(scan.pair_bytes[unknown].sum())} bytes of {np.unique(scan.pair_ledger[unknown]).size} "
                "ledger(s) the snapshot does not list are kept as live (deleted before the snapshot, or newer "
                "than it: the audit's unreclaimed-ledger-data finding tells which)"
            )
    return BookieLayout(
        bookie_id=scan.bookie_id,
        disk_bytes=disk_bytes,
        log_ids=scan.log_ids.copy(),
        totals=scan.data_bytes.copy(),
        active=scan.active.copy(),
        group_bytes=groups,
        notes=notes,
        ledger_dirs=scan.ledger_dirs,
        log_dirs=scan.log_dirs.copy(),
    )


def with_measured(
    estimated: Layout,
    scans: Mapping[str, BookieScan],
    delete_at: Mapping[int, int],
    *,
    known_ledgers: I64 | None = None,
    snapshot_ms: int | None = None,
) -> tuple[Layout, dict[str, dict[str, Any]]]:
    """``estimated`` with every scanned bookie's layout replaced by its scan; and bookie -> where its layout
    came from (``source``: measured | estimated). ``snapshot_ms`` (the snapshot's finish time) adds a note when a
    scan is older than the snapshot: what was written in between is not in its layout."""
    bookies = dict(estimated.bookies)
    sources: dict[str, dict[str, Any]] = {
        bid: {"source": "estimated", "notes": list(bl.notes)} for bid, bl in bookies.items()
    }
    for bid, sc in sorted(scans.items()):
        est = bookies.get(bid)
        bookies[bid] = measured_bookie_layout(
            sc,
            estimated.group_times_ms,
            delete_at,
            disk_bytes=None if est is None else est.disk_bytes,
            known_ledgers=known_ledgers,
        )
        sources[bid] = sc.source_json()
        if snapshot_ms is not None and 0 < sc.finished_at_ms < snapshot_ms:
            sources[bid]["notes"].append(
                f"the scan finished {(snapshot_ms - sc.finished_at_ms) / 60_000:.0f} min before the snapshot: "
                "entries written since are not in this layout"
            )
        if est is None:
            sources[bid]["notes"].append("no ledger of the snapshot names this bookie in its ensembles")
    return (
        Layout(
            bookies=dict(sorted(bookies.items())),
            group_times_ms=estimated.group_times_ms,
            entry_size=estimated.entry_size,
            estimated=estimated.estimated and not scans,
        ),
        sources,
    )


def pinning_ledgers(
    scan: BookieScan, ledger_dir: str, log_id: int, deleted: Mapping[int, int], *, top: int = 5
) -> list[dict[str, int]]:
    """The live ledgers (not in ``deleted``) holding the most bytes of one log: what keeps it on disk."""
    try:
        d = scan.ledger_dirs.index(ledger_dir)
    except ValueError:
        return []
    idx = np.flatnonzero((scan.log_dirs == d) & (scan.log_ids == log_id))
    if idx.size == 0:
        return []
    m = scan.pair_log == int(idx[0])
    rows = [
        (int(lid), int(b)) for lid, b in zip(scan.pair_ledger[m], scan.pair_bytes[m], strict=True) if lid not in deleted
    ]
    rows.sort(key=lambda r: (-r[1], r[0]))
    return [{"ledger_id": lid, "bytes": b} for lid, b in rows[:top]]


def predict_forced_run(
    scan: BookieScan, garbage: Iterable[int], cfg: GcConfig, force_major: bool, force_minor: bool
) -> dict[str, int]:
    """The bytes one forced GC run frees on a scanned bookie's layout once ``garbage``'s ledgers are deleted: the
    GC model (:func:`pulsar_ops.model.gc.simulate`) for exactly one run at once, forced with these flags (the
    ``bookie-gc`` repair's prediction)."""
    from pulsar_ops.model.gc import GcOptions, simulate

    bl = measured_bookie_layout(scan, [0], dict.fromkeys(garbage, 0))
    layout = Layout(bookies={scan.bookie_id: bl}, group_times_ms=[0], entry_size=1, estimated=False)
    opts = GcOptions(start_ms=0, horizon_ms=0, first_run_ms=0, forced=(force_major, force_minor))
    r = simulate(layout, cfg, opts).bookies[scan.bookie_id]
    rec = {k: int(v) for k, v in r.reclaimed.items()}
    return {**rec, "total": sum(rec.values()), "garbage": int(r.deleted_bytes), "rewrite": int(r.rewrite_bytes)}
