"""The first-trim rule has one definition: the audit's SQL (run here on DuckDB, no Spark) and the Python rule the
planner and apply call (:func:`pulsar_ops.repair.rules.first_trim_ids`, fed by the planner's snapshot facts) give
the same ledgers for any topic. Also: a live non-persistent partitioned topic's schema is no znode-leak."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.params import AuditParams, BrokerDefaults
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.findings import Finding
from pulsar_ops.repair.planner import snapshot_topic
from pulsar_ops.repair.rules import RuleParams, first_trim_ids
from pulsar_ops.repair.snapshot_facts import load_facts, load_ledgers
from pulsar_ops.snapshot.reader import open_snapshot
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

MB = 1024 * 1024


def _detect(con: Any, name: str) -> list[dict[str, Any]]:
    f = next(f for f in detect_files() if f.name == name)
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _dim(*values: int) -> st.SearchStrategy[int | None]:
    return st.one_of(st.none(), st.sampled_from(values))


ledger_st = st.tuples(
    st.integers(0, 20),  # entries
    st.sampled_from([0, 10, MB, 3 * MB]),  # size
    st.integers(0, 20 * DAY),  # age of its close time
    st.booleans(),  # offloaded and deleted from BookKeeper
)
topic_st = st.fixed_dictionaries(
    {
        "ledgers": st.lists(ledger_st, min_size=1, max_size=5),
        "last_entries": st.integers(-1, 5),  # BookKeeper's last entry id of the open ledger
        "last_age": st.integers(0, 20 * DAY),
        "md": st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(-1, 12))),  # (list index, entry)
        "retention": st.one_of(
            st.none(),
            st.tuples(st.sampled_from([-1, 0, 60, 1440, 7 * 1440]), st.sampled_from([-1, 0, 1, 5])),
        ),
        # topic policies (local, global scope): each a (minutes, MB) pair with either side unset
        "policies": st.tuples(*(st.one_of(st.none(), st.tuples(_dim(-1, 0, 60, 7 * 1440), _dim(-1, 0, 1))),) * 2),
        "partition": st.booleans(),  # the topic is partition 0 of x: x's topic policies apply when it has none
    }
)


# few examples of many topics: each example is one snapshot and one DuckDB audit (seconds)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(topics=st.lists(topic_st, min_size=8, max_size=24), defaults=st.sampled_from([(0, 0), (60, -1), (-1, 2)]))
def test_the_audit_sql_and_the_python_rule_give_the_same_first_trim(
    topics: list[dict[str, Any]], defaults: tuple[int, int]
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="applyrules-retention-"))
    try:
        b = SnapshotBuilder()
        paths = []
        lid = 100
        for i, t in enumerate(topics):
            ns = f"t/ns{i}"
            rt_rs = t["retention"]
            b.namespace(
                ns,
                retention_time_minutes=None if rt_rs is None else rt_rs[0],
                retention_size_mb=None if rt_rs is None else rt_rs[1],
            )
            rows: list[tuple[Any, ...]] = []
            ids = []
            for entries, size, age, deleted in t["ledgers"]:
                rows.append((lid, entries, size, NOW - age, deleted, deleted))
                b.bk_ledger(lid, owner=f"{ns}/persistent/x", length=size)
                ids.append(lid)
                lid += 1
            rows.append((lid, None, None, None))  # the open ledger
            b.bk_ledger(lid, owner=f"{ns}/persistent/x", ctime_ms=NOW - t["last_age"], length=7,
                        last_entry_id=t["last_entries"])  # fmt: skip
            ids.append(lid)
            lid += 1
            local = "x-partition-0" if t["partition"] else "x"
            b.topic(ns, local, ledgers=rows)
            paths.append(f"/managed-ledgers/{ns}/persistent/{local}")
            if t["md"] is not None:
                idx, entry = t["md"]
                b.cursor(ns, local, "sub", md=(ids[min(idx, len(ids) - 1)], entry))
            # the local-scope policy on the topic itself, the global one on the partitioned topic x (or on x)
            for scope, pair, name in (("local", t["policies"][0], local), ("global", t["policies"][1], "x")):
                if pair is not None:
                    b.add(
                        "topic_policies", path=f"/admin/topic-policies/{scope}/{ns}/persistent/{name}", scope=scope,
                        namespace=ns, topic=f"persistent://{ns}/{name}", retention_time_minutes=pair[0],
                        retention_size_mb=pair[1], json="{}",
                    )  # fmt: skip
        snap_dir = b.write(tmp / "snap")
        params = AuditParams(
            now_ms=NOW,
            broker=BrokerDefaults(default_retention_time_minutes=defaults[0], default_retention_size_mb=defaults[1]),
        )
        con = connect(snap_dir, params, admin_scraped=False)
        sql = {  # DuckDB's list() keeps the NULLs Spark's collect_list drops: drop them here
            str(r["path"]): tuple(i for i in json.loads(r["evidence"])["first_trim_ledger_ids"] if i is not None)
            for r in _detect(con, "expired-retention-unloaded")
        }
        snap = open_snapshot(snap_dir)
        ledgers, _rows = load_ledgers(snap)
        findings = [
            Finding(detection="expired-retention-unloaded", severity="warning", path=p, topic="x") for p in paths
        ]
        rules = RuleParams(0, 0, defaults[0], defaults[1])
        facts = load_facts(snap, findings, ledgers, frozenset({"expired-retention-unloaded"}), rules=rules, now_ms=NOW)
        for p in paths:
            topic = snapshot_topic(facts, p)
            assert topic.retention is not None
            py = first_trim_ids(topic.ledgers, topic.slowest, topic.retention, NOW)
            assert py == sql.get(p, ()), (p, topic)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_live_non_persistent_partitioned_topic_s_schema_is_no_leak(tmp_path: Path) -> None:
    """The schema of ``np`` (a non-persistent partitioned topic: no managed ledger) is owned; the control ``gone``
    (no topic of either domain) is a schema leak; the non-persistent metadata is never a partitioned-topic leak."""
    b = SnapshotBuilder()
    b.namespace("t/live")
    np_schema = b.schema("t/live", "np", [7])
    gone_schema = b.schema("t/live", "gone", [8])
    b.add(
        "partitioned_topics", path="/admin/partitioned-topics/t/live/non-persistent/np", tenant="t",
        namespace="t/live", encoded_name="np", local_name="np", topic="non-persistent://t/live/np", partitions=2,
        json='{"partitions":2}',
    )  # fmt: skip
    for p in (np_schema, gone_schema, "/admin/partitioned-topics/t/live/non-persistent/np"):
        b.znode(p, mtime_ms=NOW - 3 * DAY, data_length=10)
    con = connect(b.write(tmp_path / "snap"), AuditParams(now_ms=NOW).resolved(NOW), admin_scraped=False)
    leaks = {str(r["path"]) for r in _detect(con, "znode-leak")}
    assert gone_schema in leaks
    assert np_schema not in leaks
    assert not any(p.startswith("/admin/partitioned-topics/") for p in leaks)
