"""`bench synth-scans`: synthetic scans of a seeded snapshot pass the readers and checks the audit applies to real
scans (audit/bookie_scans.read_scans: manifest, row counts, Arrow schemas), and the audit over them finds exactly
the storage defects the generator planted (so a storage-stage figure taken on them is one of real work)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.audit.bookie_scans import read_scans
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import run_audit
from pulsar_ops.bench.synth_scans import synthesize
from pulsar_ops.bookiescan import schema
from pulsar_ops.bookiescan.writer import arrow_schema
from pulsar_ops.cli.main import app
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]


def test_synthetic_scans_are_read_as_real_ones_and_their_defects_found(
    spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    seed_cluster(zk, None, SeedOptions(topics=30, seed=2))
    snap = tmp_path / "snap"
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=snap))
    r = CliRunner().invoke(
        app, ["bench", "synth-scans", "--snapshot", str(snap), "--out", str(tmp_path / "scans"), "--json"]
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    scans = [Path(s) for s in doc["scans"]]
    assert len(scans) >= 3 and doc["pairs"] > 0
    infos = read_scans(scans)  # the audit's own validation: refuses a scan a reader would not accept
    assert all(s.complete and s.index_read and s.covers_bookie for s in infos)
    for s in scans:
        m = json.loads((s / "manifest.json").read_text())
        assert "synthetic" in m["synthetic"]
        for t in schema.TABLES:  # exactly scan-bookie's columns, types and nullability
            assert pq.read_schema(s / schema.table_file(t.name)) == arrow_schema(t.name)
    planted = doc["planted"]
    assert all(planted[k] for k in planted)  # every storage kind planted
    params = AuditParams(now_ms=infos[0].started_at_ms)
    result = run_audit(snap, tmp_path / "audit", params, spark=spark, bookie_scans=scans)
    found: dict[str, list[Any]] = {k: [] for k in planted}
    for f in result.findings:
        if f.detection in found:
            found[f.detection].append(f)
    assert sorted([f.path, f.ledger_id] for f in found["unreclaimed-ledger-data"]) == planted["unreclaimed-ledger-data"]
    assert sorted(f.path for f in found["stale-entry-log"]) == planted["stale-entry-log"]
    assert sorted([f.ledger_id, f.path] for f in found["ledger-data-missing"]) == planted["ledger-data-missing"]
    # capacity: the classes add up to the scanned data bytes on every bookie
    for b in result.audit["storage"]["bookies"]:
        classes = sum(b[f"{c}_bytes"] for c in ("live", "orphan", "unreclaimed", "unattributed"))
        assert classes == b["data_bytes"] > 0


def test_synthesize_is_deterministic_in_what_it_plants(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    seed_cluster(zk, None, SeedOptions(topics=5, seed=3))
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    a = synthesize(tmp_path / "snap", tmp_path / "a", bookies=2)
    b = synthesize(tmp_path / "snap", tmp_path / "b", bookies=2)
    assert len(a.scans) == 2 and a.planted == b.planted and a.pairs == b.pairs
