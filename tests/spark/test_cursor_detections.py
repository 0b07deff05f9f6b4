"""ack-holes and inactive-subscription over one snapshot: known and unknown ranges, window arithmetic,
backlog over the ledger list, and the system cursor / system topic controls."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import DAY, HOUR, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark

T = "persistent://t/a/topic"


def ledgers(b: SnapshotBuilder, ns: str, local: str, base: int) -> None:
    owner = f"{ns}/persistent/{local}"
    b.bk_ledger(base + 3, owner=owner, last_entry_id=49, length=500, ctime_ms=NOW - DAY)
    b.topic(
        ns,
        local,
        ledgers=[
            (base, 100, 1000, NOW - 5 * DAY),
            (base + 1, 100, 2000, NOW - 4 * DAY),
            (base + 2, 100, 3000, NOW - 3 * DAY),
            (base + 3, None, None, None),
        ],
    )


@pytest.fixture(scope="module")
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    b = SnapshotBuilder()
    b.namespace("t/a")
    b.namespace("pulsar/system")
    ledgers(b, "t/a", "topic", 10)
    recent = {"last_active_ms": NOW - HOUR}
    old = {"last_active_ms": NOW - 10 * DAY}
    b.cursor("t/a", "topic", "holes", md=(10, 49), ranges=[(10, 50, 10, 60), (11, 10, 11, 20)], **recent)
    b.cursor("t/a", "topic", "nearcap", md=(12, 0), range_count=800, **recent)
    b.cursor("t/a", "topic", "unknown", md=(11, 5), cursors_ledger_id=99, **recent)
    b.cursor("t/a", "topic", "unknown-at-tail", md=(13, 3), cursors_ledger_id=98, **recent)
    b.cursor("t/a", "topic", "no-holes", md=(13, 10), **recent)
    b.cursor("t/a", "topic", "old", md=(11, 49), **old)
    b.cursor("t/a", "topic", "old-znode", md=(13, 49), mtime_ms=NOW - 10 * DAY)
    b.cursor("t/a", "topic", "quiet-znode", md=(13, 49), mtime_ms=NOW - HOUR)
    b.cursor("t/a", "topic", "pulsar.dedup", md=(10, 0), is_system=True, ranges=[(10, 1, 10, 2)], **old)
    ledgers(b, "t/a", "__change_events", 20)
    b.cursor("t/a", "__change_events", "reader", md=(20, 0), ranges=[(20, 1, 20, 2)], **old)
    ledgers(b, "pulsar/system", "__transaction_log_1", 30)
    b.cursor("pulsar/system", "__transaction_log_1", "s", md=(30, 0), ranges=[(30, 1, 30, 2)], **old)
    ledgers(b, "t/a", "x-sub__transaction_pending_ack", 40)
    b.cursor("t/a", "x-sub__transaction_pending_ack", "s", md=(40, 0), **old)
    for ll in (10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42):
        b.bk_ledger(ll, owner="x")
    b.cursor("t/a", "topic", "cursor-ledger-only", md=(10, 0), cursors_ledger_id=97, **recent)
    b.bk_ledger(97, kind="cursor", owner="t/a/persistent/topic")
    b.bk_ledger(98, kind="cursor", owner="t/a/persistent/topic")
    b.bk_ledger(99, kind="cursor", owner="t/a/persistent/topic")
    return audit(spark, b, tmp_path_factory.mktemp("cursors"))


def subs(result: AuditResult, detection: str) -> dict[str, Any]:
    return {f.subscription: f for f in of(result, detection)}


def test_ack_holes_exact_set(result: AuditResult) -> None:
    found = subs(result, "ack-holes")
    assert set(found) == {"holes", "nearcap"}  # ranges in a cursor ledger are unknown: coverage, not findings
    assert all(f.topic == T for f in found.values())


def test_known_ranges_window_arithmetic(result: AuditResult) -> None:
    f = subs(result, "ack-holes")["holes"]
    ev = f.evidence
    assert (f.severity, f.plannable) == ("info", False)
    assert ev["range_count"] == 2
    assert ev["first_hole"] == "10:50"
    assert ev["first_hole_age_ms"] == 5 * DAY
    # 10:50, 10:61..10:99 and 11:0..11:10 are unacknowledged: 1 + 39 + 11
    assert ev["unacked_in_window"] == 51
    assert ev["pinned_bytes"] == 3000 and f.bytes == 3000
    assert ev["near_cap"] is False and ev["cap_metadata_store"] == 1000
    assert f.path == "/managed-ledgers/t/a/persistent/topic/holes"


def test_near_cap_is_a_warning(result: AuditResult) -> None:
    f = subs(result, "ack-holes")["nearcap"]
    assert f.severity == "warning" and f.evidence["near_cap"] is True and f.evidence["range_count"] == 800


def test_ranges_in_cursor_ledgers_are_one_coverage_line_per_namespace(result: AuditResult) -> None:
    cov = result.audit["coverage"]["ack-ranges-in-cursor-ledgers"]
    # unknown (11:5): 94 + 100 + 50 entries, 2000 + 3000 + 500 bytes; unknown-at-tail (13:3): 46, 500;
    # cursor-ledger-only (10:0): 99 + 100 + 100 + 50, 1000 + 2000 + 3000 + 500. System topics/cursors excluded.
    assert cov["by_namespace"] == [
        {"namespace": "t/a", "cursors": 3, "backlog_entries": 244 + 46 + 349, "backlog_bytes": 5500 + 500 + 6500}
    ]
    assert (cov["namespaces"], cov["cursors"], cov["backlog_bytes"]) == (1, 3, 12500)
    assert result.document()["audit"]["coverage"] == result.audit["coverage"]


def test_inactive_exact_set(result: AuditResult) -> None:
    assert set(subs(result, "inactive-subscription")) == {"old", "old-znode"}


def test_inactive_backlog(result: AuditResult) -> None:
    f = subs(result, "inactive-subscription")["old"]
    ev = f.evidence
    assert (f.severity, f.plannable) == ("warning", False)
    assert ev["last_active_ms"] == NOW - 10 * DAY and ev["inactive_ms"] == 10 * DAY
    assert ev["backlog_entries"] == 50 + 100 + 50  # rest of 11, all of 12, the open ledger's 50 (BookKeeper)
    assert ev["backlog_bytes"] == 2000 + 3000 + 500 and f.bytes == 5500


def test_inactive_falls_back_to_znode_mtime(result: AuditResult) -> None:
    f = subs(result, "inactive-subscription")["old-znode"]
    assert f.evidence["last_active_ms"] == NOW - 10 * DAY
    assert f.evidence["last_active_source"] == "znode-mtime"
    assert f.evidence["backlog_entries"] == 0
