"""`pulsar-ops bench audit --snapshot S --repeat N`: Spark against DuckDB on one snapshot, and the same audit again
in the same session (what a driver that outlives one audit takes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark


def test_repeat_audits_the_snapshot_again_in_the_same_session(spark: Any, tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - 3 * DAY), (11, None, None, None)])
    b.bk_ledger(11, owner="t/ns/persistent/a")  # 10 has no BookKeeper metadata: dangling
    b.bk_ledger(3, owner="t/ns/persistent/gone")  # orphan
    snap = b.write(tmp_path / "snap")
    before = spark.conf.get("spark.sql.broadcastTimeout")
    try:
        args = [
            "bench",
            "audit",
            "--snapshot",
            str(snap),
            "--repeat",
            "2",
            "--spark-conf",
            "spark.sql.broadcastTimeout=301",
        ]
        r = CliRunner().invoke(app, [*args, "--json"])
        # --spark-conf reaches the session (this test's, already running: the SQL settings are set on it)
        assert spark.conf.get("spark.sql.broadcastTimeout") == "301"
    finally:
        spark.conf.set("spark.sql.broadcastTimeout", before)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["spark_conf_given"] == {"spark.sql.broadcastTimeout": "301"}
    assert doc["spark_conf"]["spark.sql.broadcastTimeout"] == "301"
    (run,) = doc["runs"]
    assert run["same_counts"] and run["findings_spark"]["dangling-ledger"] == 1
    again = run["again"]
    assert len(again) == 1 and all(a["same_findings"] and a["spark_audit_s"] > 0 for a in again)
    # each repeat reports its own JVM figures (that the session keeps the generated code across audits is pinned
    # by test_plan_shape on the partitioned plan: this small snapshot is read as one partition, where adaptive
    # execution re-plans joins in the order concurrent stages finish, so how many classes a repeat compiles
    # varies run to run)
    assert all(isinstance(a["jvm"]["codegen_classes"], int) and a["jvm"]["jobs"] > 0 for a in again), again
    assert "audit 2 in the same session:" in r.stderr  # --repeat 2: audited once again
    # the table's peak is the first audit's; each later audit reports the peak so far, which only grows
    peaks = [run["driver_peak_rss_mb"], *(a["driver_peak_rss_mb"] for a in again)]
    assert all(p is not None for p in peaks) and peaks == sorted(peaks), peaks
    assert run["ratio_spark_over_duckdb"] == pytest.approx(run["spark_audit_s"] / run["duckdb_s"], rel=0.02)


def test_repeat_must_be_at_least_one(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["bench", "audit", "--snapshot", str(tmp_path), "--repeat", "0"])
    assert r.exit_code == 2 and "--repeat" in r.stderr
