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
    doc = {"snapshot": {"snapshot_id": json.loads(r.stdout)["snapshot_id"], "path": str(snap)}, "audit": {},
           "findings": [finding.to_json()]}  # fmt: skip
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
