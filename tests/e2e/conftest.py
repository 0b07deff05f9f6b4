"""The demo-sized seeded cluster with bookie directories, scraped, every bookie scanned and audited once per session:
read by tests/e2e/test_bookie_storage.py (ground truth, capacity, plan impact) and tests/e2e/test_bookie_reclaim.py
(the reclaim loop)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import AuditResult, run_audit
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import SeedResult, seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkconn import close, connect, connected

AHEAD_MS = 25 * 3_600_000


@dataclass(frozen=True)
class DemoCluster:
    """What the tests read: the seed's result (its model kept), the snapshot, the scans and the audit (its directory
    and its result), all files written before any test ran. ``zk_hosts`` and ``bookie_dirs`` are the live cluster:
    only the reclaim loop (which deletes ledgers and collects garbage) uses them, and no test reads them after it
    but the bookies' layout file (which the garbage collection leaves as it is)."""

    now_ms: int
    zk_hosts: str
    bookie_dirs: Path
    seeded: SeedResult
    snap: Path
    scans: list[Path]
    audit: Path
    result: AuditResult


@pytest.fixture(scope="package")
def demo_cluster(
    spark: Any, zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DemoCluster]:
    """``seed --topics 30 --seed 1 --bookie-dirs`` (the demo's cluster) -> scrape -> scan-bookie per bookie -> audit
    --bookie-scan (every bookie), the capacity view keeping every owner (``storage_top_n`` changes ``audit.storage``
    only, never a finding: the capacity test compares every topic's bytes). The seeding client stays open while
    tests/e2e runs: the bookie and broker registrations are ephemeral, as on a live cluster. Package scope, not
    session: an open kazoo client's connection thread calls the global ``random`` module on every loop (kazoo
    protocol/connection.py), which hypothesis's check for ``random`` inside strategies reports in whatever property
    test runs beside it."""
    from tests.e2e.test_bookie_storage import scan_all

    tmp = tmp_path_factory.mktemp("demo-cluster")
    chroot = f"/demo-{uuid.uuid4().hex[:8]}"
    with connected(zk_server.hosts) as c:
        c.ensure_path(chroot)
    hosts = zk_server.hosts + chroot
    now = int(time.time() * 1000) + AHEAD_MS
    bookie_dirs = tmp / "bookies"
    zk = connect(hosts)
    try:
        opts = SeedOptions(topics=30, seed=1, now_ms=now, bookie_dirs=str(bookie_dirs), keep_model=True)
        seeded = seed_cluster(zk, None, opts)
        snap, audit = tmp / "snap", tmp / "audit"
        scrape(ScrapeConfig(zookeeper=hosts, out=snap))
        scans = scan_all(bookie_dirs, tmp / "scans")
        params = AuditParams(now_ms=now)
        result = run_audit(snap, audit, params, spark=spark, bookie_scans=scans, storage_top_n=100_000)
        yield DemoCluster(now, hosts, bookie_dirs, seeded, snap, scans, audit, result)
    finally:
        close(zk)
