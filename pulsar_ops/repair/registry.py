"""The one registry of action kinds: each kind's module (``pulsar_ops.repair.kinds.<kind>``) by name, and which
detection each repairs. The planner, the executor, the impact and the static checks dispatch through it; adding
a kind touches its module, this registry and its tests."""

from __future__ import annotations

from pulsar_ops.errors import PlanError
from pulsar_ops.repair.kind import Kind
from pulsar_ops.repair.kinds import (
    bookie_gc,
    delete_ledger,
    delete_subscription,
    delete_subtree,
    drop_missing_ledger,
    load_topic,
    trim_unloaded,
)

KINDS: dict[str, Kind] = {
    k.KIND.name: k.KIND
    for k in (
        delete_ledger,
        delete_subtree,
        drop_missing_ledger,
        trim_unloaded,
        delete_subscription,
        load_topic,
        bookie_gc,
    )
}

# The detections whose findings become actions, and the kind (opt-in: only with `plan --include DETECTION`;
# expired-retention-unloaded is load-topic, or trim-unloaded with --offline-trim).
DELETE_LEDGER = delete_ledger.KIND
DELETE_SUBTREE = delete_subtree.KIND
DROP_MISSING = drop_missing_ledger.KIND
TRIM_UNLOADED = trim_unloaded.KIND
LOAD_TOPIC = load_topic.KIND
DELETE_SUBSCRIPTION = delete_subscription.KIND


def kind_of(name: str) -> Kind:
    k = KINDS.get(name)
    if k is None:
        raise PlanError(f"unknown action kind {name!r}", hint="re-create the plan with `pulsar-ops plan`")
    return k
