"""The orphan ledger's age has one definition (issue 34): :func:`pulsar_ops.repair.rules.orphan_created_ms`, which
the ledger rule calls on the snapshot's facts (plan) and on ZooKeeper's (apply), and which orphan_ledger.sql renders
(``${orphan_created:ROW}``). Here the audit's SQL (DuckDB, no Spark) and the rule, fed by the planner's snapshot
facts, agree on generated ledgers whose znode ctime and metadata ctime disagree either way or are missing."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.findings import Finding
from pulsar_ops.repair.rules import (
    PLANNABLE_LEDGER_KINDS,
    RuleParams,
    is_orphan_too_young,
    ledger_delete_rule,
    orphan_age_ms,
    orphan_created_ms,
    orphan_created_sql,
    orphan_too_young_sql,
    plannable_ledger_kinds_sql,
)
from pulsar_ops.repair.snapshot_facts import load_facts, load_ledgers
from pulsar_ops.repair.snapshot_tree import SnapshotView
from pulsar_ops.snapshot.reader import open_snapshot
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

HOUR = 3_600_000
MIN_AGE = 24 * HOUR


def test_the_age_is_counted_from_the_znode_unless_the_metadata_stamp_is_later() -> None:
    assert orphan_created_ms(NOW - DAY, None) == NOW - DAY  # no metadata ctime (Pulsar's default): the znode's
    assert orphan_created_ms(NOW - DAY, NOW - 30 * DAY) == NOW - DAY  # a re-created znode: its own ctime
    assert orphan_created_ms(NOW - DAY, NOW - HOUR) == NOW - HOUR  # a broker clock ahead: the later stamp
    assert orphan_created_ms(None, NOW - 30 * DAY) is None  # no znode ctime: unknown, never the other clock
    assert orphan_created_ms(0, NOW - 30 * DAY) is None
    assert (
        orphan_age_ms(NOW - DAY, -1, NOW) == DAY
    )  # a negative metadata ctime (BookKeeper's test sample) delays nothing
    assert is_orphan_too_young(None, 0) and is_orphan_too_young(MIN_AGE - 1, MIN_AGE)
    assert not is_orphan_too_young(MIN_AGE, MIN_AGE)  # exactly min-age: old enough


def test_the_audit_sql_is_rendered_from_the_rule() -> None:
    (orphan,) = [f for f in detect_files() if f.name == "orphan-ledger"]
    text = orphan.path.read_text()
    assert "${orphan_created:r}" in text and "${orphan_too_young:j}" in text
    rendered = orphan.render(())
    assert orphan_created_sql("r") in rendered and orphan_too_young_sql("j") in rendered and "${" not in rendered
    assert "r.ctime_ms" not in rendered  # the snapshot's metadata-else-znode column no longer ages an orphan


def _detect(con: Any, name: str) -> list[dict[str, Any]]:
    f = next(f for f in detect_files() if f.name == name)
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


_OFFSETS = (-2 * HOUR, 0, HOUR, MIN_AGE - 1, MIN_AGE, MIN_AGE + 1, 2 * DAY, 30 * DAY)  # age by each stamp
ledger_st = st.tuples(
    st.one_of(st.sampled_from(_OFFSETS), st.just(None)),  # znode age (None: the znode's ctime is 0, unknown)
    st.one_of(st.sampled_from(_OFFSETS), st.just(None)),  # metadata age (None: not stored)
)


# few examples of many ledgers: each example is one snapshot and one DuckDB audit
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ledgers=st.lists(ledger_st, min_size=10, max_size=40))
def test_the_audit_sql_and_the_rule_agree_on_the_orphan_age(ledgers: list[tuple[int | None, int | None]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="orphan-age-"))
    try:
        b = SnapshotBuilder()
        b.namespace("t/ns")
        b.topic("t/ns", "live", ledgers=[(100_000, 1, 5, NOW - 3 * DAY)])  # the watermark: every orphan is below
        b.bk_ledger(100_000, owner="t/ns/persistent/live")
        for i, (z_age, m_age) in enumerate(ledgers):
            znode = 0 if z_age is None else NOW - z_age
            metadata = None if m_age is None else NOW - m_age
            b.bk_ledger(
                10 + i,
                owner="t/ns/persistent/gone",
                # the snapshot's ctime_ms: the metadata's ctime, else the znode's (scrape/extract.py)
                ctime_ms=metadata if metadata is not None else znode,
                metadata_ctime_ms=metadata,
                znode_ctime_ms=znode,
            )
        snap_dir = b.write(tmp / "snap")
        con = connect(snap_dir, AuditParams(now_ms=NOW, min_age_ms=MIN_AGE), admin_scraped=False)
        rows = {int(r["ledger_id"]): r for r in _detect(con, "orphan-ledger")}
        assert sorted(rows) == list(range(10, 10 + len(ledgers)))

        snap = open_snapshot(snap_dir)
        facts_by_id, _ = load_ledgers(snap)
        findings = [
            Finding(detection="orphan-ledger", severity="warning", ledger_id=lid, path=r["path"], plannable=True)
            for lid, r in rows.items()
        ]
        facts = load_facts(snap, findings, facts_by_id, rules=RuleParams(MIN_AGE, 0, 0, 0), now_ms=NOW)
        view = SnapshotView(facts)
        for i, (z_age, m_age) in enumerate(ledgers):
            lid = 10 + i
            row = rows[lid]
            evidence = json.loads(row["evidence"])
            znode = 0 if z_age is None else NOW - z_age
            metadata = None if m_age is None else NOW - m_age
            assert evidence["age_ms"] == orphan_age_ms(znode, metadata, NOW), (z_age, m_age, evidence)
            now = view.ledger(SimpleNamespace(ledger_id=lid))  # type: ignore[arg-type]
            assert now is not None
            verdict = ledger_delete_rule(now, min_age_ms=MIN_AGE, now_ms=NOW)
            assert bool(row["plannable"]) is (verdict is None), (z_age, m_age, row["reason"], verdict)
            young = is_orphan_too_young(orphan_age_ms(znode, metadata, NOW), MIN_AGE)
            assert bool(row["plannable"]) is not young, (z_age, m_age, row["reason"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_plannable_ledger_kinds_are_rendered_from_the_rule() -> None:
    (orphan,) = [f for f in detect_files() if f.name == "orphan-ledger"]
    assert "${plannable_ledger_kinds}" in orphan.path.read_text()
    rendered = orphan.render(())
    assert f"WHEN j.kind NOT IN {plannable_ledger_kinds_sql()}\n" in rendered
    for kind in PLANNABLE_LEDGER_KINDS:
        assert f"'{kind}'" in plannable_ledger_kinds_sql()


def test_the_managed_ledger_owned_kinds_are_rendered_from_their_one_definition() -> None:
    """orphan_ledger.sql and the delete-ledger kind / live facts read one set of the kinds a managed ledger owns."""
    from pulsar_ops.formats.ledger_kind import ml_owned_sql

    (orphan,) = [f for f in detect_files() if f.name == "orphan-ledger"]
    text = orphan.path.read_text()
    assert "${ml_owned_kinds}" in text
    assert "IN ('data', 'cursor', 'bucket')" not in text
    rendered = orphan.render(())
    assert rendered.count(f"IN {ml_owned_sql()}") == text.count("${ml_owned_kinds}")
    assert ml_owned_sql() == "('bucket', 'cursor', 'data')"
