"""`pulsar-ops scrape`: exit 0 / 1 (scopes missing) / 3, human output only on stderr, --json manifest on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.testing.seeder import SeedOptions, seed_cluster
from pulsar_ops.testing.zk_server import free_port

pytestmark = pytest.mark.zk


def test_scrape_json_on_stdout_summary_on_stderr(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    seed_cluster(zk, None, SeedOptions(topics=5, seed=2, persistent_ownership=True, defects=frozenset({"corrupt"})))
    out = tmp_path / "snap"
    r = CliRunner().invoke(app, ["scrape", "--zookeeper", zk_hosts, "--out", str(out), "--json", "-q"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["complete"] is True and doc["schema_version"] == open_snapshot(out).manifest.schema_version
    # an undecodable znode is not an incomplete listing: it is counted and said, the scopes stay complete
    assert doc["incomplete_scopes"] == [] and doc["errors_count"] >= 1, doc
    assert "snapshot" in r.stderr and "undecodable-znode" in r.stderr and "pulsar-ops audit" in r.stderr

    r2 = CliRunner().invoke(app, ["scrape", "--zookeeper", zk_hosts, "--out", str(tmp_path / "s2"), "-q"])
    assert r2.exit_code == 0 and r2.stdout == ""


def test_scrape_tool_failures_exit_3_with_a_hint(zk_hosts: str, tmp_path: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "x").write_text("x")
    r = CliRunner().invoke(app, ["scrape", "--zookeeper", zk_hosts, "--out", str(out)])
    assert r.exit_code == 3 and r.stdout == ""
    assert "not empty" in r.stderr and "hint: pass --out NEW_DIR" in r.stderr

    dead = f"127.0.0.1:{free_port()}"
    r = CliRunner().invoke(
        app, ["scrape", "--zookeeper", dead, "--out", str(tmp_path / "n"), "--connect-timeout", "1", "--json"]
    )
    assert r.exit_code == 3 and json.loads(r.stdout)["error"]["code"] == "zookeeper-unavailable"
    assert "cannot connect to ZooKeeper" in r.stderr and "hint" in r.stderr and "--zk-tls-ca" in r.stderr


@pytest.mark.parametrize("source", ["--admin-url", "--bookie-url"])
def test_a_scrape_missing_an_admin_or_bookie_scope_is_not_complete_and_exits_1(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, source: str
) -> None:
    seed_cluster(zk, None, SeedOptions(topics=3, seed=2, persistent_ownership=True))
    dead = f"http://127.0.0.1:{free_port()}"
    out = tmp_path / "snap"
    r = CliRunner().invoke(
        app,
        ["scrape", "--zookeeper", zk_hosts, "--out", str(out), source, dead, "--http-timeout", "1", "--json", "-q"],
    )
    assert r.exit_code == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["complete"] is False and doc["finished"] is True
    assert {s["store"] for s in doc["incomplete_scopes"]} == {"admin" if source == "--admin-url" else "bookie"}
    assert "incomplete" in r.stderr
    # finished, so still audited: the missing scope blocks only what depends on it
    assert open_snapshot(out).manifest.incomplete_scopes
