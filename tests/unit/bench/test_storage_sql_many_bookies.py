"""ledger-data-missing over more scanned bookies than one 64-bit word holds: its SQL judges a ledger's members by
bit masks, bookie n at bit (n % 62) of word (n DIV 62) (sql/detect/ledger_data_missing.sql). Run on DuckDB, the
same SQL file as the Spark audit (bench/duckdb_sql.py), so 64 hand-built scans cost a second, not a JVM audit."""

from __future__ import annotations

from pathlib import Path

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files, storage_files, storage_sql
from pulsar_ops.bench.duckdb_sql import connect, register_scans, rewrite_storage
from tests.spark.scan_builder import ScanBuilder
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder
from tests.spark.test_storage_detections import SCAN_AT, closed

# 64 bookies: ids sort as their numbers, so bookie k is n = k (words 0 and 1, bits 0, 61 and 0..1 of word 1)
BOOKIES = [f"bk-{k:02d}:3181" for k in range(64)]


def test_missing_members_across_mask_words(tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "live", ledgers=[(1, 10, 1000, NOW - 10 * DAY)])
    ends = [BOOKIES[0], BOOKIES[61], BOOKIES[62], BOOKIES[63]]  # bits 0 and 61 of word 0; bits 0 and 1 of word 1
    closed(b, 1, {0: ends}, 99, 4, 4)  # every entry on every member
    closed(b, 2, {0: [BOOKIES[61], BOOKIES[62]]}, 99, 2, 2)
    closed(b, 3, {0: [BOOKIES[5], BOOKIES[63]]}, 99, 2, 2)
    scans: dict[str, ScanBuilder] = {k: ScanBuilder(k, started_at_ms=SCAN_AT) for k in BOOKIES}
    # ledger 1: bytes on bookie 0 and 62, a local index row on 61: only 63 holds nothing
    scans[BOOKIES[0]].log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={1: 100})
    scans[BOOKIES[62]].log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={1: 100, 2: 100})
    scans[BOOKIES[61]].index(1)
    # ledger 2: 62 holds it (above), 61 does not; ledger 3: 63 holds it, 5 does not; bookie 4 holds 3 unasked
    scans[BOOKIES[63]].index(3)
    scans[BOOKIES[4]].index(3)
    dirs = [s.write(tmp_path / f"scan-{k}") for k, s in enumerate(scans.values())]
    snap = b.write(tmp_path / "snap")
    params = AuditParams(now_ms=NOW).resolved(NOW)
    con = connect(snap, params, admin_scraped=False)
    register_scans(con, dirs, params, {"finished_at_ms": NOW, "started_at_ms": NOW})
    con.execute("CREATE OR REPLACE TABLE storage_params AS SELECT CAST(10 AS INT) AS top_n")
    for f in storage_files():
        if f.path.stem != f.name:  # the shared views, written before the detections
            con.execute(f"CREATE OR REPLACE TABLE {f.name} AS {rewrite_storage(f.text)}")
    sql = next(f for f in detect_files() if f.name == "ledger-data-missing").text
    got = sorted((r[5], r[2]) for r in con.execute(rewrite_storage(sql)).fetchall())
    assert got == [(BOOKIES[5], 3), (BOOKIES[61], 2), (BOOKIES[63], 1)]


def test_bookie_numbers_name_the_bookie_back(tmp_path: Path) -> None:
    """The scans are numbered once (stg_scan_bookies' bookie_no, by bookie id's byte order, whatever the order the
    scans were passed in): storage_ledgers aggregates by the number and owners names each bookie back from it, so
    every bookie's bytes stay its own."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "live", ledgers=[(1, 10, 1000, NOW - 10 * DAY)])
    ids = ["b-9:3181", "b-10:3181", "B-2:3181"]  # passed unsorted; byte order: B-2, b-10, b-9
    held = {"b-9:3181": 100, "b-10:3181": 300, "B-2:3181": 200}
    closed(b, 1, {0: ids}, 99, 4, 4)
    dirs = []
    for k, bookie in enumerate(ids):
        s = ScanBuilder(bookie, started_at_ms=SCAN_AT)
        s.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={1: held[bookie]})
        dirs.append(s.write(tmp_path / f"scan-{k}"))
    snap = b.write(tmp_path / "snap")
    params = AuditParams(now_ms=NOW).resolved(NOW)
    con = connect(snap, params, admin_scraped=False)
    register_scans(con, dirs, params, {"finished_at_ms": NOW, "started_at_ms": NOW})
    numbers = con.execute("SELECT bookie_id, bookie_no FROM stg_scan_bookies ORDER BY bookie_no").fetchall()
    assert numbers == [("B-2:3181", 1), ("b-10:3181", 2), ("b-9:3181", 3)]
    con.execute("CREATE OR REPLACE TABLE storage_params AS SELECT CAST(10 AS INT) AS top_n")
    for f in storage_files():
        sql = rewrite_storage(storage_sql(f, 10))
        if f.path.stem != f.name:
            con.execute(f"CREATE OR REPLACE TABLE {f.name} AS {sql}")
        elif f.name == "owners":
            rows = con.execute(f"SELECT bookie_id, name, bytes FROM ({sql}) WHERE level = 'topic'").fetchall()
    assert sorted(rows) == sorted((k, "persistent://t/ns/live", v) for k, v in held.items())
    ledgers = con.execute("SELECT bookie_id, bookie_no, bytes FROM storage_ledgers ORDER BY bookie_no").fetchall()
    assert ledgers == [("B-2:3181", 1, 200), ("b-10:3181", 2, 300), ("b-9:3181", 3, 100)]
