"""Predicted impact of a plan, for the planner: disk reclaimed per bookie over time and metadata operations.

``plan_impact`` estimates every bookie's entry-log layout from ledger metadata alone (``model.layout``), deletes
the planned ledgers' metadata at ``now_ms`` and runs the bookie GC model (``model.gc``) forward. Pure and fast:
O(ledgers + entry logs); no I/O library is imported. Given ``scans`` (``model.scan_layout``, read by the caller),
a scanned bookie's layout is the measured one instead (``model.measured_gc``): its bytes per ledger, the logs that
stay and the live ledgers that pin them are the disk's, and the estimate is put next to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc import GcOptions, GcResult, simulate
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import DEFAULT_LEDGER_SPAN_MS, estimate_layouts, per_bookie_bytes
from pulsar_ops.model.measured_gc import MeasuredGc, accuracy_lines, gc_with_scans
from pulsar_ops.model.reclaim_band import DEFAULT_PHASES, annotate_accuracy, phases, range_json, reclaim_band
from pulsar_ops.model.scan_layout import BookieScan
from pulsar_ops.model.units import fmt_bytes, fmt_duration_ms

__all__ = ["ImpactReport", "LedgerFacts", "plan_impact", "read_load_impact"]

DEFAULT_ENTRY_SIZE = 1024


@dataclass(frozen=True)
class ImpactReport:
    per_ledger: dict[int, tuple[int, tuple[str, ...]]]  # ledger -> (bytes on disk over all copies, bookies)
    gc: GcResult
    metadata_ops: int
    now_ms: int
    bookie_metadata_reads: int = 0
    measured: MeasuredGc | None = None
    # Bookie -> its reclaim over every log-boundary phase of the estimate (``model.reclaim_band``): low, high, ...
    band: dict[str, dict[str, Any]] | None = None

    def _per_bookie(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        sources = self.measured.sources if self.measured is not None else {}
        for bid, r in self.gc.bookies.items():
            doc = r.to_json()
            doc["layout"] = sources.get(bid, {}).get("source", "estimated")
            if self.band is not None and doc["layout"] == "estimated" and bid in self.band:
                doc["reclaim_range"] = range_json(self.band[bid])
            if self.measured is not None and bid in self.measured.accuracy:
                doc["estimate_vs_measured"] = self.measured.accuracy[bid]
            out[bid] = doc
        return out

    def to_json(self) -> dict[str, Any]:
        total = self.gc.total()
        return {
            "per_ledger": {
                str(lid): {"bytes_on_disk": b, "bookies": list(bks)} for lid, (b, bks) in self.per_ledger.items()
            },
            "total": {
                "bytes_on_disk": sum(b for b, _ in self.per_ledger.values()),
                "garbage_bytes": total["garbage_bytes"],
                "reclaimed_bytes": total["reclaimed_bytes"],
                "unreclaimable_bytes": total["unreclaimable_bytes"],
                "unreclaimable_by_reason": total["unreclaimable_by_reason"],
                "rewrite_bytes": total["rewrite_bytes"],
                "compaction_seconds": total["compaction_seconds"],
                "per_bookie": self._per_bookie(),
                "layout_sources": self.measured.sources if self.measured is not None else {},
                "timeline": total["timeline"],
                "metadata_ops": self.metadata_ops,
                "bookie_gc_metadata_reads": self.bookie_metadata_reads,
                "now_ms": self.now_ms,
                "horizon_ms": self.gc.horizon_ms,
                "gc_config": self.gc.config.to_json(),
            },
        }

    def summary_lines(self) -> list[str]:
        total = self.gc.total()
        rec = total["reclaimed_bytes"]
        freed = rec["deletion"] + rec["minor"] + rec["major"]
        lines = [
            f"deleting {len(self.per_ledger)} ledger(s) turns {fmt_bytes(total['garbage_bytes'])} into garbage on "
            f"{len(self.gc.bookies)} bookie(s); {fmt_bytes(freed)} comes back (GC runs simulated for "
            f"{fmt_duration_ms(self.gc.horizon_ms - self.now_ms)}):"
        ]
        for kind, label in (
            ("deletion", "whole entry logs deleted"),
            ("minor", "minor compaction"),
            ("major", "major compaction"),
        ):
            if rec[kind]:
                evs = [ev for ev in total["timeline"] if ev["reclaimed_by"].get(kind)]
                first = min(ev["t_ms"] for ev in evs) - self.now_ms
                last = max(ev["end_ms"] for ev in evs) - self.now_ms
                lines.append(
                    f"  {fmt_bytes(rec[kind])} by {label}, from +{fmt_duration_ms(first)} to +{fmt_duration_ms(last)}"
                )
        if total["rewrite_bytes"]:
            lines.append(
                f"  compaction rewrites {fmt_bytes(total['rewrite_bytes'])} "
                f"({fmt_duration_ms(total['compaction_seconds'] * 1000)} of throttled work over all bookies)"
            )
        for reason, nbytes in sorted(total["unreclaimable_by_reason"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {fmt_bytes(nbytes)} stays on disk: {reason}")
        lines.append(f"  metadata-store operations: {self.metadata_ops}")
        lines.extend(self.band_lines())
        if self.measured is not None:
            lines.extend(self.measured_lines())
        return lines

    def band_lines(self) -> list[str]:
        """The estimated bookies' reclaim range: where log boundaries fall is not in the metadata."""
        sources = self.measured.sources if self.measured is not None else {}
        rows = [
            (bid, b)
            for bid, b in sorted((self.band or {}).items())
            if sources.get(bid, {}).get("source", "estimated") == "estimated" and b["high"] > 0
        ]
        if not rows:
            return []
        lines = [
            "  estimated layouts (no scan): a bookie's reclaim depends on where its entry-log boundaries fall, which "
            f"only a scan shows; over {rows[0][1]['phases']} boundary phases:"
        ]
        lines.extend(
            f"    {bid}: {fmt_bytes(b['low'])} to {fmt_bytes(b['high'])} (estimate {fmt_bytes(b['estimate'])})"
            for bid, b in rows
        )
        return lines

    def measured_lines(self) -> list[str]:
        """Per scanned bookie: what the plan frees at each GC stage, what stays pinned, and the estimate's error."""
        assert self.measured is not None
        n_meas = sum(1 for s in self.measured.sources.values() if s["source"] == "measured")
        lines = [f"  layouts: measured (scan) on {n_meas} bookie(s), estimated on {len(self.gc.bookies) - n_meas}"]
        for bid, src in self.measured.sources.items():
            if src["source"] != "measured" or bid not in self.gc.bookies:
                continue
            r = self.gc.bookies[bid]
            rec = r.reclaimed
            stuck = [e for e in r.stuck if e.get("pinned_by")]
            lines.append(
                f"  {bid} (measured{'' if src['complete'] else ', INCOMPLETE scan'}): garbage "
                f"{fmt_bytes(r.deleted_bytes)}; freed by log deletion {fmt_bytes(rec['deletion'])}, minor "
                f"{fmt_bytes(rec['minor'])}, major {fmt_bytes(rec['major'])}; stays {fmt_bytes(r.unreclaimable_bytes)}"
                f" in {len(r.stuck)} log(s)"
            )
            for e in stuck[:3]:
                pins = ", ".join(
                    f"ledger {p['ledger_id']} ({fmt_bytes(p['bytes'])}" + (f", {p['owner']})" if "owner" in p else ")")
                    for p in e["pinned_by"]
                )
                lines.append(
                    f"    log {e['log_id']} in {e.get('ledger_dir')}: {fmt_bytes(e['garbage_bytes'])} stays "
                    f"({e['reason']}), pinned by {pins}"
                )
        lines.append("  estimate vs measured (estimate / measured, error):")
        lines.extend("  " + x for x in accuracy_lines(self.measured.accuracy))
        return lines


def plan_impact(
    delete: Sequence[LedgerFacts],
    all_ledgers: Sequence[LedgerFacts],
    *,
    now_ms: int,
    znode_deletes: int = 0,
    config: GcConfig | None = None,
    disk_bytes: Mapping[str, int] | None = None,
    entry_size: int = DEFAULT_ENTRY_SIZE,
    ledger_span_ms: int = DEFAULT_LEDGER_SPAN_MS,
    horizon_ms: int | None = None,
    scans: Mapping[str, BookieScan] | None = None,
    snapshot_ms: int | None = None,
    band_phases: int = DEFAULT_PHASES,
) -> ImpactReport:
    """Impact of deleting ``delete``'s metadata at ``now_ms``, every other ledger in ``all_ledgers`` staying.

    ``metadata_ops`` = ``znode_deletes`` (the plan's own metadata-store writes, counted by the planner), or one
    delete per ledger when the planner passes 0. ``disk_bytes`` (bookie id -> capacity, from the snapshot's
    ``bookies`` table) enables the disk-threshold rules; without it they never fire. ``band_phases`` > 1 also runs
    the estimate at that many log-boundary phases (``model.reclaim_band``): each estimated bookie's reclaim range,
    and for a scanned one whether its measured reclaim falls inside it.
    """
    cfg = (config or GcConfig()).validate()
    by_id: dict[int, LedgerFacts] = {f.ledger_id: f for f in all_ledgers}
    for f in delete:
        by_id[f.ledger_id] = f
    delete_at = {f.ledger_id: now_ms for f in delete}
    layouts = estimate_layouts(
        list(by_id.values()),
        delete_at,
        now_ms=now_ms,
        log_size_limit=cfg.log_size_limit,
        entry_size=entry_size,
        ledger_span_ms=ledger_span_ms,
        disk_bytes=disk_bytes,
        phases=phases(band_phases),
    )
    layout = layouts[0]
    opts = GcOptions(start_ms=now_ms, horizon_ms=horizon_ms)
    measured: MeasuredGc | None = None
    on_scan: dict[str, dict[int, int]] = {}
    if scans:
        known = np.sort(np.fromiter(by_id.keys(), dtype=np.int64, count=len(by_id)))
        measured = gc_with_scans(layout, scans, delete_at, cfg, opts, known_ledgers=known, snapshot_ms=snapshot_ms)
        result = measured.result
        on_scan = _measured_bytes(scans, delete_at)
    else:
        result = simulate(layout, cfg, opts)
    band = None
    if len(layouts) > 1:
        band = reclaim_band(layouts, cfg, GcOptions(start_ms=now_ms, horizon_ms=result.horizon_ms))
        if measured is not None:
            annotate_accuracy(measured.accuracy, band)
    per_ledger: dict[int, tuple[int, tuple[str, ...]]] = {}
    reads = 0
    for f in delete:
        per = per_bookie_bytes(f)
        nbytes = sum(on_scan[b].get(f.ledger_id, 0) if b in on_scan else per for b in f.bookies)
        per_ledger[f.ledger_id] = (round(nbytes), tuple(f.bookies))
        if cfg.verify_metadata_on_gc:
            reads += len(f.bookies)
    ops = znode_deletes if znode_deletes > 0 else len(delete)
    return ImpactReport(
        per_ledger=per_ledger,
        gc=result,
        metadata_ops=ops,
        now_ms=now_ms,
        bookie_metadata_reads=reads,
        measured=measured,
        band=band,
    )


def _measured_bytes(scans: Mapping[str, BookieScan], ledgers: Mapping[int, int]) -> dict[str, dict[int, int]]:
    """Scanned bookie -> ledger -> bytes on its disk (all its logs), for the given ledgers."""
    ids = np.fromiter(ledgers.keys(), dtype=np.int64, count=len(ledgers))
    out: dict[str, dict[int, int]] = {}
    for bid, sc in scans.items():
        m = np.isin(sc.pair_ledger, ids)
        lids, inv = np.unique(sc.pair_ledger[m], return_inverse=True)
        sums = np.bincount(inv, weights=sc.pair_bytes[m], minlength=lids.size)
        out[bid] = {int(lid): int(b) for lid, b in zip(lids, sums, strict=True)}
    return out


def read_load_impact(
    topics: int,
    *,
    subscriptions: int = 1,
    ack_lag_ms: float = 2000.0,
    publish_rate: float = 10.0,
    entry_size: int = 1024,
    cache_mb: float = 64.0,
    policy: str = "pip430",
    seed: int = 1,
    max_simulated_topics: int = 100,
) -> dict[str, Any]:
    """Expected BookKeeper read load of an action that loads (or reloads) ``topics`` topics.

    On load the broker's cache for the topic is empty and every cursor re-reads from its mark-delete position
    (``ack_lag_ms`` of messages behind its read position; for a redelivery action, the redelivered span). The
    cache model (``model.cache``) runs the workload with and without a load at t = 1 s; the difference in
    BookKeeper reads is the action's read load. At most ``max_simulated_topics`` topics are simulated (with the
    same per-topic cache share) and the result is scaled.
    """
    from pulsar_ops.model.cache import simulate_cache
    from pulsar_ops.model.cache_workload import CacheWorkload

    if topics <= 0:
        return {
            "topics": 0,
            "extra_bookkeeper_reads": 0,
            "extra_bookkeeper_read_bytes": 0,
            "peak_bookkeeper_reads_per_s": 0.0,
            "policy": policy,
        }
    n = min(topics, max_simulated_topics)
    scale = topics / n
    base = CacheWorkload(
        seed=seed,
        duration_s=6.0,
        topics=n,
        publish_rate=publish_rate,
        entry_size=entry_size,
        block_entries=1,
        tailing=max(subscriptions, 1),
        ack_lag_ms=ack_lag_ms,
        cache_mb=cache_mb * n / topics,
    )
    quiet = simulate_cache(base, policy)
    loaded = simulate_cache(CacheWorkload(**{**base.__dict__, "restarts_at_s": (1.0,)}), policy)
    extra = max(0, loaded.misses - quiet.misses)
    peak = max((p["bookkeeper_reads"] for p in loaded.per_second), default=0)
    return {
        "topics": topics,
        "policy": policy,
        "extra_bookkeeper_reads": round(extra * scale),
        "extra_bookkeeper_read_bytes": round(extra * scale * entry_size),
        "peak_bookkeeper_reads_per_s": round(peak * scale, 1),
        "assumptions": {
            "subscriptions": subscriptions,
            "ack_lag_ms": ack_lag_ms,
            "publish_rate": publish_rate,
            "simulated_topics": n,
        },
    }
