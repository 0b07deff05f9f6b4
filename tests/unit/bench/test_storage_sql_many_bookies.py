"""The storage SQL over more scanned bookies than one mask holds: byte_gaps (ledger-data-missing's candidates) judges
a ledger's members by bit masks per group of 8 bookies, bookie n at bit (n % 8) of group (n DIV 8), as storage_groups
holds the bookies' bytes (sql/storage/2_byte_gaps.sql, 1_storage_groups.sql), and owners sums each bookie's bytes
from its group's column. Run on DuckDB, the same SQL file as the Spark audit (bench/duckdb_sql.py), so 64 hand-built
scans cost a second, not a JVM audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files, storage_files, storage_sql
from pulsar_ops.bench.duckdb_sql import connect, register_scans, rewrite_storage
from tests.spark.scan_builder import ScanBuilder
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder
from tests.spark.test_storage_detections import SCAN_AT, closed

# 64 bookies: ids sort as their numbers, so bookie k is bookie_no k + 1 (groups of 8: 0..8)
BOOKIES = [f"bk-{k:02d}:3181" for k in range(64)]


def shared_views(b: SnapshotBuilder, scan_dirs: list[Path], tmp_path: Path) -> Any:
    """A DuckDB connection over the snapshot and the scans with the shared storage views written (as the storage
    stage writes them before the detections and the capacity queries; a ``.view.sql`` one as a view)."""
    snap = b.write(tmp_path / "snap")
    params = AuditParams(now_ms=NOW).resolved(NOW)
    con = connect(snap, params, admin_scraped=False)
    register_scans(con, scan_dirs, params, {"finished_at_ms": NOW, "started_at_ms": NOW})
    for f in storage_files():
        if f.shared:
            kind = "TABLE" if f.written else "VIEW"
            con.execute(f"CREATE OR REPLACE {kind} {f.name} AS {rewrite_storage(f.text)}")
    return con


def test_missing_members_across_mask_words(tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "live", ledgers=[(1, 10, 1000, NOW - 10 * DAY)])
    ends = [BOOKIES[0], BOOKIES[61], BOOKIES[62], BOOKIES[63]]  # groups 0, 7, 7 and 8 (bookie_no 1, 62, 63, 64)
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
    con = shared_views(b, dirs, tmp_path)
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
    for f in storage_files():
        sql = rewrite_storage(storage_sql(f, 10))
        if f.shared:
            con.execute(f"CREATE OR REPLACE {'TABLE' if f.written else 'VIEW'} {f.name} AS {sql}")
        elif f.name == "owners":
            rows = con.execute(f"SELECT bookie_id, name, bytes FROM ({sql}) WHERE level = 'topic'").fetchall()
    assert sorted(rows) == sorted((k, "persistent://t/ns/live", v) for k, v in held.items())
    ledgers = con.execute("SELECT bookie_id, bookie_no, bytes FROM storage_ledgers ORDER BY bookie_no").fetchall()
    assert ledgers == [("B-2:3181", 1, 200), ("b-10:3181", 2, 300), ("b-9:3181", 3, 100)]


def test_rows_naming_another_bookie_stay_that_bookies(tmp_path: Path) -> None:
    """A scan's (ledger, log) pairs are attributed by the bookie each row names, as the scan tables say: a row of
    one scan naming another scanned bookie is that bookie's, one naming no scanned bookie is left out (storage_ledgers
    joins the pairs with the scans by the bookie id the row names)."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "live", ledgers=[(1, 10, 1000, NOW - 10 * DAY), (2, 10, 1000, NOW - 10 * DAY)])
    ids = ["b-1:3181", "b-2:3181"]
    closed(b, 1, {0: ids}, 99, 2, 2)
    closed(b, 2, {0: ids}, 99, 2, 2)
    one, two = ScanBuilder(ids[0], started_at_ms=SCAN_AT), ScanBuilder(ids[1], started_at_ms=SCAN_AT)
    one.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={1: 100, 2: 20, 3: 5})
    two.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={1: 300})
    pairs = one.rows["entry_log_ledgers"]
    pairs[1]["bookie_id"] = ids[1]  # ledger 2's 20 bytes: bookie 2's
    pairs[2]["bookie_id"] = "b-7:3181"  # not scanned: left out
    dirs = [one.write(tmp_path / "scan-1"), two.write(tmp_path / "scan-2")]
    con = shared_views(b, dirs, tmp_path)
    got = con.execute("SELECT bookie_id, bookie_no, ledger_id, bytes, class FROM storage_ledgers").fetchall()
    assert sorted(got) == [
        ("b-1:3181", 1, 1, 100, "live"),
        ("b-2:3181", 2, 1, 300, "live"),
        ("b-2:3181", 2, 2, 20, "live"),
    ]


def test_unreclaimed_is_judged_per_bookie(tmp_path: Path) -> None:
    """A ledger without metadata is `unreclaimed` on a bookie whose oldest log holding it predates the scrape, and
    `unattributed` on one whose logs holding it are all newer (storage_ledgers pivots the pairs by bookie: each
    bookie's part of the class stays its own, as does a second group of 8 bookies)."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "live", ledgers=[(1, 10, 1000, NOW - 10 * DAY)])
    ids = [f"bk-{k:02d}:3181" for k in range(10)]  # numbered 1..10: two groups of 8
    dirs = []
    for k, bookie in enumerate(ids):
        s = ScanBuilder(bookie, started_at_ms=SCAN_AT)
        old = k % 2 == 0
        s.log("/data/bk", 1, mtime_ms=NOW + DAY, ledgers={7: 10 + k})  # newer than the scrape
        if old:
            s.log("/data/bk", 2, mtime_ms=NOW - DAY, ledgers={7: 100})
        dirs.append(s.write(tmp_path / f"scan-{k}"))
    con = shared_views(b, dirs, tmp_path)
    got = con.execute("SELECT bookie_id, bookie_no, bytes, class, metadata FROM storage_ledgers").fetchall()
    assert sorted(got) == [
        (bookie, k + 1, 10 + k + (100 if k % 2 == 0 else 0), "unreclaimed" if k % 2 == 0 else "unattributed", False)
        for k, bookie in enumerate(ids)
    ]


def test_storage_ledgers_is_storage_groups_per_bookie(tmp_path: Path) -> None:
    """storage_groups is written a row per (ledger, group of 8 bookies) and storage_ledgers, the view read as a row
    per (bookie, ledger), turns each back into a row per bookie whose bit is in `held`, with that bookie's slot of
    the bytes and the class decided per bookie only where the group row leaves it NULL: a ledger held by bookies
    in two groups, a live one and a dead one (unreclaimed on a bookie whose oldest log holding it predates the
    scrape, unattributed on the other)."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "live", ledgers=[(1, 10, 1000, NOW - 10 * DAY)])
    ids = [f"bk-{k:02d}:3181" for k in range(10)]  # numbered 1..10: 1..7 in group 0, 8..10 in group 1
    closed(b, 1, {0: [ids[3], ids[8]]}, 99, 2, 2)
    scans = {k: ScanBuilder(k, started_at_ms=SCAN_AT) for k in ids}
    scans[ids[3]].log("/data/bk", 1, mtime_ms=NOW + DAY, ledgers={1: 40, 7: 4})  # bookie 4: slot 4 of group 0
    scans[ids[8]].log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={1: 90, 7: 9})  # bookie 9: slot 1 of group 1
    scans[ids[8]].log("/data/bk", 2, mtime_ms=NOW + DAY, ledgers={1: 1})
    dirs = [s.write(tmp_path / f"scan-{k}") for k, s in enumerate(scans.values())]
    con = shared_views(b, dirs, tmp_path)
    groups = con.execute(
        "SELECT ledger_id, hi, held, old, b1, b4, class, metadata FROM storage_groups ORDER BY ledger_id, hi"
    ).fetchall()
    assert groups == [
        (1, 0, 16, 0, None, 40, "live", True),
        (1, 1, 2, 2, 91, None, "live", True),
        (7, 0, 16, 0, None, 4, None, False),
        (7, 1, 2, 2, 9, None, None, False),
    ]
    got = con.execute("SELECT bookie_id, bookie_no, ledger_id, bytes, class, topic FROM storage_ledgers").fetchall()
    topic = "persistent://t/ns/live"
    assert sorted(got) == [
        (ids[3], 4, 1, 40, "live", topic),
        (ids[3], 4, 7, 4, "unattributed", None),
        (ids[8], 9, 1, 91, "live", topic),
        (ids[8], 9, 7, 9, "unreclaimed", None),
    ]


def test_owners_and_gaps_across_groups_of_8(tmp_path: Path) -> None:
    """owners reads storage_groups (a row per ledger and group of 8 bookies, each bookie's bytes a column): each
    bookie's bytes and ledgers stay its own at every level, for bookies in two groups (bookie_no 7 and 8 are in groups
    0 and 1), live and orphan; byte_gaps names the member holding nothing in either group."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.namespace("u/ns")
    ids = [f"bk-{k:02d}:3181" for k in range(10)]  # bookie_no 1..10: groups 0 (1..7) and 1 (8..10)
    b.topic("t/ns", "a", ledgers=[(1, 10, 1000, NOW - 10 * DAY), (2, 10, 1000, NOW - 10 * DAY)])
    b.topic("u/ns", "b", ledgers=[(3, 10, 1000, NOW - 10 * DAY)])
    closed(b, 1, {0: [ids[6], ids[7], ids[8]]}, 99, 3, 3)
    closed(b, 2, {0: [ids[8], ids[9]]}, 99, 2, 2)  # nothing on bk-09 (bookie_no 10, group 1)
    closed(b, 3, {0: [ids[0], ids[9]]}, 99, 2, 2)
    closed(b, 4, {0: [ids[8]]}, 99, 1, 1)  # no reference: orphan, its owner the topic its metadata names
    held = {0: {3: 5}, 6: {1: 100}, 7: {1: 200}, 8: {1: 300, 2: 50, 4: 40}, 9: {3: 70}}
    dirs = []
    for k, bookie in enumerate(ids):
        s = ScanBuilder(bookie, started_at_ms=SCAN_AT)
        s.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers=held.get(k, {}))
        dirs.append(s.write(tmp_path / f"scan-{k}"))
    con = shared_views(b, dirs, tmp_path)
    owners = next(f for f in storage_files() if f.name == "owners")
    got = sorted(con.execute(rewrite_storage(storage_sql(owners, 10))).fetchall())
    a, bb, orphan = "persistent://t/ns/a", "persistent://u/ns/b", "persistent://t/ns/live"
    want = []
    for bookie, cls, tenant, ns, topic, nbytes, ledgers in [
        (ids[0], "live", "u", "u/ns", bb, 5, 1),
        (ids[6], "live", "t", "t/ns", a, 100, 1),
        (ids[7], "live", "t", "t/ns", a, 200, 1),
        (ids[8], "live", "t", "t/ns", a, 350, 2),
        (ids[8], "orphan", "t", "t/ns", orphan, 40, 1),
        (ids[9], "live", "u", "u/ns", bb, 70, 1),
    ]:
        for level, name in (("tenant", tenant), ("namespace", ns), ("topic", topic)):
            want.append((bookie, cls, level, name, nbytes, ledgers, 1, 1))
    assert got == sorted(want)
    gaps = sorted(con.execute("SELECT ledger_id, bookie_id FROM byte_gaps").fetchall())
    assert gaps == [(2, ids[9])]
