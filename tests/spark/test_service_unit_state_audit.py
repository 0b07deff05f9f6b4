"""Bundle ownership read from ``/service_unit_state`` (the extensible load manager's metadata-store table view,
ServiceUnitStateMetadataStoreTableViewImpl; ServiceUnitState, ServiceUnitStateData) and transaction stores judged
by what opens them (MLPendingAckStore, MLTransactionLogImpl, TransactionMetadataStoreService): issue 33.

One namespace per bundle state, each with one expired topic (a single full-range bundle): Owned by a registered
broker, Free, no value, Assigning (in flight), Owned by a broker that is not registered, and a value that does not
decode. Only the unowned ones (Free, no value) are unloaded, and only while the table is the truth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder
from tests.spark.system_topics import ELM, closed

pytestmark = pytest.mark.spark

B1 = "10.0.0.1:8080"
RANGE = "0x00000000_0xffffffff"
STATES = {  # namespace -> (state, dstBroker) of its bundle's value; None: no value
    "t/owned": ("Owned", B1),
    "t/free": ("Free", None),
    "t/none": None,
    "t/moving": ("Assigning", B1),
    "t/stale": ("Owned", "10.9.9.9:8080"),
}
ELM_SUS = {"kind": "extensible", "registrations": {B1: ELM}, "extension_leader": True, "service_unit_state": True}


def _expired(b: SnapshotBuilder, ns: str, lid: int) -> None:
    b.namespace(ns, retention_time_minutes=60, retention_size_mb=-1)
    b.bk_ledger(lid + 2, owner="x", last_entry_id=9, length=300, ctime_ms=NOW - 3 * DAY)
    b.topic(ns, "old", ledgers=[closed(lid, 9), closed(lid + 1, 8), (lid + 2, None, None, None)])
    b.cursor(ns, "old", "idle", md=(lid + 1, 9), mtime_ms=NOW - 40 * DAY)


def _sus(b: SnapshotBuilder, ns: str, state: str, dst: str | None) -> None:
    b.add(
        "service_unit_states",
        path=f"/service_unit_state/{ns}/{RANGE}",
        namespace=ns,
        bundle_range=RANGE,
        lower=0,
        upper=0xFFFFFFFF,
        state=state,
        dst_broker=dst,
        source_broker=None if dst else B1,
    )
    b.znode(f"/service_unit_state/{ns}/{RANGE}", kind="service-unit-state")


def _cluster(b: SnapshotBuilder, *, system_topic: bool = False) -> None:
    lid = 100
    for ns, value in STATES.items():
        _expired(b, ns, lid)
        lid += 10
        if value is not None:
            _sus(b, ns, *value)
    _expired(b, "t/garbled", lid)
    b.znode(f"/service_unit_state/t/garbled/{RANGE}", kind="service-unit-state", decode_error="bad-json")
    b.scope("/service_unit_state")
    # transactions: coordinator 0 (its bundle: pulsar/system's one bundle, Owned) and coordinator 20 (unassigned:
    # 16 partitions); a pending-ack store of t/free's topic (unloaded) and one whose subscription is gone
    b.namespace("pulsar/system")
    _sus(b, "pulsar/system", "Owned", B1)
    b.add(
        "partitioned_topics",
        path="/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign",
        tenant="pulsar",
        namespace="pulsar/system",
        encoded_name="transaction_coordinator_assign",
        local_name="transaction_coordinator_assign",
        topic="persistent://pulsar/system/transaction_coordinator_assign",
        partitions=16,
    )
    b.topic("pulsar/system", "__transaction_log_0", ledgers=[closed(300, 9), (301, None, None, None)])
    b.topic("pulsar/system", "__transaction_log_20", ledgers=[closed(302, 9), (303, None, None, None)])
    b.topic("t/free", "old-idle__transaction_pending_ack", ledgers=[closed(304, 9), (305, None, None, None)])
    b.topic("t/free", "old-gone__transaction_pending_ack", ledgers=[closed(306, 9), (307, None, None, None)])
    if system_topic:  # the system-topic table view (or the syncer) ran: ownership may live in the topic
        b.topic("pulsar/system", "loadbalancer-service-unit-state", ledgers=[(308, None, None, None)])


@pytest.fixture(scope="module")
def truth(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    b = SnapshotBuilder(load_manager=ELM_SUS)
    _cluster(b)
    return audit(spark, b, tmp_path_factory.mktemp("sus"))


def test_only_free_or_absent_bundles_are_unowned(truth: AuditResult) -> None:
    got = {f.namespace: f for f in of(truth, "expired-retention-unloaded")}
    assert set(got) == {"t/free", "t/none"}
    for f in got.values():
        assert f.evidence["ownership_source"] == "service-unit-state" and f.evidence["owned"] is False
        assert "bundle not Owned in /service_unit_state" in (f.reason or "")
    own = truth.audit["ownership"]
    assert own["service_unit_state"] == {
        "known": True,
        "why_not": None,
        "bundles": {"owned": 2, "unowned": 1, "unknown": 3},
    }
    assert own["unknown_scope"] is False


def test_transaction_stores_are_judged_by_their_opener(truth: AuditResult) -> None:
    assert not [f for f in of(truth, "expired-retention-unloaded") if "__transaction" in (f.topic or "")]
    # coordinator 0: its bundle Owned; coordinator 20: not assigned; the pending-ack stores: origin unloaded / gone
    assert truth.audit["ownership"]["transaction_stores"] == {
        "coordinator-log": {"yes": 1, "no": 1},
        "pending-ack": {"no": 2},
    }
    (old,) = [f for f in of(truth, "expired-retention-unloaded") if f.namespace == "t/free"]
    assert old.evidence["transaction_stores"] == [
        {
            "store": "persistent://t/free/old-gone__transaction_pending_ack",
            "in_use": "no",
            "opener_state": "subscription-gone",
        },
        {"store": "persistent://t/free/old-idle__transaction_pending_ack", "in_use": "no", "opener_state": "present"},
    ]
    gone = {f.topic: f for f in of(truth, "system-metadata") if f.evidence.get("transaction_store")}
    assert set(gone) == {
        "persistent://pulsar/system/__transaction_log_20",
        "persistent://t/free/old-gone__transaction_pending_ack",
    }
    assert all(not f.plannable and f.severity == "info" for f in gone.values())
    assert gone["persistent://t/free/old-gone__transaction_pending_ack"].evidence["opener_state"] == "subscription-gone"


def test_the_system_topic_table_view_makes_it_unknown(spark: Any, tmp_path: Path) -> None:
    b = SnapshotBuilder(load_manager=ELM_SUS)
    _cluster(b, system_topic=True)
    res = audit(spark, b, tmp_path)
    assert of(res, "expired-retention-unloaded") == []
    sus = res.audit["ownership"]["service_unit_state"]
    assert sus["known"] is False and "system-topic table view" in sus["why_not"]
    assert res.audit["ownership"]["unknown_scope"] is True
    assert res.audit["ownership"]["transaction_stores"]["coordinator-log"] == {"unknown": 1, "no": 1}


def test_an_unread_listing_makes_it_unknown(spark: Any, tmp_path: Path) -> None:
    b = SnapshotBuilder(load_manager=ELM_SUS)
    _cluster(b)
    b.scope("/service_unit_state", complete=False, error="NoAuth")
    res = audit(spark, b, tmp_path)
    assert of(res, "expired-retention-unloaded") == []
    assert res.audit["ownership"]["service_unit_state"]["why_not"] == "/service_unit_state was not read completely"


def test_a_listing_of_a_topic_in_a_bundle_it_does_not_own_contradicts_it(spark: Any, tmp_path: Path) -> None:
    """A broker lists t/free's topic loaded: the table is not the truth (the listings decide, every broker
    answered). A heartbeat topic loaded without a value (ExtensibleLoadManagerImpl.assign gives heartbeat bundles a
    fixed broker) does not contradict it."""
    b = SnapshotBuilder(load_manager=ELM_SUS, admin_scraped=True)
    _cluster(b)
    b.add("loaded_topics", broker=B1, topic="persistent://pulsar/10.0.0.1:8080/healthcheck", bundle=RANGE)
    res = audit(spark, b, tmp_path / "heartbeat")
    assert res.audit["ownership"]["service_unit_state"]["known"] is True
    b.add("loaded_topics", broker=B1, topic="persistent://t/free/old", bundle=RANGE)
    res = audit(spark, b, tmp_path / "contradicted")
    assert "does not own" in res.audit["ownership"]["service_unit_state"]["why_not"]
    # every broker answered: judged by the listings, the loaded one is not unloaded
    assert "persistent://t/free/old" not in {f.topic for f in of(res, "expired-retention-unloaded")}


def test_a_snapshot_older_than_the_table_is_audited_with_it_empty_and_unknown(spark: Any, tmp_path: Path) -> None:
    """A snapshot scraped before ``service_unit_states`` existed (no table directory, /service_unit_state never
    walked) opens; the table reads as empty; the audit names it and calls no bundle unowned for want of it."""
    import shutil

    from pulsar_ops.audit.runner import run_audit
    from pulsar_ops.snapshot.reader import open_snapshot

    b = SnapshotBuilder(load_manager=ELM_SUS)
    for i, ns in enumerate(STATES):
        _expired(b, ns, 100 + 10 * i)
    snap = b.write(tmp_path / "snap")
    shutil.rmtree(snap / "tables" / "service_unit_states")
    opened = open_snapshot(snap)
    assert opened.absent_tables() == ["service_unit_states"]
    assert opened.table("service_unit_states").num_rows == 0
    assert opened.read("service_unit_states", ("namespace", "state")).column_names == ["namespace", "state"]
    res = run_audit(snap, tmp_path / "out", spark=spark)
    assert list(res.snapshot["tables_read_as_empty"]) == ["service_unit_states"]
    assert res.audit["ownership"]["service_unit_state"]["known"] is False
    assert not of(res, "expired-retention-unloaded")  # ownership unknown, not "no bundle Owned"
