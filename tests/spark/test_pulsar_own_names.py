"""Nothing Pulsar creates for itself is a znode-leak, an idle subscription or an unloaded topic (the registry,
pulsar_ops/pulsar_names.py); topic policies in __change_events make topic-level retention unknown; under the
extensible load manager an absent /namespace znode is not evidence that a bundle is unowned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from pulsar_ops.findings import Finding
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder
from tests.spark.system_topics import ELM, closed

pytestmark = pytest.mark.spark


def _open(b: SnapshotBuilder, lid: int) -> tuple[Any, ...]:
    b.bk_ledger(lid, owner="x", last_entry_id=9, length=300, ctime_ms=NOW - 3 * DAY)
    return (lid, None, None, None)


def _cluster(b: SnapshotBuilder) -> None:
    """What initialize-cluster-metadata writes plus a transaction cluster's own topics, and user topics."""
    b.namespace("public/default")
    b.namespace("pulsar/system")
    # PulsarClusterMetadataSetup: the coordinator-assign partitioned metadata; its partitions never get a ledger
    b.add(
        "partitioned_topics",
        path="/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign",
        tenant="pulsar",
        namespace="pulsar/system",
        encoded_name="transaction_coordinator_assign",
        local_name="transaction_coordinator_assign",
        topic="persistent://pulsar/system/transaction_coordinator_assign",
        partitions=16,
        mtime_ms=NOW - 30 * DAY,
    )
    b.znode("/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign", store="config")
    # coordinator 0's log, unloaded-looking (no ownership znode for pulsar/system)
    b.topic("pulsar/system", "__transaction_log_0", ledgers=[closed(100, 9), _open(b, 101)])
    b.cursor("pulsar/system", "__transaction_log_0", "transaction.subscription", md=(100, 9), is_system=True)
    # an old ledger of coordinator 9's log, whose managed ledger is gone: never a plannable orphan
    b.bk_ledger(99, owner="pulsar/system/persistent/__transaction_log_9", ctime_ms=NOW - 30 * DAY)
    # a heartbeat namespace: owned by brokers without namespace policies (NamespaceService)
    b.topic("pulsar/10.0.0.1:8080", "healthcheck", ledgers=[closed(102, 9), _open(b, 103)])
    b.cursor("pulsar/10.0.0.1:8080", "healthcheck", "healthCheck-x", md=(102, 9), mtime_ms=NOW - 40 * DAY)
    b.znode("/managed-ledgers/pulsar/10.0.0.1:8080", num_children=1)
    # a namespace with topic policies in __change_events, and its topics
    b.namespace("t/pol", retention_time_minutes=60, retention_size_mb=-1)
    b.topic("t/pol", "__change_events", ledgers=[closed(104, 9), _open(b, 105)])
    b.cursor("t/pol", "__change_events", "reader-idle", md=(104, 9), mtime_ms=NOW - 40 * DAY)
    b.topic("t/pol", "kept-by-topic-policy", ledgers=[closed(106, 9), closed(107, 8), _open(b, 108)])
    b.topic("t/pol", "kept-by-topic-policy-sub__transaction_pending_ack", ledgers=[closed(109, 9), _open(b, 110)])
    # a namespace without it: an offline trim stays available
    b.namespace("t/plain", retention_time_minutes=60, retention_size_mb=-1)
    b.topic("t/plain", "old", ledgers=[closed(111, 9), closed(112, 8), _open(b, 113)])
    b.cursor("t/plain", "old", "idle", md=(112, 9), mtime_ms=NOW - 40 * DAY)


def _run(spark: Any, tmp: Path, **kw: Any) -> AuditResult:
    b = SnapshotBuilder(**kw)
    _cluster(b)
    return audit(spark, b, tmp)


@pytest.fixture(scope="module")
def modular(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    return _run(spark, tmp_path_factory.mktemp("own-modular"), load_manager={"kind": "modular"})


@pytest.fixture(scope="module")
def elm(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    lm = {"kind": "extensible", "registrations": {"10.0.0.1:8080": ELM}, "extension_leader": True}
    return _run(spark, tmp_path_factory.mktemp("own-elm"), load_manager=lm)


def _topics(fs: list[Finding]) -> set[str]:
    return {f.topic for f in fs if f.topic}


def test_nothing_of_pulsar_is_a_leak_or_idle_or_unloaded(modular: AuditResult) -> None:
    leaks = of(modular, "znode-leak")
    assert not [f for f in leaks if "pulsar" in (f.path or "").split("/")], leaks
    assert modular.audit["ownership"]["unknown_scope"] is False
    unloaded = _topics(of(modular, "expired-retention-unloaded"))
    assert unloaded == {"persistent://t/pol/kept-by-topic-policy", "persistent://t/plain/old"}
    idle = {(f.topic, f.subscription) for f in of(modular, "inactive-subscription")}
    assert idle == {("persistent://t/plain/old", "idle")}
    # by design, not reported: the coordinator-assign metadata and the heartbeat namespace's ledgers; reported:
    # the pending-ack store of a subscription ("sub") its origin topic does not have (int_transaction_stores)
    sm = of(modular, "system-metadata")
    assert [(f.topic, f.evidence["opener_state"]) for f in sm] == [
        ("persistent://t/pol/kept-by-topic-policy-sub__transaction_pending_ack", "subscription-gone")
    ]
    (orphan,) = [f for f in of(modular, "orphan-ledger") if f.ledger_id == 99]
    assert not orphan.plannable and "Pulsar own topic" in (orphan.reason or "")


def test_topic_level_retention_is_unknown_where_change_events_exists(modular: AuditResult) -> None:
    by_topic = {f.topic: f for f in of(modular, "expired-retention-unloaded")}
    pol = by_topic["persistent://t/pol/kept-by-topic-policy"]
    assert pol.evidence["retention_source"] == "topic-unknown"
    assert "__change_events" in (pol.reason or "")
    plain = by_topic["persistent://t/plain/old"]
    assert plain.evidence["retention_source"] == "namespace"
    assert plain.evidence["first_trim_ledger_ids"] == [111, 112]


def test_extensible_load_manager_ownership_is_unknown_without_every_listing(elm: AuditResult) -> None:
    assert of(elm, "expired-retention-unloaded") == []
    own = elm.audit["ownership"]
    assert {k: own[k] for k in ("load_manager", "in_zookeeper", "unknown_scope")} == {
        "load_manager": "extensible",
        "in_zookeeper": False,
        "unknown_scope": True,
    }
    assert own["service_unit_state"]["known"] is False  # the manifest records no /service_unit_state
    # coordinator 0's bundle: ownership unknown under the extensible load manager without listings
    assert own["transaction_stores"]["coordinator-log"] == {"unknown": 1}


def test_extensible_load_manager_with_every_listing(spark: Any, tmp_path: Path) -> None:
    lm = {"kind": "mixed", "registrations": {"10.0.0.1:8080": ELM, "b2:8080": ""}, "extension_leader": True}
    b = SnapshotBuilder(admin_scraped=True, load_manager=lm)
    _cluster(b)
    b.add("loaded_topics", broker="10.0.0.1:8080", topic="persistent://t/plain/old")
    got = {f.topic: f for f in of(audit(spark, b, tmp_path), "expired-retention-unloaded")}
    assert set(got) == {"persistent://t/pol/kept-by-topic-policy"}  # the loaded one is not judged unloaded
    assert "no broker lists it loaded" in (got["persistent://t/pol/kept-by-topic-policy"].reason or "")


def test_a_missing_system_namespace_is_reported_never_planned(spark: Any, tmp_path: Path) -> None:
    b = SnapshotBuilder(load_manager={"kind": "modular"})
    b.tenant("pulsar")
    b.topic("pulsar/system", "__transaction_log_0", ledgers=[])  # its namespace policies are gone
    b.znode("/managed-ledgers/pulsar/system", num_children=1)
    res = audit(spark, b, tmp_path)
    assert [f for f in of(res, "znode-leak") if (f.path or "").startswith("/managed-ledgers/pulsar")] == []
    sm = of(res, "system-metadata")
    assert [(f.path, f.plannable, f.severity) for f in sm] == [("/managed-ledgers/pulsar/system", False, "info")]
