"""`bench audit`'s DuckDB side runs the audit SQL as written for Spark: every file must rewrite into SQL DuckDB
runs, or the benchmark's comparison fails at the size where someone measures it."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.bench.duckdb_sql import MACROS, connect, rewrite, run_detections
from pulsar_ops.findings import DETECTIONS, STORAGE_DETECTIONS
from tests.spark.snapshot_builder import NOW, SnapshotBuilder


@pytest.mark.parametrize("path", ["/managed-ledgers/t/ns/persistent/topic", "/a", "/", "/a/b/", "a/b/c"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 9])
def test_substring_index_is_spark_s_for_a_positive_count(path: str, n: int) -> None:
    con = duckdb.connect()
    for m in MACROS:
        con.execute(m)
    got = con.execute(rewrite("SELECT substring_index(?, '/', ?)"), [path, n]).fetchone()
    # Spark: everything before the n-th '/', the whole string when it has fewer
    assert got == ("/".join(path.split("/")[:n]),)


def test_every_detection_runs_on_duckdb_over_a_snapshot(tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/live", boundaries=["0x00000000", "0x80000000", "0xffffffff"])
    for path in ("/managed-ledgers/t", "/managed-ledgers/t/live", "/managed-ledgers/t/live/persistent"):
        b.znode(path, num_children=1)
    b.topic("t/live", "ok-partition-0", ledgers=[(1, None, None, None)])
    b.znode("/managed-ledgers/t/live/persistent/ok-partition-0", data_length=40)
    b.znode("/managed-ledgers/t/gone", num_children=1, data_length=0)  # a deleted namespace's leftover
    b.znode("/managed-ledgers/t/gone/persistent", data_length=0)
    snap = b.write(tmp_path / "snap")
    con = connect(snap, AuditParams(now_ms=NOW).resolved(NOW), admin_scraped=False)
    counts = run_detections(con)
    assert set(counts) == set(DETECTIONS) - set(STORAGE_DETECTIONS)
    assert counts["znode-leak"] >= 1
