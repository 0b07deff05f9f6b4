"""The pure planner: what becomes an action, references per ledger kind, caps, order, determinism."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.actions import KIND_DELETE_LEDGER, KIND_DELETE_SUBTREE
from pulsar_ops.repair.planner import PlanParams, SnapshotFacts, plan_actions, summarize
from tests.unit.repair.factory import (
    DAY,
    NOW,
    facts,
    leak,
    ledger_fact,
    ml_custom,
    orphan,
    subtree,
    znode,
)

ML = "t/ns/persistent/topic"
ML_PATH = "/managed-ledgers/" + ML


def test_data_orphan_references_owner_and_its_cursors() -> None:
    f = facts(
        ledgers={5: ledger_fact(5)},
        managed_ledgers={ML: znode(ML_PATH, version=7)},
        cursors={ML_PATH: (znode(ML_PATH + "/sub-b"), znode(ML_PATH + "/sub-a"))},
    )
    draft = plan_actions([orphan(5)], f, PlanParams())
    assert not draft.not_planned
    (a,) = draft.actions
    assert a.kind == KIND_DELETE_LEDGER and a.ledger_id == 5 and a.path == ledger_path(5)
    assert a.id == "ledger-5"
    assert [z.path for z in a.preconditions.znodes] == [ledger_path(5)]
    refs = [(r.role, r.znode.path, r.znode.version, r.exists) for r in a.preconditions.references]
    assert refs == [
        ("managed-ledger", ML_PATH, 7, True),
        ("cursor", ML_PATH + "/sub-a", 0, True),
        ("cursor", ML_PATH + "/sub-b", 0, True),
    ]
    assert dict(a.preconditions.custom_metadata) == dict(ml_custom(ML))
    assert a.loads_topics is False


def test_deleted_owner_is_recorded_as_absent_reference() -> None:
    f = facts(ledgers={5: ledger_fact(5)})
    (a,) = plan_actions([orphan(5)], f, PlanParams()).actions
    (r,) = a.preconditions.references
    assert (r.role, r.znode.path, r.exists, r.znode.version) == ("managed-ledger", ML_PATH, False, -1)


def test_schema_and_compacted_references() -> None:
    schema_custom = (("application", "pulsar"), ("component", "schema"), ("pulsar/schemaId", "t/ns/topic"))
    comp_custom = (
        ("application", "pulsar"),
        ("component", "compacted-ledger"),
        ("pulsar/compactedTopic", "persistent://t/ns/topic"),
    )
    f = facts(
        ledgers={1: ledger_fact(1, custom=schema_custom), 2: ledger_fact(2, custom=comp_custom)},
        managed_ledgers={ML: znode(ML_PATH)},
        ml_name_by_topic={"persistent://t/ns/topic": ML},
        cursors={ML_PATH: (znode(ML_PATH + "/__compaction", version=3), znode(ML_PATH + "/s"))},
        schema_locators={"t/ns/topic": znode("/schemas/t/ns/topic", version=2)},
    )
    draft = plan_actions(
        [orphan(1, kind="schema", owner="t/ns/topic"), orphan(2, kind="compacted", owner="persistent://t/ns/topic")],
        f,
        PlanParams(),
    )
    refs = {
        a.ledger_id: [(r.role, r.znode.path, r.znode.version) for r in a.preconditions.references]
        for a in draft.actions
    }
    assert refs[1] == [("schema-locator", "/schemas/t/ns/topic", 2)]
    assert refs[2] == [("cursor", ML_PATH + "/__compaction", 3)]


def test_compacted_owner_without_topic_maps_through_name_encoding() -> None:
    comp_custom = (("application", "pulsar"), ("component", "compacted-ledger"))
    f = facts(ledgers={2: ledger_fact(2, custom=comp_custom)})
    (a,) = plan_actions([orphan(2, kind="compacted", owner="persistent://t/ns/a b~c")], f, PlanParams()).actions
    (r,) = a.preconditions.references
    assert r.znode.path == "/managed-ledgers/t/ns/persistent/a+b%7Ec/__compaction" and not r.exists


def test_never_plans_unplannable_unowned_or_other_detections() -> None:
    f = facts(ledgers={i: ledger_fact(i) for i in range(1, 6)})
    findings = [
        orphan(1, plannable=False, reason="younger than min age"),
        orphan(2, kind="unowned", owner=None),
        orphan(3, kind="pulsar-unknown"),
        Finding(detection="ack-holes", severity="info", topic="persistent://t/ns/topic"),
        orphan(99),  # not in the snapshot
    ]
    draft = plan_actions(findings, f, PlanParams())
    assert draft.actions == ()
    codes = sorted(n.reason_code for n in draft.not_planned)
    assert codes == [
        "kind-not-plannable",
        "kind-not-plannable",
        "missing-in-snapshot",
        "no-repair-action",
        "not-plannable",
    ]
    reasons = {n.ledger_id: n.reason for n in draft.not_planned}
    assert reasons[1] == "younger than min age"


def test_custom_metadata_without_application_pulsar_is_not_planned() -> None:
    f = facts(ledgers={4: ledger_fact(4, custom=(("component", "managed-ledger"),))})
    draft = plan_actions([orphan(4)], f, PlanParams())
    assert draft.actions == () and draft.not_planned[0].reason_code == "custom-metadata-mismatch"


def test_subtree_action_lists_every_znode_parents_first() -> None:
    root = "/managed-ledgers/gone/ns"
    f = facts(subtrees={root: subtree(root, ["persistent", "persistent/t1"])})
    (a,) = plan_actions([leak(root)], f, PlanParams()).actions
    assert a.kind == KIND_DELETE_SUBTREE and a.path == root and a.ledger_id is None
    assert [z.path for z in a.preconditions.znodes] == [root, root + "/persistent", root + "/persistent/t1"]
    assert a.to_json()["path"] == root and "ledger_id" not in a.to_json()


def test_subtree_guards() -> None:
    big = "/loadbalance/bundle-data/t/big"
    eph = "/loadbalance/bundle-data/t/eph"
    inner = "/managed-ledgers/gone/ns"
    outer = "/managed-ledgers/gone"
    f = facts(
        subtrees={
            big: subtree(big, [f"r{i}" for i in range(5)]),
            eph: subtree(eph, ["x"], ephemeral={eph + "/x"}),
            outer: subtree(outer, ["ns", "ns/persistent"]),
            inner: subtree(inner, ["persistent"]),
            "/managed-ledgers": subtree("/managed-ledgers", []),
        }
    )
    findings = [leak(big), leak(eph), leak(outer), leak(inner), leak("/managed-ledgers"), leak("/ledgers/00")]
    draft = plan_actions(findings, f, PlanParams(subtree_max_znodes=4))
    assert [a.path for a in draft.actions] == [outer]
    codes = {n.path: n.reason_code for n in draft.not_planned}
    assert codes == {
        big: "subtree-too-large",
        eph: "ephemeral-in-subtree",
        inner: "contained-in-subtree",
        "/managed-ledgers": "protected-path",
        "/ledgers/00": "protected-path",
    }


def test_caps_order_oldest_then_biggest_and_report_cuts() -> None:
    ledgers = {
        1: ledger_fact(1, ctime_ms=NOW - 3 * DAY, length=100),
        2: ledger_fact(2, ctime_ms=NOW - 9 * DAY, length=50),
        3: ledger_fact(3, ctime_ms=NOW - 9 * DAY, length=500),
        4: ledger_fact(4, ctime_ms=NOW - 5 * DAY, length=10_000),
    }
    f = facts(ledgers=ledgers)
    all_ = [orphan(i) for i in ledgers]
    draft = plan_actions(all_, f, PlanParams())
    assert [a.ledger_id for a in draft.actions] == [3, 2, 4, 1]
    draft = plan_actions(all_, f, PlanParams(max_actions=2))
    assert [a.ledger_id for a in draft.actions] == [3, 2]
    assert sorted(n.ledger_id or 0 for n in draft.not_planned if n.reason_code == "cut-max-actions") == [1, 4]
    draft = plan_actions(all_, f, PlanParams(max_bytes=700))
    assert [a.ledger_id for a in draft.actions] == [3, 2, 1]  # 4 does not fit, 1 still does
    s = summarize(draft.actions, draft.not_planned)
    assert s["cut"] == {"actions": 1, "bytes": 1000, "by_reason": {"cut-max-bytes": 1}}


# --- properties ---------------------------------------------------------------------------------------

KINDS = ["data", "cursor", "schema", "compacted", "bucket", "unowned", "pulsar-unknown"]


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[Finding], SnapshotFacts]:
    n = draw(st.integers(0, 25))
    ids = draw(st.lists(st.integers(1, 2**40), min_size=n, max_size=n, unique=True))
    findings: list[Finding] = []
    ledgers = {}
    for lid in ids:
        kind = draw(st.sampled_from(KINDS))
        length = draw(st.integers(0, 10**9))
        ctime = NOW - draw(st.integers(0, 100)) * DAY
        ledgers[lid] = ledger_fact(lid, ctime_ms=ctime, length=length)
        owner = {"schema": "t/ns/topic", "compacted": "persistent://t/ns/topic"}.get(kind, ML)
        findings.append(orphan(lid, kind=kind, owner=owner, plannable=draw(st.booleans()), nbytes=length))
    roots = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True))
    subtrees = {}
    for r in roots:
        root = f"/loadbalance/bundle-data/t/{r}"
        subtrees[root] = subtree(root, ["0x0_0x1"], mtime_ms=NOW - draw(st.integers(1, 50)) * DAY)
        findings.append(leak(root, plannable=draw(st.booleans())))
    if draw(st.booleans()):
        findings.append(Finding(detection="inactive-subscription", severity="warning", plannable=True))
    return findings, facts(ledgers=ledgers, subtrees=subtrees)


@settings(max_examples=150, deadline=None)
@given(
    scenario(), st.one_of(st.none(), st.integers(0, 30)), st.one_of(st.none(), st.integers(0, 5 * 10**9)), st.randoms()
)
def test_properties(
    sc: tuple[list[Finding], SnapshotFacts], max_actions: int | None, max_bytes: int | None, rnd: random.Random
) -> None:
    findings, f = sc
    params = PlanParams(max_actions=max_actions, max_bytes=max_bytes)
    draft = plan_actions(findings, f, params)
    by_key = {x.key(): x for x in findings}
    # never plans a non-plannable finding, an unowned / unknown ledger or another detection
    for a in draft.actions:
        src = by_key[a.finding.key]
        assert src.plannable
        assert src.detection in ("orphan-ledger", "znode-leak")
        if a.kind == KIND_DELETE_LEDGER:
            assert src.evidence["kind"] in ("data", "cursor", "schema", "compacted", "bucket")
    # caps never exceeded
    if max_actions is not None:
        assert len(draft.actions) <= max_actions
    if max_bytes is not None:
        assert sum(a.bytes for a in draft.actions) <= max_bytes
    # every finding is accounted for exactly once
    assert len(draft.actions) + len(draft.not_planned) == len(findings)
    # deterministic whatever the input order
    shuffled = list(findings)
    rnd.shuffle(shuffled)
    again = plan_actions(shuffled, f, params)
    assert again == draft
    # plan order: non-decreasing time, then non-increasing bytes
    keys = [(a.time_ms, -a.bytes) for a in draft.actions]
    assert keys == sorted(keys)
