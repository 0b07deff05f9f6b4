"""ledger-data-missing's age and scan order on DuckDB (the same SQL file the Spark audit runs, bench/duckdb_sql.py):
the age is the metadata's ctime, else the znode's (unknown: no claim), and no claim from a scan that started before
the scrape finished. Ledger rows shaped as the scrape
writes them for metadata written as upstream writes it (v1/v2, v3 with storeCtime off: no metadata ctime)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import rewrite_storage
from tests.spark.scan_builder import ScanBuilder
from tests.spark.snapshot_builder import DAY, HOUR, NOW, SnapshotBuilder
from tests.spark.test_storage_detections import SCAN_AT, closed
from tests.unit.bench.test_storage_sql_many_bookies import shared_views

B1, B2 = "b1:3181", "b2:3181"
PAIR = {0: [B1, B2]}


def missing(tmp_path: Path, b: SnapshotBuilder, lids: list[int], b2_started: int = SCAN_AT) -> dict[int, Any]:
    """ledger-data-missing on B2 for ``lids``: B1 holds every one of them, B2 none (both scans complete)."""
    s1 = ScanBuilder(B1, started_at_ms=SCAN_AT)
    s1.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers=dict.fromkeys(lids, 100))
    s2 = ScanBuilder(B2, started_at_ms=b2_started)
    s2.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={999: 10})
    con = shared_views(b, [s1.write(tmp_path / "s1"), s2.write(tmp_path / "s2")], tmp_path)
    sql = next(f for f in detect_files() if f.name == "ledger-data-missing").text
    cur = con.execute(rewrite_storage(sql))
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    return {r["ledger_id"]: json.loads(r["evidence"]) for r in rows if r["path"] == B2}


def test_age_is_the_metadata_ctime_else_the_znode_ctime(tmp_path: Path) -> None:
    """BookKeeper's LedgerMetadata.getCtime(): the metadata's ctime, else the metadata store's (LedgerMetadataSerDe
    parseVersion3Config / parseVersion2Config); a ctime unknown (0) makes no claim."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    old, fresh = NOW - 10 * DAY, SCAN_AT - 5_000  # fresh: within flushInterval (60 s) of the scan's start
    # v1/v2 or v3 with storeCtime off: no metadata ctime, the snapshot's ctime_ms is the znode's
    closed(b, 1, PAIR, 9, 2, 2, ctime_ms=old, metadata_ctime_ms=None, znode_ctime_ms=old)
    closed(b, 2, PAIR, 9, 2, 2, ctime_ms=fresh, metadata_ctime_ms=None, znode_ctime_ms=fresh)
    # storeCtime on: the metadata's stamp judges
    closed(b, 4, PAIR, 9, 2, 2, ctime_ms=old - 3, metadata_ctime_ms=old - 3, znode_ctime_ms=old)
    closed(b, 5, PAIR, 9, 2, 2, ctime_ms=fresh, metadata_ctime_ms=fresh, znode_ctime_ms=old)
    # no metadata ctime and the znode's unknown (0): the age is unknown, no claim
    closed(b, 6, PAIR, 9, 2, 2, ctime_ms=0, metadata_ctime_ms=None, znode_ctime_ms=0)
    got = missing(tmp_path, b, [1, 2, 4, 5, 6])
    assert sorted(got) == [1, 4]
    assert (got[1]["ctime_source"], got[1]["ctime_ms"]) == ("znode", old)
    assert (got[4]["ctime_source"], got[4]["ctime_ms"]) == ("metadata", old - 3)


def test_no_claim_from_a_scan_taken_before_the_scrape(tmp_path: Path) -> None:
    """B2 scanned an hour before the scrape finished (NOW): a ledger open then and closed before the scrape, or
    re-replicated onto B2 in between, has entries the scan could not see: no absence claim from it."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    closed(b, 1, PAIR, 9, 2, 2, ctime_ms=NOW - 10 * DAY, metadata_ctime_ms=None, znode_ctime_ms=NOW - 10 * DAY)
    assert missing(tmp_path / "early", b, [1], b2_started=NOW - HOUR) == {}
    assert missing(tmp_path / "at-end", b, [1], b2_started=NOW).keys() == {1}


def test_no_claim_for_a_ledger_closed_within_flush_interval_of_the_scan(tmp_path: Path) -> None:
    """Created ten days ago (on an idle topic a ledger waits empty until the next message), written and closed 5 s
    before the scan: its entries, and a bookie's local index row for it (LedgerMetadataIndex.set queues it until the
    flush), may still be in the write cache. The ledger list's timestamp is its close (Pulsar's ManagedLedgerImpl:
    LedgerInfo.timestamp = clock.millis() at close); a ledger closed long ago is judged."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    old = NOW - 10 * DAY
    b.topic("t/ns", "live", ledgers=[(1, 1, 100, SCAN_AT - 5_000), (2, 1, 100, old), (3, None, None, None)])
    for lid in (1, 2):
        closed(b, lid, PAIR, 0, 2, 2, ctime_ms=old, metadata_ctime_ms=None, znode_ctime_ms=old)
    assert missing(tmp_path, b, [1, 2]).keys() == {2}
