"""The findings contract: every sql/detect/*.sql emits exactly findings.FINDING_COLUMNS, every detection has a
file, and an empty snapshot audits clean (nothing is invented from missing data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pulsar_ops.audit import etl
from pulsar_ops.audit.bookie_scans import SCAN_TABLES
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import SqlFile, detect_files, intermediate_files, sql_root, staging_files
from pulsar_ops.findings import DETECTIONS, EXIT_CLEAN, FINDING_COLUMNS
from pulsar_ops.snapshot import schema
from tests.spark.helpers import audit
from tests.spark.snapshot_builder import NOW, SnapshotBuilder

pytestmark = pytest.mark.spark


def test_every_detection_has_exactly_one_file() -> None:
    names = [f.name for f in detect_files()]
    assert sorted(names) == sorted(DETECTIONS)


def test_every_snapshot_table_has_a_staging_view() -> None:
    scans = [f"stg_scan_{t.name}" for t in SCAN_TABLES] + ["stg_scan_bookies"]
    assert sorted(f.name for f in staging_files()) == sorted([f"stg_{t.name}" for t in schema.TABLES] + scans)


def test_sql_root_is_the_source_checkout(repo_root: Path) -> None:
    assert sql_root() == repo_root / "sql"


@pytest.fixture(scope="module")
def registered(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    snap = SnapshotBuilder().write(tmp_path_factory.mktemp("contract") / "snap")
    etl.extract(spark, snap, AuditParams(now_ms=NOW), admin_scraped=False, intermediates=True)
    return spark


def test_shared_view_settings_name_its_columns(registered: Any) -> None:
    """A Parquet option for a column (``parquet.enable.dictionary#COLUMN``) names a column the view writes: one
    that does not is silently ignored by parquet-mr. Each setting is for a shared view that exists."""
    views = {f.name: f for f in etl.shared_storage_files()}
    assert set(etl.SHARED_VIEW_CONF) | set(etl.SHARED_VIEW_WRITE_OPTIONS) <= set(views)
    for name, options in etl.SHARED_VIEW_WRITE_OPTIONS.items():
        columns = {c for c, _ in etl.column_contract(registered.sql(views[name].text))}
        for key in options:
            assert "#" not in key or key.split("#", 1)[1] in columns, (name, key)


def test_write_view_applies_its_settings_to_its_query_alone(spark: Any, tmp_path: Path) -> None:
    """etl._write_view: the Parquet options reach the writer (the column without a dictionary is written plain,
    the other one dictionary-encoded) and the SQL settings are those of the session again after the write."""
    sql = tmp_path / "1_tiny_view.sql"
    sql.write_text("SELECT id AS a, id % 3 AS b FROM range(1000)")
    f = SqlFile("storage", "tiny_view", sql)
    key, other = "spark.sql.shuffle.partitions", "spark.sql.execution.bypassPartialAggregation"
    before = spark.conf.get(key)
    spark.conf.unset(other)
    target = tmp_path / "tiny"
    etl._write_view(
        spark, f, target, False, "t", (), {key: "3", other: "true"}, {"parquet.enable.dictionary#a": "false"}
    )
    assert spark.conf.get(key) == before
    assert spark.conf.get(other, None) is None  # not set again
    encodings = {}
    for part in target.glob("*.parquet"):
        meta = pq.read_metadata(part)
        for g in range(meta.num_row_groups):
            for i in range(meta.num_columns):
                col = meta.row_group(g).column(i)
                encodings.setdefault(col.path_in_schema, set()).update(col.encodings)
    assert not {"PLAIN_DICTIONARY", "RLE_DICTIONARY"} & encodings["a"]
    assert {"PLAIN_DICTIONARY", "RLE_DICTIONARY"} & encodings["b"]
    assert spark.table("tiny_view").count() == 1000


@pytest.mark.parametrize("f", detect_files(), ids=lambda f: f.name)
def test_detection_output_schema(registered: Any, f: Any) -> None:
    df = registered.sql(f.text)
    assert etl.column_contract(df) == list(FINDING_COLUMNS)


@pytest.mark.parametrize("f", detect_files(), ids=lambda f: f.name)
def test_no_detection_plans_a_cartesian_product(registered: Any, f: Any) -> None:
    """`CROSS JOIN params` must broadcast the one-row view: a cartesian product grows with the data."""
    plan = registered.sql(f.text)._jdf.queryExecution().executedPlan().toString()
    assert "CartesianProduct" not in plan


def test_without_scans_each_shared_storage_view_is_an_empty_relation_of_its_columns(registered: Any) -> None:
    """No scans: every shared storage view is proven empty and registered as an empty relation of its columns, so
    a view or storage detection reading it analyses over a few columns instead of inlining every view before it
    (etl.storage_views); each keeps the columns its SQL gives."""
    for f in etl.shared_storage_files():
        view = registered.table(f.name)
        assert etl.proven_empty(view), f.name
        analysed = view._jdf.queryExecution().analyzed().treeString().count("\n")
        assert analysed <= 5, (f.name, analysed)  # a projection of NULLs over one filtered row; as SQL: 100s
        assert etl.column_contract(view) == etl.column_contract(registered.sql(f.text)), f.name
    # the proof is the optimizer's: a relation it cannot bound to no rows is not called empty
    assert etl.proven_empty(registered.sql("SELECT 1 AS x WHERE false"))
    assert not etl.proven_empty(registered.sql("SELECT 1 AS x"))
    assert not etl.proven_empty(registered.table("stg_znodes"))


def test_params_view_is_one_literal_row(registered: Any) -> None:
    rows = registered.table("params").collect()
    assert len(rows) == 1 and rows[0]["now_ms"] == NOW and rows[0]["admin_scraped"] is False


def test_staging_views_keep_every_column(registered: Any) -> None:
    for t in schema.TABLES:
        cols = tuple(registered.table(f"stg_{t.name}").columns)
        assert cols == t.column_names


def test_intermediate_views_are_registered(registered: Any) -> None:
    for f in intermediate_files():
        assert registered.catalog.tableExists(f.name)


def test_empty_snapshot_is_clean(spark: Any, tmp_path: Path) -> None:
    r = audit(spark, SnapshotBuilder(), tmp_path)
    assert r.findings == ()
    assert r.exit_code == EXIT_CLEAN
    assert set(r.audit["detections"]) == set(DETECTIONS)
    assert (tmp_path / "out" / "findings.json").is_file()
    assert list((tmp_path / "out" / "findings").glob("part-*.parquet"))
