"""orphan-ledger: positive and control cases from docs/detections.md, one snapshot and one audit run."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit, by_ledger
from tests.spark.snapshot_builder import DAY, HOUR, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark

BIG = 2**31  # ids above 2^31 use the long layout and must stay bigint end to end
V1 = "prop/cluster-a/legacy"


@pytest.fixture(scope="module")
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.namespace("t/broken")
    b.namespace(V1)
    # live topic "a b" (encoded a+b) with ledgers 10 (closed) and 11 (open); a cursor with a cursor ledger 20
    b.topic("t/ns", "a b", ledgers=[(10, 100, 5000, NOW - 5 * DAY), (11, None, None, None)])
    cur = b.cursor("t/ns", "a b", "sub~1", md=(10, 99), cursors_ledger_id=20)
    b.bucket(cur, 21)
    b.cursor("t/ns", "a b", "__compaction", md=(10, 99), is_system=True, compacted_topic_ledger=22)
    b.schema("t/ns", "a b", [23, 24])
    # a partitioned topic's partition and an offloaded ledger whose BookKeeper copy is gone (id 30: no bk row)
    b.topic("t/ns", "p-partition-1", ledgers=[(30, 10, 10, NOW - 9 * DAY, True, True), (31, None, None, None)])
    # V1 namespace topic and a topic in a namespace whose managed-ledgers scope is incomplete
    b.topic(V1, "old", ledgers=[(40, None, None, None)])
    b.topic("t/broken", "x", ledgers=[(50, None, None, None)])
    b.scope("/managed-ledgers/t/broken", complete=False, error="bad znode")
    # long-layout ids: one referenced (sets the watermark above 2^31), one orphan below it
    b.topic("t/ns", "big", ledgers=[(BIG + 100, None, None, None)])
    for lid, owner in [
        (10, "t/ns/persistent/a+b"),
        (11, "t/ns/persistent/a+b"),
        (31, "t/ns/persistent/p-partition-1"),
        (40, f"{V1}/persistent/old"),
        (50, "t/broken/persistent/x"),
        (BIG + 100, "t/ns/persistent/big"),
    ]:
        b.bk_ledger(lid, owner=owner)
    b.bk_ledger(20, kind="cursor", owner="t/ns/persistent/a+b")
    b.bk_ledger(21, kind="bucket", owner="t/ns/persistent/a+b")
    b.bk_ledger(22, kind="compacted", owner="persistent://t/ns/a b")
    b.bk_ledger(23, kind="schema", owner="t/ns/a+b")
    b.bk_ledger(24, kind="schema", owner="t/ns/a+b")
    # --- orphans ---
    b.bk_ledger(1, owner="t/ns/persistent/a+b", length=7777)  # trim leftover of a live topic
    b.bk_ledger(2, owner="t/ns/persistent/gone%7E+x")  # data of a deleted topic, encoded name
    b.bk_ledger(3, kind="cursor", owner="t/ns/persistent/a+b")  # stale cursor ledger
    b.bk_ledger(4, kind="schema", owner="t/ns/a+b")  # schema ledger absent from the locator
    b.bk_ledger(5, kind="compacted", owner="persistent://t/ns/a b")  # superseded compacted ledger
    b.bk_ledger(6, kind="bucket", owner="t/ns/persistent/a+b")  # delayed-delivery bucket snapshot
    b.bk_ledger(7, kind="unowned", ctime_ms=NOW - 90 * DAY)  # not Pulsar's: info, never plannable
    b.bk_ledger(8, kind="pulsar-unknown")  # unknown Pulsar component: never plannable
    b.bk_ledger(9, owner="t/ns/persistent/a+b", ctime_ms=NOW - HOUR)  # young
    b.bk_ledger(BIG + 500, owner="t/ns/persistent/a+b")  # above the watermark
    b.bk_ledger(BIG + 1, owner="t/ns/persistent/a+b")  # long layout, below the watermark
    b.bk_ledger(12, owner=f"{V1}/persistent/old")  # V1 owner
    b.bk_ledger(13, owner="t/broken/persistent/x")  # owner namespace scope incomplete
    b.bk_ledger(14, owner="t/ns/persistent/p-partition-1")  # partition owner
    b.bk_ledger(15, kind="schema", owner="t/ns/gone+schema")  # schema of a deleted topic
    return audit(spark, b, tmp_path_factory.mktemp("orphan"))


@pytest.fixture(scope="module")
def orphans(result: AuditResult) -> dict[int, Any]:
    return by_ledger(result, "orphan-ledger")


def test_referenced_ledgers_are_never_orphans(orphans: dict[int, Any]) -> None:
    referenced = {10, 11, 20, 21, 22, 23, 24, 31, 40, 50, BIG + 100}
    assert referenced.isdisjoint(orphans)
    assert set(orphans) == {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, BIG + 1, BIG + 500}


def test_trim_leftover_of_live_topic_is_plannable(orphans: dict[int, Any]) -> None:
    f = orphans[1]
    assert (f.severity, f.plannable, f.bytes) == ("warning", True, 7777)
    assert f.topic == "persistent://t/ns/a b"
    assert f.namespace == "t/ns"
    assert f.path == "/ledgers/00/0000/L0001"
    ev = f.evidence
    assert ev["kind"] == "data" and ev["owner"] == "t/ns/persistent/a+b" and ev["owner_exists"] is True
    assert ev["watermark"] == BIG + 100
    assert ev["age_ms"] == 10 * DAY and ev["blocked_scopes"] == []
    assert ev["bookies"] == ["b1:3181", "b2:3181"] and ev["state"] == "CLOSED" and ev["format_version"] == 3


def test_deleted_topic_name_is_decoded_not_reencoded(orphans: dict[int, Any]) -> None:
    f = orphans[2]
    assert f.topic == "persistent://t/ns/gone~ x"
    assert f.namespace == "t/ns"
    assert f.evidence["owner_exists"] is False
    assert f.plannable


@pytest.mark.parametrize(
    ("ledger_id", "kind", "owner_exists", "topic"),
    [
        (3, "cursor", True, "persistent://t/ns/a b"),
        (4, "schema", True, "persistent://t/ns/a b"),
        (5, "compacted", True, "persistent://t/ns/a b"),
        (6, "bucket", True, "persistent://t/ns/a b"),
        (14, "data", True, "persistent://t/ns/p-partition-1"),
        (15, "schema", False, "persistent://t/ns/gone schema"),
    ],
)
def test_kinds_and_owners(orphans: dict[int, Any], ledger_id: int, kind: str, owner_exists: bool, topic: str) -> None:
    f = orphans[ledger_id]
    assert f.evidence["kind"] == kind
    assert f.evidence["owner_exists"] is owner_exists
    assert f.topic == topic
    assert f.severity == "warning" and f.plannable


def test_unowned_is_info_and_never_plannable(orphans: dict[int, Any]) -> None:
    f = orphans[7]
    assert (f.severity, f.plannable) == ("info", False)
    assert f.evidence["kind"] == "unowned" and f.evidence["owner"] is None
    assert f.evidence["owner_exists"] is False
    assert "unowned" in f.reason
    assert f.topic is None and f.namespace is None


def test_pulsar_unknown_is_warning_never_plannable(orphans: dict[int, Any]) -> None:
    f = orphans[8]
    assert (f.severity, f.plannable, f.evidence["kind"]) == ("warning", False, "pulsar-unknown")


def test_young_orphan_is_not_plannable(orphans: dict[int, Any]) -> None:
    f = orphans[9]
    assert not f.plannable
    assert "min-age" in f.reason
    assert f.evidence["age_ms"] == HOUR


def test_orphan_above_watermark_is_not_plannable(orphans: dict[int, Any]) -> None:
    f = orphans[BIG + 500]
    assert not f.plannable and "watermark" in f.reason
    assert f.path == "/ledgers/000/0000/0021/4748/L4148"


def test_long_ids_below_watermark_are_plannable(orphans: dict[int, Any]) -> None:
    f = orphans[BIG + 1]
    assert f.plannable and f.ledger_id == BIG + 1


def test_v1_owner_namespace(orphans: dict[int, Any]) -> None:
    f = orphans[12]
    assert f.namespace == V1
    assert f.topic == f"persistent://{V1}/old"
    assert f.plannable


def test_incomplete_owner_scope_blocks_planning(orphans: dict[int, Any]) -> None:
    f = orphans[13]
    assert not f.plannable
    assert f.reason == "incomplete scope(s): /managed-ledgers/t/broken"
    assert f.evidence["blocked_scopes"] == ["/managed-ledgers/t/broken"]
    # the incomplete scope of another namespace blocks nothing else
    assert orphans[1].evidence["blocked_scopes"] == []


def reason_order_case(b: SnapshotBuilder) -> None:
    """An unowned young orphan (1), a young one (2) and an old one (3) of t/ns/a, whose ledger 100 is live. The
    snapshot's /ledgers walk must be incomplete: it is audited with test_dangling_ledger's incomplete-listing case
    (tests/spark/conftest.py), which adds that scope."""
    if not any(r["namespace"] == "t/ns" for r in b.rows.get("namespaces", [])):
        b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(100, None, None, None)])
    b.bk_ledger(100, owner="t/ns/persistent/a")
    b.bk_ledger(1, kind="unowned", ctime_ms=NOW - HOUR)
    b.bk_ledger(2, owner="t/ns/persistent/a", ctime_ms=NOW - HOUR)
    b.bk_ledger(3, owner="t/ns/persistent/a")


def test_reason_order_kind_before_age(ledgers_listing_incomplete: AuditResult) -> None:
    """An unowned AND young orphan reports the kind (rule 1 before rule 2); a young orphan of an
    incomplete /ledgers reports its age first; every orphan is blocked by an incomplete /ledgers."""
    orphans = by_ledger(ledgers_listing_incomplete, "orphan-ledger")
    assert sorted(orphans) == [1, 2, 3]
    assert "unowned" in orphans[1].reason
    assert "min-age" in orphans[2].reason
    assert not orphans[3].plannable
    assert orphans[3].reason == "incomplete scope(s): /ledgers"
    assert orphans[3].evidence["blocked_scopes"] == ["/ledgers"]
