"""The snapshot-backed TreeReader the planner runs prove_leak through: what it was not given, what the scraper
could not read and what it could not decode are never "absent"."""

from __future__ import annotations

import pytest

from pulsar_ops.repair.planner import PlanParams, plan_actions
from pulsar_ops.repair.safety import leak_shape
from pulsar_ops.repair.snapshot_tree import LeakReads, SnapshotTree, SnapshotUnknown, leak_reads
from tests.unit.repair.factory import facts, leak, subtree

POL = ("config", "/admin/policies/t/ns")


def test_a_loaded_tree_answers_exists_children_and_data() -> None:
    reads = LeakReads(frozenset({POL, ("local", "/namespace/t/ns")}), frozenset({("local", "/namespace/t/ns")}))
    tree = SnapshotTree.build(
        [POL, ("local", "/namespace/t/ns"), ("local", "/namespace/t/ns/r1")], values={POL: b"{}"}, loaded=reads
    )
    assert tree.exists(*POL) and tree.data(*POL) == b"{}"
    assert tree.children("local", "/namespace/t/ns") == ["r1"]
    assert tree.exists("local", "/namespace/t/ns/r1") and not tree.exists("local", "/namespace/t/ns/r2")
    with pytest.raises(SnapshotUnknown):  # the store matters: the local one was not loaded
        tree.exists("local", POL[1])


@pytest.mark.parametrize(
    ("tree", "read"),
    [
        (SnapshotTree.build((), loaded=LeakReads()), lambda t: t.exists(*POL)),  # not loaded
        (SnapshotTree.build((), loaded=LeakReads()), lambda t: t.children("local", "/managed-ledgers/t")),
        (SnapshotTree.build((), incomplete=[("config", "/admin/policies")]), lambda t: t.exists(*POL)),
        (SnapshotTree.build([POL], undecodable={POL: "json-invalid"}), lambda t: t.data(*POL)),
        (SnapshotTree.build([POL]), lambda t: t.data(*POL)),  # exists, value not held
    ],
)
def test_what_the_snapshot_cannot_answer_raises(tree: SnapshotTree, read: object) -> None:
    with pytest.raises(SnapshotUnknown):
        read(tree)  # type: ignore[operator]


def test_leak_reads_name_the_paths_prove_leak_reads() -> None:
    shapes = [s for p in ("/schemas/t/ns/x", "/managed-ledgers/t/c/ns") if (s := leak_shape(p)) is not None]
    r = leak_reads(shapes)
    assert ("config", "/admin/partitioned-topics/t/ns/non-persistent/x") in r.exact
    assert ("local", "/managed-ledgers/t/ns/persistent") in r.parents
    assert {("config", "/admin/policies/t/c/ns"), ("config", "/admin/policies/t/c")} <= r.exact


def test_the_planner_does_not_plan_a_leak_in_an_incomplete_scope_of_the_proof() -> None:
    root = "/admin/local-policies/t/ns"
    tree = SnapshotTree.build((), incomplete=[("config", "/admin/policies/t")])
    draft = plan_actions([leak(root)], facts(subtrees={root: subtree(root, [])}, leak_tree=tree), PlanParams())
    assert draft.actions == ()
    (np_,) = draft.not_planned
    assert np_.reason_code == "not-plannable" and "incomplete" in np_.reason
    # the same facts with the scope complete: planned
    ok = facts(subtrees={root: subtree(root, [])}, leak_tree=SnapshotTree.build(()))
    assert [a.path for a in plan_actions([leak(root)], ok, PlanParams()).actions] == [root]


def test_an_undecoded_managed_ledger_inside_a_leak_is_not_evidence_of_absence() -> None:
    root = "/managed-ledgers/gone/ns"
    nodes = subtree(root, ["persistent", "persistent/t1"])
    for listed, words in (({}, "cannot be decoded"), ({root + "/persistent/t1": 2}, "lists 2 ledger(s)")):
        draft = plan_actions([leak(root)], facts(subtrees={root: nodes}, ml_listed=listed), PlanParams())
        assert draft.actions == () and draft.not_planned[0].reason_code == "contradicted-by-snapshot"
        assert words in draft.not_planned[0].reason
