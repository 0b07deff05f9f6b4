"""The planner and the static safety rules for trim-unloaded (`plan --offline-trim`). Pure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.actions import Action, Reference, ZnodeRef
from pulsar_ops.repair.planner import PlanParams, SnapshotFacts, plan_actions
from pulsar_ops.repair.rules import ListedLedger, Retention
from pulsar_ops.repair.safety import action_problem

from .factory import DAY, NOW, RULES, ledger_fact, ml_custom, sha

TOPIC = "persistent://t/ns/topic"
ML_PATH = "/managed-ledgers/t/ns/persistent/topic"
ML = ZnodeRef("local", ML_PATH, 7, 700, sha(b"ml"))
CURSOR = ZnodeRef("local", ML_PATH + "/sub", 3, 300, sha(b"c"))
TRIM = PlanParams(offline_trim=True)
OTHER = {5: "/managed-ledgers/t/ns/persistent/other"}
FOREIGN = {5: ledger_fact(5, custom=ml_custom("t/ns/persistent/x"))}


def expired(first: list[int], **ev: Any) -> Finding:
    return Finding(
        detection="expired-retention-unloaded",
        severity="warning",
        topic=TOPIC,
        path=ML_PATH,
        namespace="t/ns",
        evidence={"first_trim_ledger_ids": first, "owned": False, **ev},
    )


def facts(**kw: Any) -> SnapshotFacts:
    base = SnapshotFacts(
        managed_ledgers={"t/ns/persistent/topic": ML},
        ml_formats={ML_PATH: "binary"},
        list_entries={(ML_PATH, 5): (10, 1000), (ML_PATH, 6): (3, 300), (ML_PATH, 7): (None, None)},
        ledgers={i: ledger_fact(i, length=100 * i, custom=ml_custom("t/ns/persistent/topic")) for i in (5, 6, 7)},
        cursors={ML_PATH: (CURSOR,)},
        rules=RULES,
        now_ms=NOW,
        ledger_lists={
            ML_PATH: (
                ListedLedger(5, 10, 1000, NOW - 3 * DAY),
                ListedLedger(6, 3, 300, NOW - 2 * DAY),
                ListedLedger(7, 1, 700, NOW - DAY, bk_last_entry_id=0),
            )
        },
        retention={ML_PATH: Retention(60, -1, "namespace")},  # 1 hour: 5, 6 and (its BookKeeper age) 7 expired
    )
    return replace(base, **kw)


def test_opt_in_only() -> None:
    draft = plan_actions([expired([5])], facts(), PlanParams())
    assert draft.actions == () and "--offline-trim" in draft.not_planned[0].reason


def test_trim_removes_and_deletes_the_first_trim_ledgers_and_checks_the_cursors() -> None:
    (a,) = plan_actions([expired([6, 5])], facts(), TRIM).actions
    assert a.kind == "trim-unloaded" and a.rewrite is not None and a.rewrite.ledger_ids == (5, 6)
    assert [z.path for z in a.preconditions.znodes] == [ML_PATH, ledger_path(5), ledger_path(6)]
    assert a.preconditions.references == (Reference("cursor", CURSOR),)
    assert a.bytes == 1100 and a.delete_count == 2
    assert action_problem(a, ledgers_root="/ledgers") is None
    assert Action.from_json(a.to_json()) == a


@pytest.mark.parametrize(
    ("finding", "fx", "code"),
    [
        (expired([]), {}, "nothing-at-first-trim"),
        (expired([5], owned=True), {}, "topic-loaded"),
        (expired([5]), {"owned_ranges": {"t/ns": ((0, 0xFFFFFFFF),)}}, "topic-loaded"),
        (expired([8]), {}, "contradicted-by-snapshot"),  # not in the list
        (expired([5]), {"referenced_elsewhere": OTHER}, "contradicted-by-snapshot"),
        (expired([5]), {"ledgers": {}}, "missing-in-snapshot"),
        (expired([5]), {"ledgers": FOREIGN}, "custom-metadata-mismatch"),
        (expired([5]), {"ml_formats": {ML_PATH: "text"}}, "not-rewritable"),
        (expired(["5"]), {}, "malformed-finding"),  # type: ignore[list-item]
    ],
)  # fmt: skip
def test_not_planned_and_why(finding: Finding, fx: dict[str, Any], code: str) -> None:
    draft = plan_actions([finding], facts(**fx), TRIM)
    assert draft.actions == ()
    assert [n.reason_code for n in draft.not_planned] == [code]


def test_a_drop_and_a_trim_of_one_topic_are_one_rewrite() -> None:
    dangling = Finding(
        detection="dangling-ledger", severity="critical", ledger_id=7, topic=TOPIC, path=ML_PATH,
        evidence={"ref": "data", "blocked_scopes": []},
    )  # fmt: skip
    draft = plan_actions(
        [expired([5]), dangling],
        facts(ledgers={5: ledger_fact(5)}),
        replace(TRIM, include=frozenset({"dangling-ledger"})),
    )
    assert len(draft.actions) == 1
    assert [n.reason_code for n in draft.not_planned] == ["duplicate"]


def test_safety_refuses_a_trim_that_deletes_more_than_it_removes() -> None:
    (a,) = plan_actions([expired([5])], facts(), TRIM).actions
    extra = ZnodeRef("local", ledger_path(6), 0, 1, sha(b"6"))
    stray_cursor = Reference("cursor", replace(CURSOR, path="/managed-ledgers/t/ns/persistent/other/sub"))
    for bad in (
        replace(a, preconditions=replace(a.preconditions, znodes=(*a.preconditions.znodes, extra))),
        replace(a, preconditions=replace(a.preconditions, znodes=a.preconditions.znodes[:1])),
        replace(a, preconditions=replace(a.preconditions, references=(stray_cursor,))),
        replace(a, preconditions=replace(a.preconditions, absent=(ledger_path(5),))),
    ):
        assert action_problem(bad, ledgers_root="/ledgers") is not None
