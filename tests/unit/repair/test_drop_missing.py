"""The planner and the static safety rules for drop-missing-ledger (opt-in dangling-ledger repair). Pure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.policies import topic_hash
from pulsar_ops.repair.actions import Action, ZnodeRef
from pulsar_ops.repair.planner import PlanParams, SnapshotFacts, plan_actions
from pulsar_ops.repair.safety import action_problem

from .factory import ledger_fact, sha

TOPIC = "persistent://t/ns/topic"
ML_PATH = "/managed-ledgers/t/ns/persistent/topic"
ML = ZnodeRef("local", ML_PATH, 7, 700, sha(b"ml"))
INCLUDE = PlanParams(include=frozenset({"dangling-ledger"}))


def dangling(lid: int, *, ref: str = "data", blocked: tuple[str, ...] = (), **kw: Any) -> Finding:
    return Finding(
        detection="dangling-ledger",
        severity="warning" if blocked else "critical",
        ledger_id=lid,
        topic=kw.get("topic", TOPIC),
        path=kw.get("path", ML_PATH),
        reason="referenced data ledger has no BookKeeper metadata",
        evidence={"ref": ref, "blocked_scopes": list(blocked)},
    )


def facts(**kw: Any) -> SnapshotFacts:
    base = SnapshotFacts(
        managed_ledgers={"t/ns/persistent/topic": ML},
        ml_formats={ML_PATH: "binary"},
        list_entries={(ML_PATH, 5): (10, 1000), (ML_PATH, 6): (3, 300), (ML_PATH, 9): (None, None)},
        ledgers={9: ledger_fact(9)},
    )
    return replace(base, **kw)


def test_opt_in_only() -> None:
    draft = plan_actions([dangling(5)], facts(), PlanParams())
    assert draft.actions == ()
    (np,) = draft.not_planned
    assert np.reason_code == "no-repair-action" and "--include dangling-ledger" in np.reason


def test_one_action_per_managed_ledger_with_the_acknowledged_loss() -> None:
    draft = plan_actions([dangling(6), dangling(5)], facts(), INCLUDE)
    (a,) = draft.actions
    assert a.kind == "drop-missing-ledger" and a.path == ML_PATH and a.preconditions.znodes == (ML,)
    assert a.rewrite is not None and a.rewrite.ledger_ids == (5, 6) and a.rewrite.topic == TOPIC
    assert set(a.preconditions.absent) == {
        ledger_path(i, **kw) for i in (5, 6) for kw in ({}, {"flat": True}, {"long": True})
    }
    assert [r.to_json()["message_ids"] for r in a.rewrite.removed] == [["5:0", "5:9"], ["6:0", "6:2"]]
    assert a.delete_count == 0 and a.bytes == 0
    assert action_problem(a, ledgers_root="/ledgers") is None
    assert Action.from_json(a.to_json()) == a


@pytest.mark.parametrize(
    ("finding", "fx", "code"),
    [
        (dangling(5, ref="cursor"), {}, "ref-not-droppable"),
        (dangling(5, ref="schema", topic=None), {}, "ref-not-droppable"),
        (dangling(5, blocked=("/ledgers",)), {}, "not-plannable"),  # absence not confirmed
        (dangling(9), {}, "contradicted-by-snapshot"),  # the snapshot has its metadata
        (dangling(8), {}, "contradicted-by-snapshot"),  # not in the list any more
        (dangling(5, topic="persistent://t/ns/other"), {}, "path-mismatch"),
        (dangling(5), {"ml_formats": {ML_PATH: "text"}}, "not-rewritable"),
        (dangling(5), {"managed_ledgers": {}}, "missing-in-snapshot"),
        (dangling(5), {"loaded_topics": frozenset({TOPIC})}, "topic-loaded"),
        (dangling(5), {"owned_ranges": {"t/ns": ((0, 0xFFFFFFFF),)}}, "topic-loaded"),
    ],
)
def test_not_planned_and_why(finding: Finding, fx: dict[str, Any], code: str) -> None:
    draft = plan_actions([finding], facts(**fx), INCLUDE)
    assert draft.actions == ()
    assert [n.reason_code for n in draft.not_planned] == [code]


def test_a_bundle_that_does_not_hold_the_topic_does_not_block_it() -> None:
    h = topic_hash(TOPIC)
    other = ((0, h),) if h > 0 else ((h + 1, 0xFFFFFFFF),)
    assert len(plan_actions([dangling(5)], facts(owned_ranges={"t/ns": other}), INCLUDE).actions) == 1


def test_safety_refuses_a_rewrite_that_strays() -> None:
    (a,) = plan_actions([dangling(5)], facts(), INCLUDE).actions
    assert a.rewrite is not None
    other = "/managed-ledgers/t/ns/persistent/other"
    strays = [
        replace(a, path=other),
        replace(a, rewrite=replace(a.rewrite, topic="persistent://t/ns/other")),
        replace(a, preconditions=replace(a.preconditions, absent=("/ledgers/00/0000/L0077",))),
        replace(a, preconditions=replace(a.preconditions, absent=())),
        replace(a, preconditions=replace(a.preconditions, znodes=(ML, replace(ML, path=other)))),
        replace(a, store="config"),
        replace(a, ledger_id=5),
    ]
    for bad in strays:
        assert action_problem(bad, ledgers_root="/ledgers") is not None, bad
