"""Per-bookie entry-log layout: given explicitly (``--layout`` JSON) or estimated from ledger metadata alone.

Representation (what the GC model needs, no more): for each bookie, the entry logs in write order with their
total entry bytes, whether the log is the active one, and how many of its bytes belong to each *deletion group*
(the ledgers deleted at the same time). Bytes of ledgers that are never deleted are ``total - sum(groups)``.
This keeps the estimator O(ledgers + logs) even when every log interleaves thousands of ledgers.

Estimator (reference/bookie-storage.md §2.1, §4): with ``entryLogPerLedgerEnabled=false`` all ledgers a bookie
stores are interleaved in one active log, rolled at ``logSizeLimit``. Each ledger's per-bookie bytes
(``length x copies / len(bookies)``, ``copies = min(write_quorum, len(bookies))``, plus 40 B per entry for the
length prefix, the 32-byte entry header and a CRC32C digest when ``entries`` is known; per ensemble when the
ledger had several, see ``placements``) are written at a constant
rate from ``ctime_ms`` to its close time (``closed_ms``; else ``ctime + ledger_span_ms``; ``now`` while open).
The bookie's cumulative write curve W(t) is piecewise linear; log k holds the bytes written while W crosses
[k·L, (k+1)·L), and each deletion group's share of log k is that group's own cumulative curve over the same
time window. One ledger directory per bookie is assumed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pulsar_ops.errors import ModelError
from pulsar_ops.model.facts import LedgerFacts

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
BoolArr = npt.NDArray[np.bool_]

ENTRY_OVERHEAD_BYTES = 4 + 32 + 4  # length prefix + (ledgerId, entryId, LAC, length) + CRC32C digest
DEFAULT_LEDGER_SPAN_MS = 240 * 60_000  # managedLedgerMaxLedgerRolloverTimeMinutes default
_LAYOUT_HINT = "fix the --layout file: see the JSON contract in `pulsar-ops model gc --help`"


@dataclass
class BookieLayout:
    bookie_id: str
    disk_bytes: int | None
    log_ids: I64
    totals: I64
    active: BoolArr
    group_bytes: I64  # shape (logs, groups)
    other_bytes: int = 0  # non-entry-log usage (journal, indexes) counted in disk usage
    notes: list[str] = field(default_factory=list)
    # Measured layouts (``model.scan_layout``): the ledgerDirectories entries and, per log, the index of its
    # directory. DbLedgerStorage runs one entry logger and one GC thread per directory, so a log is identified
    # by (bookie, ledger_dir, log_id) and the GC model simulates each directory on its own.
    ledger_dirs: tuple[str, ...] = ()
    log_dirs: I64 | None = None

    @property
    def n_logs(self) -> int:
        return int(self.totals.shape[0])


@dataclass
class Layout:
    """All bookies plus the deletion groups: ``group_times_ms[g]`` is when group g's metadata is deleted."""

    bookies: dict[str, BookieLayout]
    group_times_ms: list[int]
    entry_size: int
    estimated: bool = False


def delete_groups(delete_at: Mapping[int, int]) -> tuple[list[int], dict[int, int]]:
    """Distinct deletion times, ascending, and ledger -> group index."""
    times = sorted(set(delete_at.values()))
    index = {t: i for i, t in enumerate(times)}
    return times, {lid: index[t] for lid, t in delete_at.items()}


# ---------------------------------------------------------------------------------------------------------------
# Explicit layout (JSON)


def _int(value: Any, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < minimum:
        raise ModelError(f"{what} must be an integer >= {minimum}, got {value!r}", hint=_LAYOUT_HINT)
    return int(value)


def parse_delete_schedule(raw: Any) -> dict[int, int]:
    """``[id, ...]`` (deleted at t=0) or ``[{"id": N, "at_ms": T}, ...]`` -> ledger -> deletion time (ms)."""
    if not isinstance(raw, list):
        raise ModelError('"delete_ledgers" must be a list of ledger ids', hint=_LAYOUT_HINT)
    out: dict[int, int] = {}
    for item in raw:
        if isinstance(item, dict):
            lid = _int(item.get("id"), "delete_ledgers[].id", minimum=-(1 << 63))
            out[lid] = _int(item.get("at_ms", 0), "delete_ledgers[].at_ms")
        else:
            out[_int(item, "delete_ledgers[]", minimum=-(1 << 63))] = 0
    return out


def layout_from_json(doc: Mapping[str, Any], delete_at: Mapping[int, int], entry_size: int) -> Layout:
    raw_bookies = doc.get("bookies")
    if not isinstance(raw_bookies, dict) or not raw_bookies:
        raise ModelError('"bookies" must be a non-empty object of bookie id -> layout', hint=_LAYOUT_HINT)
    times, group_of = delete_groups(delete_at)
    n_groups = len(times)
    bookies: dict[str, BookieLayout] = {}
    for bid, raw in raw_bookies.items():
        if not isinstance(raw, dict):
            raise ModelError(f"bookie {bid!r}: layout must be an object", hint=_LAYOUT_HINT)
        disk = raw.get("disk_bytes")
        disk_bytes = None if disk is None else _int(disk, f"bookie {bid!r}: disk_bytes", minimum=1)
        logs = raw.get("entry_logs")
        if not isinstance(logs, list):
            raise ModelError(f'bookie {bid!r}: "entry_logs" must be a list', hint=_LAYOUT_HINT)
        ids: list[int] = []
        totals: list[int] = []
        active: list[bool] = []
        groups = np.zeros((len(logs), n_groups), dtype=np.int64)
        for k, log in enumerate(logs):
            if not isinstance(log, dict) or not isinstance(log.get("ledgers"), dict):
                raise ModelError(f'bookie {bid!r}: entry_logs[{k}] needs "id" and "ledgers"', hint=_LAYOUT_HINT)
            ids.append(_int(log.get("id"), f"bookie {bid!r}: entry_logs[{k}].id"))
            active.append(bool(log.get("active", False)))
            total = 0
            for lid_s, nbytes in log["ledgers"].items():
                try:
                    lid = int(lid_s)
                except ValueError:
                    raise ModelError(
                        f"bookie {bid!r}: ledger id {lid_s!r} is not an integer", hint=_LAYOUT_HINT
                    ) from None
                b = _int(nbytes, f"bookie {bid!r}: log {ids[-1]} ledger {lid} bytes")
                total += b
                g = group_of.get(lid)
                if g is not None:
                    groups[k, g] += b
            totals.append(total)
        if len(set(ids)) != len(ids):
            raise ModelError(f"bookie {bid!r}: duplicate entry log ids", hint=_LAYOUT_HINT)
        bookies[str(bid)] = BookieLayout(
            bookie_id=str(bid),
            disk_bytes=disk_bytes,
            log_ids=np.asarray(ids, dtype=np.int64),
            totals=np.asarray(totals, dtype=np.int64),
            active=np.asarray(active, dtype=np.bool_),
            group_bytes=groups,
            other_bytes=_int(raw.get("other_bytes", 0), f"bookie {bid!r}: other_bytes"),
        )
    return Layout(bookies=bookies, group_times_ms=times, entry_size=entry_size)


# ---------------------------------------------------------------------------------------------------------------
# Estimator


def per_bookie_bytes(f: LedgerFacts) -> float:
    """Bytes of one ledger on each of its bookies (entries striped over the ensemble, write_quorum copies)."""
    nb = len(f.bookies)
    if nb == 0:
        return 0.0
    copies = min(max(f.write_quorum, 1), nb)
    body = float(max(f.length, 0))
    if f.entries is not None:
        body += float(max(f.entries, 0)) * ENTRY_OVERHEAD_BYTES
    return body * copies / nb


def placements(f: LedgerFacts, start: float, end: float) -> list[tuple[str, float, float, float]]:
    """(bookie, write start, write end, bytes) of one ledger over ``[start, end]``.

    One ensemble (or unknown segments / entries): every bookie named holds ``per_bookie_bytes`` over the whole
    span. Several ensembles (LedgerMetadata segments, entry counts known): BookKeeper writes entry e to the
    ensemble of the last segment starting at or before e (a replaced bookie keeps only the entries before the
    change, its replacement only those after), write_quorum copies striped round-robin over that ensemble, so each
    segment's bookies hold ``entries_in_segment x (length / entries + 40) x write_quorum / ensemble`` written
    during the segment's share of the span (constant rate).
    """
    segs = f.segments
    entries = f.entries
    if not segs or len(segs) < 2 or not entries or entries <= 0:
        per = per_bookie_bytes(f)
        return [(bk, start, end, per) for bk in f.bookies] if per > 0 else []
    per_entry = max(f.length, 0) / entries + ENTRY_OVERHEAD_BYTES
    out: list[tuple[str, float, float, float]] = []
    for i, (first, members) in enumerate(segs):
        lo = min(max(first, 0), entries)
        hi = min(segs[i + 1][0], entries) if i + 1 < len(segs) else entries
        if hi <= lo or not members:
            continue
        copies = min(max(f.write_quorum, 1), len(members))
        s = start + (end - start) * lo / entries
        e = start + (end - start) * hi / entries
        per = (hi - lo) * per_entry * copies / len(members)
        out.extend((bk, s, max(e, s + 1.0), per) for bk in members)
    return out


def _span(f: LedgerFacts, now_ms: int, span_ms: int) -> tuple[float, float]:
    start = float(f.ctime_ms)
    if f.is_open:
        end = float(now_ms)
    elif f.closed_ms is not None and f.closed_ms > 0:
        end = float(f.closed_ms)
    else:
        end = start + span_ms
    end = min(end, float(max(now_ms, f.ctime_ms)))
    return start, max(end, start + 1.0)  # at least 1 ms, so that W(t) stays continuous


def estimate_layout(
    ledgers: Sequence[LedgerFacts],
    delete_at: Mapping[int, int],
    *,
    now_ms: int,
    log_size_limit: int,
    entry_size: int = 1024,
    ledger_span_ms: int = DEFAULT_LEDGER_SPAN_MS,
    disk_bytes: Mapping[str, int] | None = None,
    phase: float = 0.0,
) -> Layout:
    """The estimated layout; ``phase`` (0 <= phase < 1, see :func:`estimate_layouts`) shifts every log boundary."""
    return estimate_layouts(
        ledgers,
        delete_at,
        now_ms=now_ms,
        log_size_limit=log_size_limit,
        entry_size=entry_size,
        ledger_span_ms=ledger_span_ms,
        disk_bytes=disk_bytes,
        phases=(phase,),
    )[0]


def estimate_layouts(
    ledgers: Sequence[LedgerFacts],
    delete_at: Mapping[int, int],
    *,
    now_ms: int,
    log_size_limit: int,
    entry_size: int = 1024,
    ledger_span_ms: int = DEFAULT_LEDGER_SPAN_MS,
    disk_bytes: Mapping[str, int] | None = None,
    phases: Sequence[float] = (0.0,),
) -> list[Layout]:
    """One estimated layout per boundary phase, sharing the (bookie, ledger) flattening.

    Where a bookie's entry logs begin and end is not in the metadata: a log is rolled when the bytes written since
    the previous roll reach logSizeLimit, and those bytes include everything the bookie ever wrote, also the data
    of ledgers deleted before the snapshot and the survivors rewritten by earlier compactions. ``phase`` p places
    p x logSizeLimit of such bytes ahead of the metadata's first byte: the first log holds them as live bytes and
    every later boundary moves by as much. Phase 0 is the plain estimate."""
    for p in phases:
        if not 0.0 <= p < 1.0:
            raise ValueError(f"phase must be in [0, 1), got {p}")
    times, group_of = delete_groups(delete_at)
    n_groups = len(times)
    # Flatten (bookie, ledger) pairs.
    bookie_index: dict[str, int] = {}
    rows_b: list[int] = []
    rows_s: list[float] = []
    rows_e: list[float] = []
    rows_bytes: list[float] = []
    rows_g: list[int] = []
    rows_open: list[bool] = []
    for f in ledgers:
        s, e = _span(f, now_ms, ledger_span_ms)
        g = group_of.get(f.ledger_id, -1)
        for bk, ps, pe, per in placements(f, s, e):
            if per <= 0:
                continue
            bi = bookie_index.setdefault(bk, len(bookie_index))
            rows_b.append(bi)
            rows_s.append(ps)
            rows_e.append(pe)
            rows_bytes.append(per)
            rows_g.append(g)
            rows_open.append(f.is_open)
    b_arr = np.asarray(rows_b, dtype=np.int64)
    s_arr = np.asarray(rows_s, dtype=np.float64)
    e_arr = np.asarray(rows_e, dtype=np.float64)
    bytes_arr = np.asarray(rows_bytes, dtype=np.float64)
    g_arr = np.asarray(rows_g, dtype=np.int64)
    open_arr = np.asarray(rows_open, dtype=np.bool_)
    order = np.argsort(b_arr, kind="stable")
    bounds = np.searchsorted(b_arr[order], np.arange(len(bookie_index) + 1))
    names = sorted(bookie_index, key=bookie_index.__getitem__)
    outs: list[dict[str, BookieLayout]] = [{} for _ in phases]
    for bi, name in enumerate(names):
        sel = order[bounds[bi] : bounds[bi + 1]]
        per_phase = _estimate_bookie(
            name,
            s_arr[sel],
            e_arr[sel],
            bytes_arr[sel],
            g_arr[sel],
            bool(open_arr[sel].any()),
            n_groups,
            log_size_limit,
            None if disk_bytes is None else disk_bytes.get(name),
            phases,
        )
        for out, bl in zip(outs, per_phase, strict=True):
            out[name] = bl
    return [Layout(bookies=out, group_times_ms=times, entry_size=entry_size, estimated=True) for out in outs]


def _estimate_bookie(
    name: str,
    s: F64,
    e: F64,
    b: F64,
    g: I64,
    writing: bool,
    n_groups: int,
    limit: int,
    disk: int | None,
    phases: Sequence[float] = (0.0,),
) -> list[BookieLayout]:
    """One bookie's estimated logs at each boundary phase; the write curves are computed once for all phases."""
    n = s.shape[0]
    rate = b / (e - s)
    t = np.concatenate([s, e])
    order = np.argsort(t, kind="stable")
    t = t[order]
    dt = np.diff(t)

    def curve(weights: F64) -> F64:
        slope = np.cumsum(np.concatenate([weights, -weights])[order])[:-1]
        return np.concatenate([[0.0], np.cumsum(slope * dt)])

    w = curve(rate)
    total = float(w[-1]) if n else 0.0
    group_curves = {gi: curve(np.where(g == gi, rate, 0.0)) for gi in range(n_groups) if (g == gi).any()}
    return [_cut(name, disk, t, w, total, group_curves, n_groups, limit, writing, p) for p in phases]


def _cut(
    name: str,
    disk: int | None,
    t: F64,
    w: F64,
    total: float,
    group_curves: Mapping[int, F64],
    n_groups: int,
    limit: int,
    writing: bool,
    phase: float,
) -> BookieLayout:
    """The logs of one bookie whose cumulative write curve is ``w`` over ``t``, boundaries moved by ``phase``."""
    pre = float(round(phase * limit))  # bytes the metadata does not list, ahead of its first byte (live)
    # Whole bytes before counting logs: a float sum a hair above k * limit must not open an empty (k+1)-th log.
    n_logs = max(1, math.ceil((round(total) + pre) / limit)) if total > 0 else 0
    if n_logs == 0:
        empty = np.zeros(0, dtype=np.int64)
        return BookieLayout(name, disk, empty, empty.copy(), np.zeros(0, np.bool_), np.zeros((0, n_groups), np.int64))
    marks = np.clip(np.arange(n_logs + 1, dtype=np.float64) * limit - pre, 0.0, total)
    tau = np.interp(marks, w, t)
    totals = np.diff(marks)
    totals[0] += pre
    groups = np.zeros((n_logs, n_groups), dtype=np.float64)
    for gi, dg in group_curves.items():
        groups[:, gi] = np.diff(np.interp(tau, t, dg))
    totals_i = np.rint(totals).astype(np.int64)
    groups_i = np.minimum(np.rint(np.clip(groups, 0.0, None)).astype(np.int64), totals_i[:, None])
    active = np.zeros(n_logs, dtype=np.bool_)
    active[-1] = writing
    return BookieLayout(
        bookie_id=name,
        disk_bytes=disk,
        log_ids=np.arange(n_logs, dtype=np.int64),
        totals=totals_i,
        active=active,
        group_bytes=groups_i,
        notes=["estimated from ledger metadata (interleaved writes, rollover at logSizeLimit)"],
    )
