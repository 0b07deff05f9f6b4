"""The reference set R has two readers of the same snapshot (issue 34): the audit's SQL (``int_references``,
``int_watermark``, ``int_unmatched_ledgers``: which ledgers are orphans and below which id) and the planner's
``snapshot_facts._referenced`` (what the ledger rule reads at plan: ``referenced_by`` and the watermark). Pinned
here on DuckDB over generated snapshots: a ledger list, a cursor's own ledger (or -1), its compacted-topic ledger,
a delayed-delivery bucket and a schema index may each reference a ledger."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.repair.snapshot_facts import _referenced
from pulsar_ops.snapshot.reader import open_snapshot
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

ids_st = st.lists(st.integers(1, 60), max_size=4)
topic_st = st.fixed_dictionaries(
    {
        "listed": ids_st,
        "cursor_ledger": st.one_of(st.just(-1), st.integers(1, 60)),
        "compacted": st.one_of(st.none(), st.integers(1, 60)),
        "bucket": st.one_of(st.none(), st.integers(1, 60)),
        "schema": ids_st,
    }
)


def _detect(con: Any, name: str) -> list[dict[str, Any]]:
    f = next(f for f in detect_files() if f.name == name)
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(topics=st.lists(topic_st, min_size=1, max_size=6), bk=st.sets(st.integers(1, 70), min_size=1, max_size=40))
def test_the_audit_sql_and_the_planner_read_the_same_references(topics: list[dict[str, Any]], bk: set[int]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="refs-"))
    try:
        b = SnapshotBuilder()
        b.namespace("t/ns")
        for i, t in enumerate(topics):
            local = f"x{i}"
            b.topic("t/ns", local, ledgers=[(lid, 1, 5, NOW - 3 * DAY) for lid in t["listed"]])
            path = b.cursor(
                "t/ns", local, "sub", md=None, cursors_ledger_id=t["cursor_ledger"],
                compacted_topic_ledger=t["compacted"],
            )  # fmt: skip
            if t["bucket"] is not None:
                b.add(
                    "cursor_properties", cursor_path=path, topic=f"persistent://t/ns/{local}", subscription="sub",
                    kind="long", name=f"#pulsar.internal.delayed.bucket_{t['bucket']}", value=str(t["bucket"]),
                    bucket_ledger_id=t["bucket"],
                )  # fmt: skip
            if t["schema"]:
                b.schema("t/ns", local, t["schema"])
        for lid in sorted(bk):
            b.bk_ledger(lid, owner="t/ns/persistent/gone")
        snap_dir = b.write(tmp / "snap")
        con = connect(snap_dir, AuditParams(now_ms=NOW), admin_scraped=False)
        rows = _detect(con, "orphan-ledger")
        sql_orphans = {int(r["ledger_id"]) for r in rows}
        found, watermark = _referenced(open_snapshot(snap_dir), set(bk))
        assert sql_orphans == bk - set(found), (sql_orphans, found)
        if rows:
            assert {json.loads(r["evidence"])["watermark"] for r in rows} == {watermark}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
