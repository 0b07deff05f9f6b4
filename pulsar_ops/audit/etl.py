"""The audit job as extract -> materialise -> transform -> load over a SparkSession.

extract: register every snapshot table (``src_<table>``), the staging views (``stg_<table>``) and the one-row
``params`` view. materialise: write each intermediate view once to Parquet in the audit's work directory and
register it as a read of that Parquet, so every detection reads the shared result (with its real size) instead
of re-planning and re-computing it. transform: run every ``sql/detect/*.sql`` and union them after checking each
against ``findings.FINDING_COLUMNS``. load: write ``OUT/findings/`` Parquet (one sorted part) and return the rows
for ``findings.json``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from py4j.clientserver import ClientServer
from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql import types as T
from pyspark.util import inheritable_thread_target

from pulsar_ops.audit import jvm_metrics
from pulsar_ops.audit.bookie_scans import SCAN_TABLES, ScanInfo
from pulsar_ops.audit.manifest import table_dir
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.session import set_unless_explicit
from pulsar_ops.audit.sql_files import (
    SqlFile,
    coverage_files,
    detect_files,
    intermediate_files,
    staging_files,
    storage_files,
    storage_sql,
    strip_comments,
)
from pulsar_ops.audit.stage_metrics import STEP_PREFIX, storage_step
from pulsar_ops.audit.steps import Step, run_steps
from pulsar_ops.errors import AuditError
from pulsar_ops.findings import DETECTIONS, FINDING_COLUMN_NAMES, FINDING_COLUMNS, STORAGE_DETECTIONS
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.gc_settings import settings_for
from pulsar_ops.snapshot import schema

PARAMS_SCHEMA = T.StructType(
    [
        T.StructField("now_ms", T.LongType(), False),
        T.StructField("min_age_ms", T.LongType(), False),
        T.StructField("inactive_after_ms", T.LongType(), False),
        T.StructField("default_retention_time_minutes", T.LongType(), False),
        T.StructField("default_retention_size_mb", T.LongType(), False),
        T.StructField("ttl_duration_default_seconds", T.LongType(), False),
        T.StructField("delayed_delivery_enabled", T.BooleanType(), False),
        T.StructField("delayed_delivery_tick_ms", T.LongType(), False),
        T.StructField("delayed_delivery_max_delay_ms", T.LongType(), False),
        T.StructField("max_unacked_ranges_metadata", T.LongType(), False),
        T.StructField("max_unacked_ranges_persist", T.LongType(), False),
        T.StructField("admin_scraped", T.BooleanType(), False),
        # False when bundle ownership is not (all) in /namespace znodes: the extensible load manager, mixed or
        # unknown registrations (pulsar_ops.audit.manifest.ownership_in_zk)
        T.StructField("ownership_in_zk", T.BooleanType(), False),
        # True when the manifest allows reading ownership from /service_unit_state (the extensible load manager's
        # metadata-store table view: pulsar_ops.pulsar_names.service_unit_table_view); the SQL adds the snapshot's
        # evidence (int_service_unit_ownership)
        T.StructField("service_unit_table_view", T.BooleanType(), False),
        # the broker ids registered under /loadbalance/brokers at scrape time (manifest load_manager)
        T.StructField("registered_brokers", T.ArrayType(T.StringType()), False),
    ]
)


def params_row(
    params: AuditParams,
    admin_scraped: bool,
    ownership_in_zk: bool = True,
    service_unit_table_view: bool = False,
    registered_brokers: Sequence[str] = (),
) -> tuple[int | bool | tuple[str, ...], ...]:
    if params.now_ms is None:
        raise AuditError("audit parameters were not resolved against the snapshot (now_ms missing)")
    b = params.broker
    return (
        params.now_ms,
        params.min_age_ms,
        params.inactive_after_ms,
        b.default_retention_time_minutes,
        b.default_retention_size_mb,
        b.ttl_duration_default_seconds,
        b.delayed_delivery_enabled,
        b.delayed_delivery_tick_ms,
        b.delayed_delivery_max_delay_ms,
        b.max_unacked_ranges_metadata,
        b.max_unacked_ranges_persist,
        admin_scraped,
        ownership_in_zk,
        service_unit_table_view,
        tuple(sorted(registered_brokers)),
    )


_SPARK_TYPES = {
    "string": "STRING",
    "int64": "BIGINT",
    "int32": "INT",
    "bool": "BOOLEAN",
    "double": "DOUBLE",
    "list<string>": "ARRAY<STRING>",
    "list<int64>": "ARRAY<BIGINT>",
}


def spark_ddl(table: schema.Table) -> str:
    """The table's Spark schema as DDL (``` `path` STRING, `version` INT, ...```)."""
    return ", ".join(f"`{c.name}` {_SPARK_TYPES[c.type]}" for c in table.columns)


def params_sql(
    params: AuditParams,
    admin_scraped: bool,
    ownership_in_zk: bool = True,
    service_unit_table_view: bool = False,
    registered_brokers: Sequence[str] = (),
) -> str:
    """The one-row ``params`` view as a literal SELECT.

    A literal projection has known, tiny statistics, so every ``CROSS JOIN params`` is planned as a broadcast
    (a DataFrame built from Python data has unknown size and made Spark plan cartesian products, the audit's
    main cost).
    """
    cols = []
    row = params_row(params, admin_scraped, ownership_in_zk, service_unit_table_view, registered_brokers)
    for field, value in zip(PARAMS_SCHEMA.fields, row, strict=True):
        if isinstance(value, tuple):  # strings as hex: no quoting of what a registration names
            items = ", ".join(f"decode(unhex('{v.encode('utf-8').hex()}'), 'UTF-8')" for v in value)
            cols.append(f"CAST(array({items}) AS ARRAY<STRING>) AS {field.name}")
        elif isinstance(value, bool):
            cols.append(f"{'true' if value else 'false'} AS {field.name}")
        else:
            cols.append(f"CAST({int(value)} AS BIGINT) AS {field.name}")
    return "SELECT " + ", ".join(cols)


def _literal(value: int | float | bool | str | None, spark_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if "'" in value:  # chr(39): the one spelling of a quote Spark and DuckDB (the bench) both read alike
            return "concat(" + ", chr(39), ".join(_literal(p, spark_type) for p in value.split("'")) + ")"
        return "'" + value.replace("\\", "\\\\") + "'"
    return f"CAST({value!r} AS {spark_type})"


def literal_sql(columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[int | float | bool | str | None]]) -> str:
    """Rows as a literal SELECT (UNION ALL of one-row SELECTs; ``WHERE false`` when there are none): known, tiny
    statistics (see :func:`params_sql`), and an empty one lets the optimizer drop every join against it."""
    if not rows:
        return "SELECT " + ", ".join(f"{_literal(None, t)} AS {n}" for n, t in columns) + " WHERE false"
    return " UNION ALL ".join(
        "SELECT " + ", ".join(f"{_literal(v, t)} AS {n}" for (n, t), v in zip(columns, row, strict=True))
        for row in rows
    )


# The GC settings a storage detection judges with, as columns: each scan's bookie's own (src_scan_bookies) and the
# audit's (scan_params), one list for both (gc_values: a GcConfig's values in this order)
GC_COLUMNS = (
    ("gc_wait_time_ms", "BIGINT"),
    ("minor_threshold", "DOUBLE"),
    ("minor_interval_ms", "BIGINT"),
    ("major_threshold", "DOUBLE"),
    ("major_interval_ms", "BIGINT"),
    ("disk_usage_warn_threshold", "DOUBLE"),
    ("disk_usage_threshold", "DOUBLE"),
)

SCAN_BOOKIES_COLUMNS = (
    ("bookie_id", "STRING"),
    # the bookie's rank by bookie_id among the scans (1, 2, ...; bookie ids are unique among them: read_scans): the
    # integer the storage SQL aggregates and sorts by instead of the id's string, numbered here and nowhere else
    ("bookie_no", "INT"),
    ("scan_dir", "STRING"),
    ("complete", "BOOLEAN"),
    ("index_status", "STRING"),
    ("started_at_ms", "BIGINT"),
    ("finished_at_ms", "BIGINT"),
    # the GC settings the bookie is judged with (model/gc_settings.py, as the plan resolves them; all NULL when its
    # configuration was read and does not validate: stale-entry-log judges none of its logs)
    ("gc_settings_source", "STRING"),
    *GC_COLUMNS,
)

SCAN_PARAMS_COLUMNS = (
    ("snapshot_started_at_ms", "BIGINT"),
    ("snapshot_finished_at_ms", "BIGINT"),
    *GC_COLUMNS,
    ("flush_interval_ms", "BIGINT"),
)


def gc_values(g: GcConfig | None) -> tuple[Any, ...]:
    """A GcConfig's values in :data:`GC_COLUMNS`' order (all None for none)."""
    if g is None:
        return (None,) * len(GC_COLUMNS)
    return (
        g.gc_wait_time_ms,
        float(g.minor_compaction_threshold),
        g.minor_compaction_interval_s * 1000,
        float(g.major_compaction_threshold),
        g.major_compaction_interval_s * 1000,
        float(g.disk_usage_warn_threshold),
        float(g.disk_usage_threshold),
    )


def register_scans(
    spark: SparkSession,
    scans: Sequence[ScanInfo],
    params: AuditParams,
    snapshot_times: tuple[int, int],
    one_partition: bool = False,
) -> None:
    """The bookie scans' tables (``src_scan_<table>``: every scan's Parquet read as one table, or an empty literal
    relation when no scan was passed), ``src_scan_bookies`` (a row per scan, from its validated manifest) and the
    one-row ``scan_params`` (bookkeeper.conf settings and the snapshot's scrape times)."""
    register_scan_tables(spark, scans, one_partition)
    spark.sql(scan_bookies_sql(scans, params)).createOrReplaceTempView("src_scan_bookies")
    spark.sql(scan_params_sql(params, snapshot_times)).createOrReplaceTempView("scan_params")


def register_scan_tables(spark: SparkSession, scans: Sequence[ScanInfo], one_partition: bool) -> None:
    """``src_scan_<table>``: every scan's Parquet of that table read as one (one partition with
    ``one_partition``), or an empty literal relation when no scan was passed."""
    for t in SCAN_TABLES:
        paths = [str(s.tables[t.name]) for s in scans]
        if paths:
            frame = spark.read.schema(spark_ddl(t)).parquet(*paths)
            (frame.coalesce(1) if one_partition else frame).createOrReplaceTempView(f"src_scan_{t.name}")
        else:
            cols = [(c.name, _SPARK_TYPES[c.type]) for c in t.columns]
            spark.sql(literal_sql(cols, [])).createOrReplaceTempView(f"src_scan_{t.name}")


def scan_rows(scans: Sequence[ScanInfo]) -> int:
    """The rows of every scan's tables, from their Parquet footers (no data read)."""
    return sum(pq.read_metadata(path).num_rows for s in scans for path in s.tables.values())


def scan_bookies_sql(scans: Sequence[ScanInfo], params: AuditParams) -> str:
    """``src_scan_bookies`` as a literal SELECT: a row per scan, ``bookie_no`` its rank by bookie id (Python's
    string order is the code-point order, which is UTF-8's byte order: how Spark and DuckDB order strings),
    ``complete`` being every log read and no
    configured directory left out (ScanInfo.covers_bookie), and the GC settings its bookie is judged with
    (``ScanInfo.gc``, from bookie_scans.with_gc_settings; a scan without them: its own configuration, else the
    audit's)."""
    rows = []
    numbers = {b: n for n, b in enumerate(sorted(s.bookie_id for s in scans), start=1)}
    for s in scans:
        own = s.gc if s.gc is not None else settings_for(s.bookie_id, {}, s, params.bookie.gc)
        rows.append(
            (
                s.bookie_id,
                numbers[s.bookie_id],
                str(s.path),
                s.covers_bookie,
                s.index_status,
                s.started_at_ms,
                s.finished_at_ms,
                own.source,
                *gc_values(own.cfg),
            )
        )
    return literal_sql(SCAN_BOOKIES_COLUMNS, rows)


def scan_params_sql(params: AuditParams, snapshot_times: tuple[int, int]) -> str:
    """The one-row ``scan_params`` as a literal SELECT (:data:`SCAN_PARAMS_COLUMNS`): the scrape's started/finished
    ms and the bookkeeper.conf settings the storage detections use. One home for Spark and the DuckDB bench."""
    values = (snapshot_times[0], snapshot_times[1], *gc_values(params.bookie.gc), params.bookie.flush_interval_ms)
    return literal_sql(SCAN_PARAMS_COLUMNS, [values])


def _view(spark: SparkSession, f: SqlFile) -> None:
    try:
        spark.sql(f.text).createOrReplaceTempView(f.name)
    except PySparkException as e:
        raise AuditError(f"{f.path}: {first_line(e)}", hint=f"fix {f.path.name}; then re-run the audit") from e


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# How the audit's joins are chosen, unless set explicitly (--spark-conf, spark-submit --conf). Never broadcast by
# a table's file size: the snapshot's Parquet is dictionary- and delta-encoded, so at 600,000 topics the 546,905
# ack ranges took 1.1 MB on disk and the 2.2 M referenced ledger ids a few MB, under Spark's 10 MB threshold,
# and each was broadcast as a 192-208 MiB hash table built on the driver. Broadcast instead what the SQL hints
# (`/*+ BROADCAST(...) */`: params and the one-row intermediates, namespaces, tenants, bundles), and what
# adaptive execution has measured to be small after a shuffle (its threshold compares the shuffled bytes).
PLAN_CONF = {
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "10MB",
}


def plan_conf(spark: SparkSession) -> None:
    """Apply :data:`PLAN_CONF` to the session, but for any key set explicitly in its configuration."""
    set_unless_explicit(spark, PLAN_CONF)


# Every table read as one partition (a small snapshot: :func:`read_parquet`), unless set explicitly:
# * no adaptive execution: it re-optimises the whole remaining plan each time a query stage finishes, a cold
#   driver's work when every stage is one task over a few hundred rows;
# * no shuffle "for parallelism" above a one-partition join: the planner adds one when a join's children are
#   estimated larger than ``spark.sql.maxSinglePartitionBytes`` (128 MiB), and without column statistics a
#   join's estimate is the product of its children's sizes, so above two joins of a few KB it always was.
# The demo's snapshot, alternating with and without: 60 instead of 65 stages with the second alone (21.5 / 19.2 /
# 21.7 s against 23.8 / 20.8 / 25.2 s), 56 with both (20.6 / 20.2 / 18.5 s against 23.0 / 23.0 / 20.1 s with the
# second alone), the same findings row for row. A partitioned audit gets Spark's defaults back (a session that
# audits twice).
ONE_PARTITION_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
}


def partition_conf(spark: SparkSession, one_partition: bool) -> None:
    """Apply :data:`ONE_PARTITION_CONF` when every table is read as one partition, else restore Spark's defaults
    of those keys; neither for a key set explicitly in the session's configuration."""
    explicit = spark.sparkContext.getConf()
    for key, value in ONE_PARTITION_CONF.items():
        if explicit.contains(key):
            continue
        if one_partition:
            spark.conf.set(key, value)
        else:
            spark.conf.unset(key)


ADDED_TABLES = schema.ADDED_TABLES  # tables an older snapshot predates: read as empty (snapshot/schema.py)


def read_parquet(reader: DataFrameReader, directory: Path, one_partition: bool) -> DataFrame:
    """A Parquet directory as a frame; with ``one_partition`` (a small snapshot: audit/sizing.py) coalesced to
    one partition, which every join, aggregate and window downstream accepts without a shuffle where its plan
    keeps that partitioning: the demo's audit ran 64 stages instead of 136, and 10,000 topics 63 instead of 137
    (20.4-20.7 s against 21.7-23.2 s; the demo 16.7-20.9 s against 18.3-20.7 s), with the same findings."""
    frame = reader.parquet(str(directory))
    return frame.coalesce(1) if one_partition else frame


def register_snapshot_tables(spark: SparkSession, snapshot_dir: Path, one_partition: bool) -> None:
    """``src_<table>`` for every snapshot table (one partition each with ``one_partition``: :func:`read_parquet`)."""
    for t in schema.TABLES:
        if t.name in ADDED_TABLES and not (snapshot_dir / "tables" / t.name).is_dir():  # predates it: no rows
            spark.createDataFrame([], spark_ddl(t)).createOrReplaceTempView(f"src_{t.name}")
            continue
        d = table_dir(snapshot_dir, t.name)
        # the schema is known (snapshot/schema.py): no schema-inference job per table
        reader = spark.read.schema(spark_ddl(t))
        read_parquet(reader, d, one_partition).createOrReplaceTempView(f"src_{t.name}")


# The storage stage (the storage detections and the capacity view: runner.run_audit) reads every input as one
# partition, as a small snapshot's audit does (read_parquet, ONE_PARTITION_CONF), when the scans hold at most this
# many rows in all: most of its cost was per-stage (60,000 topics, 881,136 (ledger, log) pairs and as many index
# rows: 110 stages for about 60 s of task CPU, partitioned). Above it (600,000 topics: about 17 M scan rows) it
# stays partitioned like the rest of the audit.
STORAGE_ONE_PARTITION_MAX_ROWS = 2_500_000


def storage_one_partition(scans: Sequence[ScanInfo], snapshot_one_partition: bool) -> bool:
    """Whether the storage stage reads its inputs as one partition (:data:`STORAGE_ONE_PARTITION_MAX_ROWS`)."""
    return bool(scans) and (snapshot_one_partition or scan_rows(scans) <= STORAGE_ONE_PARTITION_MAX_ROWS)


def repartition_inputs(
    spark: SparkSession,
    snapshot_dir: Path,
    scans: Sequence[ScanInfo],
    materialised: Sequence[Materialised],
    sql_root: Path | None,
    one_partition: bool,
) -> None:
    """Register every input again, one partition each or not (the session's settings with them:
    :func:`partition_conf`): the snapshot and scan tables, the staging views over them (a view keeps the plan it
    was analysed with) and the intermediate views written by :func:`materialise`. What they hold is unchanged."""
    partition_conf(spark, one_partition)
    register_snapshot_tables(spark, snapshot_dir, one_partition)
    register_scan_tables(spark, scans, one_partition)
    for f in staging_files(sql_root):
        _view(spark, f)
    for m in materialised:
        schema_of = spark.table(m.name).schema
        read_parquet(spark.read.schema(schema_of), m.path, one_partition).createOrReplaceTempView(m.name)


def extract(
    spark: SparkSession,
    snapshot_dir: Path,
    params: AuditParams,
    *,
    admin_scraped: bool,
    ownership_in_zk: bool = True,
    service_unit_table_view: bool = False,
    registered_brokers: Sequence[str] = (),
    sql_root: Path | None = None,
    intermediates: bool = False,
    one_partition: bool = False,
    bookie_scans: Sequence[ScanInfo] = (),
    snapshot_times: tuple[int, int] = (0, 0),
) -> None:
    """Register snapshot tables, the bookie scans (:func:`register_scans`; ``snapshot_times``: the scrape's
    started/finished ms), staging views and ``params``; with ``intermediates`` also the intermediate
    views as SQL (for analysing detections without running anything). The audit leaves them to
    :func:`materialise`, which analyses and registers each as it writes it. ``one_partition``: see
    :func:`read_parquet`."""
    set_unless_explicit(spark, {"spark.sql.jsonGenerator.ignoreNullFields": "false"})  # details keep null keys
    plan_conf(spark)
    partition_conf(spark, one_partition)
    register_snapshot_tables(spark, snapshot_dir, one_partition)
    register_scans(spark, bookie_scans, params, snapshot_times, one_partition)
    for f in staging_files(sql_root):
        _view(spark, f)
    spark.sql(
        params_sql(params, admin_scraped, ownership_in_zk, service_unit_table_view, registered_brokers)
    ).createOrReplaceTempView("params")
    if intermediates:
        for f in intermediate_files(sql_root):
            _view(spark, f)
        storage_views(spark, sql_root)


@dataclass(frozen=True)
class Materialised:
    """One intermediate view written once: where, how many rows, how many Parquet bytes."""

    name: str
    path: Path
    rows: int
    bytes: int
    seconds: float = 0.0  # wall time of its write (its own joins and windows, over the views before it)
    written: DataFrame | None = dc_field(default=None, compare=False, repr=False)  # the frame the write ran
    # what the JVM spent during its write (audit/jvm_metrics.py): the JIT compilers' seconds (all threads, so
    # what they compiled while this write ran), Spark's generated classes; None where unreadable
    jit_s: float | None = None
    codegen_classes: int | None = None

    @property
    def reads(self) -> tuple[str, ...]:
        """The directories its write scanned (snapshot tables, earlier intermediates). Asked for, not recorded:
        listing a frame's input files costs an optimizer pass (0.8 s over the demo's views)."""
        return scanned_dirs(self.written) if self.written is not None else ()

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "rows": self.rows,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 2),
            "jit_s": self.jit_s,
            "codegen_classes": self.codegen_classes,
        }


def parquet_size(directory: Path) -> tuple[int, int]:
    """Rows (from the Parquet footers) and bytes of the part files Spark wrote into ``directory``."""
    rows = size = 0
    for part in sorted(directory.glob("*.parquet")):
        size += part.stat().st_size
        rows += pq.read_metadata(part).num_rows
    return rows, size


def scanned_dirs(df: DataFrame) -> tuple[str, ...]:
    """The directories a frame's file scans read (``DataFrame.inputFiles``: Parquet part URIs), sorted."""
    return tuple(sorted({re.sub(r"^file:(//)?", "", f).rsplit("/", 1)[0] for f in df.inputFiles()}))


# How a shared storage view is planned and written, by view name (:func:`storage_stage`), measured at 600,000
# topics with six scans (storage_groups: 2,181,625 rows). Settings apply to that view's query alone (restored after
# it), unless set explicitly; a key an older Spark does not know is ignored, and the SQL is correct without it.
# - bypassPartialAggregation (Spark 4.3): the references' min(named_struct) per ledger ran as two sort-based
#   aggregates, one sorting 2.2 M rows before the shuffle to merge almost nothing (few ledgers have two
#   references); bypassed, one aggregate after the shuffle. The pairs' aggregate already has no partial one.
# - No Parquet dictionary for ledger_id: 2.2 M distinct ledger ids overflow the 1 MiB dictionary of each column
#   chunk after a few thousand rows, so the writer hashed every value, then fell back to plain encoding; written
#   plain from the start (a row per (bookie, ledger), with the bytes plain too: 73.5 -> 68.5 MB).
SHARED_VIEW_CONF: dict[str, dict[str, str]] = {
    "storage_groups": {"spark.sql.execution.bypassPartialAggregation": "true"},
}
SHARED_VIEW_WRITE_OPTIONS: dict[str, dict[str, str]] = {
    "storage_groups": {"parquet.enable.dictionary#ledger_id": "false"},
}


def _write_view(
    spark: SparkSession,
    f: SqlFile,
    target: Path,
    one_partition: bool,
    label: str,
    small_views: Collection[str] = (),
    conf: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> DataFrame:
    """Run ``f``'s SQL once (rendered with ``small_views``: :meth:`SqlFile.render`, :func:`broadcastable`,
    :func:`small_tables`), write it to Parquet at ``target`` and register ``f.name`` as a read of what was written
    (``label``: the Spark UI's job description, each query's stages apart); its analysed frame. ``conf``: runtime
    SQL settings for this query alone (but for keys set explicitly), restored after it; ``options``: the Parquet
    writer's (``parquet.*`` keys reach parquet-mr through the write's Hadoop configuration)."""
    explicit = spark.sparkContext.getConf()
    saved = {k: spark.conf.get(k, None) for k in (conf or {}) if not explicit.contains(k)}  # None: not set
    try:
        spark.sparkContext.setJobDescription(label)
        for key in saved:
            spark.conf.set(key, (conf or {})[key])
        view = spark.sql(f.render(small_views))
        view.write.options(**(options or {})).mode("overwrite").parquet(str(target))
        read_parquet(spark.read.schema(view.schema), target, one_partition).createOrReplaceTempView(f.name)
    except PySparkException as e:
        raise AuditError(f"{f.path}: {first_line(e)}", hint=f"fix {f.path.name}; then re-run the audit") from e
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
    return view


def materialise(
    spark: SparkSession,
    work_dir: Path,
    sql_root: Path | None = None,
    one_partition: bool = False,
    small_tables: Collection[str] = (),
) -> list[Materialised]:
    """Write every intermediate view once and register it again as a read of what was written. A detection then
    scans the result instead of re-computing the view's joins and windows in its own plan, and the planner sees
    the real size of each intermediate (small ones are broadcast).

    In file order, each view's SQL is analysed right before its write, so it reads the Parquet of the views
    written before it (a view registered earlier from a DataFrame keeps the plan it was analysed with, and would
    re-compute every earlier intermediate it names). Each is rendered with ``small_tables`` (:func:`small_tables`)
    and the views written before it that counted few rows (:func:`broadcastable`)."""
    out: list[Materialised] = []
    for f in intermediate_files(sql_root):
        target = work_dir / f.name
        started, before = time.monotonic(), jvm_metrics.read(spark)
        small = frozenset(small_tables) | broadcastable(out)
        view = _write_view(spark, f, target, one_partition, f"{STEP_PREFIX}materialise {f.name}", small)
        rows, size = parquet_size(target)
        spent = jvm_metrics.delta(before, jvm_metrics.read(spark))
        jit, classes = spent["jit_s"], spent["codegen_classes"]
        out.append(
            Materialised(
                f.name,
                target,
                rows,
                size,
                time.monotonic() - started,
                view,
                float(jit) if jit is not None else None,
                int(classes) if classes is not None else None,
            )
        )
    spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
    # after the intermediates they read (int_undecodable, int_blocking); with scans run_audit's storage step writes
    # them (storage_stage) before anything reads them
    storage_views(spark, sql_root, replaced_with_scans=True)
    return out


# An intermediate view with at most this many rows is broadcast where the SQL asks for it by measured size
# (``${broadcast_if_small:ALIAS:VIEW}``: sql_files.expand_macros). Spark held 2.2 M ledger ids in a 192-208 MiB
# hash table (the file-size broadcasts PLAN_CONF turns off): about 90 bytes a row, so at most about 23 MB here.
BROADCAST_MAX_ROWS = 250_000


def broadcastable(materialised: Iterable[Materialised]) -> frozenset[str]:
    """The intermediate views written with at most :data:`BROADCAST_MAX_ROWS` rows. Also when every table is
    read as one partition: the optimizer pushes a semi-join below the one-partition read, whose rows then need an
    exchange of their own (dangling-ledger's plan on the demo's snapshot: 7 hash exchanges without the hints, 1
    with them)."""
    return frozenset(m.name for m in materialised if m.rows <= BROADCAST_MAX_ROWS)


def small_tables(row_counts: Mapping[str, Any]) -> frozenset[str]:
    """The staging views (``stg_<table>``) of the snapshot tables its manifest counts at most
    :data:`BROADCAST_MAX_ROWS` rows (``row_counts``), for ``${broadcast_if_small:ALIAS:stg_<table>}``: a table
    small in many clusters but not by construction (the brokers' loaded-topic listings, the topic policies) is
    broadcast where it was counted small, instead of shuffling the big side of its join (at 600,000 topics
    expired-retention-unloaded shuffled the 615,104 managed ledgers for two empty tables). A staging view only
    renames and casts, so it has the table's rows; a table the manifest does not count is not in the set."""
    return frozenset(
        f"stg_{t}"
        for t, n in row_counts.items()
        if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= BROADCAST_MAX_ROWS
    )


def column_contract(df: DataFrame) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields]


def check_contract(f: SqlFile, df: DataFrame) -> None:
    got = column_contract(df)
    if got != list(FINDING_COLUMNS):
        raise AuditError(
            f"{f.path.name} breaks the findings contract: columns {got}, expected {list(FINDING_COLUMNS)}",
            hint=f"make {f.path.name} SELECT exactly findings.FINDING_COLUMNS",
        )


def detection_frame(spark: SparkSession, f: SqlFile, small_views: Collection[str] = ()) -> DataFrame:
    """One detection's frame; ``small_views``: the intermediate views measured small (:func:`broadcastable`)."""
    if f.name not in DETECTIONS:
        raise AuditError(f"{f.path.name}: {f.name!r} is not a known detection", hint="see findings.DETECTIONS")
    try:
        df = spark.sql(f.render(small_views))
    except PySparkException as e:
        raise AuditError(f"{f.path}: {first_line(e)}", hint=f"fix {f.path.name}; then re-run the audit") from e
    check_contract(f, df)
    return df


def transform(
    spark: SparkSession,
    sql_root: Path | None = None,
    small_views: Collection[str] = (),
    only: Callable[[str], bool] | None = None,
) -> tuple[DataFrame, list[str]]:
    """Every detection (``only``: those whose name it accepts), unioned. Returns the findings frame and the
    detections run (in file order). ``small_views``: the intermediate views measured small (:func:`broadcastable`)."""
    files = detect_files(sql_root)
    if not files:
        raise AuditError("no detection SQL files found")
    files = [f for f in files if only is None or only(f.name)]
    if not files:  # none selected: an empty frame of the findings' columns
        empty = literal_sql([(n, t.upper()) for n, t in FINDING_COLUMNS], [])
        return spark.sql(empty), []
    views = []
    for f in files:
        view = "detect_" + f.name.replace("-", "_")
        detection_frame(spark, f, small_views).createOrReplaceTempView(view)
        views.append(view)
    # One UNION ALL statement, analysed once. Every frame passed check_contract (the same columns, in order), so
    # the positional union is the by-name one; pairwise DataFrame.unionByName re-analysed the growing plan at
    # each step (2.9 s of the demo's cold audit, 0.2 s this way).
    return spark.sql(" UNION ALL ".join(f"SELECT * FROM {v}" for v in views)), [f.name for f in files]


def coverage(spark: SparkSession, sql_root: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every ``coverage/*.sql``, collected (small by construction: one row per namespace at most)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for f in coverage_files(sql_root):
        try:
            rows = spark.sql(f.text).collect()
        except PySparkException as e:
            raise AuditError(f"{f.path}: {first_line(e)}", hint=f"fix {f.path.name}; then re-run the audit") from e
        out[f.name] = sorted((r.asDict() for r in rows), key=lambda d: str(d.get("namespace") or ""))
    return out


def shared_storage_files(sql_root: Path | None = None) -> list[SqlFile]:
    """The storage stage's shared views: a prefixed ``storage/*.sql`` (``1_storage_groups``, a row per ledger and
    group of 8 bookies on their disks; ``1_storage_ledgers.view``, a row per bookie and ledger over it), read by the
    storage detections and the other capacity-view files. Written once (:func:`storage_stage`) but for a
    ``.view.sql`` file, registered as its SQL (``SqlFile.written``)."""
    return [f for f in storage_files(sql_root) if f.shared]


def storage_views(spark: SparkSession, sql_root: Path | None = None, *, replaced_with_scans: bool = False) -> None:
    """Register every shared storage view (nothing runs), so the storage detections analyse in any audit: each
    view's SQL is analysed (a broken one fails here, naming its file), then registered as an empty relation of its
    columns where the optimizer proves it empty (:func:`proven_empty`), else as its SQL. Without scans every scan
    table is an empty relation and every shared view is proven empty: a view that reads it, or a storage
    detection, analyses over a relation of a few columns instead of inlining the whole plan of every view before
    it (stale-entry-log's analysed plan: 3,845 nodes as SQL, 74 so; the union of every detection 6,956 and 1,149),
    and finds nothing, as it did. With scans :func:`storage_stage` writes each view once and registers a read of
    it instead: ``replaced_with_scans`` (:func:`materialise`, whose audit runs it) then registers nothing (only the
    storage detections and ``storage/*.sql`` read these views; analysing the chain as SQL cost 1.2-1.8 s of a warm
    session's audit with the suite's scans), and nothing is proven otherwise."""
    scanless = all(proven_empty(spark.table(f"src_scan_{t.name}")) for t in SCAN_TABLES)
    if replaced_with_scans and not scanless:
        return
    for f in shared_storage_files(sql_root):
        _view(spark, f)
        frame = spark.table(f.name)
        if scanless and proven_empty(frame):
            empty = spark.sql(literal_sql([(c.name, c.dataType.simpleString()) for c in frame.schema.fields], []))
            if column_contract(empty) == column_contract(frame):  # the same columns, names and types
                empty.createOrReplaceTempView(f.name)


def proven_empty(df: DataFrame) -> bool:
    """Whether the optimizer proves ``df`` has no rows: its optimized plan's maximum row count is 0 (an empty
    relation, such as a scan table without scans, propagated through the joins and filters above it). Nothing
    runs."""
    max_rows = df._jdf.queryExecution().optimizedPlan().maxRows()
    return bool(max_rows.isDefined()) and int(max_rows.get()) == 0


# The storage stage's statements run from this many driver threads at once (:func:`storage_stage`, audit/steps.py):
# after storage_groups, the capacity queries (owners, oldest_logs, bookies: they read it or its view alone) beside
# the chain of small shared views and the storage detections, whose one-task stages and driver work (analysis,
# planning, commits) each left a core idle. Two: the cores of the machines it was measured on. Quiet, interleaved,
# the same JVM CPU-s: 50,000 topics (one partition) 17.95 / 18.04 -> 16.10 / 15.41 s; 600,000 topics (CPU-bound: 78
# JVM CPU-s in 41.5 s on 2 cores) 41.57 / 40.17 -> 39.39 / 38.62 s. A query's seconds in stages then count the
# other thread's tasks too (its task CPU does not).
STORAGE_THREADS = 2


def reads(f: SqlFile, views: Iterable[str]) -> frozenset[str]:
    """The views among ``views`` that ``f``'s SQL names (a word of it, comments aside; a name in a macro counts):
    what it may read. A word that is not a read only orders it later."""
    words = set(re.findall(r"[a-z_][a-z0-9_]*", strip_comments(f.path.read_text()).lower()))
    return frozenset(v for v in views if v.lower() in words)


def _shared_step(
    spark: SparkSession, f: SqlFile, work_dir: Path, one_partition: bool
) -> Callable[[Mapping[str, Any]], bool]:
    def run(before: Mapping[str, Any]) -> bool:
        target = work_dir / f"storage_{f.name}"
        small = _written_small(before)  # the views it reads written small
        _write_view(
            spark,
            f,
            target,
            one_partition,
            STEP_PREFIX + storage_step(f.name),
            small,
            SHARED_VIEW_CONF.get(f.name),
            SHARED_VIEW_WRITE_OPTIONS.get(f.name),
        )
        return parquet_size(target)[0] <= BROADCAST_MAX_ROWS

    return run


def _sql_view_step(spark: SparkSession, f: SqlFile) -> Callable[[Mapping[str, Any]], bool]:
    """A shared view that is never written (``N_<view>.view.sql``): registered as its SQL once the views it reads
    are written (nothing runs), so each statement reading it plans it over their Parquet. Never counted small."""

    def run(before: Mapping[str, Any]) -> bool:
        try:
            spark.sql(f.render(_written_small(before))).createOrReplaceTempView(f.name)
        except PySparkException as e:
            raise AuditError(f"{f.path}: {first_line(e)}", hint=f"fix {f.path.name}; then re-run the audit") from e
        return False

    return run


def _query_step(spark: SparkSession, f: SqlFile, top_n: int) -> Callable[[Mapping[str, Any]], list[dict[str, Any]]]:
    def run(_: Mapping[str, Any]) -> list[dict[str, Any]]:
        spark.sparkContext.setJobDescription(STEP_PREFIX + storage_step(f.name))  # each query's stages apart
        try:
            rows = spark.sql(storage_sql(f, top_n)).collect()
        except PySparkException as e:
            raise AuditError(f"{f.path}: {first_line(e)}", hint=f"fix {f.path.name}; then re-run the audit") from e
        return [r.asDict(recursive=True) for r in rows]

    return run


def _detections_step(
    spark: SparkSession, work_dir: Path, sql_root: Path | None, small_views: Collection[str]
) -> Callable[[Mapping[str, Any]], tuple[DataFrame, list[str]]]:
    def run(shared: Mapping[str, Any]) -> tuple[DataFrame, list[str]]:
        spark.sparkContext.setJobDescription(STEP_PREFIX + storage_step())
        small = frozenset(small_views) | _written_small(shared)
        frame, detections = transform(spark, sql_root, small, only=lambda d: d in STORAGE_DETECTIONS)
        return write_findings(frame, work_dir / "findings_storage"), detections

    return run


def storage_stage(
    spark: SparkSession,
    work_dir: Path,
    sql_root: Path | None = None,
    small_views: Collection[str] = (),
    top_n: int = 10,
    one_partition: bool = False,
    threads: int = STORAGE_THREADS,
) -> tuple[DataFrame, list[str], dict[str, list[dict[str, Any]]]]:
    """The storage stage, run only with scans (runner.run_audit): the shared views, the storage detections and the
    capacity view. Returns the storage detections' findings (written under ``work_dir`` and read back), the
    detections run, and the capacity view's rows by query.

    * Every shared storage view (a prefixed ``storage/*.sql``: ``1_storage_groups``, a row per ledger and group of
      8 bookies on their disks, and the views over it) is written once to Parquet under ``work_dir`` and registered
      as a read of it: the detections and the capacity view read the scans' (ledger, log) pairs (9 M at 600,000
      topics) aggregated and joined with the metadata once, not once per query. ``one_partition``: as
      :func:`materialise`. A ``N_<view>.view.sql`` (``storage_ledgers``: a row per bookie and ledger, the group
      rows turned into one per holding bookie) is not written: registered as its SQL once the views it reads are;
      but with ``one_partition`` (a small snapshot's session, without generated code: ``sizing.NO_CODEGEN``) it is
      written like the others, since each reader interpreting its join cost more than one write (50,000 topics:
      the stage's task CPU 18.20 / 20.86 -> 22.67 / 26.14 s as a view).
      Each is rendered with the views it reads that were written with at most :data:`BROADCAST_MAX_ROWS` rows (as
      :func:`broadcastable`: ``${broadcast_if_small:ALIAS:VIEW}`` broadcasts them), as in file order.
    * The storage detections (``small_views``: the intermediate views and tables measured small, with the shared
      views written small) run as one statement after every shared view.
    * Every other ``storage/*.sql`` is collected (small by construction: a row per bookie, or the top ``top_n`` per
      bookie) after the shared views it reads.

    Each statement starts once those it reads are written (:func:`reads`; a shared view only reads views before it
    in file order), from up to ``threads`` driver threads (:data:`STORAGE_THREADS`; audit/steps.py); a
    view with settings of its own (:data:`SHARED_VIEW_CONF`) runs alone. Each job keeps its statement's
    description; what is written and collected is what the sequential order (``threads=1``) writes and collects,
    and an error is the same AuditError naming the file."""
    shared = shared_storage_files(sql_root)
    names = [f.name for f in shared]
    steps = [
        Step(f"view {f.name}",
             _shared_step(spark, f, work_dir, one_partition) if f.written or one_partition
             else _sql_view_step(spark, f),
             frozenset(f"view {n}" for n in reads(f, names[:i])), exclusive=f.name in SHARED_VIEW_CONF)
        for i, f in enumerate(shared)
    ]  # fmt: skip
    steps.append(Step("detections", _detections_step(spark, work_dir, sql_root, small_views), _named(steps)))
    queries = [f for f in storage_files(sql_root) if not f.shared]
    steps.extend(
        Step(f"query {f.name}", _query_step(spark, f, top_n), frozenset(f"view {n}" for n in reads(f, names)))
        for f in queries
    )
    # PySpark's pinned thread mode (its default): each Python thread its own JVM thread, with its own job
    # description; without it the threads would share JVM threads and their descriptions, so one at a time. A
    # wrapper per call: one inheritable_thread_target wrapper hands every call the same properties object, so the
    # statements' job descriptions would mix
    pinned = isinstance(SparkContext._gateway, ClientServer)
    wrap: Callable[[Callable[[], Any]], Callable[[], Any]] = lambda fn: inheritable_thread_target(spark)(fn)  # noqa: E731
    done = run_steps(steps, threads if pinned else 1, wrap)
    frame, detections = done["detections"]
    return frame, detections, {f.name: done[f"query {f.name}"] for f in queries}


def _named(steps: Iterable[Step]) -> frozenset[str]:
    return frozenset(s.name for s in steps)


def _written_small(before: Mapping[str, Any]) -> frozenset[str]:
    """The shared views among the results of the steps ``view NAME`` that were written small (True)."""
    return frozenset(n.removeprefix("view ") for n, few in before.items() if n.startswith("view ") and few is True)


def write_findings(findings: DataFrame, target: Path) -> DataFrame:
    """Write some detections' findings to ``target`` (under the audit's work directory) and return a frame reading
    them back: :func:`load` unions them with the others' into ``OUT/findings/``."""
    try:
        findings.select(*FINDING_COLUMN_NAMES).write.mode("overwrite").parquet(str(target))
    except PySparkException as e:
        raise AuditError(f"audit job failed: {first_line(e)}") from e
    return findings.sparkSession.read.schema(findings.select(*FINDING_COLUMN_NAMES).schema).parquet(str(target))


def sort_columns() -> list[str]:
    return ["detection", "path", "ledger_id", "topic", "subscription"]


def load(findings: DataFrame, out_dir: Path) -> DataFrame:
    """Write ``OUT/findings/`` (one Parquet part, sorted) and return a frame reading it back."""
    target = out_dir / "findings"
    try:
        (
            findings.select(*FINDING_COLUMN_NAMES)
            .repartition(1)
            .sortWithinPartitions(*sort_columns())
            .write.mode("overwrite")
            .parquet(str(target))
        )
    except PySparkException as e:
        raise AuditError(f"audit job failed: {first_line(e)}") from e
    return findings.sparkSession.read.parquet(str(target))


def service_unit_summary(spark: SparkSession) -> dict[str, Any]:
    """``audit.ownership.service_unit_state``: whether ``/service_unit_state`` was read as the truth about bundle
    ownership (``int_ownership_source``), why not, and its values per ownership (``int_service_units``)."""
    src = spark.sql("SELECT sus_known, why_not FROM int_ownership_source").collect()
    counts = spark.sql("SELECT ownership, count(*) AS n FROM int_service_units GROUP BY ownership").collect()
    known = bool(src and src[0]["sus_known"])
    return {
        "known": known,
        "why_not": None if known or not src else src[0]["why_not"],
        "bundles": {str(r["ownership"]): int(r["n"]) for r in counts},
    }


def transaction_store_summary(spark: SparkSession) -> dict[str, dict[str, int]]:
    """``audit.ownership.transaction_stores``: the transaction stores per kind and whether what opens them has
    them open (``int_transaction_stores``: yes / no / unknown); they are never unloaded findings of their own."""
    out: dict[str, dict[str, int]] = {}
    rows = spark.sql("SELECT kind, in_use, count(*) AS n FROM int_transaction_stores GROUP BY kind, in_use")
    for r in rows.collect():
        out.setdefault(str(r["kind"]), {})[str(r["in_use"])] = int(r["n"])
    return out
