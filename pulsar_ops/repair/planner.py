"""The pure planner: findings + snapshot facts -> ordered, capped actions and not-planned findings (stable
``reason_code``). It has no rule of its own: each kind builds its action and asks its rule on the snapshot
(:class:`pulsar_ops.repair.snapshot_tree.SnapshotView`). Opt-in detections: :data:`OPT_IN`. Caps apply in
:data:`ORDER_DOC` order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.repair import registry
from pulsar_ops.repair.actions import (
    KIND_DELETE_SUBSCRIPTION,
    KIND_DROP_MISSING_LEDGER,
    KIND_LOAD_TOPIC,
    Action,
    NotPlanned,
)
from pulsar_ops.repair.facts import CursorFact, LedgerFact, SnapshotFacts, SubtreeZnode, TopicNow
from pulsar_ops.repair.kind import Skip
from pulsar_ops.repair.kinds.delete_ledger import IDENTITY_KEYS
from pulsar_ops.repair.kinds.delete_ledger import MANAGED_LEDGERS as MANAGED_LEDGERS_ROOT
from pulsar_ops.repair.safety import action_problem, within
from pulsar_ops.repair.snapshot_tree import SnapshotUnknown, SnapshotView

__all__ = ["IDENTITY_KEYS", "MANAGED_LEDGERS_ROOT", "CursorFact", "LedgerFact", "SnapshotFacts", "SubtreeZnode"]

DEFAULT_SUBTREE_MAX_ZNODES = 1000
ORDER_DOC = (
    "oldest first (ledger ctime / newest subtree mtime), then biggest first, then ledger id / path; "
    "an action that does not fit the remaining --max-bytes is cut and later smaller ones may still fit"
)


# Detections whose repair is opt-in (`plan --include DETECTION`), and the action each becomes.
OPT_IN = {
    "dangling-ledger": KIND_DROP_MISSING_LEDGER,
    "inactive-subscription": KIND_DELETE_SUBSCRIPTION,
    "expired-retention-unloaded": KIND_LOAD_TOPIC,  # with --offline-trim: KIND_TRIM_UNLOADED instead
}


@dataclass(frozen=True)
class PlanParams:
    max_actions: int | None = None
    max_bytes: int | None = None
    subtree_max_znodes: int = DEFAULT_SUBTREE_MAX_ZNODES
    include: frozenset[str] = frozenset()  # opt-in detections (keys of OPT_IN)
    offline_trim: bool = False  # expired-retention-unloaded -> trim-unloaded (rewrite without loading)
    offline_trim_namespaces: frozenset[str] = frozenset()  # the same, for these namespaces only

    @property
    def rewrite_detections(self) -> frozenset[str]:
        """Detections whose findings become opt-in actions in this plan."""
        offline = self.offline_trim or bool(self.offline_trim_namespaces)
        return self.include | ({"expired-retention-unloaded"} if offline else frozenset())

    def trims_offline(self, f: Finding) -> bool | None:
        """For an expired-retention-unloaded finding: True (trim-unloaded), False (load-topic), None (neither)."""
        if self.offline_trim or (f.namespace or "") in self.offline_trim_namespaces:
            return True
        return False if "expired-retention-unloaded" in self.include else None


@dataclass(frozen=True)
class PlanDraft:
    actions: tuple[Action, ...]
    not_planned: tuple[NotPlanned, ...]


def _np(f: Finding, code: str, reason: str) -> NotPlanned:
    return NotPlanned(f.key(), f.detection, code, reason, f.bytes, f.path, f.ledger_id)


def snapshot_topic(facts: SnapshotFacts, ml_path: str) -> TopicNow:
    """The retention rules' facts for one managed ledger, from the snapshot."""
    return SnapshotView(facts).topic(ml_path)


def _built(f: Finding, build: Callable[..., Action], *args: Any) -> Action | NotPlanned:
    """The action a kind builds for ``f`` (its rule asked on the snapshot), or why it is not planned."""
    try:
        return build(f, *args)
    except Skip as s:
        return _np(f, s.code, s.reason)
    except SnapshotUnknown as e:  # the snapshot cannot answer a read the rule makes: never absence
        return _np(f, "not-plannable", f"{e}; absence is not confirmed")


def _order_key(a: Action) -> tuple[Any, ...]:
    return (a.time_ms, -a.bytes, a.kind, a.ledger_id if a.ledger_id is not None else -1, a.path, a.id)


def _drop_overlaps(actions: list[Action]) -> tuple[list[Action], list[tuple[Action, str]]]:
    """Keep the outermost of nested subtree actions (same store); report the inner ones."""
    subtrees = sorted((a for a in actions if registry.kind_of(a.kind).nests), key=lambda a: (a.store, a.path))
    dropped: dict[str, str] = {}
    kept_roots: list[Action] = []
    for a in subtrees:
        outer = next((k for k in kept_roots if k.store == a.store and within(a.path, k.path)), None)
        if outer is not None:
            dropped[a.id] = outer.path
        else:
            kept_roots.append(a)
    keep = [a for a in actions if a.id not in dropped]
    return keep, [(a, dropped[a.id]) for a in actions if a.id in dropped]


def by_key_of(findings: Sequence[Finding], a: Action) -> Finding:
    return next(f for f in findings if f.key() == a.finding.key)


def plan_actions(findings: Iterable[Finding], facts: SnapshotFacts, params: PlanParams) -> PlanDraft:
    """Turn findings into ordered, capped actions. Deterministic for any order of ``findings``."""
    view = SnapshotView(facts)
    not_planned: list[NotPlanned] = []
    candidates: list[tuple[Action, Finding]] = []
    seen_keys: set[str] = set()
    seen_targets: set[str] = set()
    opt_in: list[Finding] = []
    for f in sorted(findings, key=lambda x: (x.key(), x.severity, x.reason)):
        k = f.key()
        if k in seen_keys:
            not_planned.append(_np(f, "duplicate", "duplicate finding"))
            continue
        seen_keys.add(k)
        if f.detection in params.rewrite_detections:
            opt_in.append(f)
            continue
        if f.detection not in ("orphan-ledger", "znode-leak"):
            why = f"{f.detection} has no repair action"
            if f.detection in OPT_IN:
                why = f"{f.detection} is repaired only on request: `pulsar-ops plan --include {f.detection}`"
                if f.detection == "expired-retention-unloaded":
                    why += " (a broker loads and trims it) or `--offline-trim` (no broker)"
            not_planned.append(_np(f, "no-repair-action", why))
            continue
        if not f.plannable:
            not_planned.append(_np(f, "not-plannable", f.reason or "finding is not plannable"))
            continue
        if f.detection == "orphan-ledger":
            built = _built(f, registry.DELETE_LEDGER.build, facts, view)
        else:
            built = _built(f, registry.DELETE_SUBTREE.build, facts, view, params.subtree_max_znodes)
        if isinstance(built, NotPlanned):
            not_planned.append(built)
            continue
        action = built
        unsafe = action_problem(action, ledgers_root=facts.ledgers_root)
        if unsafe is not None:
            not_planned.append(_np(f, "protected-path", unsafe))
            continue
        if action.id in seen_targets:
            not_planned.append(_np(f, "duplicate", f"target of {action.id} is already planned"))
            continue
        seen_targets.add(action.id)
        candidates.append((action, f))

    dangling = [f for f in opt_in if f.detection == "dangling-ledger"]
    rewrites, skipped = registry.DROP_MISSING.build_all(dangling, facts, view)
    not_planned.extend(_np(f, s.code, s.reason) for f, s in skipped)
    for f in opt_in:  # a subscription action's path (its cursor) is never a retention action's (its topic's)
        if f.detection == "expired-retention-unloaded":
            offline = params.trims_offline(f)
            if offline is None:
                not_planned.append(_np(f, "no-repair-action", f"{f.namespace} is not among --offline-trim-namespace"))
                continue
            build = (registry.TRIM_UNLOADED if offline else registry.LOAD_TOPIC).build
        elif f.detection == "inactive-subscription":
            build = registry.DELETE_SUBSCRIPTION.build
        else:
            continue
        built = _built(f, build, facts, view)
        (not_planned if isinstance(built, NotPlanned) else rewrites).append(built)  # type: ignore[arg-type]
    taken: dict[str, str] = {}
    for a in list(rewrites):  # one rewrite per managed-ledger znode: a drop and a trim of one topic conflict
        if a.path in taken:
            rewrites.remove(a)
            not_planned.append(
                _np(by_key_of(opt_in, a), "duplicate", f"{a.path} is already rewritten by {taken[a.path]}")
            )
        else:
            taken[a.path] = a.id
    by_key = {f.key(): f for f in opt_in}
    for a in rewrites:
        unsafe = action_problem(a, ledgers_root=facts.ledgers_root)
        if unsafe is not None:
            not_planned.append(_np(by_key[a.finding.key], "protected-path", unsafe))
            continue
        candidates.append((a, by_key[a.finding.key]))

    by_id = {a.id: f for a, f in candidates}
    actions, overlapped = _drop_overlaps([a for a, _ in candidates])
    for a, outer in overlapped:
        not_planned.append(_np(by_id[a.id], "contained-in-subtree", f"inside planned subtree {outer}"))

    kept: list[Action] = []
    total_bytes = 0
    for a in sorted(actions, key=_order_key):
        if params.max_actions is not None and len(kept) >= params.max_actions:
            not_planned.append(_np(by_id[a.id], "cut-max-actions", f"cut by --max-actions {params.max_actions}"))
            continue
        if params.max_bytes is not None and total_bytes + a.bytes > params.max_bytes:
            not_planned.append(_np(by_id[a.id], "cut-max-bytes", f"cut by --max-bytes {params.max_bytes}"))
            continue
        kept.append(a)
        total_bytes += a.bytes
    not_planned.sort(key=lambda n: (n.detection, n.reason_code, n.key))
    return PlanDraft(actions=tuple(kept), not_planned=tuple(not_planned))


def with_impact(draft: PlanDraft, impacts: Mapping[str, Mapping[str, Any]]) -> PlanDraft:
    """Attach per-action impact documents (by action id)."""
    return replace(
        draft,
        actions=tuple(replace(a, impact={**a.impact, **impacts.get(a.id, {})}) for a in draft.actions),
    )


def summarize(actions: Sequence[Action], not_planned: Sequence[NotPlanned]) -> dict[str, Any]:
    by_kind: dict[str, dict[str, int]] = {}
    for a in actions:
        s = by_kind.setdefault(a.kind, {"actions": 0, "bytes": 0, "znodes": 0})
        s["actions"] += 1
        s["bytes"] += a.bytes
        s["znodes"] += a.delete_count
        if a.rewrite is not None:
            s["rewrites"] = s.get("rewrites", 0) + 1
            s["dropped_ledgers"] = s.get("dropped_ledgers", 0) + len(a.rewrite.removed)
    ledger_kinds = Counter(a.ledger_kind for a in actions if a.ledger_kind)
    leaks = Counter(a.leak or "unknown" for a in actions if registry.kind_of(a.kind).nests)
    by_reason = Counter(n.reason_code for n in not_planned)
    by_detection = Counter(n.detection for n in not_planned)
    cut = [n for n in not_planned if n.reason_code.startswith("cut-")]
    return {
        "actions": len(actions),
        "bytes": sum(a.bytes for a in actions),
        "znodes": sum(a.delete_count for a in actions),
        "rewrites": sum(1 for a in actions if a.rewrite is not None),
        "by_kind": dict(sorted(by_kind.items())),
        "ledger_kinds": dict(sorted(ledger_kinds.items())),
        "leaks": dict(sorted(leaks.items())),
        "loads_topics": sum(1 for a in actions if a.loads_topics),
        "loads_topics_note": "these actions go through a broker, which loads the topic (paced at apply by "
        "--max-loads-per-minute for load-topic)"
        if any(a.loads_topics for a in actions)
        else "no action in this plan loads a topic (metadata-only changes)",
        "order": ORDER_DOC,
        "not_planned": {
            "total": len(not_planned),
            "by_reason": dict(sorted(by_reason.items())),
            "by_detection": dict(sorted(by_detection.items())),
        },
        "cut": {
            "actions": len(cut),
            "bytes": sum(n.bytes for n in cut),
            "by_reason": dict(sorted(Counter(n.reason_code for n in cut).items())),
        },
    }
