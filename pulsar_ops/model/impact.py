"""Predicted impact of a plan, for the planner: disk reclaimed per bookie over time and metadata operations.

``plan_impact`` estimates every bookie's entry-log layout from ledger metadata alone (``model.layout``), deletes
the planned ledgers' metadata at ``now_ms`` and runs the bookie GC model (``model.gc``) forward. Pure and fast:
O(ledgers + entry logs); no I/O library is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc import GcOptions, GcResult, simulate
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import DEFAULT_LEDGER_SPAN_MS, estimate_layout, per_bookie_bytes
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
                "per_bookie": {bid: r.to_json() for bid, r in self.gc.bookies.items()},
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
) -> ImpactReport:
    """Impact of deleting ``delete``'s metadata at ``now_ms``, every other ledger in ``all_ledgers`` staying.

    ``metadata_ops`` = ``znode_deletes`` (the plan's own metadata-store writes, counted by the planner), or one
    delete per ledger when the planner passes 0. ``disk_bytes`` (bookie id -> capacity, from the snapshot's
    ``bookies`` table) enables the disk-threshold rules; without it they never fire.
    """
    cfg = (config or GcConfig()).validate()
    by_id: dict[int, LedgerFacts] = {f.ledger_id: f for f in all_ledgers}
    for f in delete:
        by_id[f.ledger_id] = f
    delete_at = {f.ledger_id: now_ms for f in delete}
    layout = estimate_layout(
        list(by_id.values()),
        delete_at,
        now_ms=now_ms,
        log_size_limit=cfg.log_size_limit,
        entry_size=entry_size,
        ledger_span_ms=ledger_span_ms,
        disk_bytes=disk_bytes,
    )
    result = simulate(layout, cfg, GcOptions(start_ms=now_ms, horizon_ms=horizon_ms))
    per_ledger: dict[int, tuple[int, tuple[str, ...]]] = {}
    reads = 0
    for f in delete:
        per_ledger[f.ledger_id] = (round(per_bookie_bytes(f) * len(f.bookies)), tuple(f.bookies))
        if cfg.verify_metadata_on_gc:
            reads += len(f.bookies)
    ops = znode_deletes if znode_deletes > 0 else len(delete)
    return ImpactReport(per_ledger=per_ledger, gc=result, metadata_ops=ops, now_ms=now_ms, bookie_metadata_reads=reads)


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
