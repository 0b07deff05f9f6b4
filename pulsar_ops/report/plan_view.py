"""What a plan frees, and when: per action kind and over time, from a plan file's predicted impact. Pure.

Read by ``plan`` (the per-kind summary it prints) and by ``report --plan`` (the HTML section and its chart).
The time series is the reference model's bookie GC timeline (``plan.impact.timeline``): every GC run that
reclaims bytes, on every bookie, accumulated by the time it ends. Per bookie (``plan.impact.per_bookie``): what the
plan frees at each GC stage, what stays and the live ledgers pinning it, whether the layout was measured by
``scan-bookie`` or estimated, and for a measured one the estimate's error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KindImpact:
    kind: str
    actions: int
    metadata_ops: int
    bytes_on_disk: int  # bookie bytes (all copies) the plan turns into garbage
    znode_deletes: int
    rewrites: int
    lost_entries: int  # drop-missing-ledger: entries whose loss the plan acknowledges
    lost_bytes: int


@dataclass(frozen=True)
class StuckLog:
    log_id: int
    ledger_dir: str | None
    garbage_bytes: int
    reason: str
    pinned_by: tuple[tuple[int, int, str | None], ...]  # (ledger id, bytes in the log, owner), largest first


@dataclass(frozen=True)
class BookieImpact:
    bookie: str
    layout: str  # measured | estimated
    complete: bool | None  # the scan's manifest (measured layouts only)
    garbage: int  # bytes the plan turns into garbage on this bookie
    deletion: int  # freed by whole-log deletion
    minor: int  # freed by minor compaction
    major: int  # freed by major compaction
    stays: int  # garbage still on disk at the end of the simulated horizon
    rewrite: int
    stuck: tuple[StuckLog, ...]
    estimated_reclaim: int | None  # the metadata-only estimate's reclaim (measured layouts only)
    reclaim_error: float | None  # (estimate - measured) / measured


@dataclass(frozen=True)
class PlanView:
    plan_id: str
    now_ms: int
    kinds: tuple[KindImpact, ...]
    freed: tuple[tuple[int, int], ...]  # (ms after the plan's time, cumulative bytes reclaimed), ascending
    reclaimed: int
    before: int | None
    after: int | None
    bookies: tuple[BookieImpact, ...] = ()


def _action_disk_bytes(a: Mapping[str, Any]) -> int:
    imp = a.get("impact") or {}
    if "ledgers" in imp:  # trim-unloaded: per removed ledger
        return sum(int((v or {}).get("bytes_on_disk") or 0) for v in (imp.get("ledgers") or {}).values())
    return int(imp.get("bytes_on_disk") or 0)


def kinds_of(actions: Sequence[Mapping[str, Any]]) -> tuple[KindImpact, ...]:
    rows: dict[str, dict[str, int]] = {}
    for a in actions:
        r = rows.setdefault(str(a.get("kind")), dict.fromkeys(KIND_FIELDS, 0))
        rewrite = a.get("rewrite")
        znodes = int(a.get("znodes") or 0)
        r["actions"] += 1
        ops = (a.get("impact") or {}).get("metadata_ops")
        r["metadata_ops"] += int(znodes if ops is None else ops)
        r["bytes_on_disk"] += _action_disk_bytes(a)
        r["znode_deletes"] += 0 if a.get("kind") == "load-topic" else znodes - (1 if rewrite else 0)
        r["rewrites"] += 1 if rewrite else 0
        if a.get("kind") == "drop-missing-ledger" and rewrite:
            r["lost_entries"] += sum(int(x.get("entries") or 0) for x in rewrite.get("removed") or ())
            r["lost_bytes"] += sum(int(x.get("bytes") or 0) for x in rewrite.get("removed") or ())
    return tuple(KindImpact(kind=k, **v) for k, v in sorted(rows.items()))


KIND_FIELDS = ("actions", "metadata_ops", "bytes_on_disk", "znode_deletes", "rewrites", "lost_entries", "lost_bytes")


def freed_over_time(timeline: Sequence[Mapping[str, Any]], now_ms: int) -> tuple[tuple[int, int], ...]:
    """Cumulative reclaimed bytes over every bookie, stepped at the end of each GC run that reclaims."""
    steps: dict[int, int] = {}
    for ev in timeline:
        got = int(ev.get("reclaimed_bytes") or 0)
        if got:
            t = int(ev.get("end_ms") or ev.get("t_ms") or now_ms) - now_ms
            steps[t] = steps.get(t, 0) + got
    out, total = [], 0
    for t in sorted(steps):
        total += steps[t]
        out.append((max(t, 0), total))
    return tuple(out)


def bookies_of(per_bookie: Mapping[str, Any], sources: Mapping[str, Any]) -> tuple[BookieImpact, ...]:
    out = []
    for bid, r in sorted(per_bookie.items()):
        rec = r.get("reclaimed_bytes") or {}
        acc = (r.get("estimate_vs_measured") or {}).get("predicted_reclaim") or {}
        src = sources.get(bid) or {}
        stuck = tuple(
            StuckLog(
                log_id=int(e.get("log_id") or 0),
                ledger_dir=e.get("ledger_dir"),
                garbage_bytes=int(e.get("garbage_bytes") or 0),
                reason=str(e.get("reason") or ""),
                pinned_by=tuple(
                    (int(p["ledger_id"]), int(p["bytes"]), None if p.get("owner") is None else str(p["owner"]))
                    for p in e.get("pinned_by") or ()
                ),
            )
            for e in r.get("stuck_logs") or ()
        )
        out.append(
            BookieImpact(
                bookie=str(bid),
                layout=str(r.get("layout") or "estimated"),
                complete=src.get("complete") if r.get("layout") == "measured" else None,
                garbage=int(r.get("garbage_bytes") or 0),
                deletion=int(rec.get("deletion") or 0),
                minor=int(rec.get("minor") or 0),
                major=int(rec.get("major") or 0),
                stays=int(r.get("unreclaimable_bytes") or 0),
                rewrite=int(r.get("rewrite_bytes") or 0),
                stuck=stuck,
                estimated_reclaim=None if not acc else int((acc.get("estimated") or {}).get("total") or 0),
                reclaim_error=acc.get("error") if acc else None,
            )
        )
    return tuple(out)


def plan_view(doc: Mapping[str, Any]) -> PlanView:
    """From a plan file's JSON document (as ``plan`` writes it)."""
    impact = doc.get("impact") or {}
    now = int(impact.get("now_ms") or doc.get("created_at_ms") or 0)
    ba = impact.get("before_after") or {}
    freed = freed_over_time(impact.get("timeline") or (), now)
    return PlanView(
        plan_id=str(doc.get("plan_id") or ""),
        now_ms=now,
        kinds=kinds_of(doc.get("actions") or ()),
        freed=freed,
        reclaimed=freed[-1][1] if freed else 0,
        before=ba.get("ledger_bytes_on_bookies_before"),
        after=ba.get("after_gc"),
        bookies=bookies_of(impact.get("per_bookie") or {}, impact.get("layout_sources") or {}),
    )
