"""Run the audit SQL on DuckDB (dev-only benchmark comparison). The SQL is written for Spark; this module
rewrites the few Spark-only spellings (the table below) and registers the same views over the same Parquet.

| Spark SQL                         | DuckDB                                  |
|-----------------------------------|-----------------------------------------|
| `named_struct(k, v, ...)`         | `json_object(k, v, ...)` (inside to_json) |
| `array(a, b)`                     | `list_value(a, b)`                      |
| `x -> expr` (lambda)              | `lambda x: expr`                        |
| `explode(l)` / `sequence(a, b)`   | `unnest(l)` / `generate_series(a, b)`   |
| `size(l)`                         | `len(l)`                                |
| `slice(l, s, n)` / `split(s, d)`  | `list_slice(l, s, s + n - 1)` / `string_split(s, d)` |
| `element_at(l, i)`                | `list_extract(l, i)`                    |
| `collect_list` / `collect_set`    | `list` / `list_distinct(list(..))`      |
| `array_join(l, s)`                | `array_to_string(l, s)`                 |
| `substring_index(s, d, n)`, n > 0 | the first n parts of `string_split(s, d)` joined by d |
| `conv(h, 16, 10)` / `crc32(s)`    | Python UDFs                              |
| `try_url_decode(s)`               | `url_decode(replace(s, '+', ' '))`      |
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

import duckdb

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files, intermediate_files, staging_files
from pulsar_ops.findings import STORAGE_DETECTIONS
from pulsar_ops.snapshot import schema

_SIMPLE = [
    (re.compile(r"\bnamed_struct\("), "json_object("),
    (re.compile(r"\barray\("), "list_value("),
    (re.compile(r"\b(\w+) ->"), r"lambda \1:"),
    (re.compile(r"\bexplode\("), "unnest("),
    (re.compile(r"\bsequence\("), "generate_series("),
    (re.compile(r"\bsize\("), "len("),
    (re.compile(r"\bsplit\("), "string_split("),
    (re.compile(r"\belement_at\("), "list_extract("),
    (re.compile(r"\bcollect_list\("), "list("),
    (re.compile(r"\bcollect_set\("), "po_collect_set("),
    (re.compile(r"\barray_join\("), "array_to_string("),
    (re.compile(r"\bslice\("), "po_slice("),
    (re.compile(r"\btry_url_decode\("), "po_url_decode("),
    (re.compile(r"\bconv\("), "po_conv("),
    (re.compile(r"\bcrc32\("), "po_crc32("),
    (re.compile(r"\bsubstring_index\("), "po_substring_index("),
]

MACROS = (
    "CREATE OR REPLACE MACRO po_collect_set(x) AS list_distinct(list(x))",
    "CREATE OR REPLACE MACRO po_slice(l, s, n) AS list_slice(l, s, s + n - 1)",
    "CREATE OR REPLACE MACRO po_url_decode(s) AS url_decode(replace(s, '+', ' '))",
    # Spark's substring_index for a positive count: everything before the n-th delimiter (all of s with fewer)
    "CREATE OR REPLACE MACRO po_substring_index(s, d, n) AS array_to_string(list_slice(string_split(s, d), 1, n), d)",
)


def rewrite(sql: str) -> str:
    for pattern, repl in _SIMPLE:
        sql = pattern.sub(repl, sql)
    return sql


def _conv(text: str | None, from_base: int, to_base: int) -> str | None:
    if text is None:
        return None
    value = int(text, from_base)
    return str(value) if to_base == 10 else format(value, "x")


def _crc32(text: str | None) -> int | None:
    return None if text is None else zlib.crc32(text.encode("utf-8")) & 0xFFFFFFFF


def connect(
    snapshot_dir: Path,
    params: AuditParams,
    *,
    admin_scraped: bool,
    threads: int | None = None,
    ownership_in_zk: bool = True,
) -> Any:
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.create_function("po_conv", _conv, ["VARCHAR", "INTEGER", "INTEGER"], "VARCHAR")
    con.create_function("po_crc32", _crc32, ["VARCHAR"], "BIGINT")
    for m in MACROS:
        con.execute(m)
    for t in schema.TABLES:
        glob = str(snapshot_dir / "tables" / t.name / "*.parquet")
        con.execute(f"CREATE VIEW src_{t.name} AS SELECT * FROM read_parquet('{glob}')")
    for f in staging_files():
        if f.name.startswith("stg_scan_"):  # bookie scans: the snapshot-only comparison has none
            continue
        con.execute(f"CREATE VIEW {f.name} AS {rewrite(f.text)}")
    b = params.broker
    con.execute(
        "CREATE TABLE params AS SELECT "
        f"CAST({params.now_ms} AS BIGINT) AS now_ms, CAST({params.min_age_ms} AS BIGINT) AS min_age_ms, "
        f"CAST({params.inactive_after_ms} AS BIGINT) AS inactive_after_ms, "
        f"CAST({b.default_retention_time_minutes} AS BIGINT) AS default_retention_time_minutes, "
        f"CAST({b.default_retention_size_mb} AS BIGINT) AS default_retention_size_mb, "
        f"CAST({b.ttl_duration_default_seconds} AS BIGINT) AS ttl_duration_default_seconds, "
        f"{str(b.delayed_delivery_enabled).lower()} AS delayed_delivery_enabled, "
        f"CAST({b.delayed_delivery_tick_ms} AS BIGINT) AS delayed_delivery_tick_ms, "
        f"CAST({b.delayed_delivery_max_delay_ms} AS BIGINT) AS delayed_delivery_max_delay_ms, "
        f"CAST({b.max_unacked_ranges_metadata} AS BIGINT) AS max_unacked_ranges_metadata, "
        f"CAST({b.max_unacked_ranges_persist} AS BIGINT) AS max_unacked_ranges_persist, "
        f"{str(admin_scraped).lower()} AS admin_scraped, "
        f"{str(ownership_in_zk).lower()} AS ownership_in_zk, "
        # the benchmark reads no /service_unit_state ownership (sql/intermediate/14_int_ownership_source.sql)
        "false AS service_unit_table_view, CAST([] AS VARCHAR[]) AS registered_brokers"
    )
    for f in intermediate_files():
        con.execute(f"CREATE VIEW {f.name} AS {rewrite(f.text)}")
    return con


def run_detections(con: Any) -> dict[str, int]:
    """Run every detection to completion but the bookie-scan ones (STORAGE_DETECTIONS: the comparison runs over
    a snapshot alone); returns rows per detection."""
    out: dict[str, int] = {}
    for f in detect_files():
        if f.name in STORAGE_DETECTIONS:
            continue
        out[f.name] = len(con.execute(rewrite(f.text)).fetchall())
    return out
