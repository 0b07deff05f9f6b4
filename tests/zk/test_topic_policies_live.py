"""Apply's live facts ask the planner's question about ``__change_events`` (one rule:
:func:`pulsar_ops.pulsar_names.is_topic_policies_topic`): on a real ZooKeeper tree holding each form of
tests/unit/repair/test_topic_policies_rule.py in a namespace of its own, ``live_facts.topic_policies_unknown`` says
"unknown" for exactly the namespaces the snapshot side (``snapshot_facts._policy_topic_namespaces``, pinned to the
audit's SQL there) names on a snapshot of the same forms."""

from __future__ import annotations

from pathlib import Path

from kazoo.client import KazooClient

from pulsar_ops.repair.live_facts import topic_policies_unknown
from pulsar_ops.repair.snapshot_facts import _policy_topic_namespaces
from pulsar_ops.repair.zk_writer import ZkSession
from pulsar_ops.snapshot.reader import open_snapshot
from tests.spark.snapshot_builder import SnapshotBuilder
from tests.unit.repair.encoders import ml_info
from tests.unit.repair.test_topic_policies_rule import FORMS, build, form_path

LIVE_FORMS = [f for f in FORMS if f[0] != "scope-incomplete"]  # a failed listing raises live (test below)


def test_live_facts_and_the_snapshot_agree_on_where_topic_policies_may_live(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    b = SnapshotBuilder()
    namespaces = [f"t/ns{i}" for i in range(len(LIVE_FORMS) + 1)]
    for i, ns in enumerate(namespaces):
        forms = [LIVE_FORMS[i - 1]] if i else []
        build(b, ns, forms, 100 + 2 * i)
        zk.create(f"/managed-ledgers/{ns}/persistent/x", ml_info([100 + 2 * i]), makepath=True)
        for what, enc in forms:
            _store, path = form_path(ns, what, enc)
            if what.endswith("undecodable"):
                data = b"\xff\x00 not a value"
            elif what.startswith("ml"):
                data = ml_info([])
            else:
                data = b'{"partitions": 4}'
            zk.create(path, data, makepath=True)
    snapshot = _policy_topic_namespaces(open_snapshot(b.write(tmp_path / "snap")))
    with ZkSession(zk_hosts) as session:
        live = {ns for ns in namespaces if topic_policies_unknown(session, ns) is not None}
    assert live == set(snapshot), sorted(live ^ set(snapshot))
    assert "t/ns0" not in live and len(live) >= 8  # the rule is not vacuous: most forms make it unknown
