"""Whether a namespace keeps topic policies in ``__change_events`` has one definition
(:func:`pulsar_ops.pulsar_names.is_topic_policies_topic`): expired-retention-unloaded's SQL (run here on DuckDB, no
Spark) calls a topic's retention ``topic-unknown`` exactly when the planner's snapshot facts say its topic-level
policies are unknown (:meth:`pulsar_ops.repair.snapshot_tree.SnapshotView.topic`, from
``snapshot_facts._policy_topic_namespaces``). Generated namespaces mix managed ledgers of ``__change_events``, of
canonical and non-canonical partitions and of look-alike names, persistent and non-persistent partitioned-topic
nodes, znodes of either kind that do not decode (under a name that decodes or not), and a ``/managed-ledgers``
scope read incompletely. tests/zk/test_topic_policies_live.py asks apply's live facts the same on a real tree."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pulsar_ops import pulsar_names
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.findings import Finding
from pulsar_ops.repair.snapshot_facts import load_facts, load_ledgers
from pulsar_ops.repair.snapshot_tree import SnapshotView
from pulsar_ops.snapshot.reader import open_snapshot
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder, encode

CE = pulsar_names.NAMESPACE_EVENTS_LOCAL_NAME
# (what, encoded name): what exists in a namespace besides its user topic x
FORMS: tuple[tuple[str, str], ...] = (
    ("ml", CE),
    ("ml", f"{CE}-partition-0"),
    ("ml", f"{CE}-partition-3"),
    ("ml", f"{CE}-partition-01"),  # not a partition for TopicName.getPartitionIndex: the rule is wider
    ("ml", f"{CE}_x"),
    ("ml", f"x{CE}"),
    ("partitioned", CE),
    ("partitioned-np", CE),  # a non-persistent partitioned topic: no managed ledger, no messages
    ("ml-undecodable", CE),
    ("ml-undecodable", f"{CE}-partition-2"),
    ("ml-undecodable", "%5F%5Fchange_events"),  # decodes to __change_events
    ("ml-undecodable", f"{CE}%ZZ"),  # a name that does not decode
    ("ml-undecodable", "other"),
    ("partitioned-undecodable", CE),
    ("partitioned-np-undecodable", CE),
    ("scope-incomplete", ""),
)


def form_path(ns: str, what: str, enc: str) -> tuple[str, str]:
    """(store, path) of a form's znode."""
    if what.startswith("ml"):
        return "local", f"/managed-ledgers/{ns}/persistent/{enc}"
    domain = "non-persistent" if "-np" in what else "persistent"
    return "config", f"/admin/partitioned-topics/{ns}/{domain}/{enc}"


def build(b: SnapshotBuilder, ns: str, forms: list[tuple[str, str]], lid: int) -> None:
    """Namespace ``ns`` with an expired, unowned user topic x (ledgers ``lid``, ``lid + 1``) and ``forms``."""
    b.namespace(ns)
    b.bk_ledger(lid, owner=f"{ns}/persistent/x")
    b.bk_ledger(lid + 1, owner=f"{ns}/persistent/x", last_entry_id=-1)
    b.topic(ns, "x", ledgers=[(lid, 10, 100, NOW - 3 * DAY), (lid + 1, None, None, None)])
    for what, enc in forms:
        store, path = form_path(ns, what, enc)
        if what == "ml":
            b.topic(ns, enc, ledgers=[])
        elif what in ("partitioned", "partitioned-np"):
            domain = "non-persistent" if what.endswith("-np") else "persistent"
            b.add(
                "partitioned_topics", path=path, tenant=ns.split("/")[0], namespace=ns, encoded_name=encode(enc),
                local_name=enc, topic=f"{domain}://{ns}/{enc}", partitions=4,
            )  # fmt: skip
        elif what.endswith("undecodable"):
            kind = "managed-ledger" if what.startswith("ml") else "partitioned-topic"
            b.znode(path, kind=kind, store=store, decode_error="bad-data")
        elif what == "scope-incomplete":
            b.scope(f"/managed-ledgers/{ns}", complete=False, error="a child read failed")


def _detect(con: Any, name: str) -> list[dict[str, Any]]:
    f = next(f for f in detect_files() if f.name == name)
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


form_st = st.lists(st.sampled_from(FORMS), max_size=2)


# few examples of many namespaces each: every example is one snapshot and one DuckDB audit (~1.5 s); the explicit
# one holds every form alone in a namespace of its own
@pytest.mark.slow
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(nss=st.lists(form_st, min_size=3, max_size=8))
@example(nss=[[], *([f] for f in FORMS)])
def test_the_audit_sql_and_the_planner_agree_on_where_topic_policies_may_live(
    nss: list[list[tuple[str, str]]],
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="topic-policies-"))
    try:
        b = SnapshotBuilder()
        for i, forms in enumerate(nss):
            build(b, f"t/ns{i}", forms, 100 + 2 * i)
        snap_dir = b.write(tmp / "snap")
        con = connect(snap_dir, AuditParams(now_ms=NOW).resolved(NOW), admin_scraped=False)
        rows = _detect(con, "expired-retention-unloaded")
        found = {str(r["namespace"]): json.loads(r["evidence"])["retention_source"] for r in rows}
        assert set(found) == {f"t/ns{i}" for i in range(len(nss))}, found  # every user topic x is judged
        sql = {ns for ns, source in found.items() if source == "topic-unknown"}
        snap = open_snapshot(snap_dir)
        ledgers, _rows = load_ledgers(snap)
        findings = [
            Finding(
                detection="expired-retention-unloaded", severity="warning",
                path=f"/managed-ledgers/t/ns{i}/persistent/x", topic=f"persistent://t/ns{i}/x",
            )
            for i in range(len(nss))
        ]  # fmt: skip
        facts = load_facts(snap, findings, ledgers, frozenset({"expired-retention-unloaded"}), now_ms=NOW)
        view = SnapshotView(facts)
        python = {
            f"t/ns{i}"
            for i in range(len(nss))
            if view.topic(f"/managed-ledgers/t/ns{i}/persistent/x").topic_policies_unknown is not None
        }
        assert python == sql, (nss, sorted(python ^ sql))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_rule_reads_partitions_and_nothing_else() -> None:
    """The Python rule on its own: the topic and any ``-partition-<digits>`` of it, no look-alike."""
    yes = [CE, f"{CE}-partition-0", f"{CE}-partition-15", f"{CE}-partition-01"]
    no = [f"{CE}_x", f"x{CE}", f"{CE}-partition-", f"{CE}-partition-1a", "__change_event", f"{CE}-partition-1-x"]
    assert all(pulsar_names.is_topic_policies_topic(n) for n in yes)
    assert not any(pulsar_names.is_topic_policies_topic(n) for n in no)
