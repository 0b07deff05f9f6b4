"""The synthetic cluster writes what Pulsar writes for itself (initialize-cluster-metadata, the extensible load
manager, transactions, topic policies), and its ground truth never makes any of it a finding."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from pulsar_ops.errors import ConfigError
from pulsar_ops.formats.names import parse_topic
from pulsar_ops.testing import model_upstream as up
from pulsar_ops.testing.cluster_model import build
from pulsar_ops.testing.model_spec import SeedOptions, ZNode

NOW = 1_750_000_000_000


@cache
def _build(load_manager: str = "modular", sus: str = "system-topic") -> tuple[dict[str, ZNode], dict[str, Any]]:
    nodes, gt = build(
        SeedOptions(topics=60, seed=3, now_ms=NOW, znode_time_ms=NOW, load_manager=load_manager, service_unit_state=sus)
    )
    return {z.path: z for z in nodes}, gt


def _json(z: ZNode) -> Any:
    return json.loads(z.data)


def test_initialize_cluster_metadata_as_upstream_writes_it() -> None:
    by_path, gt = _build()
    assert by_path["/bookies"].data == b"{}"
    assert _json(by_path["/admin/clusters/global"])["serviceUrl"] is None
    for tenant in ("public", "pulsar"):
        assert _json(by_path[f"/admin/policies/{tenant}"]) == {"adminRoles": [], "allowedClusters": ["pulsar-east"]}
    for ns in ("public/default", "pulsar/system"):
        pol = _json(by_path[f"/admin/policies/{ns}"])
        assert pol["bundles"]["numBundles"] == 16 and pol["replication_clusters"] == ["pulsar-east"]
        assert "retention_policies" not in pol
    assert _json(by_path[up.TC_ASSIGN_PATH])["partitions"] == 16
    # the coordinators' partitions never get a managed ledger; their logs do
    assert not [p for p in by_path if "transaction_coordinator_assign-partition" in p]
    assert "/managed-ledgers/pulsar/system/persistent/__transaction_log_0" in by_path
    owned = {e["what"]: e for e in gt["pulsar_owned"]}
    assert up.TC_ASSIGN_PATH in owned["initialize-cluster-metadata"]["paths"]
    assert all(e["source"].endswith(".java") for e in gt["pulsar_owned"])
    # none of it is a finding
    flat = json.dumps(gt["expected"])
    assert (
        "transaction_coordinator_assign" not in flat and "__transaction" not in flat and "__change_events" not in flat
    )


def test_transaction_stores_in_an_unowned_namespace_are_no_finding() -> None:
    by_path, gt = _build()
    stores = next(e for e in gt["pulsar_owned"] if e["what"] == "transaction-pending-ack-store")["topics"]
    assert stores and all(t.endswith("-slow-sub__transaction_pending_ack") for t in stores)
    assert all(f"/managed-ledgers/{parse_topic(t).ml_name}" in by_path for t in stores)  # managed ledgers
    retention = {r["topic"] for r in gt["expected"]["expired-retention-unloaded"]}
    assert not set(stores) & retention
    origin = stores[0].removesuffix("-slow-sub__transaction_pending_ack")
    assert origin in retention  # its origin topic, unloaded and past retention, is a finding


def test_modular_cluster_has_ownership_znodes_and_no_elm_traces() -> None:
    by_path, _ = _build()
    assert any(p.startswith("/namespace/") for p in by_path)
    assert not any(p.startswith((up.ELM_LEADER_PATH, up.SERVICE_UNIT_STATE_ROOT)) for p in by_path)
    reg = _json(by_path["/loadbalance/brokers/broker-0.pulsar-east.svc:8080"])
    assert reg["loadManagerClassName"] == up.MODULAR_CLASS and "bundles" in reg


@pytest.mark.parametrize("sus", ["system-topic", "metadata-store"])
def test_extensible_cluster_registrations_leader_and_no_ownership_znodes(sus: str) -> None:
    by_path, gt = _build("extensible", sus)
    assert not any(p.startswith("/namespace/") for p in by_path)
    leaks = [lk["path"] for lk in gt["expected"]["znode-leak"]]
    bundle_data = [p for p, z in by_path.items() if z.kind == "bundle-data"]
    assert bundle_data and all(any(p.startswith(lk) for lk in leaks) for p in bundle_data)  # only the planted leaks
    reg = by_path["/loadbalance/brokers/broker-0.pulsar-east.svc:8080"]
    assert reg.ephemeral
    doc = _json(reg)
    assert list(doc) == [  # BrokerLookupData's components, in declaration order
        "webServiceUrl",
        "webServiceUrlTls",
        "pulsarServiceUrl",
        "pulsarServiceUrlTls",
        "advertisedListeners",
        "protocols",
        "persistentTopicsEnabled",
        "nonPersistentTopicsEnabled",
        "loadManagerClassName",
        "startTimestamp",
        "brokerVersion",
        "properties",
    ]
    assert doc["loadManagerClassName"] == up.EXTENSIBLE_CLASS
    assert _json(by_path[up.ELM_LEADER_PATH])["brokerId"] == "broker-0.pulsar-east.svc:8080"
    states = [p for p, z in by_path.items() if p.startswith(up.SERVICE_UNIT_STATE_ROOT + "/") and z.kind != "dir"]
    modular_owners = [p for p, z in _build()[0].items() if z.kind == "bundle-owner"]
    modular_retention = _build()[1]["expected"]["expired-retention-unloaded"]
    assert modular_retention
    if sus == "metadata-store":
        # the same bundles the modular cluster owns, each an Owned ServiceUnitStateData at the table view's path;
        # some bundles of unowned namespaces were released (Free, naming the releasing broker), the others have no
        # value; and no channel topic (only the system-topic table view creates it)
        values = {p.removeprefix(up.SERVICE_UNIT_STATE_ROOT): _json(by_path[p]) for p in states}
        owned = {p for p, v in values.items() if v["state"] == "Owned"}
        assert sorted(owned) == sorted(p.removeprefix("/namespace") for p in modular_owners)
        assert all(v["dstBroker"].endswith(":8080") for p, v in values.items() if p in owned)
        free = [v for p, v in values.items() if p not in owned]
        assert free and all(v["state"] == "Free" and v["dstBroker"] is None and v["sourceBroker"] for v in free)
        assert not any(p.endswith("/loadbalancer-service-unit-state") for p in by_path)
        assert _topics(gt["expected"]["expired-retention-unloaded"]) == _topics(modular_retention)
        assert gt["ownership_unknown"] == []
    else:
        assert states == []
        # ownership is in a system topic: nothing can be called unloaded by a metadata-only audit
        assert gt["expected"]["expired-retention-unloaded"] == []
        assert _topics(gt["ownership_unknown"]) == _topics(modular_retention)


def _topics(entries: list[dict[str, Any]]) -> list[str]:
    return [e["topic"] for e in entries]


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="load manager"):
        SeedOptions(load_manager="simple")
    with pytest.raises(ConfigError, match="service-unit-state"):
        SeedOptions(load_manager="extensible", service_unit_state="zk")
