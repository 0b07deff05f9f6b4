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
