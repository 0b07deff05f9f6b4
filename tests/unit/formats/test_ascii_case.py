"""ASCII case folding: Python and the SQL rendered from it agree on any text (run in DuckDB); no ICU lower()."""

from __future__ import annotations

import functools
import re

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.sql_files import SqlFile, detect_files, expand_macros, intermediate_files
from pulsar_ops.formats.ascii_case import ascii_lower, ascii_lower_sql


def test_only_a_to_z_fold() -> None:
    assert ascii_lower("0xABCDEF_0X12") == "0xabcdef_0x12"
    assert ascii_lower("\u212a\u0130\u00c4") == "\u212a\u0130\u00c4"  # KELVIN SIGN, dotted I, A umlaut: unchanged


@functools.cache
def _shared_connection() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=10))
def test_python_and_sql_agree(values: list[str]) -> None:
    con = _shared_connection()  # a fresh table per example; a connection per example cost ~35 ms of its ~40
    con.execute("CREATE OR REPLACE TABLE t (i INTEGER, s VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(values)))
    got = dict(con.execute(f"SELECT i, {ascii_lower_sql('t.s')} FROM t").fetchall())
    assert got == {i: ascii_lower(v) for i, v in enumerate(values)}


def test_the_macro_expands_a_column_or_an_aliased_column() -> None:
    assert expand_macros("${ascii_lower:b.bundle_range} = ${ascii_lower:r}") == (
        f"{ascii_lower_sql('b.bundle_range')} = {ascii_lower_sql('r')}"
    )


def test_no_audit_sql_folds_case_through_icu() -> None:
    # Spark 4's lower()/upper()/initcap() map case through ICU, whose first use in a JVM loads its Unicode data
    # (1.1-1.3 s of CPU in the demo's cold audit): the audit's SQL folds with ${ascii_lower:...} instead
    files: list[SqlFile] = [*intermediate_files(), *detect_files()]
    for f in files:
        assert not re.search(r"\b(lower|upper|lcase|ucase|initcap)\s*\(|\bILIKE\b", f.text, re.I), f.path.name
