"""How uncertain a metadata-only reclaim prediction is: the GC model over every entry-log boundary phase.

Compaction takes a log only while its usage is below a threshold (upstream ``bookie/GarbageCollectorThread.java``
``doCompactEntryLogs``: ``usage >= threshold`` is skipped; whole logs go only when no ledger in them is left,
``doGcEntryLogs``), so a bookie's reclaim is the garbage of the few logs on the right side of a threshold. Which
logs those are depends on where the log boundaries fall, and a boundary falls where the bytes written since the
previous roll reach logSizeLimit (``EntryLogManagerBase.reachEntryLogLimit``), counting everything the bookie
ever wrote: data of ledgers deleted before the snapshot, survivors rewritten by earlier compactions, ledgers the
metadata does not list. None of that is in the metadata; a scan has it. So the estimate is run once per boundary
phase (``layout.estimate_layouts``: p x logSizeLimit of unlisted bytes ahead of the first listed byte, p in
0, 1/n, ..., (n-1)/n) and the band is the lowest and highest reclaim per bookie. Phase 0 is the plain estimate.
Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pulsar_ops.model.gc import GcOptions, simulate
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import Layout

DEFAULT_PHASES = 8
TOLERANCE = 0.01  # a measured reclaim within 1 % of the band's ends counts as inside it (byte error, not phase)


def phases(n: int) -> tuple[float, ...]:
    """0, 1/n, ..., (n-1)/n; n <= 1 gives the plain estimate only."""
    return tuple(i / n for i in range(n)) if n > 1 else (0.0,)


def reclaim_band(
    layouts: Sequence[Layout],
    cfg: GcConfig,
    opts: GcOptions,
    *,
    bookies: Iterable[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per bookie (all, or ``bookies``): the total predicted reclaim at each phase of ``layouts`` (the first is
    phase 0, the plain estimate) and its lowest and highest. Every run shares ``opts.horizon_ms``."""
    if not layouts:
        return {}
    keep = set(layouts[0].bookies) if bookies is None else set(bookies) & set(layouts[0].bookies)
    by_phase: dict[str, list[int]] = {b: [] for b in sorted(keep)}
    for lay in layouts:
        sub = replace(lay, bookies={b: bl for b, bl in lay.bookies.items() if b in keep})
        res = simulate(sub, cfg, opts)
        for b in by_phase:
            r = res.bookies.get(b)
            by_phase[b].append(sum(r.reclaimed.values()) if r is not None else 0)
    return {
        b: {"low": min(v), "high": max(v), "estimate": v[0], "by_phase": v, "phases": len(layouts)}
        for b, v in by_phase.items()
    }


def range_json(b: Mapping[str, Any]) -> dict[str, Any]:
    """The band as the JSON documents carry it (``per_bookie[*].reclaim_range``, ``estimated_range``)."""
    return {
        "low": b["low"],
        "high": b["high"],
        "phases": b["phases"],
        "note": "reclaim over the log-boundary phases: where a bookie's logs begin is not in the metadata",
    }


def annotate_accuracy(accuracy: Mapping[str, dict[str, Any]], band: Mapping[str, Mapping[str, Any]]) -> None:
    """Put each scanned bookie's band into its ``estimate_vs_measured`` with whether the measured reclaim is in it."""
    for bid, acc in accuracy.items():
        b = band.get(bid)
        if b is None:
            continue
        rc = acc["predicted_reclaim"]
        rc["estimated_range"] = range_json(b)
        m = rc["measured"]["total"]
        tol = TOLERANCE * max(m, b["high"])
        rc["measured_in_range"] = b["low"] - tol <= m <= b["high"] + tol
