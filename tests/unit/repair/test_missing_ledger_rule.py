"""A missing ledger's absence has one definition: dangling-ledger's SQL (run here on DuckDB, no Spark) calls a
ledger-list entry a critical dangling ledger exactly when the drop rule, on the planner's snapshot facts, lets a
``drop-missing-ledger`` drop it (:func:`pulsar_ops.repair.rules.drop_missing_rule` over
:class:`pulsar_ops.repair.snapshot_tree.SnapshotView`'s ``listed`` / ``present``). Generated lists mix ledgers with
decoded metadata, a metadata znode that does not decode (hierarchical or flat path), no metadata at all, offloaded
ledgers whose BookKeeper copy was deleted, and a sentinel id, under a ``/ledgers`` scope read completely, not
completely, or not recorded: an absence the snapshot cannot confirm never lets a ledger be dropped."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair import rules
from pulsar_ops.repair.snapshot_facts import load_facts, load_ledgers
from pulsar_ops.repair.snapshot_tree import SnapshotUnknown, SnapshotView
from pulsar_ops.snapshot.reader import open_snapshot
from tests.spark.snapshot_builder import DAY, GLOBAL_SCOPES, NOW, SnapshotBuilder

STATES = ("decoded", "undecodable", "undecodable-flat", "absent", "offloaded-absent", "offloaded-decoded")


def _detect(con: Any, name: str) -> list[dict[str, Any]]:
    f = next(f for f in detect_files() if f.name == name)
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _snapshot(tmp: Path, topics: list[list[str]], sentinel: list[bool], scope: str) -> Path:
    b = SnapshotBuilder(complete_scopes=scope != "not-recorded")
    if scope == "not-recorded":
        for s in GLOBAL_SCOPES:
            if s != "/ledgers":
                b.scope(s)
    elif scope == "incomplete":
        b.scope("/ledgers", complete=False, error="listing failed")
    lid = 100
    for i, states in enumerate(topics):
        ns = f"t/ns{i}"
        b.namespace(ns)
        rows: list[tuple[Any, ...]] = [(-1, 1, 10, NOW - DAY)] if sentinel[i] else []
        for state in states:
            offloaded = state.startswith("offloaded")
            rows.append((lid, 10, 100, NOW - DAY, offloaded, offloaded))
            if state in ("decoded", "offloaded-decoded"):
                b.bk_ledger(lid, owner=f"{ns}/persistent/x")
            elif state.startswith("undecodable"):
                b.znode(ledger_path(lid, flat=state.endswith("flat")), kind="bk-ledger", decode_error="bad-proto")
            lid += 1
        b.bk_ledger(lid, owner=f"{ns}/persistent/x")  # the open ledger: the list never empties
        rows.append((lid, None, None, None))
        lid += 1
        b.topic(ns, "x", ledgers=rows)
    return b.write(tmp / "snap")


def _python_allows(view: SnapshotView, path: str, lid: int) -> bool:
    try:
        return rules.drop_missing_rule([lid], view.listed(path), view.present([lid])) is None
    except SnapshotUnknown:
        return False


# few examples of several topics per scope state: each example is one snapshot and one DuckDB audit (~2 s)
@pytest.mark.slow
@pytest.mark.parametrize("scope", ["complete", "incomplete", "not-recorded"])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    topics=st.lists(st.lists(st.sampled_from(STATES), min_size=1, max_size=4), min_size=3, max_size=8),
    sentinel=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_dangling_ledger_sql_and_the_drop_rule_agree_on_a_missing_ledger(
    scope: str, topics: list[list[str]], sentinel: list[bool]
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="missing-ledger-"))
    try:
        snap_dir = _snapshot(tmp, topics, sentinel, scope)
        con = connect(snap_dir, AuditParams(now_ms=NOW).resolved(NOW), admin_scraped=False)
        sql = {
            (str(r["path"]), int(r["ledger_id"]))
            for r in _detect(con, "dangling-ledger")
            if r["severity"] == "critical" and '"ref":"data"' in str(r["evidence"]).replace(" ", "")
        }
        snap = open_snapshot(snap_dir)
        ledgers, _rows = load_ledgers(snap)
        rows = snap.read("ledger_list", ("ml_path", "ledger_id")).to_pylist()
        listed = [(str(r["ml_path"]), int(r["ledger_id"])) for r in rows]
        findings = [
            Finding(detection="dangling-ledger", severity="critical", path=p, ledger_id=i, topic="x") for p, i in listed
        ]
        facts = load_facts(snap, findings, ledgers, frozenset({"dangling-ledger"}), now_ms=NOW)
        view = SnapshotView(facts)
        python = {(p, i) for p, i in listed if _python_allows(view, p, i)}
        assert python == sql, (scope, sorted(python ^ sql))
        if scope == "complete":  # the generator reaches the cases: a drop the rule allows, and one it refuses
            assert ("absent" in {s for t in topics for s in t}) == bool(sql)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
