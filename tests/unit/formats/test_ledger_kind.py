"""One definition of a ledger's kind: the Python rule and the SQL rendered from it agree (run in DuckDB)."""

from __future__ import annotations

import functools

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.sql_files import detect_files, expand_macros
from pulsar_ops.formats.ledger_kind import ledger_kind, ledger_kind_sql

COMPONENTS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "managed-ledger",
            "schema",
            "compacted-ledger",
            "delayed-index-bucket",
            "Bucket-Snapshot",
            "DELAYED",
            "other",
            "",
        ]
    ),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_0123456789", max_size=20),
)


@functools.cache
def _shared_connection() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from([None, "pulsar", "Pulsar", "other"]), COMPONENTS, st.booleans()),
        min_size=1,
        max_size=20,
    )
)
def test_python_and_sql_agree(rows: list[tuple[str | None, str | None, bool]]) -> None:
    con = _shared_connection()  # a fresh table per example; a connection per example cost ~35 ms of its ~40
    con.execute("CREATE OR REPLACE TABLE b (i INTEGER, application VARCHAR, component VARCHAR, cursor_name VARCHAR)")
    con.executemany(
        "INSERT INTO b VALUES (?, ?, ?, ?)", [(i, a, c, "sub" if cur else None) for i, (a, c, cur) in enumerate(rows)]
    )
    got = dict(con.execute(f"SELECT i, {ledger_kind_sql('b')} FROM b").fetchall())
    for i, (a, c, cur) in enumerate(rows):
        assert got[i] == ledger_kind(a, c, cur), (a, c, cur)


def test_the_audit_sql_uses_the_shared_rule() -> None:
    orphan = next(f for f in detect_files() if f.name == "orphan-ledger")
    raw = orphan.path.read_text()
    assert "${ledger_kind:b}" in raw and "LIKE '%bucket%'" not in raw
    assert ledger_kind_sql("b") in orphan.text
    assert expand_macros("x ${ledger_kind:t} y") == f"x {ledger_kind_sql('t')} y"


def test_bucket_markers_fold_ascii_case_only_in_python_and_sql() -> None:
    # "any case" is ASCII case: Unicode folding would also take KELVIN SIGN (U+212A) to "k", and Spark's lower()
    # loads ICU to do it (formats/ascii_case.py); both sides leave it alone
    rows = [("pulsar", "Delayed-Index-BUCKET", False), ("pulsar", "BUC\u212aET", False), ("pulsar", "bucket", False)]
    con = duckdb.connect()
    con.execute("CREATE TABLE b (i INTEGER, application VARCHAR, component VARCHAR, cursor_name VARCHAR)")
    con.executemany("INSERT INTO b VALUES (?, ?, ?, NULL)", [(i, a, c) for i, (a, c, _) in enumerate(rows)])
    got = dict(con.execute(f"SELECT i, {ledger_kind_sql('b')} FROM b").fetchall())
    assert got == {0: "bucket", 1: "pulsar-unknown", 2: "bucket"}
    assert [ledger_kind(a, c, cur) for a, c, cur in rows] == ["bucket", "pulsar-unknown", "bucket"]
    assert "lower(" not in ledger_kind_sql("b")
