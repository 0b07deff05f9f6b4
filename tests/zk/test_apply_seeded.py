"""End to end on a seeded cluster with the real scraper: seed -> scrape -> plan (findings from the seeder's
ground truth, standing in for the Spark audit) -> mark -> delete -> restore."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from tests.zk.apply_steps import mark_then_delete
from tests.zk.ground_truth import seeded_findings
from tests.zk.repair_cluster import dump, write_audit
from tests.zk.test_apply import cli

pytestmark = pytest.mark.zk


def test_seeded_cluster_round_trip(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    now = int(time.time() * 1000) + 25 * 3_600_000
    res = seed_cluster(zk, None, SeedOptions(topics=12, seed=11, now_ms=now, persistent_ownership=True))
    expected = res.ground_truth["expected"]
    manifest = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    findings = seeded_findings(expected)
    snap = {"snapshot_id": manifest.snapshot_id, "path": str(tmp_path / "snap")}
    audit = write_audit(tmp_path / "audit", snap, findings)
    plan = tmp_path / "plan.json"
    code, _, err = cli("plan", str(audit), "--out", str(plan))
    assert code == 0, err
    doc = json.loads(plan.read_text())
    want_ledgers = sorted(o["ledger_id"] for o in expected["orphan-ledger"] if o["plannable"])
    want_paths = sorted(z["path"] for z in expected["znode-leak"] if z["plannable"])
    assert want_ledgers and want_paths
    assert sorted(a["ledger_id"] for a in doc["actions"] if "ledger_id" in a) == want_ledgers
    assert sorted(a["path"] for a in doc["actions"] if a["kind"] == "delete-subtree") == want_paths
    assert {a["store"] for a in doc["actions"]} >= {"local", "config"}  # partitioned-topic leaks: config

    before, after = mark_then_delete(zk, plan, zk_hosts)
    targets = {z["path"] for a in doc["actions"] for z in a["preconditions"]["znodes"]}
    assert set(before) - set(after) == targets  # exactly the planned znodes, nothing else
    assert all(after[p] == before[p] for p in after)

    code, _out, err = cli("restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    restored = dump(zk)
    assert set(restored) == set(before)
    assert all(restored[p][0] == before[p][0] and restored[p][3] == before[p][3] for p in before)
