"""`seed --load-manager extensible` in a real ZooKeeper, byte-exact, and what the scrape learns from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing import model_upstream as up
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

pytestmark = pytest.mark.zk


@pytest.mark.parametrize("sus", ["system-topic", "metadata-store"])
def test_extensible_cluster_written_byte_exact_and_recognised(zk: Any, zk_hosts: str, tmp_path: Path, sus: str) -> None:
    opts = SeedOptions(topics=20, seed=5, keep_model=True, load_manager="extensible", service_unit_state=sus)
    res = seed_cluster(zk, None, opts)
    assert res.model is not None
    for z in res.model.znodes:
        data, stat = zk.get(z.path)
        assert data == z.data, z.path
        assert (stat.ephemeralOwner != 0) == z.ephemeral, z.path
    assert all(not zk.get_children(f"/namespace/{t}") for t in zk.get_children("/namespace"))  # no ownership znodes
    assert zk.exists(up.ELM_LEADER_PATH).ephemeralOwner != 0
    assert (zk.exists(f"{up.SERVICE_UNIT_STATE_ROOT}/pulsar/system/0x00000000_0x10000000") is not None) is (
        sus == "metadata-store"
    )
    manifest = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    assert manifest.load_manager["kind"] == "extensible"
    assert manifest.load_manager["extension_leader"] is True
    assert manifest.load_manager["service_unit_state"] is (sus == "metadata-store")


def test_cli_seed_load_manager_options(zk_hosts: str, tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    r = CliRunner().invoke(
        app,
        ["seed", "--zookeeper", zk_hosts, "--topics", "5", "--defects", "none", "--ground-truth", str(gt),
         "--load-manager", "extensible", "--service-unit-state", "metadata-store"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(gt.read_text())
    assert doc["options"]["load_manager"] == "extensible"
    assert doc["options"]["service_unit_state"] == "metadata-store"
    assert {e["what"] for e in doc["pulsar_owned"]} >= {"initialize-cluster-metadata", "transaction-coordinator-log"}
    bad = CliRunner().invoke(app, ["seed", "--zookeeper", zk_hosts + "-x", "--load-manager", "simple"])
    assert bad.exit_code == 3 and "load manager" in bad.output
