"""The admin scrape against two test brokers, one answering an empty body, 500 or too late: the snapshot says
which broker's listing is missing (a scope per broker), and the scrape says so."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.scrape.admin import BrokerRegistration, broker_url, parse_registration
from pulsar_ops.scrape.zk_brokers import broker_registration_reader
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.testing.admin_server import AdminServer
from tests.zk.several_brokers import CLUSTER, scrape_brokers, two_brokers

pytestmark = pytest.mark.zk

FAILURES = {
    "empty": ({"status": 200, "empty": True}, "broker-stats-not-ready"),
    "500": ({"status": 500}, "http-500"),
    "late": ({"hang": 5.0}, "http-failed"),
}


@pytest.mark.parametrize("mode", sorted(FAILURES))
def test_one_broker_without_an_answer_leaves_only_its_listing_incomplete(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, mode: str
) -> None:
    kwargs, code = FAILURES[mode]
    with two_brokers(zk, zk_hosts) as env:
        env.b.fail(endpoint="broker-stats", times=None, **kwargs)  # type: ignore[arg-type]
        manifest = scrape_brokers(zk_hosts, tmp_path / "snap", env.a.url, timeout_s=1.0)
        a_id, b_id = env.a.broker_id, env.b.broker_id
        b_calls = [c for c in env.b.calls if c.path == "/admin/v2/broker-stats/topics"]
    assert not manifest.admin_scraped
    assert [(s.store, s.scope, s.code) for s in manifest.incomplete_scopes if s.store == "admin"] == [
        ("admin", f"broker-stats/topics/{b_id}", code)
    ]
    snap = open_snapshot(tmp_path / "snap")
    admin = {r["scope"]: r for r in pq.read_table(snap.table_dir("scopes")).to_pylist() if r["store"] == "admin"}
    assert admin[f"broker-stats/topics/{a_id}"]["complete"] is True
    assert admin[f"broker-stats/topics/{b_id}"]["complete"] is False
    assert b_id in admin[f"broker-stats/topics/{b_id}"]["error"]
    if mode == "empty":
        assert len(b_calls) >= 2  # asked again within the window before giving up
    owners = pq.read_table(snap.table_dir("bundle_owners")).to_pylist()
    assert {env.a.url, env.b.url} <= {r["http_url"] for r in owners}  # the audit maps bundles to brokers by these


def test_both_brokers_answering_make_the_listing_complete(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    with two_brokers(zk, zk_hosts) as env:
        env.b.fail(endpoint="broker-stats", times=2, status=200, empty=True)  # ready at the third call
        manifest = scrape_brokers(zk_hosts, tmp_path / "snap", env.a.url, wait_s=30)  # ends at the answer
        stats_calls = [c.status for c in env.b.calls if c.path == "/admin/v2/broker-stats/topics"]
    assert manifest.admin_scraped, manifest.incomplete_scopes
    assert stats_calls == [200, 200, 200]
    assert not [s for s in manifest.incomplete_scopes if s.store == "admin"]


def _cli_scrape(zk_hosts: str, out: Path, admin_url: str) -> tuple[int, str, str]:
    args = ["scrape", "--zookeeper", zk_hosts, "--out", str(out), "--admin-url", admin_url, "--cluster", CLUSTER]
    r = CliRunner().invoke(app, [*args, "--broker-stats-wait", "0.2", "--http-timeout", "1", "-q", "--json"])
    return r.exit_code, r.stdout, r.stderr


def test_the_cli_names_the_broker_that_is_not_ready(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    with two_brokers(zk, zk_hosts) as env:
        env.b.fail(endpoint="broker-stats", times=None, status=200, empty=True)
        _code, out, err = _cli_scrape(zk_hosts, tmp_path / "snap", env.a.url)
        b_id = env.b.broker_id
    doc = json.loads(out)
    assert doc["admin_scraped"] is False
    assert [(s["scope"], s["code"]) for s in doc["incomplete_scopes"] if s["store"] == "admin"] == [
        (f"broker-stats/topics/{b_id}", "broker-stats-not-ready")
    ]
    assert "broker-stats-not-ready" in err and b_id in err


def test_a_scrape_with_a_missing_broker_listing_exits_non_zero(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    with two_brokers(zk, zk_hosts) as env:
        env.b.fail(endpoint="broker-stats", times=None, status=500)
        code, out, err = _cli_scrape(zk_hosts, tmp_path / "snap", env.a.url)
    assert code == 1, err  # written, but a scope is missing
    assert json.loads(out)["complete"] is False


def test_registrations_are_read_from_the_metadata_store(zk: KazooClient, zk_hosts: str) -> None:
    """/loadbalance/brokers/<id> as the test broker registers it (LocalBrokerData JSON): an https admin URL asks
    the broker at its webServiceUrlTls."""
    with AdminServer(zk_hosts, register=True, tls_url="https://127.0.0.1:9443") as s:
        got = broker_registration_reader(zk_hosts)([s.broker_id, "10.9.9.9:8080"])
        reg = parse_registration(s.broker_id, got[s.broker_id] or b"")
        assert got["10.9.9.9:8080"] is None  # not registered: the id is asked as it is
        assert reg == BrokerRegistration(s.url, "https://127.0.0.1:9443")
        assert broker_url(s.broker_id, "https", reg) == "https://127.0.0.1:9443"
        assert broker_url(s.broker_id, "http", reg) == s.url
    assert not zk.exists(f"/loadbalance/brokers/{s.broker_id}")  # ephemeral: gone with the broker's session
