"""`pulsar-ops bench audit`: time the Spark audit and the same SQL on DuckDB over the same Parquet snapshots.

Without ``--snapshot``, each size in ``--topics`` (plus every injected defect, so every detection has work) is
seeded into an embedded ZooKeeper and scraped; the snapshot is what the real pipeline produces. All snapshots
are made first; then one Spark session is built exactly as ``pulsar-ops audit`` builds it for the largest
(default settings: ``audit/sizing.py``), its start timed separately, and every snapshot is audited by Spark and by
DuckDB in turn. Per size: both times, their ratio, seconds per million znodes, the driver JVM's peak
resident memory so far (``VmHWM``), and what the JVM spent the audit on (``audit/jvm_metrics.py``: CPU, JIT
compilation, Spark's code generation, GC, Spark jobs). With ``repeat`` > 1, Spark audits each snapshot again in the
same session, as a driver that outlives one audit would (a warm JVM, its generated code cached): the first
audit's time is the figure and the ratio, the others are listed beside it with their JVM figures.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from pulsar_ops.audit.jvm_metrics import driver_pid
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.errors import PulsarOpsError
from pulsar_ops.findings import STORAGE_DETECTIONS


def seeded_snapshot(out: Path, topics: int, seed: int = 1) -> Path:
    """Seed ``topics`` healthy topics (plus every injected defect) into an embedded ZooKeeper and scrape it."""
    from pulsar_ops import zkconn
    from pulsar_ops.scrape.run import ScrapeConfig, scrape
    from pulsar_ops.testing.model_spec import SeedOptions
    from pulsar_ops.testing.seeder import seed_cluster
    from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

    with EmbeddedZooKeeper(data_dir=out.parent / "zk", heap_mb=3072) as zk:
        client = zkconn.connect(zk.hosts, timeout=60)
        try:
            seed_cluster(client, None, SeedOptions(topics=topics, seed=seed, persistent_ownership=True))
        finally:
            zkconn.close(client)
        scrape(ScrapeConfig(zookeeper=zk.hosts, out=out))
    return out


def jvm_peak_rss_bytes(spark: Any) -> int | None:
    """Peak resident memory (``VmHWM``) of the local driver JVM, when this process launched it."""
    pid = driver_pid(spark)
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _mb(n: int | None) -> int | None:
    return round(n / 1e6) if n else None


BENCH_EXTRA = "pip install 'pulsar-ops[bench]'"


def require_duckdb() -> None:
    """``duckdb-missing`` naming the extra that installs DuckDB (a benchmark dependency, not the product's)."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        raise PulsarOpsError(
            "`bench audit` compares the Spark audit with DuckDB, which is not installed",
            code="duckdb-missing",
            hint=f"install the benchmark extra ({BENCH_EXTRA}, or `pip install duckdb`), then run it again",
        ) from None


def run(
    topics: int | list[int] = 10_000,
    snapshot: Path | None = None,
    master: str = "local[*]",
    info: Any = lambda _s: None,
    keep: bool = False,
    repeat: int = 1,
) -> dict[str, Any]:
    """Time the Spark audit and DuckDB over the same snapshot(s); returns the figures (``runs``, one per size).

    The seeded snapshots and audit outputs live in a temporary directory removed at the end (a 600,000-topic
    snapshot is 1.4 GB), unless ``keep``: then ``work_dir`` in the figures says where they are.
    """
    require_duckdb()  # before seeding anything or starting a JVM
    work = Path(tempfile.mkdtemp(prefix="pulsar-ops-bench-audit-"))
    try:
        doc = _run(topics, snapshot, master, info, work, max(1, repeat))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    doc["work_dir"] = str(work) if keep else None
    return doc


def _run(
    topics: int | list[int], snapshot: Path | None, master: str, info: Any, work: Path, repeat: int = 1
) -> dict[str, Any]:
    from pulsar_ops.audit.manifest import read_manifest
    from pulsar_ops.audit.runner import SnapshotSize, jvm_options, run_audit, session_conf
    from pulsar_ops.audit.session import build_session
    from pulsar_ops.bench.duckdb_sql import connect, run_detections
    from pulsar_ops.pulsar_names import ownership_in_zk

    sizes = [topics] if isinstance(topics, int) else list(topics)
    snaps: list[tuple[int | None, Path, float]] = []
    if snapshot is not None:
        snaps.append((None, snapshot, 0.0))
    else:
        for size in sizes:
            info(f"seeding and scraping {size:,} topics ...")
            t0 = time.monotonic()
            snaps.append((size, seeded_snapshot(work / f"snap-{size}" / "snap", size), time.monotonic() - t0))
    manifests = [read_manifest(s) for _, s, _ in snaps]
    largest = max(range(len(snaps)), key=lambda i: sum(manifests[i].get("row_counts", {}).values()))
    sized_for = SnapshotSize.of(snaps[largest][1], manifests[largest])
    conf = session_conf(sized_for, master)
    t0 = time.monotonic()
    spark = build_session(master=master, jvm_options=jvm_options(sized_for), defaults=conf)
    startup_s = time.monotonic() - t0
    runs = []
    for (n, snap, gen_s), manifest in zip(snaps, manifests, strict=True):
        params = AuditParams(now_ms=int(manifest["finished_at_ms"]))
        info(f"auditing {snap} with Spark and DuckDB ...")
        out = work / f"out-{n if n is not None else 'given'}"
        t0 = time.monotonic()
        result = run_audit(snap, out, params, spark=spark)
        spark_s = time.monotonic() - t0
        peak = jvm_peak_rss_bytes(spark)  # after the first audit: the figure of the table
        again = []
        for i in range(1, repeat):  # the same snapshot again, in the same session
            t1 = time.monotonic()
            r = run_audit(snap, out.with_name(f"{out.name}-{i + 1}"), params, spark=spark)
            again.append(
                {
                    "spark_audit_s": round(time.monotonic() - t1, 2),
                    "same_findings": [f.to_json() for f in r.findings] == [f.to_json() for f in result.findings],
                    "jvm": r.audit.get("jvm", {}),
                    "driver_peak_rss_mb": _mb(jvm_peak_rss_bytes(spark)),  # the peak so far, after this one
                }
            )
        t0 = time.monotonic()
        con = connect(
            snap,
            params,
            admin_scraped=bool(manifest.get("admin_scraped")),
            ownership_in_zk=ownership_in_zk(manifest.get("load_manager")),
        )
        duck_counts = run_detections(con)
        duck_s = time.monotonic() - t0
        con.close()
        znodes = int(manifest.get("row_counts", {}).get("znodes", 0))
        # a bench audit joins no bookie scans, so the storage detections read nothing (DuckDB does not run them)
        spark_counts = {d: sum(c.values()) for d, c in result.counts.items() if d not in STORAGE_DETECTIONS}
        runs.append(
            {
                "topics": n,
                "snapshot": str(snap),
                "znodes": znodes,
                "generate_s": round(gen_s, 2),
                "spark_audit_s": round(spark_s, 2),
                "duckdb_s": round(duck_s, 2),
                "ratio_spark_over_duckdb": round(spark_s / duck_s, 2) if duck_s else None,
                "spark_s_per_million_znodes": round(spark_s / (znodes / 1e6), 2) if znodes else None,
                "duckdb_s_per_million_znodes": round(duck_s / (znodes / 1e6), 2) if znodes else None,
                "driver_peak_rss_mb": _mb(peak),
                "findings_spark": spark_counts,
                "findings_duckdb": duck_counts,
                "same_counts": spark_counts == duck_counts,
                "jvm": result.audit.get("jvm", {}),  # CPU, JIT, Spark codegen, GC and jobs of the audit's steps
                "stages": result.audit.get("stages"),  # Spark's own metrics of each step's stages
                "again": again,  # with repeat > 1: the same audit again in the same session
            }
        )
    return {
        "spark_startup_s": round(startup_s, 2),
        "spark_conf": conf,
        "cpus": os.cpu_count(),
        "load_1min": round(os.getloadavg()[0], 2),
        "master": master,
        "runs": runs,
    }
