"""Run the audit SQL on DuckDB (dev-only benchmark comparison). The SQL is written for Spark; this module
rewrites the few Spark-only spellings and registers the same views over the same Parquet.

Every translation has one home, :data:`TRANSLATIONS` (what each rewrites is its comment there) and the
macros it calls, :data:`MACROS`. :func:`rewrite` applies the translations every file needs; the storage SQL (the
three storage detections and storage/*.sql) builds real structs and arrays where the metadata SQL only builds
JSON, so :func:`rewrite_storage` first applies the structural ones (``named_struct`` as ``struct_pack``, 0-based
subscripts and lambda indexes) and the ``STORAGE`` translations, then :func:`rewrite`.
"""

from __future__ import annotations

import re
import time
import zlib
from pathlib import Path
from typing import Any

import duckdb

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files, intermediate_files, staging_files, storage_files, storage_sql
from pulsar_ops.audit.stage_metrics import storage_step
from pulsar_ops.findings import STORAGE_DETECTIONS
from pulsar_ops.snapshot import schema

# snapshot/schema.py's type strings as DuckDB types (an empty view of a table the snapshot predates)
_DUCK_TYPES = {
    "string": "VARCHAR",
    "int64": "BIGINT",
    "int32": "INTEGER",
    "bool": "BOOLEAN",
    "double": "DOUBLE",
    "list<string>": "VARCHAR[]",
    "list<int64>": "BIGINT[]",
}

ALL = "all"  # applied to every file (rewrite)
STORAGE = "storage"  # applied to the storage SQL only, before the others (rewrite_storage)

# (scope, Spark spelling, DuckDB spelling), in the order applied
TRANSLATIONS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # from_json(j, 'MAP<STRING, ARRAY<STRING>>') -> CAST(json(j) AS MAP(VARCHAR, VARCHAR[]))
    (
        STORAGE,
        re.compile(r"\bfrom_json\(([\w.]+), 'MAP<STRING, ARRAY<STRING>>'\)"),
        r"CAST(json(\1) AS MAP(VARCHAR, VARCHAR[]))",
    ),
    # a column named `exists` is quoted; the higher-order exists(l, f) is list_bool_or(list_transform(l, f))
    (STORAGE, re.compile(r"(?<![\w\"])exists(?!\s*\()"), '"exists"'),
    (STORAGE, re.compile(r"\bexists\("), "po_exists("),
    (STORAGE, re.compile(r"\btransform\("), "list_transform("),
    (STORAGE, re.compile(r"\bpmod\("), "po_pmod("),  # ((a % b) + b) % b
    (STORAGE, re.compile(r"\bstartswith\("), "starts_with("),
    (STORAGE, re.compile(r"\bDIV\b"), "//"),
    (STORAGE, re.compile(r"\breverse\(array_sort\("), "list_reverse(array_sort("),
    (STORAGE, re.compile(r"\barray_distinct\("), "list_distinct("),
    # named_struct(k, v, ...) inside to_json -> json_object(k, v, ...) (the storage SQL's: struct_pack, first)
    (ALL, re.compile(r"\bnamed_struct\("), "json_object("),
    (ALL, re.compile(r"\barray\("), "list_value("),
    (ALL, re.compile(r"\b(\w+) ->"), r"lambda \1:"),
    (ALL, re.compile(r"\bexplode\("), "unnest("),
    (ALL, re.compile(r"\bsequence\("), "generate_series("),
    (ALL, re.compile(r"\bsize\("), "len("),
    (ALL, re.compile(r"\bsplit\("), "string_split("),
    (ALL, re.compile(r"\belement_at\("), "list_extract("),
    # Spark's collect_list/collect_set skip NULLs and give [] over no row (DuckDB's list(): NULLs kept, NULL)
    (ALL, re.compile(r"\bcollect_list\("), "po_collect_list("),
    (ALL, re.compile(r"\bcollect_set\("), "po_collect_set("),
    (ALL, re.compile(r"\barray_join\("), "array_to_string("),
    (ALL, re.compile(r"\bslice\("), "po_slice("),  # slice(l, s, n): list_slice(l, s, s + n - 1)
    (ALL, re.compile(r"\btry_url_decode\("), "po_url_decode("),
    (ALL, re.compile(r"\bconv\("), "po_conv("),  # conv(h, 16, 10) and crc32(s): Python functions
    (ALL, re.compile(r"\bcrc32\("), "po_crc32("),
    (ALL, re.compile(r"\bsubstring_index\("), "po_substring_index("),
    # and regexp_replace(s, p, r) replaces every match: regexp_replace(s, p, r, 'g') (_replace_all)
)

MACROS = (
    "CREATE OR REPLACE MACRO po_collect_list(x) AS coalesce(list_filter(list(x), lambda y: y IS NOT NULL), [])",
    "CREATE OR REPLACE MACRO po_collect_set(x) AS coalesce(list_distinct(list(x)), [])",
    "CREATE OR REPLACE MACRO po_slice(l, s, n) AS list_slice(l, s, s + n - 1)",
    "CREATE OR REPLACE MACRO po_url_decode(s) AS url_decode(replace(s, '+', ' '))",
    # Spark's substring_index for a positive count: everything before the n-th delimiter (all of s with fewer)
    "CREATE OR REPLACE MACRO po_substring_index(s, d, n) AS array_to_string(list_slice(string_split(s, d), 1, n), d)",
    "CREATE OR REPLACE MACRO po_exists(l, f) AS list_bool_or(list_transform(l, f))",
    "CREATE OR REPLACE MACRO po_pmod(a, b) AS ((a % b) + b) % b",
)


def _translate(sql: str, scope: str) -> str:
    for where, pattern, repl in TRANSLATIONS:
        if where == scope:
            sql = pattern.sub(repl, sql)
    return sql


def rewrite(sql: str) -> str:
    """A file for DuckDB: the translations of every file (:data:`TRANSLATIONS` ``ALL``)."""
    return _replace_all(_translate(sql, ALL))


def _replace_all(sql: str) -> str:
    """Spark's ``regexp_replace(s, p, r)`` replaces every match; DuckDB's only the first without option 'g'."""
    at = 0
    while (at := sql.find("regexp_replace(", at)) >= 0:
        args, end = _args(sql, at + len("regexp_replace"))
        if len(args) == 3:
            call = "regexp_replace(" + ", ".join([*args, "'g'"]) + ")"
            sql = sql[:at] + call + sql[end:]
        at += len("regexp_replace(")
    return sql


# the storage SQL's structural rewrites (rewrite_storage): `a[i]` (0-based) -> `a[(i) + 1]`; a lambda's index
# `(x, k) ->` (0-based) -> `lambda x, k__1:` with k read as `(k__1 - 1)`; `named_struct('k', v)` ->
# `struct_pack("k" := v)`
_SUBSCRIPT = re.compile(r"(\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\[([^\[\]]+)\]")
_INDEX_LAMBDA = re.compile(r"\((\w+), (\w+)\) ->")


def _args(sql: str, open_at: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose '(' is at ``open_at``; and the index after ')'."""
    depth, quote, start, out = 0, False, open_at + 1, []
    i = open_at
    while i < len(sql):
        c = sql[i]
        if quote:
            quote = c != "'"
        elif c == "'":
            quote = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                out.append(sql[start:i].strip())
                return out, i + 1
        elif c == "," and depth == 1:
            out.append(sql[start:i].strip())
            start = i + 1
        i += 1
    raise ValueError("unbalanced parentheses")


def _struct_pack(sql: str) -> str:
    while (at := sql.find("named_struct(")) >= 0:
        args, end = _args(sql, at + len("named_struct"))
        pairs = [f'"{args[i].strip(chr(39))}" := {args[i + 1]}' for i in range(0, len(args), 2)]
        sql = sql[:at] + "struct_pack(" + ", ".join(pairs) + ")" + sql[end:]
    return sql


def rewrite_storage(sql: str) -> str:
    """A storage SQL file for DuckDB: the structural rewrites and :data:`TRANSLATIONS` ``STORAGE``, then
    :func:`rewrite`."""
    sql = _struct_pack(sql)
    for name_x, name_k in _INDEX_LAMBDA.findall(sql):  # Spark's index is 0-based, DuckDB's 1-based
        sql = sql.replace(f"({name_x}, {name_k}) ->", f"lambda {name_x}, {name_k}__1:")
        sql = re.sub(rf"(?<![\w.\"']){name_k}\b(?!__1)", f"({name_k}__1 - 1)", sql)
    sql = _SUBSCRIPT.sub(r"\1[(\2) + 1]", sql)
    return rewrite(_translate(sql, STORAGE))


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
    service_unit_table_view: bool = False,
    registered_brokers: tuple[str, ...] = (),
) -> Any:
    # no progress bar: DuckDB draws it on stdout for a query over 2 s, ahead of `bench audit --json`'s document
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.create_function("po_conv", _conv, ["VARCHAR", "INTEGER", "INTEGER"], "VARCHAR")
    con.create_function("po_crc32", _crc32, ["VARCHAR"], "BIGINT")
    for m in MACROS:
        con.execute(m)
    for t in schema.TABLES:
        if t.name in schema.ADDED_TABLES and not (snapshot_dir / "tables" / t.name).is_dir():
            cols = ", ".join(f"CAST(NULL AS {_DUCK_TYPES[c.type]}) AS {c.name}" for c in t.columns)
            con.execute(f"CREATE VIEW src_{t.name} AS SELECT {cols} WHERE false")  # predates the table: empty
            continue
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
        f"{str(service_unit_table_view).lower()} AS service_unit_table_view, "
        f"CAST([{', '.join(repr(b) for b in registered_brokers)}] AS VARCHAR[]) AS registered_brokers"
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


def register_scans(con: Any, scan_dirs: list[Path], params: AuditParams, manifest: dict[str, Any]) -> None:
    """The bookie scans' views as the Spark audit registers them (audit/etl.py ``register_scans``): every scan's
    table read as one, ``src_scan_bookies`` and ``scan_params`` from the same literal SQL, then ``stg_scan_*``."""
    from pulsar_ops.audit.bookie_scans import SCAN_TABLES, check_scraped_dirs, read_scans, with_gc_settings
    from pulsar_ops.audit.etl import scan_bookies_sql, scan_params_sql

    scans = check_scraped_dirs(read_scans(scan_dirs), manifest.get("bookie_dirs"))
    scans = with_gc_settings(scans, manifest.get("bookie_gc"), params.bookie.gc)
    for t in SCAN_TABLES:
        paths = ", ".join(f"'{s.tables[t.name]}'" for s in scans)
        con.execute(f"CREATE OR REPLACE VIEW src_scan_{t.name} AS SELECT * FROM read_parquet([{paths}])")
    con.execute(f"CREATE OR REPLACE TABLE src_scan_bookies AS {scan_bookies_sql(scans, params)}")
    finished = int(manifest["finished_at_ms"])
    started = manifest.get("started_at_ms")
    times = (started if isinstance(started, int) else finished, finished)
    con.execute(f"CREATE OR REPLACE TABLE scan_params AS {scan_params_sql(params, times)}")
    for f in staging_files():
        if f.name.startswith("stg_scan_"):
            con.execute(f"CREATE OR REPLACE VIEW {f.name} AS {rewrite_storage(f.text)}")


def run_storage(
    con: Any, top_n: int = 10, seconds: dict[str, float] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """The storage stage (after :func:`register_scans`) as the Spark audit runs it: the prefixed views of the
    capacity view's SQL each written once as a table (the storage detections read them), a ``.view.sql`` one
    created as a view (Spark registers it as SQL, never written; its rows counted untimed), the storage
    detections, then the other capacity-view files collected. Returns rows per detection and per capacity-view
    file; ``seconds`` (when given) gets each query's wall seconds by the name the Spark audit's step has
    (``storage NAME``; the storage detections together: ``storage``, as Spark runs them in one statement)."""
    rows: dict[str, int] = {}
    timed = seconds if seconds is not None else {}

    def clock(step: str, t0: float) -> None:
        timed[step] = timed.get(step, 0.0) + time.monotonic() - t0

    for f in storage_files():
        if f.shared:  # a shared view: materialised once, as Spark writes it to Parquet, or a view (.view.sql)
            t0 = time.monotonic()
            kind = "TABLE" if f.written else "VIEW"
            con.execute(f"CREATE OR REPLACE {kind} {f.name} AS {rewrite_storage(f.text)}")
            if f.written:  # a view runs in its readers, none of its own (as in Spark: no step, no row by query)
                clock(storage_step(f.name), t0)
            rows[f.name] = int(con.execute(f"SELECT count(*) FROM {f.name}").fetchone()[0])
    found: dict[str, int] = {}
    for f in detect_files():
        if f.name in STORAGE_DETECTIONS:
            t0 = time.monotonic()
            found[f.name] = len(con.execute(rewrite_storage(f.text)).fetchall())
            clock(storage_step(), t0)
    for f in storage_files():
        if not f.shared:
            t0 = time.monotonic()
            rows[f.name] = len(con.execute(rewrite_storage(storage_sql(f, top_n))).fetchall())
            clock(storage_step(f.name), t0)
    return found, rows
