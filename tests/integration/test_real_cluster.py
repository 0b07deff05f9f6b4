"""Scrape and audit a real Pulsar cluster (docker compose). Skipped without a Docker engine."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.integration


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _broker_ready() -> bool:
    try:
        return httpx.get("http://127.0.0.1:8080/admin/v2/clusters", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="session")
def cluster(docker_services: Any) -> str:
    docker_services.wait_until_responsive(timeout=240.0, pause=2.0, check=lambda: _port_open("127.0.0.1", 2181))
    docker_services.wait_until_responsive(timeout=300.0, pause=3.0, check=_broker_ready)
    admin = httpx.Client(base_url="http://127.0.0.1:8080", timeout=30)
    admin.put("/admin/v2/tenants/it", json={"allowedClusters": ["cluster-a"], "adminRoles": []})
    admin.put("/admin/v2/namespaces/it/ns1")
    admin.put("/admin/v2/persistent/it/ns1/orders%20~1")
    admin.put("/admin/v2/persistent/it/ns1/orders%20~1/subscription/sub%20one")
    admin.put("/admin/v2/persistent/it/ns1/parted/partitions", json=3)
    return "127.0.0.1:2181"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pulsar_ops.cli.main", *args], capture_output=True, text=True)


def test_scrape_real_cluster_finds_topics_cursors_and_ledgers(cluster: str, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    r = _cli("scrape", "--zookeeper", cluster, "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)
    assert manifest["complete"] is True
    assert manifest["row_counts"]["managed_ledgers"] >= 4  # orders ~1 + 3 partitions
    assert manifest["row_counts"]["bk_ledgers"] >= 1


def test_audit_of_fresh_real_cluster_has_no_critical_findings(cluster: str, tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    assert _cli("scrape", "--zookeeper", cluster, "--out", str(snap)).returncode == 0
    r = _cli("audit", str(snap), "--out", str(tmp_path / "audit"), "--json")
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    assert not [f for f in doc["findings"] if f["severity"] == "critical"]


def test_delete_subscription_through_the_real_broker(cluster: str, tmp_path: Path) -> None:
    """The same plan -> mark -> delete the suite runs against the test broker, against a real Pulsar broker."""
    from pulsar_ops.findings import Finding
    from pulsar_ops.formats import names

    admin = httpx.Client(base_url="http://127.0.0.1:8080", timeout=30)
    assert admin.put("/admin/v2/persistent/it/ns1/idle/subscription/forgotten").status_code in (204, 409)
    snap = tmp_path / "snap"
    r = _cli("scrape", "--zookeeper", cluster, "--out", str(snap), "--json")
    assert r.returncode == 0, r.stderr
    ml = names.parse_topic("persistent://it/ns1/idle")
    cursor = f"{names.ml_path(ml)}/{names.encode('forgotten')}"
    finding = Finding(
        detection="inactive-subscription", severity="warning", topic=ml.topic, subscription="forgotten",
        path=cursor, namespace=ml.namespace, evidence={"last_active_ms": 0, "backlog_bytes": 0},
    )  # fmt: skip
    audit = tmp_path / "audit"
    audit.mkdir()
    # the audit parameters plan records for apply's rules: the subscription was created seconds ago
    params = {
        "min_age_ms": 0,
        "inactive_after_ms": 0,
        "broker": {"default_retention_time_minutes": 0, "default_retention_size_mb": 0},
    }
    doc = {"snapshot": {"snapshot_id": json.loads(r.stdout)["snapshot_id"], "path": str(snap)},
           "audit": {"params": params}, "findings": [finding.to_json()]}  # fmt: skip
    (audit / "findings.json").write_text(json.dumps(doc))
    plan = tmp_path / "plan.json"
    r = _cli("plan", str(audit), "--out", str(plan), "--include", "inactive-subscription")
    assert r.returncode == 0, r.stderr
    assert [a["kind"] for a in json.loads(plan.read_text())["actions"]] == ["delete-subscription"]
    base = ["apply", str(plan), "--zookeeper", cluster, "--apply", "--yes", "--json"]
    assert _cli(*base, "--phase", "mark").returncode == 0
    r = _cli(*base, "--phase", "delete", "--quarantine", "0", "--admin-url", "http://127.0.0.1:8080")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["counts"] == {"committed": 1}
    subs = admin.get("/admin/v2/persistent/it/ns1/idle/subscriptions").json()
    assert "forgotten" not in subs


# ---------------------------------------------------------------------------------------------------------------
# The ZooKeeper rewrites and the broker load against the real cluster. A topic is given data with the broker's
# own client (`docker compose exec broker bin/pulsar-client produce`), then its namespace is unloaded so no
# broker owns its bundles, and the repair is planned from a real scrape and audit.

COMPOSE = Path(__file__).resolve().parents[2] / "docker" / "docker-compose.yml"
ADMIN = "http://127.0.0.1:8080"


def _broker_exec(*args: str) -> str:
    r = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "-p", "pulsar-ops-it", "exec", "-T", "broker", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def _unloaded_topic(ns: str, local: str, *, retention: tuple[int, int]) -> str:
    """persistent://it/<ns>/<local> with 50 messages in a closed ledger, no subscription, its namespace unloaded
    (no bundle owned), then given ``retention`` (minutes, MB): setting policies does not load a topic."""
    admin = httpx.Client(base_url=ADMIN, timeout=60)
    assert admin.put(f"/admin/v2/namespaces/it/{ns}").status_code in (204, 409)
    keep = {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    assert admin.post(f"/admin/v2/namespaces/it/{ns}/retention", json=keep).status_code == 204
    topic = f"persistent://it/{ns}/{local}"
    _broker_exec("bin/pulsar-client", "produce", topic, "-m", "payload", "-n", "50")
    assert admin.put(f"/admin/v2/namespaces/it/{ns}/unload").status_code == 204
    minutes, mb = retention
    policy = {"retentionTimeInMinutes": minutes, "retentionSizeInMB": mb}
    assert admin.post(f"/admin/v2/namespaces/it/{ns}/retention", json=policy).status_code == 204
    return topic


def _scrape_audit(cluster: str, tmp: Path, detection: str, topic: str) -> tuple[Path, dict[str, Any]]:
    """Scrape and audit the real cluster; an audit directory holding only ``detection``'s finding for ``topic``."""
    snap = tmp / "snap"
    r = _cli("scrape", "--zookeeper", cluster, "--out", str(snap), "--json")
    assert r.returncode == 0, r.stderr
    r = _cli("audit", str(snap), "--out", str(tmp / "full"), "--json")
    assert r.returncode in (0, 1, 2), r.stderr  # 2: critical findings (a dangling ledger is one)
    full = json.loads(r.stdout)
    mine = [f for f in full["findings"] if f["detection"] == detection and f["topic"] == topic]
    assert len(mine) == 1, [(f["detection"], f["topic"]) for f in full["findings"]]
    audit = tmp / "audit"
    audit.mkdir()
    doc = {**{k: v for k, v in full.items() if k != "findings"}, "findings": mine}
    (audit / "findings.json").write_text(json.dumps(doc))
    return audit, mine[0]


def _apply(cluster: str, plan: Path, *extra: str) -> dict[str, Any]:
    base = ["apply", str(plan), "--zookeeper", cluster, "--apply", "--yes", "--json"]
    r = _cli(*base, "--phase", "mark")
    assert r.returncode == 0, r.stderr
    r = _cli(*base, "--phase", "delete", "--quarantine", "0", *extra)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def _listed(cluster: str, topic: str) -> list[int]:
    from kazoo.client import KazooClient

    from pulsar_ops.formats import names
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info

    zk = KazooClient(hosts=cluster)
    zk.start()
    try:
        path = names.ml_path(names.parse_topic(topic))
        return list(decode_managed_ledger_info(zk.get(path)[0], path).info.ledger_ids)
    finally:
        zk.stop()


def test_load_topic_through_the_real_broker(cluster: str, tmp_path: Path) -> None:
    topic = _unloaded_topic("ret-load", "old", retention=(0, 0))
    audit, finding = _scrape_audit(cluster, tmp_path, "expired-retention-unloaded", topic)
    expected = set(finding["evidence"]["first_trim_ledger_ids"])
    assert expected
    plan = tmp_path / "plan.json"
    r = _cli("plan", str(audit), "--out", str(plan), "--include", "expired-retention-unloaded")
    assert r.returncode == 0, r.stderr
    assert [a["kind"] for a in json.loads(plan.read_text())["actions"]] == ["load-topic"]
    out = _apply(cluster, plan, "--admin-url", ADMIN)
    assert out["counts"] == {"committed": 1}, out
    assert not expected & set(_listed(cluster, topic))  # the broker trimmed what the plan predicted


def test_trim_unloaded_then_the_real_broker_loads_the_topic(cluster: str, tmp_path: Path) -> None:
    topic = _unloaded_topic("ret-offline", "old", retention=(0, 0))
    audit, finding = _scrape_audit(cluster, tmp_path, "expired-retention-unloaded", topic)
    expected = set(finding["evidence"]["first_trim_ledger_ids"])
    plan = tmp_path / "plan.json"
    r = _cli("plan", str(audit), "--out", str(plan), "--include", "expired-retention-unloaded", "--offline-trim")
    assert r.returncode == 0, r.stderr
    assert [a["kind"] for a in json.loads(plan.read_text())["actions"]] == ["trim-unloaded"]
    assert _apply(cluster, plan)["counts"] == {"committed": 1}
    assert not expected & set(_listed(cluster, topic))
    # the rewritten info is one the broker reads: the topic loads and lists none of the trimmed ledgers
    admin = httpx.Client(base_url=ADMIN, timeout=60)
    stats = admin.get("/admin/v2/persistent/it/ret-offline/old/internalStats")
    assert stats.status_code == 200, stats.text
    assert not expected & {int(x["ledgerId"]) for x in stats.json()["ledgers"]}


def test_drop_missing_ledger_lets_the_real_broker_load_the_topic(cluster: str, tmp_path: Path) -> None:
    from kazoo.client import KazooClient

    from pulsar_ops.formats.ledger_path import ledger_path

    topic = _unloaded_topic("lost", "t", retention=(-1, -1))
    (lost,) = _listed(cluster, topic)[-1:]
    zk = KazooClient(hosts=cluster)
    zk.start()
    try:
        zk.delete(ledger_path(lost))  # BookKeeper lost the ledger: its metadata is gone
    finally:
        zk.stop()
    audit, finding = _scrape_audit(cluster, tmp_path, "dangling-ledger", topic)
    assert finding["ledger_id"] == lost
    plan = tmp_path / "plan.json"
    r = _cli("plan", str(audit), "--out", str(plan), "--include", "dangling-ledger")
    assert r.returncode == 0, r.stderr
    assert [a["kind"] for a in json.loads(plan.read_text())["actions"]] == ["drop-missing-ledger"]
    assert _apply(cluster, plan)["counts"] == {"committed": 1}
    assert lost not in _listed(cluster, topic)
    stats = httpx.get(f"{ADMIN}/admin/v2/persistent/it/lost/t/internalStats", timeout=60)
    assert stats.status_code == 200, stats.text
