"""The planner and the static safety rules for delete-subscription (`plan --include inactive-subscription`). Pure."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.actions import Action, AdminCall, ZnodeRef
from pulsar_ops.repair.planner import CursorFact, PlanParams, SnapshotFacts, plan_actions
from pulsar_ops.repair.safety import action_problem

from .factory import DAY, NOW, RULES, ledger_fact, sha

TOPIC = "persistent://t/ns/topic"
ML_PATH = "/managed-ledgers/t/ns/persistent/topic"
INCLUDE = PlanParams(include=frozenset({"inactive-subscription"}))


def cursor(name: str, md: tuple[int, int] | None, ledger: int = -1, system: bool = False) -> CursorFact:
    path = f"{ML_PATH}/{name}"
    z = ZnodeRef("local", path, 2, 20, sha(path.encode()))
    return CursorFact(z, ML_PATH, name, system, ledger, md, last_active_ms=NOW - 30 * DAY)


def idle(name: str) -> Finding:
    return Finding(
        detection="inactive-subscription", severity="warning", topic=TOPIC, subscription=name,
        path=f"{ML_PATH}/{name}", evidence={"last_active_ms": 5, "backlog_bytes": 700},
    )  # fmt: skip


def facts(*cursors: CursorFact, **kw: Any) -> SnapshotFacts:
    entries = {(ML_PATH, 5): (10, 100), (ML_PATH, 6): (10, 200), (ML_PATH, 7): (10, 400), (ML_PATH, 8): (None, None)}
    return replace(
        SnapshotFacts(
            cursor_facts={c.znode.path: c for c in cursors},
            list_entries=entries,
            ledgers={9: ledger_fact(9)},
            rules=RULES,
            now_ms=NOW,
        ),
        **kw,
    )


def test_the_slowest_cursor_frees_up_to_the_next_one_and_backs_up_its_ledger() -> None:
    (a,) = plan_actions([idle("old")], facts(cursor("old", (5, 3), ledger=9), cursor("new", (7, 0))), INCLUDE).actions
    assert a.kind == "delete-subscription" and a.admin == AdminCall(TOPIC, "old") and a.loads_topics
    assert [z.path for z in a.preconditions.znodes] == [f"{ML_PATH}/old", ledger_path(9)]
    assert (a.bytes, a.impact["slowest_cursor"]) == (300, True)  # ledgers 5 and 6, up to the next cursor's 7
    assert action_problem(a, ledgers_root="/ledgers") is None
    assert Action.from_json(a.to_json()) == a


def test_a_cursor_that_is_not_the_slowest_frees_nothing_and_the_only_one_frees_to_the_current_ledger() -> None:
    (a,) = plan_actions([idle("new")], facts(cursor("old", (5, 3)), cursor("new", (7, 0))), INCLUDE).actions
    assert (a.bytes, a.impact["slowest_cursor"]) == (0, False)
    (b,) = plan_actions([idle("old")], facts(cursor("old", (6, 0))), INCLUDE).actions
    assert b.bytes == 600  # ledgers 6 and 7; 8 is the current ledger


def test_never_a_system_cursor_and_only_on_request() -> None:
    draft = plan_actions([idle("__compaction")], facts(cursor("__compaction", (5, 0), system=True)), INCLUDE)
    assert draft.actions == () and draft.not_planned[0].reason_code == "kind-not-plannable"
    draft = plan_actions([idle("old")], facts(cursor("old", (5, 0))), PlanParams())
    assert draft.actions == () and "--include inactive-subscription" in draft.not_planned[0].reason


def test_safety_refuses_a_subscription_action_that_strays() -> None:
    (a,) = plan_actions([idle("old")], facts(cursor("old", (5, 3))), INCLUDE).actions
    assert a.admin is not None
    for bad in (
        replace(a, admin=replace(a.admin, subscription="other")),
        replace(a, admin=replace(a.admin, subscription="__compaction"), path=f"{ML_PATH}/__compaction"),
        replace(a, loads_topics=False),
        replace(a, path=ML_PATH),
        replace(a, preconditions=replace(a.preconditions, absent=(ledger_path(3),))),
    ):
        assert action_problem(bad, ledgers_root="/ledgers") is not None, bad


def test_a_subscription_active_within_inactive_after_is_refused_by_the_rule() -> None:
    recent = replace(cursor("old", (5, 3)), last_active_ms=NOW - DAY)  # inactive-after is 7 days
    draft = plan_actions([idle("old")], facts(recent), INCLUDE)
    assert draft.actions == ()
    assert [n.reason_code for n in draft.not_planned] == ["refused-by-rule"]
    assert "within inactive-after" in draft.not_planned[0].reason


def test_the_predicted_impact_counts_the_cursor_ledger_the_broker_deletes() -> None:
    from pulsar_ops.model.facts import LedgerFacts
    from pulsar_ops.repair.plan_builder import compute_impact

    (a,) = plan_actions([idle("old")], facts(cursor("old", (5, 3), ledger=9), cursor("new", (7, 0))), INCLUDE).actions
    cursor_ledger = LedgerFacts(9, 5000, ("bk1:3181",), 1, 1, 0, "CLOSED", closed_ms=10)
    other = LedgerFacts(5, 100, ("bk1:3181",), 1, 1, 0, "CLOSED", closed_ms=10)
    total, per_action, _lines = compute_impact([a], [cursor_ledger, other], now_ms=1000)
    assert per_action[a.id]["ledgers"] == {"9": {"bytes_on_disk": 5000, "bookies": ["bk1:3181"]}}
    assert total["garbage_bytes"] == 5000
