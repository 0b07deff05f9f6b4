"""The scrape records which load manager keeps bundle ownership (manifest ``load_manager``), from the brokers'
registrations and the extensible load manager's znodes, on a real ZooKeeper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.scrape import zk as zkmod
from pulsar_ops.scrape.run import ScrapeConfig, scrape

pytestmark = pytest.mark.zk

ELM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"


def _register(zk: KazooClient, broker: str, lm_class: str | None) -> None:
    doc: dict[str, object] = {"webServiceUrl": f"http://{broker}"}
    if lm_class is not None:
        doc["loadManagerClassName"] = lm_class  # BrokerLookupData; LocalBrokerData has no such field
    zk.create(f"/loadbalance/brokers/{broker}", json.dumps(doc).encode(), makepath=True)


def test_a_scrape_of_an_extensible_load_manager_cluster_records_it(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    zk.create("/managed-ledgers", b"", makepath=True)
    zk.create("/ledgers/available", b"", makepath=True)
    _register(zk, "b1:8080", ELM)
    zk.create("/loadbalance/extension/leader", b"{}", makepath=True)
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "s"))
    assert m.load_manager["kind"] == "extensible"
    assert m.load_manager["registrations"] == {"b1:8080": ELM}
    assert m.load_manager["extension_leader"] is True and m.load_manager["service_unit_state"] is False
    doc = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert doc["load_manager"]["kind"] == "extensible"


@pytest.mark.parametrize(
    ("brokers", "extra", "kind"),
    [
        ({"b1:8080": None, "b2:8080": None}, (), "modular"),
        ({"b1:8080": ELM, "b2:8080": None}, (), "mixed"),
        ({"b1:8080": None}, ("/service_unit_state/t/ns/0x00000000_0xffffffff",), "mixed"),
        ({}, (), "none"),
    ],
)
def test_the_load_manager_kind(
    zk: KazooClient, brokers: dict[str, str | None], extra: tuple[str, ...], kind: str
) -> None:
    for b, cls in brokers.items():
        _register(zk, b, cls)
    for p in extra:
        zk.create(p, b"{}", makepath=True)
    got = zkmod.read_load_manager(zk)
    assert got["kind"] == kind, got
    assert got["error"] is None
