"""A ZooKeeper scrape with the admin REST and bookie HTTP sources plugged in (recorded JSON, MockTransport)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient

from pulsar_ops.scrape.http import HttpSettings
from pulsar_ops.scrape.http_sources import http_sources
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

pytestmark = pytest.mark.zk

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "http"


def _transport(broker1_status: int = 200) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        host, path = request.url.host, request.url.path
        if path == "/admin/v2/clusters":
            return httpx.Response(200, json=["standalone"])
        if path == "/admin/v2/brokers/standalone":
            return httpx.Response(200, json=json.loads((FIX / "brokers_standalone.json").read_text()))
        if path == "/admin/v2/broker-stats/topics":
            if host.startswith("broker-1") and broker1_status != 200:
                return httpx.Response(broker1_status, text="unavailable")
            name = "broker0" if host.startswith("broker-0") else "broker1"
            return httpx.Response(200, json=json.loads((FIX / f"broker_stats_topics_{name}.json").read_text()))
        if path == "/api/v1/bookie/list_bookies":
            kind = request.url.params["type"]
            return httpx.Response(200, json=json.loads((FIX / f"list_bookies_{kind}.json").read_text()))
        if path == "/api/v1/bookie/info":
            n = host.split(".")[0].rsplit("-", 1)[1]
            return httpx.Response(200, json=json.loads((FIX / f"bookie_info_{n}.json").read_text()))
        return httpx.Response(404)

    return httpx.MockTransport(handler)


def _scrape(zk_hosts: str, out: Path, transport: httpx.MockTransport) -> None:
    extra = http_sources(
        admin_url="http://admin.pulsar:8080",
        bookie_url="http://bookie-0.bookkeeper.svc:8000",
        cluster=None,
        settings=HttpSettings(retries=1),
        transport=transport,
    )
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=out, extra=extra))


def test_http_sources_fill_loaded_topics_and_bookies(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    seed_cluster(zk, None, SeedOptions(topics=5, seed=1, defects=frozenset()))
    _scrape(zk_hosts, tmp_path / "snap", _transport())
    snap = open_snapshot(tmp_path / "snap")
    assert snap.manifest.admin_scraped and snap.manifest.bookie_scraped
    loaded = pq.read_table(snap.table_dir("loaded_topics")).to_pylist()
    assert {r["topic"] for r in loaded} == {
        "persistent://public/default/orders-partition-0",
        "persistent://public/default/my topic~1",
        "persistent://acme/payments/ledger-events",
    }
    bookies = {r["bookie_id"]: r for r in pq.read_table(snap.table_dir("bookies")).to_pylist()}
    assert bookies["bookie-2.bookkeeper.svc:3181"]["readonly"] is True
    assert bookies["bookie-1.bookkeeper.svc:3181"]["free_bytes"] == 10737418240


def test_a_failing_broker_never_reads_as_nothing_loaded(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    seed_cluster(zk, None, SeedOptions(topics=5, seed=1, defects=frozenset()))
    _scrape(zk_hosts, tmp_path / "snap", _transport(broker1_status=500))
    snap = open_snapshot(tmp_path / "snap")
    assert not snap.manifest.admin_scraped  # the audit will not use loaded_topics to call topics unloaded
    scopes = pq.read_table(snap.table_dir("scopes")).to_pylist()
    admin = {s["scope"]: s for s in scopes if s["store"] == "admin"}
    # one scope per broker: the audit judges each bundle by the listing of the broker that owns it
    assert sorted(admin) == [
        "broker-stats/topics/broker-0.pulsar.svc:8080",
        "broker-stats/topics/broker-1.pulsar.svc:8080",
    ]
    ok, bad = (
        admin["broker-stats/topics/broker-0.pulsar.svc:8080"],
        admin["broker-stats/topics/broker-1.pulsar.svc:8080"],
    )
    assert ok["complete"] and ok["znodes"] == 2 and ok["error_code"] is None
    assert not bad["complete"] and bad["error_code"] == "http-500" and "broker-1" in bad["error"]
    assert [(s.scope, s.code) for s in snap.manifest.incomplete_scopes if s.store == "admin"] == [
        ("broker-stats/topics/broker-1.pulsar.svc:8080", "http-500")
    ]
