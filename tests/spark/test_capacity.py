"""The capacity view (findings.json ``audit.storage``) over hand-built bookie scans: per bookie, the classes sum
to the scanned data bytes exactly, every ledger's bytes land in the class and owner the snapshot implies, and
the oldest logs name the live ledgers (and retention) that pin them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pulsar_ops.audit import etl
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import AuditResult, run_audit
from pulsar_ops.audit.sql_files import detect_files, sql_root, storage_files
from pulsar_ops.audit.stage_metrics import storage_step
from pulsar_ops.audit.storage_view import CLASSES
from pulsar_ops.errors import AuditError
from pulsar_ops.findings import STORAGE_DETECTIONS
from tests.spark.scan_builder import ScanBuilder
from tests.spark.snapshot_builder import DAY, NOW
from tests.spark.test_storage_detections import B1, B2, B3, GIB, SCAN_AT, scans, snapshot

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    root = tmp_path_factory.mktemp("capacity")
    b = snapshot()
    b.add("bookies", bookie_id=B1, readonly=False, free_bytes=3 * GIB, total_bytes=8 * GIB)
    dirs = scans(root)
    s3 = ScanBuilder(B3, started_at_ms=SCAN_AT)
    s3.log("/data/bk", 1, mtime_ms=NOW - 2 * DAY, ledgers={100: 64})
    s3.log("/data/bk", 2, mtime_ms=NOW - DAY, ledgers={}, data_bytes=500, compacting=True)  # not counted
    s3.log("/data/bk", 4, mtime_ms=NOW - DAY, ledgers={}, data_bytes=0, read_via="skipped", reason="vanished")
    dirs.append(s3.write(root / "scan-b3"))
    snap = b.write(root / "snap")
    return run_audit(snap, root / "out", AuditParams(), spark=spark, bookie_scans=dirs, storage_top_n=2)


def by_bookie(result: AuditResult) -> dict[str, dict[str, Any]]:
    storage = result.audit["storage"]
    assert storage is not None
    return {b["bookie_id"]: b for b in storage["bookies"]}


def scanned_data_bytes(scan_dir: Path) -> int:
    logs = pq.read_table(scan_dir / "entry_logs.parquet").to_pylist()
    return sum(r["data_bytes"] for r in logs if not r["compacting"])


def test_classes_sum_to_the_scanned_data_bytes(result: AuditResult, tmp_path_factory: pytest.TempPathFactory) -> None:
    got = by_bookie(result)
    assert set(got) == {B1, B2, B3}
    root = result.out_dir.parent
    for bid, name in ((B1, "scan-b1"), (B2, "scan-b2"), (B3, "scan-b3")):
        b = got[bid]
        assert b["data_bytes"] == scanned_data_bytes(root / name)
        assert sum(b[f"{c}_bytes"] for c in CLASSES) == b["data_bytes"], bid
    assert got[B3]["data_bytes"] == 64 and got[B3]["compacting_logs"] == 1 and got[B3]["skipped_logs"] == 1


def test_each_ledger_lands_in_its_class(result: AuditResult) -> None:
    b1 = by_bookie(result)[B1]
    # live: 100 (topic live, 801 bytes over five logs) and 105 (topic off, offloaded but BookKeeper still has it)
    assert b1["live_bytes"] == 801 + 10
    # orphan: metadata present naming t/ns/live, no reference: 102, 103, 104, 106, 107, 108
    assert b1["orphan_bytes"] == 900 + 10 * 5
    # unreclaimed: 200, 203 (dangling), 205, 201 (metadata gone, bytes older than the scrape)
    assert b1["unreclaimed_bytes"] == 900 + 50 + 2 * GIB + 1400
    # unattributed: 204 (its znode does not decode), 202 (only in a log written after the scrape started)
    assert b1["unattributed_bytes"] == 70 + 40
    assert (b1["free_bytes"], b1["total_bytes"]) == (3 * GIB, 8 * GIB)
    assert by_bookie(result)[B2]["free_bytes"] is None  # unknown, not zero
    b2 = by_bookie(result)[B2]
    assert (b2["live_bytes"], b2["orphan_bytes"]) == (100, 5)


def test_live_bytes_attributed_by_tenant_namespace_topic(result: AuditResult) -> None:
    storage = result.audit["storage"]
    assert storage["top_n"] == 2
    top = by_bookie(result)[B1]["top"]
    assert top["live"]["topic"]["rows"] == [
        {"name": "persistent://t/ns/live", "bytes": 801, "ledgers": 1},
        {"name": "persistent://t/ns/off", "bytes": 10, "ledgers": 1},
    ]
    assert top["live"]["namespace"]["rows"] == [{"name": "t/ns", "bytes": 811, "ledgers": 2}]
    assert top["live"]["tenant"]["rows"] == [{"name": "t", "bytes": 811, "ledgers": 2}]
    # orphans are attributed to the topic their custom metadata names
    assert top["orphan"]["topic"]["rows"] == [{"name": "persistent://t/ns/live", "bytes": 950, "ledgers": 6}]
    # every live byte is attributed to some topic
    for b in by_bookie(result).values():
        assert sum(r["bytes"] for r in b["top"]["live"]["topic"]["rows"]) == b["live_bytes"]


def test_oldest_logs_name_what_pins_them(result: AuditResult) -> None:
    oldest = by_bookie(result)[B1]["oldest_logs"]
    assert [o["log_id"] for o in oldest] == [3, 5]  # top 2: log 3 (10 days), then the 9-day logs by id
    first = oldest[0]
    assert (first["data_bytes"], first["live_bytes"], first["unreclaimed_bytes"]) == (1000, 100, 900)
    assert first["live_fraction"] == 0.1
    assert first["pinned_by"] == [
        {
            "ledger_id": 100,
            "bytes": 100,
            "kind": "data",
            "topic": "persistent://t/ns/live",
            "namespace": "t/ns",
            "ns_retention_minutes": 60,
            "ns_retention_mb": 100,
            "topic_retention_minutes": None,
            "topic_retention_mb": None,
        }
    ]
    assert result.audit["storage"]["skew"]["bookies"] == 3


def test_no_storage_without_scans(spark: Any, tmp_path: Path) -> None:
    """A metadata-only audit of the storage cases' snapshot: no capacity view; every detection still runs (the
    storage ones analysed over the shared storage views, registered as empty relations: etl.storage_views) and the
    storage ones find nothing, while the others find what the snapshot holds."""
    snap = snapshot().write(tmp_path / "snap")
    r = run_audit(snap, tmp_path / "out", AuditParams(), spark=spark)
    assert r.audit["storage"] is None and r.audit["bookie_scans"] == []
    assert r.audit["detections"] == [f.name for f in detect_files()]
    assert not [f for f in r.findings if f.detection in STORAGE_DETECTIONS]
    assert r.findings  # e.g. the orphan ledgers of the storage cases' metadata


def test_the_storage_stage_read_as_one_partition_changes_nothing(result: AuditResult, spark: Any) -> None:
    """Small scans of a snapshot read partitioned: the storage stage reads every input again as one partition
    (etl.repartition_inputs) and undoes its settings after; the findings row for row, the detections run and the
    capacity view are those of the audit read as one partition throughout (the fixture's). Fewer stages is a
    bench figure (`bench audit --scans`), not asserted here."""
    root = result.out_dir.parent
    dirs = [Path(s["path"]) for s in result.audit["bookie_scans"]]
    mixed = run_audit(root / "snap", root / "mixed", AuditParams(), spark=spark, bookie_scans=dirs, storage_top_n=2,
                      one_partition=False)  # fmt: skip
    assert mixed.audit["spark_conf"]["spark.sql.adaptive.enabled"] != "false"  # the snapshot's settings again
    assert [f.to_json() for f in mixed.findings] == [f.to_json() for f in result.findings]
    assert mixed.audit["storage"] == result.audit["storage"]
    assert mixed.audit["detections"] == result.audit["detections"]
    assert {"detections", "storage", "findings"} <= set(mixed.audit["stages"]["by_step"])
    # each storage statement's stages under its own step, though run from two driver threads (etl.storage_stage)
    for run in (result, mixed):
        by_step = run.audit["stages"]["by_step"]
        # both storage stages read one partition (small scans), where storage_ledgers (a .view.sql, registered as
        # SQL where the stage runs partitioned) is written like the other shared views: every file runs stages
        for f in storage_files():
            assert by_step[storage_step(f.name)]["stages"] > 0, f.name
        assert by_step[storage_step()]["stages"] > 0  # the storage detections'


def test_the_storage_stage_read_partitioned_reads_storage_ledgers_as_a_view(
    result: AuditResult, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fixture's scans read partitioned, as 600,000 topics' are (etl.STORAGE_ONE_PARTITION_MAX_ROWS 0):
    storage_ledgers (1_storage_ledgers.view.sql) is then registered as SQL over storage_groups, never written, and
    its readers (bookies, oldest_logs, log_ledgers and through it the storage detections) plan the view's join
    themselves; findings row for row and the capacity view are those of the fixture's audit, where the stage read
    one partition and wrote storage_ledgers."""
    monkeypatch.setattr(etl, "STORAGE_ONE_PARTITION_MAX_ROWS", 0)
    root = result.out_dir.parent
    dirs = [Path(s["path"]) for s in result.audit["bookie_scans"]]
    part = run_audit(root / "snap", root / "partitioned", AuditParams(), spark=spark, bookie_scans=dirs,
                     storage_top_n=2, one_partition=False)  # fmt: skip
    assert [f.to_json() for f in part.findings] == [f.to_json() for f in result.findings]
    assert part.audit["storage"] == result.audit["storage"]
    by_step = part.audit["stages"]["by_step"]
    assert storage_step("storage_ledgers") not in by_step  # registered, nothing run under its own step
    for f in storage_files():
        if f.name != "storage_ledgers":
            assert by_step[storage_step(f.name)]["stages"] > 0, f.name


def test_a_failing_storage_statement_is_its_audit_error(result: AuditResult, spark: Any, tmp_path: Path) -> None:
    """The fixture's audit with two broken storage files: oldest_logs.sql, a capacity query that starts beside the
    chain of shared views after storage_ledgers (etl.storage_stage) and fails first, and 5_stale_keepers.sql, the
    chain's last view: the error is stale_keepers' AuditError naming its file, the one a sequential run raises
    (the shared views before the capacity queries)."""
    root = tmp_path / "sql"
    shutil.copytree(sql_root(), root)
    for name in ("5_stale_keepers.sql", "oldest_logs.sql"):
        (root / "storage" / name).write_text("SELECT no_such_column FROM storage_ledgers")
    dirs = [Path(s["path"]) for s in result.audit["bookie_scans"]]
    with pytest.raises(AuditError) as raised:
        run_audit(result.out_dir.parent / "snap", tmp_path / "out", AuditParams(), spark=spark, bookie_scans=dirs,
                  sql_root=root, storage_top_n=2)  # fmt: skip
    assert raised.value.message.startswith(f"{root / 'storage' / '5_stale_keepers.sql'}: ")
    assert "no_such_column" in raised.value.message
    assert raised.value.hint == "fix 5_stale_keepers.sql; then re-run the audit"
