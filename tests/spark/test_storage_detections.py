"""The storage detections over hand-built bookie scans: unreclaimed-ledger-data, ledger-data-missing,
stale-entry-log (docs/detections.md), positive and negative cases, and the scopes that withhold a claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.audit.params import AuditParams, bookie_settings
from pulsar_ops.audit.runner import AuditResult, run_audit
from pulsar_ops.findings import Finding
from tests.spark.helpers import of
from tests.spark.scan_builder import ScanBuilder
from tests.spark.snapshot_builder import DAY, HOUR, NOW, SnapshotBuilder, ledger_znode, ml_name

pytestmark = pytest.mark.spark

B1, B2, B3 = "b1:3181", "b2:3181", "b3:3181"
GIB = 1 << 30
SCAN_AT = NOW + 30_000  # the scans ran after the scrape finished (NOW)


def closed(b: SnapshotBuilder, lid: int, ensembles: dict[int, list[str]], last: int, e: int, q: int, **kw: Any) -> None:
    members = list(dict.fromkeys(m for ms in ensembles.values() for m in ms))
    b.bk_ledger(
        lid,
        owner=ml_name("t/ns", "live"),
        last_entry_id=last,
        ensemble_size=e,
        write_quorum=q,
        ack_quorum=q,
        bookies=members,
        ensembles_json=json.dumps({str(k): v for k, v in ensembles.items()}),
        **kw,
    )


def snapshot() -> SnapshotBuilder:
    b = SnapshotBuilder()
    b.namespace("t/ns", retention_time_minutes=60, retention_size_mb=100)
    b.topic("t/ns", "live", ledgers=[(100, 10, 1000, NOW - 10 * DAY), (101, None, None, None)])
    b.topic("t/ns", "off", ledgers=[(105, 10, 1000, NOW - 10 * DAY, True, True), (109, None, None, None)])
    # 203 is referenced by a topic but its metadata is gone (a dangling ledger)
    b.topic("t/ns", "dangling", ledgers=[(203, 10, 1000, NOW - 10 * DAY), (110, None, None, None)])
    pair = {0: [B1, B2]}
    closed(b, 100, pair, 9, 2, 2)
    closed(b, 101, pair, -1, 2, 2, state="OPEN")
    closed(b, 102, pair, 9, 2, 2)  # b2 lost it: ledger-data-missing on b2
    closed(b, 103, {0: [B1, B3, B2]}, 0, 3, 2)  # one entry on positions 0 and 1: none on b2
    closed(b, 104, pair, 9, 2, 2, ctime_ms=NOW - 5_000)  # closed within a flushInterval of the scan
    closed(b, 105, pair, 9, 2, 2)  # offloaded, BookKeeper copy deleted
    closed(b, 106, pair, 9, 2, 2)  # b2 lists it in its index (no bytes): not missing
    closed(b, 107, {0: [B1, B3], 10: [B1, B2]}, 10, 2, 1)  # entry 10 on position 0 only: none on b2
    closed(b, 108, {0: [B1, B3], 10: [B1, B2]}, 11, 2, 1)  # entry 11 on position 1: b2 lost it
    # metadata without a ctime (v1/v2, or v3 with storeCtime off): the snapshot's ctime_ms is the znode's
    closed(b, 111, pair, 9, 2, 2, metadata_ctime_ms=None)  # znode 10 days old: b2 lost it
    recent = SCAN_AT - 5_000
    closed(b, 112, pair, 9, 2, 2, ctime_ms=recent, metadata_ctime_ms=None, znode_ctime_ms=recent)  # too new
    # 204's metadata znode exists but does not decode: never called absent
    b.znode(ledger_znode(204), kind="bk-ledger", decode_error="decode-failed")
    return b


def scans(root: Path, b1: dict[str, Any] | None = None, b2: dict[str, Any] | None = None) -> list[Path]:
    s1 = ScanBuilder(B1, started_at_ms=SCAN_AT, **(b1 or {}))
    # dir /data/bk: log 3 is 10 % live (200 is deleted, still in the local index), log 5 fully live
    s1.log("/data/bk", 3, mtime_ms=NOW - 10 * DAY, ledgers={200: 900, 100: 100})
    s1.log("/data/bk", 5, mtime_ms=NOW - 9 * DAY, ledgers={100: 100, 102: 900, 103: 10, 104: 10, 105: 10, 106: 10})
    s1.log("/data/bk", 6, mtime_ms=NOW - 9 * DAY, ledgers={107: 10, 108: 10, 203: 50, 204: 70})
    s1.log("/data/bk", 7, mtime_ms=NOW - 9 * DAY, ledgers={205: 2 * GIB})
    # the active log (no map, newest): never judged stale, its ledgers written after the scrape started
    s1.log("/data/bk", 9, mtime_ms=NOW + 10_000, ledgers={202: 40, 100: 1}, read_via="scan", reason="active")
    # dir /data/bk2 reuses id 3 (one entry logger per directory): 30 % live but younger than major interval
    s1.log("/data/bk2", 3, mtime_ms=NOW - 2 * HOUR, ledgers={201: 700, 100: 300})
    s1.log("/data/bk2", 4, mtime_ms=NOW - 3 * DAY, ledgers={201: 700, 100: 300})
    s1.index(200)
    s1.index(100)
    s1.index(111)  # b1 holds 111 and 112 (in its index): only b2 is judged
    s1.index(112)
    s2 = ScanBuilder(B2, started_at_ms=SCAN_AT, **(b2 or {}))
    s2.log("/data/bk", 1, mtime_ms=NOW - DAY, ledgers={100: 100, 107: 5})
    s2.index(100)
    s2.index(106)
    return [s1.write(root / "scan-b1"), s2.write(root / "scan-b2")]


def run(spark: Any, root: Path, b: SnapshotBuilder, scan_dirs: list[Path], **kw: Any) -> AuditResult:
    snap = b.write(root / "snap")
    return run_audit(snap, root / "out", AuditParams(**kw), spark=spark, bookie_scans=scan_dirs)


def keyed(result: AuditResult, detection: str) -> dict[Any, Finding]:
    out: dict[Any, Finding] = {}
    for f in of(result, detection):
        key = (f.path, f.ledger_id) if f.ledger_id is not None else f.path
        assert key not in out, f"duplicate {detection} finding {key}"
        out[key] = f
    return out


@pytest.fixture(scope="module")
def main(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    root = tmp_path_factory.mktemp("storage")
    return run(spark, root, snapshot(), scans(root))


def test_unreclaimed_ledger_data(main: AuditResult) -> None:
    got = keyed(main, "unreclaimed-ledger-data")
    # 202 was written after the scrape started, 204 is undecodable, the others exist
    assert sorted(got) == [(B1, 200), (B1, 201), (B1, 203), (B1, 205)]
    f200 = got[(B1, 200)]
    assert f200.bytes == 900 and f200.evidence["bookie"] == B1
    assert f200.evidence["in_local_index"] is True and f200.evidence["stage"] == "local-index"
    assert f200.evidence["oldest_log_mtime_ms"] == NOW - 10 * DAY
    assert [(x["ledger_dir"], x["entry_log_id"]) for x in f200.evidence["logs"]] == [("/data/bk", 3)]
    assert f200.severity == "warning"  # past gcWaitTime + the intervals, but small
    f201 = got[(B1, 201)]
    assert f201.bytes == 1400 and f201.evidence["in_local_index"] is False
    assert [(x["ledger_dir"], x["entry_log_id"]) for x in f201.evidence["logs"]] == [("/data/bk2", 3), ("/data/bk2", 4)]
    assert f201.evidence["oldest_log_mtime_ms"] == NOW - 3 * DAY
    f203 = got[(B1, 203)]
    assert f203.topic == "persistent://t/ns/dangling" and f203.evidence["dangling"] is True
    assert "recoverable" in f203.reason
    assert got[(B1, 205)].severity == "critical" and got[(B1, 205)].bytes == 2 * GIB
    assert all(not f.plannable for f in got.values())


def test_ledger_data_missing(main: AuditResult) -> None:
    got = keyed(main, "ledger-data-missing")
    # 103 and 107 stripe nothing onto b2, 104 and 112 are newer than the scan, 105 offloaded, 106 indexed, 101 open
    assert sorted(got) == [(B2, 102), (B2, 108), (B2, 111)]
    f = got[(B2, 102)]
    assert f.severity == "critical" and f.evidence["bookie"] == B2 and f.topic == "persistent://t/ns/live"
    assert f.evidence["ctime_source"] == "metadata"
    # no ctime in its metadata: judged by its znode's ctime, and the finding says so
    f111 = got[(B2, 111)]
    assert f111.evidence["ctime_source"] == "znode" and f111.evidence["ctime_ms"] == NOW - 10 * DAY
    assert got[(B2, 108)].evidence["segments"] == [{"first_entry_id": 10, "last_entry_id": 11, "positions": [1]}]


def test_stale_entry_log(main: AuditResult) -> None:
    got = keyed(main, "stale-entry-log")
    # log 7 holds only deleted ledger 205: GC should have deleted the file
    assert sorted(got) == [
        f"{B1}:/data/bk/current/3.log",
        f"{B1}:/data/bk/current/7.log",
        f"{B1}:/data/bk2/current/4.log",
    ]
    assert got[f"{B1}:/data/bk/current/7.log"].evidence["live_fraction"] == 0
    assert "deleted it" in got[f"{B1}:/data/bk/current/7.log"].reason
    minor = got[f"{B1}:/data/bk/current/3.log"]
    ev = minor.evidence
    assert (ev["bookie"], ev["ledger_dir"], ev["entry_log_id"]) == (B1, "/data/bk", 3)
    assert ev["kind"] == "minor" and ev["live_fraction"] == pytest.approx(0.1) and minor.bytes == 900
    assert ev["causes"] == ["deleted-ledgers-in-local-index"] and ev["deleted_in_local_index"] == [200]
    keeping = ev["keeping_alive"]
    assert [(k["ledger_id"], k["topic"], k["retention_time_minutes"]) for k in keeping] == [
        (100, "persistent://t/ns/live", 60)
    ]
    major = got[f"{B1}:/data/bk2/current/4.log"].evidence
    assert (major["ledger_dir"], major["entry_log_id"], major["kind"]) == ("/data/bk2", 4, "major")
    assert major["causes"] == ["gc-behind"]


def test_audit_records_each_bookie_scope(main: AuditResult) -> None:
    scopes = {s["bookie"]: s for s in main.audit["bookie_scans"]}
    assert set(scopes) == {B1, B2} and not scopes[B1]["partial"] and not scopes[B2]["partial"]
    assert not scopes[B1]["before_scrape"] and scopes[B1]["not_claimed"] == []


def test_partial_scans_make_no_absence_claim(spark: Any, tmp_path: Path) -> None:
    """b2's scan skipped a log: no ledger-data-missing from it; b1's index was not read: in_local_index unknown."""
    r = run(spark, tmp_path, snapshot(), scans(tmp_path, b1={"index_status": "unavailable"}, b2={"complete": False}))
    assert of(r, "ledger-data-missing") == []
    unreclaimed = keyed(r, "unreclaimed-ledger-data")
    assert sorted(unreclaimed) == [(B1, 200), (B1, 201), (B1, 203), (B1, 205)]
    assert all(f.evidence["in_local_index"] is None for f in unreclaimed.values())
    scopes = {s["bookie"]: s for s in r.audit["bookie_scans"]}
    assert scopes[B2]["partial"] and "ledger-data-missing" in scopes[B2]["not_claimed"]
    assert scopes[B1]["partial"] and scopes[B1]["index_status"] == "unavailable"


def test_configured_directory_left_out_makes_the_scope_partial(spark: Any, tmp_path: Path) -> None:
    """b2's bookkeeper.conf names /data/bk and /data/bk3; its scan read /data/bk only: ledger 102 may live in
    /data/bk3, so no ledger-data-missing from b2; b1's configuration is fully scanned: its claims stand."""
    left_out = {
        "source": "/pulsar/conf/bookkeeper.conf",
        "ledger_dirs": ["/data/bk", "/data/bk3"],
        "index_dirs": ["/data/bk", "/data/bk3"],
        "index_dirs_default": True,
        "bookie_id_from": "advertisedAddress",
        "not_scanned": {"ledger_dirs": ["/data/bk3"], "index_dirs": ["/data/bk3"]},
    }
    covered = {**left_out, "not_scanned": {"ledger_dirs": [], "index_dirs": []}}
    r = run(spark, tmp_path, snapshot(), scans(tmp_path, b1={"bookie_config": covered}, b2={"bookie_config": left_out}))
    assert of(r, "ledger-data-missing") == []
    assert sorted(keyed(r, "unreclaimed-ledger-data")) == [(B1, 200), (B1, 201), (B1, 203), (B1, 205)]
    scopes = {s["bookie"]: s for s in r.audit["bookie_scans"]}
    assert scopes[B2]["partial"] and scopes[B2]["dirs_not_scanned"] == ["/data/bk3", "/data/bk3 (index)"]
    assert "not scanned: /data/bk3" in scopes[B2]["partial_reasons"][0]
    assert "ledger-data-missing" in scopes[B2]["not_claimed"]
    assert scopes[B1]["config_checked"] and not scopes[B1]["partial"]


def test_incomplete_ledgers_scope_claims_nothing_deleted(spark: Any, tmp_path: Path) -> None:
    b = snapshot()
    b.scope("/ledgers", complete=False, error="connection loss")
    r = run(spark, tmp_path, b, scans(tmp_path))
    assert of(r, "unreclaimed-ledger-data") == [] and of(r, "stale-entry-log") == []
    assert sorted(keyed(r, "ledger-data-missing")) == [
        (B2, 102),
        (B2, 108),
        (B2, 111),
    ]  # a claim about present metadata


def test_scan_before_the_scrape_claims_no_unreclaimed_or_missing_data(spark: Any, tmp_path: Path) -> None:
    """A scan that ran before the scrape: a ledger deleted between the two is legitimately still on disk.
    Its ledgers are also all newer than that scan (ctime after scan start - flushInterval) or not."""
    dirs = scans(tmp_path)
    for d in dirs:
        m = json.loads((d / "manifest.json").read_text())
        m["started_at_ms"] = NOW - HOUR
        (d / "manifest.json").write_text(json.dumps(m))
    r = run(spark, tmp_path, snapshot(), dirs)
    assert of(r, "unreclaimed-ledger-data") == []
    # named, with what it withheld (the reports say it and the order to use: report/model.py)
    scopes = {s["bookie"]: s for s in r.audit["bookie_scans"]}
    assert scopes[B1]["before_scrape"] and not scopes[B1]["partial"]
    assert scopes[B1]["not_claimed"] == ["ledger-data-missing", "unreclaimed-ledger-data"]
    # nor any ledger-data-missing: a ledger closed or re-replicated onto the bookie after the scan is not on it
    assert of(r, "ledger-data-missing") == []


def test_bookie_config_disables_compaction(spark: Any, tmp_path: Path) -> None:
    """majorCompactionInterval=0 (and the thresholds as Pulsar ships them): the major log is stale with the cause
    named; the minor one is judged against minorCompactionInterval still."""
    settings = bookie_settings({"majorCompactionInterval": "0", "gcWaitTime": "900000", "unrelatedKey": "x"})
    r = run(spark, tmp_path, snapshot(), scans(tmp_path), bookie=settings)
    got = keyed(r, "stale-entry-log")
    # /data/bk2 log 3 (2 h old, 30 % live) is now stale too: major compaction is off, so only gcWaitTime counts
    assert sorted(got) == [
        f"{B1}:/data/bk/current/3.log",
        f"{B1}:/data/bk/current/7.log",
        f"{B1}:/data/bk2/current/3.log",
        f"{B1}:/data/bk2/current/4.log",
    ]
    assert got[f"{B1}:/data/bk2/current/3.log"].evidence["causes"] == ["compaction-disabled"]


def test_each_bookie_is_judged_on_its_own_gc_settings(spark: Any, tmp_path: Path) -> None:
    """The same 30 %-live, 3-day-old log on two bookies: b1's bookkeeper.conf (read by its scan) waits 2 days
    before GC (gcWaitTime) and compacts every 4 (minor) and 5 (major) days, so it is not due; b2's scraped
    server_config disables major compaction, so it is stale with that cause. The audit's own settings judge
    neither (model/gc_settings.py, as the plan resolves them)."""
    conf = {
        "source": "/pulsar/conf/bookkeeper.conf",
        "not_scanned": {"ledger_dirs": [], "index_dirs": []},
        # valid: BookKeeper requires each compaction interval >= gcWaitTime (model/gc_config.py)
        "gc": {
            "gcWaitTime": str(2 * DAY),
            "minorCompactionInterval": str(4 * DAY // 1000),
            "majorCompactionInterval": str(5 * DAY // 1000),
        },
    }
    dirs = []
    for bid, extra in ((B1, {"bookie_config": conf}), (B2, {})):
        s = ScanBuilder(bid, started_at_ms=SCAN_AT, **extra)
        s.log("/data/bk", 4, mtime_ms=NOW - 3 * DAY, ledgers={201: 700, 100: 300})
        s.index(100)
        dirs.append(s.write(tmp_path / f"scan-{bid.split(':')[0]}"))
    snap = snapshot().write(tmp_path / "snap")
    m = json.loads((snap / "manifest.json").read_text())
    m["bookie_gc"] = {B2: {"majorCompactionInterval": "0"}}
    (snap / "manifest.json").write_text(json.dumps(m))
    r = run_audit(snap, tmp_path / "out", AuditParams(), spark=spark, bookie_scans=dirs)
    got = keyed(r, "stale-entry-log")
    assert sorted(got) == [f"{B2}:/data/bk/current/4.log"]
    ev = got[f"{B2}:/data/bk/current/4.log"].evidence
    assert ev["causes"] == ["compaction-disabled"] and ev["gc_settings_source"] == "server_config (scraped)"
    sources = {s["bookie"]: s["gc_settings"]["source"] for s in r.audit["bookie_scans"]}
    assert sources[B1].startswith("bookkeeper.conf read by scan-bookie") and sources[B2] == "server_config (scraped)"
    # unreclaimed-ledger-data's severity too: deleted ledger 201's 3-day-old bytes are within b1's gcWaitTime +
    # minor interval (info), past b2's (warning)
    unreclaimed = keyed(r, "unreclaimed-ledger-data")
    assert {k: f.severity for k, f in unreclaimed.items()} == {(B1, 201): "info", (B2, 201): "warning"}
    assert unreclaimed[(B1, 201)].evidence["gc_wait_time_ms"] == 2 * DAY
    assert unreclaimed[(B2, 201)].evidence["gc_settings_source"] == "server_config (scraped)"
    # with the audit's settings alone (no scraped or scanned configuration) both logs are stale
    for d in dirs:
        dm = json.loads((d / "manifest.json").read_text())
        dm["bookie_config"] = None
        (d / "manifest.json").write_text(json.dumps(dm))
    del m["bookie_gc"]
    (snap / "manifest.json").write_text(json.dumps(m))
    r = run_audit(snap, tmp_path / "out2", AuditParams(), spark=spark, bookie_scans=dirs)
    assert sorted(keyed(r, "stale-entry-log")) == [f"{B1}:/data/bk/current/4.log", f"{B2}:/data/bk/current/4.log"]
    assert {k: f.severity for k, f in keyed(r, "unreclaimed-ledger-data").items()} == {
        (B1, 201): "warning",
        (B2, 201): "warning",
    }
