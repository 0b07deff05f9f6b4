"""dangling-ledger: every reference kind, the offloaded/sentinel controls, and an incomplete /ledgers."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit import etl
from pulsar_ops.audit.runner import AuditResult
from pulsar_ops.findings import EXIT_CRITICAL, EXIT_WARNINGS
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark

BIG = 2**31 + 7


def build(ledgers_complete: bool = True) -> SnapshotBuilder:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a b", ledgers=[(10, 100, 4096, NOW - 5 * DAY), (BIG, None, None, None)])
    cur = b.cursor("t/ns", "a b", "sub 1", md=(10, 1), cursors_ledger_id=20)
    b.bucket(cur, 21)
    b.cursor("t/ns", "a b", "__compaction", md=(10, 1), is_system=True, compacted_topic_ledger=22)
    b.cursor("t/ns", "a b", "idle", md=(10, 1), compacted_topic_ledger=-1)  # sentinel: never dangling
    b.schema("t/ns", "a b", [23])
    # a cursor whose own ledger is gone but whose compacted-topic ledger exists: only the first is dangling
    b.cursor("t/ns", "a b", "half", md=(10, 1), cursors_ledger_id=40, compacted_topic_ledger=41)
    b.bk_ledger(41, kind="compacted", owner="persistent://t/ns/a b")
    # offloaded with its BookKeeper copy deleted: expected absent
    b.topic("t/ns", "off", ledgers=[(30, 5, 50, NOW - 9 * DAY, True, True), (31, None, None, None)])
    b.bk_ledger(31, owner="t/ns/persistent/off")
    if not ledgers_complete:
        b.scope("/ledgers", complete=False, error="NoAuth")
    return b


# the candidate ids counted small and broadcast to each reference kind's read (etl.broadcastable), read as one
# partition and partitioned; and not counted small (a cluster with more than BROADCAST_MAX_ROWS of them): no hint,
# the semi-joins shuffle
@pytest.fixture(
    scope="module",
    params=[(True, True), (False, True), (False, False)],
    ids=["one-partition", "broadcast", "no-broadcast"],
)
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AuditResult:
    one_partition, small = request.param
    with pytest.MonkeyPatch.context() as mp:
        if not small:
            mp.setattr(etl, "BROADCAST_MAX_ROWS", -1)
        return audit(spark, build(), tmp_path_factory.mktemp("dangling"), one_partition=one_partition)


def test_one_finding_per_reference(result: AuditResult) -> None:
    got = {(f.ledger_id, f.evidence["ref"]) for f in of(result, "dangling-ledger")}
    assert got == {
        (10, "data"),
        (BIG, "data"),
        (20, "cursor"),
        (21, "bucket"),
        (22, "compacted"),
        (23, "schema"),
        (40, "cursor"),
    }


def test_data_reference(result: AuditResult) -> None:
    f = next(f for f in of(result, "dangling-ledger") if f.ledger_id == 10)
    assert (f.severity, f.plannable, f.bytes) == ("critical", False, 4096)
    assert f.topic == "persistent://t/ns/a b" and f.namespace == "t/ns"
    assert f.path == "/managed-ledgers/t/ns/persistent/a+b"
    assert f.subscription is None
    open_ledger = next(f for f in of(result, "dangling-ledger") if f.ledger_id == BIG)
    assert open_ledger.bytes == 0  # size unknown for the open ledger


def test_cursor_compacted_bucket_point_at_the_cursor_znode(result: AuditResult) -> None:
    fs = {f.evidence["ref"]: f for f in of(result, "dangling-ledger") if f.ledger_id != 40}
    assert fs["cursor"].path == "/managed-ledgers/t/ns/persistent/a+b/sub+1"
    assert fs["cursor"].subscription == "sub 1"
    assert fs["bucket"].path == "/managed-ledgers/t/ns/persistent/a+b/sub+1"
    assert fs["compacted"].path == "/managed-ledgers/t/ns/persistent/a+b/__compaction"
    assert fs["schema"].path == "/schemas/t/ns/a+b"
    half = next(f for f in of(result, "dangling-ledger") if f.ledger_id == 40)
    assert (half.path, half.subscription) == ("/managed-ledgers/t/ns/persistent/a+b/half", "half")
    assert all(f.severity == "critical" for f in fs.values())


def test_offloaded_and_sentinels_are_not_dangling(result: AuditResult) -> None:
    ids = {f.ledger_id for f in of(result, "dangling-ledger")}
    assert 30 not in ids and -1 not in ids and 31 not in ids


def test_exit_code_critical(result: AuditResult) -> None:
    assert result.exit_code == EXIT_CRITICAL


def test_incomplete_ledger_listing_downgrades_to_warning(ledgers_listing_incomplete: AuditResult) -> None:
    # build(ledgers_complete=False), audited with test_orphan_ledger's reason-order case (tests/spark/conftest.py):
    # its topic t/ns/a references only ledger 100, which has metadata, and its orphans are warnings or info
    r = ledgers_listing_incomplete
    fs = of(r, "dangling-ledger")
    assert len(fs) == 7
    for f in fs:
        assert f.severity == "warning"
        assert f.reason == "ledger listing incomplete: cannot confirm absence"
        assert not f.plannable
    assert r.exit_code == EXIT_WARNINGS
