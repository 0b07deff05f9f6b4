"""Bookie ledger directories for a seeded cluster (``pulsar-ops seed --bookie-dirs DIR``), with storage defects and
their ground truth. Pure file I/O over :mod:`pulsar_ops.testing.entrylog_writer` (no kazoo).

For every bookie of the model (``model_ledgers.BOOKIES``) two ledger directories (``DIR/<bookie>/ledgers-0`` and
``-1``; a ledger lives in directory ``ledgerId mod 2``, as DbLedgerStorage places it), each with entry logs and a
local ``ledgers`` index consistent with the seeded metadata: every entry a closed ledger's ensembles and striping
put on the bookie (RoundRobinDistributionSchedule: entry i on positions (i + k) mod E, k < Q; the first E entries
of each segment, enough for every position that holds any) is in one of its logs and the ledger is in its index.
Entries are small (payload ``PAYLOAD`` bytes) so the demo stays fast. Even bookies use the default entry logger,
odd ones the Direct I/O one; every third finished log has no ledgers map (a bookie that crashed before rollover:
the scanner scans it), and the newest log of each directory is the active one (no map) holding the open ledgers'
entries.

Injected storage defects (``inject``), each with its expected finding in the ground truth:

* ``unreclaimed-ledger-data``: deleted ledgers' bytes in old logs: one still in the bookie's local index, one only
  in entry logs, and (when the cluster has a dangling ledger) the data of a dangling ledger;
* ``stale-entry-log``: the first two of those logs (under the minor threshold, ten days old);
* ``ledger-data-missing``: closed ledgers whose entries one bookie of their ensemble should hold and does not.

``DIR/bookies.json`` lists each bookie's directories (what ``scan-bookie`` is given).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.formats.ledger_metadata import LedgerMetadata
from pulsar_ops.testing.entrylog_writer import (
    LocalIndexRow,
    entry_log_path,
    write_entry_log,
    write_last_id,
    write_ledger_index,
)
from pulsar_ops.testing.model_ledgers import BOOKIES
from pulsar_ops.testing.model_spec import DAY_MS, HOUR_MS

PAYLOAD = 100  # bytes of each entry's payload
DIRS_PER_BOOKIE = 2
LEDGERS_PER_LOG = 200
LAYOUT_FILE = "bookies.json"
DELETED_IN_INDEX = 900  # ids below the model's first ledger id (1000): never allocated, so never in metadata
DELETED_LOGS_ONLY = 901
STORAGE_KINDS = ("unreclaimed-ledger-data", "ledger-data-missing", "stale-entry-log")

Entry = tuple[int, int, int]


def _id(m: LedgerMetadata) -> int:
    return -1 if m.ledger_id is None else m.ledger_id


def bookie_slug(bookie: str) -> str:
    return bookie.replace(":", "_").replace("/", "_")


def placements(md: LedgerMetadata, open_entries: int = 3) -> dict[str, list[Entry]]:
    """The entries of ``md`` each bookie stores (at most the first E of each segment, enough for every position
    that holds any; an open ledger's first ``open_entries`` of its last segment), by bookie."""
    e, q, lid = md.ensemble_size, md.write_quorum, _id(md)
    last = md.last_entry_id if md.state == "CLOSED" else open_entries - 1
    out: dict[str, list[Entry]] = {}
    segs = sorted(md.ensembles)
    for n, (first, members) in enumerate(segs):
        if md.state != "CLOSED" and n + 1 < len(segs):
            continue
        end = segs[n + 1][0] - 1 if n + 1 < len(segs) else last
        for i in range(first, min(end, first + e - 1) + 1):
            for b in {members[(i + k) % e] for k in range(q)}:
                out.setdefault(b, []).append((lid, i, PAYLOAD))
    return out


def entries_on(md: LedgerMetadata, bookie: str, open_entries: int = 3) -> list[Entry]:
    """The entries of ``md`` striped onto ``bookie`` (RoundRobinDistributionSchedule; see :func:`placements`)."""
    return placements(md, open_entries).get(bookie, [])


@dataclass
class _Dir:
    path: Path
    logs: list[tuple[list[Entry], int, bool]] = field(default_factory=list)  # entries, mtime, with_map
    index: set[int] = field(default_factory=set)


def _record_bytes(entries: Iterable[Entry]) -> int:
    return sum(8 + 8 + n + 4 for _, _, n in entries)


def write_bookie_dirs(
    root: Path,
    ledgers: Sequence[LedgerMetadata],
    ground_truth: dict[str, Any],
    *,
    wall_ms: int,
    inject: bool = True,
    bookies: Sequence[str] = BOOKIES,
    closed_at: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """Write every bookie's directories under ``root``; extend ``ground_truth`` (``expected`` and ``counts``) with
    the storage findings; return the layout written to ``root/bookies.json``. ``closed_at``: ledger id -> its
    ledger list's close timestamp (a ledger closed less than flushInterval before a scan is never judged missing,
    and the seeded clock may run ahead of the wall clock)."""
    root = Path(root).resolve()
    expected: dict[str, list[dict[str, Any]]] = {k: [] for k in STORAGE_KINDS}
    closed = [m for m in ledgers if m.state == "CLOSED" and m.last_entry_id >= 0]
    # ledger-data-missing: two old closed ledgers lose their entries on one bookie that should hold some
    dropped: dict[tuple[str, int], bool] = {}
    if inject:
        closes = closed_at or {}
        old = [
            m
            for m in closed
            if m.ctime_ms is not None
            and m.ctime_ms < wall_ms - 2 * HOUR_MS
            and closes.get(_id(m), 0) < wall_ms - 2 * HOUR_MS
        ]
        for m in old[len(old) // 3 :: max(1, len(old) // 2)][:2]:
            holder = next(iter(sorted(placements(m))), None)
            if holder is not None:
                dropped[(holder, _id(m))] = True
                expected["ledger-data-missing"].append({"ledger_id": _id(m), "path": holder})
    placed = [(m, placements(m)) for m in ledgers]
    dirs: dict[str, list[_Dir]] = {}
    layout: list[dict[str, Any]] = []
    for bi, bookie in enumerate(bookies):
        base = root / bookie_slug(bookie)
        ds = [_Dir(base / f"ledgers-{d}") for d in range(DIRS_PER_BOOKIE)]
        dirs[bookie] = ds
        per_dir: list[list[tuple[int, list[Entry]]]] = [[] for _ in ds]
        active: list[list[Entry]] = [[] for _ in ds]
        for m, where in placed:
            got = where.get(bookie)
            if not got or (bookie, _id(m)) in dropped:
                continue
            d = _id(m) % DIRS_PER_BOOKIE
            ds[d].index.add(_id(m))
            if m.state == "CLOSED":
                per_dir[d].append((m.ctime_ms or wall_ms - DAY_MS, got))
            else:
                active[d].extend(got)
        for d, items in enumerate(per_dir):
            items.sort(key=lambda x: (x[0], x[1][0][0]))
            chunks = [items[i : i + LEDGERS_PER_LOG] for i in range(0, len(items), LEDGERS_PER_LOG)]
            for j, chunk in enumerate(chunks):
                mtime = min(wall_ms - HOUR_MS, max(c for c, _ in chunk))
                ds[d].logs.append(([e for _, es in chunk for e in es], mtime, j % 3 != 1))
        layout.append(
            {
                "bookie_id": bookie,
                "logger": "direct" if bi % 2 else "default",
                "ledger_dirs": [str(x.path) for x in ds],
                "active": active,
            }
        )
    if inject and len(bookies) >= 3:
        _inject_unreclaimed(dirs, bookies, closed, ground_truth, expected, wall_ms)
    for entry in layout:
        bookie = entry["bookie_id"]
        active = entry.pop("active")
        for d, x in enumerate(dirs[bookie]):
            _write_dir(x, active[d], entry["logger"], wall_ms)
    doc = {"bookies": layout}
    (root / LAYOUT_FILE).write_text(json.dumps(doc, indent=2) + "\n")
    exp = ground_truth.setdefault("expected", {})
    counts = ground_truth.setdefault("counts", {})
    for kind, rows in expected.items():
        exp[kind] = rows
        counts[kind] = len(rows)
    return doc


def _inject_unreclaimed(
    dirs: Mapping[str, list[_Dir]],
    bookies: Sequence[str],
    closed: Sequence[LedgerMetadata],
    ground_truth: Mapping[str, Any],
    expected: dict[str, list[dict[str, Any]]],
    wall_ms: int,
) -> None:
    ten_days = wall_ms - 10 * DAY_MS
    # 1. a deleted ledger still in bookie 0's local index, in a log where one live ledger keeps 1/21 alive
    b0 = bookies[0]
    d0 = DELETED_IN_INDEX % DIRS_PER_BOOKIE
    keeper = next((m for m in closed if _id(m) in dirs[b0][d0].index), None)
    entries = [(DELETED_IN_INDEX, i, PAYLOAD) for i in range(20)]
    if keeper is not None:
        entries.append((_id(keeper), 0, PAYLOAD))
    _old_log(dirs[b0][d0], entries, ten_days, expected, b0)
    dirs[b0][d0].index.add(DELETED_IN_INDEX)
    expected["unreclaimed-ledger-data"].append(
        {"ledger_id": DELETED_IN_INDEX, "path": b0, "in_local_index": True, "bytes": _record_bytes(entries[:20])}
    )
    # 2. a deleted ledger only in bookie 1's entry logs: a log with nothing live, which GC should have deleted
    b1 = bookies[1]
    d1 = DELETED_LOGS_ONLY % DIRS_PER_BOOKIE
    entries = [(DELETED_LOGS_ONLY, i, PAYLOAD) for i in range(10)]
    _old_log(dirs[b1][d1], entries, ten_days, expected, b1)
    expected["unreclaimed-ledger-data"].append(
        {"ledger_id": DELETED_LOGS_ONLY, "path": b1, "in_local_index": False, "bytes": _record_bytes(entries)}
    )
    # 3. a dangling ledger's data (a topic still lists it, its metadata is gone): recoverable, in a mostly live log
    dangling = [e for e in ground_truth.get("expected", {}).get("dangling-ledger", []) if e.get("ledger_id", -1) >= 0]
    if dangling:
        lid = int(sorted(dangling, key=lambda e: int(e["ledger_id"]))[0]["ledger_id"])
        b2 = bookies[2]
        d2 = lid % DIRS_PER_BOOKIE
        live = [m for m in closed if _id(m) in dirs[b2][d2].index][:1]
        lost = [(lid, i, PAYLOAD) for i in range(2)]
        keep = [(_id(m), i, PAYLOAD) for m in live for i in range(10)]
        if keep:  # 10 of 12 entries live: above every compaction threshold, so not stale
            dirs[b2][d2].logs.insert(0, (lost + keep, ten_days, True))
            expected["unreclaimed-ledger-data"].append(
                {"ledger_id": lid, "path": b2, "in_local_index": False, "bytes": _record_bytes(lost)}
            )


def _old_log(d: _Dir, entries: list[Entry], mtime: int, expected: dict[str, list[dict[str, Any]]], bookie: str) -> None:
    """An old finished log placed first in its directory (id 0); stale under the minor threshold."""
    d.logs.insert(0, (entries, mtime, True))
    expected["stale-entry-log"].append({"path": f"{bookie}:{d.path}/current/{0:x}.log"})


def _write_dir(d: _Dir, active: list[Entry], logger: str, wall_ms: int) -> None:
    kind = "direct" if logger == "direct" else "default"
    log_id = 0
    for entries, mtime, with_map in d.logs:
        if not entries:
            continue
        path = entry_log_path(d.path, log_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_entry_log(path, log_id, entries, logger=kind, with_map=with_map)  # type: ignore[arg-type]
        os.utime(path, ns=(mtime * 1_000_000, mtime * 1_000_000))
        log_id += 1
    # the active log: the open ledgers' first entries, no map yet, written a minute ago
    path = entry_log_path(d.path, log_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_entry_log(path, log_id, active or [], logger=kind, with_map=False)  # type: ignore[arg-type]
    t = (wall_ms - 60_000) * 1_000_000
    os.utime(path, ns=(t, t))
    write_last_id(d.path, log_id)
    write_ledger_index(d.path, [LocalIndexRow(lid) for lid in sorted(d.index)])


def ledgers_of(znodes: Iterable[Any]) -> list[LedgerMetadata]:
    """The decodable ledger metadata among the seeded znodes (``kind == 'bk-ledger'``; truncated ones skipped)."""
    return [
        z.obj
        for z in znodes
        if z.kind == "bk-ledger"
        and z.encoding != "truncated"
        and isinstance(z.obj, LedgerMetadata)
        and z.obj.ledger_id is not None
    ]


def skipped_of(scan_dir: Path) -> list[dict[str, str]]:
    """A scan's ``skipped_logs`` rows as the manifest of format 1 listed them (``ledger_dir``, ``file``, ``reason``),
    each ``file`` the exact name (``file_hex`` decoded back to ``os.fsdecode``'s form)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(Path(scan_dir) / "skipped_logs.parquet").to_pylist()
    return [
        {
            "ledger_dir": r["ledger_dir"],
            "file": os.fsdecode(bytes.fromhex(r["file_hex"])) if r["file_hex"] is not None else r["file"],
            "reason": r["reason"],
        }
        for r in rows
    ]
