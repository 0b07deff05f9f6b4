"""ttl-expires-delayed (namespace and topic level) and scrape-incomplete, one snapshot."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit.params import AuditParams, BrokerDefaults
from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import SnapshotBuilder

pytestmark = pytest.mark.spark


def tp(b: SnapshotBuilder, ns: str, local: str, **values: Any) -> None:
    b.add(
        "topic_policies",
        path=f"/admin/topic-policies/local/{ns}/persistent/{local}",
        scope="local",
        namespace=ns,
        topic=f"persistent://{ns}/{local}",
        **values,
    )


@pytest.fixture(scope="module")
def result(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    b = SnapshotBuilder()
    b.namespace("t/risk", message_ttl_seconds=3600, delayed_delivery_active=True, delayed_delivery_tick_ms=500)
    b.namespace("t/dd-default", message_ttl_seconds=600)  # delayed delivery null -> broker default (true)
    b.namespace("t/no-delayed", message_ttl_seconds=3600, delayed_delivery_active=False)
    b.namespace("t/zero", message_ttl_seconds=0, delayed_delivery_active=True)
    b.namespace("t/unset")
    # maximum delivery delay (AbstractTopic.isExceedMaximumDeliveryDelay): bounded below the TTL = no risk
    b.namespace(
        "t/bounded", message_ttl_seconds=3600, delayed_delivery_active=True, delayed_delivery_max_delay_ms=600_000
    )
    b.namespace("t/equal", message_ttl_seconds=600, delayed_delivery_active=True, delayed_delivery_max_delay_ms=600_000)
    b.namespace(
        "t/longer", message_ttl_seconds=600, delayed_delivery_active=True, delayed_delivery_max_delay_ms=600_001
    )
    tp(b, "t/longer", "capped", delayed_delivery_max_delay_ms=60_000)  # the topic's own cap removes the risk
    tp(b, "t/bounded", "uncapped", delayed_delivery_max_delay_ms=0)  # 0 = unbounded at topic level: creates it
    tp(b, "t/no-delayed", "turns-on", delayed_delivery_active=True)  # creates the risk
    tp(b, "t/risk", "ttl-off", message_ttl_seconds=0)  # removes the risk
    tp(b, "t/risk", "same", delayed_delivery_active=True)  # no change: no topic finding
    b.scope("/managed-ledgers/t/risk", complete=False, error=None)
    b.add(
        "scrape_errors",
        store="local",
        path="/managed-ledgers/t/risk/persistent/b",
        scope="/managed-ledgers/t/risk",
        code="decode-failed",
        reason="garbage",
    )
    b.add(
        "scrape_errors",
        store="local",
        path="/managed-ledgers/t/risk/persistent/a",
        scope="/managed-ledgers/t/risk",
        code="decode-failed",
        reason="truncated",
    )
    b.scope("/admin/policies", complete=False, error="NoAuth on /admin/policies/x", store="config")
    return audit(spark, b, tmp_path_factory.mktemp("ttl"), AuditParams(broker=BrokerDefaults()))


def test_namespace_level(result: AuditResult) -> None:
    ns = {f.namespace: f for f in of(result, "ttl-expires-delayed") if f.topic is None}
    assert set(ns) == {"t/risk", "t/dd-default", "t/longer"}
    f = ns["t/risk"]
    assert (f.severity, f.plannable) == ("warning", False)
    assert f.evidence["ttl_seconds"] == 3600 and f.evidence["ttl_source"] == "namespace"
    assert f.evidence["delayed_delivery_active"] is True and f.evidence["tick_ms"] == 500
    assert ns["t/dd-default"].evidence["tick_ms"] == 1000
    assert f.path == "/admin/policies/t/risk"
    # no maximum anywhere: the broker's 0 = unbounded
    assert (f.evidence["max_delay_ms"], f.evidence["max_delay_source"]) == (0, "broker")
    assert "maximum delay unbounded (broker)" in f.reason
    longer = ns["t/longer"]
    assert (longer.evidence["max_delay_ms"], longer.evidence["max_delay_source"]) == (600_001, "namespace")
    assert "maximum delay 600001 ms (namespace)" in longer.reason


def test_topic_level(result: AuditResult) -> None:
    topics = {f.topic: f for f in of(result, "ttl-expires-delayed") if f.topic is not None}
    assert set(topics) == {
        "persistent://t/no-delayed/turns-on",
        "persistent://t/risk/ttl-off",
        "persistent://t/longer/capped",
        "persistent://t/bounded/uncapped",
    }
    capped = topics["persistent://t/longer/capped"]
    assert capped.severity == "info" and capped.evidence["effect"] == "removes-risk"
    assert (capped.evidence["max_delay_ms"], capped.evidence["max_delay_source"]) == (60_000, "topic")
    uncapped = topics["persistent://t/bounded/uncapped"]
    assert uncapped.severity == "warning" and uncapped.evidence["effect"] == "creates-risk"
    assert (uncapped.evidence["max_delay_ms"], uncapped.evidence["ttl_source"]) == (0, "namespace")
    on = topics["persistent://t/no-delayed/turns-on"]
    assert on.severity == "warning" and on.evidence["effect"] == "creates-risk"
    assert on.namespace == "t/no-delayed"
    off = topics["persistent://t/risk/ttl-off"]
    assert off.severity == "info" and off.evidence["effect"] == "removes-risk"


def test_broker_default_ttl_and_maximum_delay(spark: Any, tmp_path: Any) -> None:
    b = SnapshotBuilder()
    b.namespace("t/unset")
    # a delayed_delivery_policies object without the key (older broker) reads as 0: it overrides the broker cap
    b.namespace("t/object-without-max", delayed_delivery_active=True, delayed_delivery_max_delay_ms=0)
    b.namespace("t/capped-below", delayed_delivery_active=True, delayed_delivery_max_delay_ms=59_000)
    broker = BrokerDefaults(ttl_duration_default_seconds=60)
    r = audit(spark, b, tmp_path, AuditParams(broker=broker))
    found = {f.namespace: f for f in of(r, "ttl-expires-delayed")}
    assert set(found) == {"t/unset", "t/object-without-max"}
    f = found["t/unset"]
    assert f.evidence["ttl_source"] == "broker" and f.evidence["ttl_seconds"] == 60
    capped = AuditParams(broker=BrokerDefaults(ttl_duration_default_seconds=60, delayed_delivery_max_delay_ms=30_000))
    r = audit(spark, b, tmp_path / "capped", capped)
    (f,) = of(r, "ttl-expires-delayed")
    assert f.namespace == "t/object-without-max" and f.evidence["max_delay_source"] == "namespace"


def test_scrape_incomplete(result: AuditResult) -> None:
    found = {f.path: f for f in of(result, "scrape-incomplete")}
    assert set(found) == {"/managed-ledgers/t/risk", "/admin/policies"}
    ml = found["/managed-ledgers/t/risk"]
    assert (ml.severity, ml.plannable, ml.namespace) == ("warning", False, "t/risk")
    assert ml.reason == "/managed-ledgers/t/risk/persistent/a: truncated"  # first error by path
    assert ml.evidence["errors"] == 2
    pol = found["/admin/policies"]
    assert pol.reason == "NoAuth on /admin/policies/x" and pol.evidence["store"] == "config"
