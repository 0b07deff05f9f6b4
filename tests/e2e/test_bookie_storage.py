"""seed --bookie-dirs -> scrape -> scan-bookie per bookie -> audit --bookie-scan ...: the storage detections report
exactly the injected storage defects (and every other detection still its ground truth), against a real ZooKeeper."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import run_audit
from pulsar_ops.cli.main import app
from pulsar_ops.findings import STORAGE_DETECTIONS
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.bookie_dirs import LAYOUT_FILE
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from pulsar_ops.testing.truth import compare, summary_lines

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]

AHEAD_MS = 25 * 3_600_000


def scan_all(bookie_dirs: Path, out: Path) -> list[Path]:
    """`pulsar-ops scan-bookie` for every bookie the seeder wrote, as an operator runs it on each host."""
    scans = []
    for b in json.loads((bookie_dirs / LAYOUT_FILE).read_text())["bookies"]:
        target = out / b["bookie_id"].replace(":", "_")
        r = CliRunner().invoke(
            app,
            ["scan-bookie", "--ledger-dirs", ",".join(b["ledger_dirs"]), "--bookie-id", b["bookie_id"],
             "--out", str(target), "--quiet", "--max-scan-mb-s", "0"],
        )  # fmt: skip
        assert r.exit_code == 0, r.stderr
        scans.append(target)
    return scans


def test_storage_findings_match_the_ground_truth(spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    now = int(time.time() * 1000) + AHEAD_MS
    bookie_dirs = tmp_path / "bookies"
    res = seed_cluster(zk, None, SeedOptions(topics=60, seed=1, now_ms=now, bookie_dirs=str(bookie_dirs)))
    truth = res.ground_truth
    assert all(truth["expected"][d] for d in STORAGE_DETECTIONS)  # every kind injected
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    scans = scan_all(bookie_dirs, tmp_path / "scans")
    result = run_audit(tmp_path / "snap", tmp_path / "audit", AuditParams(now_ms=now), spark=spark, bookie_scans=scans)
    diffs = compare(result.findings, truth)
    bad = {k: d for k, d in diffs.items() if not d.ok}
    assert not bad, (
        "\n".join(summary_lines(diffs))
        + "\n"
        + "\n".join(
            f"{k}: missing={d.missing[:5]} unexpected={d.unexpected[:5]} mismatched={d.mismatched[:3]}"
            for k, d in bad.items()
        )
    )
    assert all(not s["partial"] for s in result.audit["bookie_scans"])
    loggers = set()
    for s in scans:
        m = json.loads((s / "manifest.json").read_text())
        assert m["logs"]["map"] > 0 and m["logs"]["scanned"] > 0 and m["index"]["status"] == "read"
    for b in json.loads((bookie_dirs / LAYOUT_FILE).read_text())["bookies"]:
        loggers.add(b["logger"])
    assert loggers == {"default", "direct"}


def _table(snap: Path, name: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    d = snap / "tables" / name
    return pq.read_table(d).to_pylist() if any(d.glob("*.parquet")) else []


def test_capacity_attributes_every_seeded_topics_bytes(
    spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """audit.storage on a seeded cluster: per bookie the classes sum to the scanned data bytes, and every topic's
    live bytes on every bookie are what its referenced ledgers hold there (from the scans' own tables)."""
    import pyarrow.parquet as pq

    now = int(time.time() * 1000) + AHEAD_MS
    bookie_dirs = tmp_path / "bookies"
    seed_cluster(zk, None, SeedOptions(topics=40, seed=3, now_ms=now, bookie_dirs=str(bookie_dirs)))
    snap = tmp_path / "snap"
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=snap))
    scans = scan_all(bookie_dirs, tmp_path / "scans")
    result = run_audit(
        snap, tmp_path / "audit", AuditParams(now_ms=now), spark=spark, bookie_scans=scans, storage_top_n=100_000
    )
    storage = result.audit["storage"]
    got = {b["bookie_id"]: b for b in storage["bookies"]}
    assert len(got) == len(scans) >= 3
    # who references each ledger (ledger lists, cursor / compacted / bucket ledgers, schemas)
    owners: dict[int, set[str]] = {}
    for r in _table(snap, "ledger_list"):
        owners.setdefault(r["ledger_id"], set()).add(r["topic"])
    for r in _table(snap, "cursors"):
        for lid in (r["cursors_ledger_id"], r["compacted_topic_ledger"]):
            if lid is not None and lid >= 0:
                owners.setdefault(lid, set()).add(r["topic"])
    for r in _table(snap, "cursor_properties"):
        if r["bucket_ledger_id"] is not None:
            owners.setdefault(r["bucket_ledger_id"], set()).add(r["topic"])
    for r in _table(snap, "schema_index"):
        owners.setdefault(r["ledger_id"], set()).add(r["topic"])
    in_bk = {r["ledger_id"] for r in _table(snap, "bk_ledgers")}
    topics_seen = 0
    for s in scans:
        logs = pq.read_table(s / "entry_logs.parquet").to_pylist()
        pairs = pq.read_table(s / "entry_log_ledgers.parquet").to_pylist()
        bid = logs[0]["bookie_id"]
        b = got[bid]
        assert b["data_bytes"] == sum(r["data_bytes"] for r in logs if not r["compacting"]) > 0
        assert sum(b[f"{c}_bytes"] for c in ("live", "orphan", "unreclaimed", "unattributed")) == b["data_bytes"]
        want: dict[str, int] = {}
        for p in pairs:
            topics = owners.get(p["ledger_id"], set())
            if p["ledger_id"] in in_bk and topics:
                assert len(topics) == 1, (p["ledger_id"], topics)  # the seeder shares no ledger
                t = next(iter(topics))
                want[t] = want.get(t, 0) + p["bytes"]
        rows = b["top"]["live"]["topic"]
        assert rows["of"] == len(rows["rows"]) == len(want)
        assert {r["name"]: r["bytes"] for r in rows["rows"]} == want
        assert sum(want.values()) == b["live_bytes"]
        assert b["orphan_bytes"] > 0 or b["unreclaimed_bytes"] > 0  # the injected defects show up somewhere
        topics_seen += len(want)
    assert topics_seen > 40  # topics spread over several bookies
