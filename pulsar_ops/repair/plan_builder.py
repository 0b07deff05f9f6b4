"""Build a plan from an audit directory: load findings + snapshot facts, plan (pure), add impact, write.

Never touches ZooKeeper.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulsar_ops import __version__
from pulsar_ops.errors import ModelError, PlanError
from pulsar_ops.findings import Finding
from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc_config import gc_config
from pulsar_ops.model.impact import plan_impact, read_load_impact
from pulsar_ops.model.scan_layout import BookieScan, read_scans
from pulsar_ops.repair.actions import Action, NotPlanned, Precondition
from pulsar_ops.repair.kinds import bookie_gc
from pulsar_ops.repair.plan_file import Plan, dump_plan
from pulsar_ops.repair.planner import ORDER_DOC, LedgerFact, PlanDraft, PlanParams, plan_actions, summarize, with_impact
from pulsar_ops.repair.registry import kind_of
from pulsar_ops.repair.rules import RuleParams
from pulsar_ops.repair.snapshot_facts import (
    load_audit,
    load_disk_bytes,
    load_facts,
    load_ledgers,
    open_audited_snapshot,
)
from pulsar_ops.units import human_bytes as fmt

DEFAULT_LOADS_PER_MINUTE = 60  # apply --max-loads-per-minute's default


@dataclass(frozen=True)
class BuiltPlan:
    plan: Plan
    path: Path
    checksum: str
    impact_lines: tuple[str, ...]


def compute_impact(
    actions: Sequence[Action],
    ledgers: Sequence[LedgerFacts],
    *,
    now_ms: int,
    disk_bytes: Mapping[str, int] | None = None,
    scans: Mapping[str, BookieScan] | None = None,
    ledgers_root: str = "/ledgers",
    snapshot_ms: int | None = None,
    owner_of: Callable[[int], str | None] | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], tuple[str, ...]]:
    """(plan-level impact, per-action impact by id, human lines) from the reference model's GC prediction.

    ``scans`` (``plan --bookie-scan``): the scanned bookies' measured entry-log layouts replace the estimate."""
    znode_deletes = sum(a.delete_count for a in actions)
    per_action: dict[str, dict[str, Any]] = {a.id: {"metadata_ops": a.znode_count} for a in actions}
    by_id = {f.ledger_id: f for f in ledgers}
    freed = {a.id: kind_of(a.kind).freed(a, ledgers_root) for a in actions}  # what each lets the bookies reclaim
    delete = [by_id[lid] for a in actions for lid in freed[a.id] if lid in by_id]
    report = plan_impact(
        delete,
        ledgers,
        now_ms=now_ms,
        znode_deletes=znode_deletes,
        disk_bytes=disk_bytes,
        scans=scans,
        snapshot_ms=snapshot_ms,
    )
    if owner_of is not None:  # name what pins the logs that stay: the live ledgers' owners
        for r in report.gc.bookies.values():
            for entry in r.stuck:
                for pin in entry.get("pinned_by") or ():
                    owner = owner_of(pin["ledger_id"])
                    if owner is not None:
                        pin["owner"] = owner
    doc: dict[str, Any] = report.to_json()
    per_ledger: dict[str, Any] = doc.get("per_ledger", {})
    for a in actions:
        per_action[a.id].update(kind_of(a.kind).impact_note(a, per_ledger, ledgers_root))
    before = sum(max(f.length, 0) * max(f.write_quorum, 1) for f in ledgers)
    reclaimed = sum(int(v) for v in doc.get("total", {}).get("reclaimed_bytes", {}).values())
    before_after = {
        "ledger_bytes_on_bookies_before": before,
        "after_gc": max(before - reclaimed, 0),
        "reclaimed": reclaimed,
        "note": "ledger length x write quorum over every ledger",
    }
    lines = (
        f"bookie storage held by ledgers (length x write quorum): before {fmt(before)}, "
        f"after the simulated GC runs {fmt(max(before - reclaimed, 0))}",
        *report.summary_lines(),
    )
    loads = sum(1 for a in actions if kind_of(a.kind).paced)
    if loads:
        wave = read_load_impact(min(loads, DEFAULT_LOADS_PER_MINUTE))
        minutes = -(-loads // DEFAULT_LOADS_PER_MINUTE)
        wave.update(
            {
                "loads": loads,
                "max_loads_per_minute": DEFAULT_LOADS_PER_MINUTE,
                "minutes": minutes,
                "note": "one minute's wave at apply's default --max-loads-per-minute, simulated with the broker "
                "cache model; extra reads scale with the number of minutes",
            }
        )
        lines = (
            *lines,
            f"topic loads: {loads} at {DEFAULT_LOADS_PER_MINUTE}/min over {minutes} min; each minute's wave adds "
            f"{wave['extra_bookkeeper_reads']} BookKeeper reads (peak {wave['peak_bookkeeper_reads_per_s']}/s, "
            "cache model)",
        )
    total: dict[str, Any] = {
        "available": True,
        **doc.get("total", {}),
        "before_after": before_after,
        **({"load_wave": wave} if loads else {}),
        "summary": list(lines),
    }
    return total, per_action, lines


def _owner(f: LedgerFact | None) -> str | None:
    """What a ledger's custom metadata says it belongs to (Pulsar's ``pulsar/*`` keys), for pinned-log listings."""
    if f is None:
        return None
    ml = f.custom("pulsar/managed-ledger")
    if ml is not None:
        cursor = f.custom("pulsar/cursor")
        return f"{ml} cursor {cursor}" if cursor is not None else ml
    for key, label in (("pulsar/schemaId", "schema"), ("pulsar/compactedTopic", "compacted")):
        v = f.custom(key)
        if v is not None:
            return f"{label} {v}"
    return None


def bookie_gc_draft(
    draft: PlanDraft,
    findings: Sequence[Finding],
    scans: Mapping[str, BookieScan],
    audit_doc: Mapping[str, Any],
    *,
    endpoints: Mapping[str, Mapping[str, Any]],
    ledgers_root: str,
    scraped_gc: Mapping[str, Mapping[str, Any]] | None = None,
) -> PlanDraft:
    """``plan --bookie-scan``: the ``bookie-gc`` actions (repair/kinds/bookie_gc.py) first, then the draft's; the
    storage findings they answer leave ``not_planned``, the ones they cannot answer get the kind's reason."""
    params = audit_doc.get("params")
    gc_doc = ((params or {}).get("bookie") or {}).get("gc") if isinstance(params, Mapping) else None
    try:
        cfg = gc_config(gc_doc if isinstance(gc_doc, Mapping) else None)
    except ModelError as e:
        raise PlanError(f"the audit's bookie GC settings: {e.message}", hint="re-run the audit") from None
    built = bookie_gc.build(findings, scans, cfg, endpoints=endpoints, scraped=scraped_gc)
    actions: list[Action] = []
    answered: set[str] = set()
    for item in built.actions:
        call: bookie_gc.BookieGcCall = item["call"]
        f: Finding = item["finding"]
        answered.update(x.key() for x in item["findings"])
        actions.append(
            bookie_gc.KIND.action(
                f,
                "bookie-gc-" + hashlib.sha256(call.bookie_id.encode()).hexdigest()[:16],
                bookie_gc.registration_path(ledgers_root, call.bookie_id),
                preconditions=Precondition(znodes=()),
                bytes=int(call.predicted.get("total", 0)),
                time_ms=call.scan_finished_at_ms,
                owner=call.bookie_id,
                impact=bookie_gc.impact(call, item["notes"]),
                bookie_gc=call,
            )
        )
    skipped = [
        NotPlanned(f.key(), f.detection, code, why, f.bytes, f.path, f.ledger_id) for f, code, why in built.not_planned
    ]
    replaced = answered | {n.key for n in skipped}
    not_planned = [n for n in draft.not_planned if n.key not in replaced] + skipped
    not_planned.sort(key=lambda n: (n.detection, n.reason_code, n.key))
    return PlanDraft(actions=(*actions, *draft.actions), not_planned=tuple(not_planned))


def build_plan(
    audit_dir: Path,
    out: Path,
    params: PlanParams,
    *,
    now_ms: int | None = None,
    plan_id: str | None = None,
    bookie_scans: Sequence[Path] = (),
) -> BuiltPlan:
    created = int(time.time() * 1000) if now_ms is None else now_ms
    scans = read_scans(bookie_scans) if bookie_scans else None
    audit = load_audit(audit_dir)
    snap = open_audited_snapshot(audit)
    ledger_facts, ledger_rows = load_ledgers(snap)
    rules = RuleParams.from_audit(audit.audit)
    audit_params = audit.audit.get("params")
    audit_now = audit_params.get("now_ms") if isinstance(audit_params, dict) else None
    facts = load_facts(
        snap,
        audit.findings,
        ledger_facts,
        params.rewrite_detections,
        rules=rules,
        now_ms=int(audit_now) if isinstance(audit_now, int) else None,
    )
    draft: PlanDraft = plan_actions(audit.findings, facts, params)
    impact, per_action, lines = compute_impact(
        draft.actions,
        ledger_rows,
        now_ms=created,
        disk_bytes=load_disk_bytes(snap),
        scans=scans,
        ledgers_root=snap.manifest.ledgers_root,
        snapshot_ms=snap.manifest.finished_at_ms,
        owner_of=lambda lid: _owner(ledger_facts.get(lid)),
    )
    if scans:
        impact["bookie_scans"] = {bid: sc.path for bid, sc in sorted(scans.items())}
    draft = with_impact(draft, per_action)
    if scans:
        draft = bookie_gc_draft(
            draft,
            audit.findings,
            scans,
            audit.audit,
            endpoints=snap.manifest.bookie_endpoints,
            ledgers_root=snap.manifest.ledgers_root,
            scraped_gc=snap.manifest.bookie_gc,
        )
    summary = summarize(draft.actions, draft.not_planned)
    plan = Plan(
        plan_id=plan_id or str(uuid.uuid4()),
        created_at_ms=created,
        tool_version=__version__,
        snapshot={
            "id": snap.manifest.snapshot_id,
            "path": str(snap.path.resolve()),
            "finished_at_ms": snap.manifest.finished_at_ms,
            # a snapshot read from a ZooKeeper data directory: its zxid (finished_at_ms is its last txn's time)
            **({"zxid": snap.manifest.zxid} if snap.manifest.zxid is not None else {}),
        },
        audit={"path": str(Path(audit_dir).resolve()), "findings": len(audit.findings)},
        target={
            "ledgers_root": snap.manifest.ledgers_root,
            "identity": dict(snap.manifest.identity) if snap.manifest.identity else None,
            "stores": dict(snap.manifest.stores),
        },
        params={
            "max_actions": params.max_actions,
            "max_bytes": params.max_bytes,
            "subtree_max_znodes": params.subtree_max_znodes,
            "rules": rules.to_json(),  # the audit parameters apply's eligibility rules re-use
            **({"include": sorted(params.include)} if params.include else {}),
            **({"offline_trim": True} if params.offline_trim else {}),
            **(
                {"offline_trim_namespaces": sorted(params.offline_trim_namespaces)}
                if params.offline_trim_namespaces
                else {}
            ),
        },
        caps={
            "max_actions": params.max_actions,
            "max_bytes": params.max_bytes,
            "order": ORDER_DOC,
            "cut_actions": summary["cut"]["actions"],
            "cut_bytes": summary["cut"]["bytes"],
        },
        summary=summary,
        impact=impact,
        actions=draft.actions,
        not_planned=draft.not_planned,
    )
    checksum = dump_plan(plan, out)
    return BuiltPlan(plan=plan, path=Path(out), checksum=checksum, impact_lines=lines)
