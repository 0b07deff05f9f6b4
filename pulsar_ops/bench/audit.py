"""`pulsar-ops bench audit`: time the Spark audit and the same SQL on DuckDB over the same Parquet snapshot.

Without ``--snapshot``, N topics (plus every injected defect, so every detection has work) are seeded into an
embedded ZooKeeper and scraped; the snapshot is what the real pipeline produces.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from pulsar_ops.audit.params import AuditParams


def seeded_snapshot(out: Path, topics: int, seed: int = 1) -> Path:
    """Seed ``topics`` healthy topics (plus every injected defect) into an embedded ZooKeeper and scrape it."""
    from pulsar_ops import zkconn
    from pulsar_ops.scrape.run import ScrapeConfig, scrape
    from pulsar_ops.testing.model_spec import SeedOptions
    from pulsar_ops.testing.seeder import seed_cluster
    from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

    with EmbeddedZooKeeper(data_dir=out.parent / "zk", heap_mb=3072) as zk:
        client = zkconn.new_client(zk.hosts)
        zkconn.start(client, zk.hosts, zkconn.NO_SECURITY, timeout=60)
        try:
            seed_cluster(client, None, SeedOptions(topics=topics, seed=seed, persistent_ownership=True))
        finally:
            zkconn.close(client)
        scrape(ScrapeConfig(zookeeper=zk.hosts, out=out))
    return out


def run(topics: int = 10_000, snapshot: Path | None = None, master: str = "local[*]") -> dict[str, Any]:
    """Time the Spark audit and DuckDB over the same snapshot; returns the figures."""
    from pulsar_ops.audit.manifest import read_manifest
    from pulsar_ops.audit.runner import run_audit
    from pulsar_ops.audit.session import build_session
    from pulsar_ops.bench.duckdb_sql import connect, run_detections

    work = Path(tempfile.mkdtemp(prefix="pulsar-ops-bench-audit-"))
    t0 = time.monotonic()
    snap = snapshot or seeded_snapshot(work / "snap", topics)
    gen_s = time.monotonic() - t0 if snapshot is None else 0.0
    manifest = read_manifest(snap)
    params = AuditParams(now_ms=int(manifest["finished_at_ms"]))
    t0 = time.monotonic()
    spark = build_session(master=master)
    startup_s = time.monotonic() - t0
    t0 = time.monotonic()
    result = run_audit(snap, work / "out", params, spark=spark)
    spark_s = time.monotonic() - t0
    t0 = time.monotonic()
    con = connect(snap, params, admin_scraped=bool(manifest.get("admin_scraped")))
    duck_counts = run_detections(con)
    duck_s = time.monotonic() - t0
    spark_counts = {d: sum(c.values()) for d, c in result.counts.items()}
    return {
        "topics": topics if snapshot is None else None,
        "snapshot": str(snap),
        "generate_s": round(gen_s, 2),
        "spark_startup_s": round(startup_s, 2),
        "spark_audit_s": round(spark_s, 2),
        "duckdb_s": round(duck_s, 2),
        "ratio_spark_over_duckdb": round(spark_s / duck_s, 2) if duck_s else None,
        "findings_spark": spark_counts,
        "findings_duckdb": duck_counts,
        "same_counts": spark_counts == duck_counts,
        "cpus": os.cpu_count(),
        "load_1min": round(os.getloadavg()[0], 2),
        "master": master,
    }
