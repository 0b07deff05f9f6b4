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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulsar_ops.audit.jvm_metrics import driver_pid
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.stage_metrics import storage_step
from pulsar_ops.errors import PulsarOpsError
from pulsar_ops.findings import STORAGE_DETECTIONS

AHEAD_MS = 25 * 3_600_000  # with scans: the seeder's clock this far ahead, so its storage defects are old enough


def seeded_snapshot(
    out: Path, topics: int, seed: int = 1, now_ms: int | None = None, bookie_dirs: Path | None = None
) -> Path:
    """Seed ``topics`` healthy topics (plus every injected defect) into an embedded ZooKeeper and scrape it; with
    ``bookie_dirs``, also write every seeded bookie's ledger directories there (testing/bookie_dirs.py)."""
    from pulsar_ops import zkconn
    from pulsar_ops.scrape.run import ScrapeConfig, scrape
    from pulsar_ops.testing.model_spec import SeedOptions
    from pulsar_ops.testing.seeder import seed_cluster
    from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

    opts = SeedOptions(
        topics=topics,
        seed=seed,
        persistent_ownership=True,
        now_ms=now_ms,
        bookie_dirs=str(bookie_dirs) if bookie_dirs is not None else None,
    )
    with EmbeddedZooKeeper(data_dir=out.parent / "zk", heap_mb=3072) as zk:
        client = zkconn.connect(zk.hosts, timeout=60)
        try:
            seed_cluster(client, None, opts)
        finally:
            zkconn.close(client)
        scrape(ScrapeConfig(zookeeper=zk.hosts, out=out))
    shutil.rmtree(out.parent / "zk", ignore_errors=True)
    return out


def scan_seeded_bookies(bookie_dirs: Path, out: Path) -> list[Path]:
    """`scan-bookie` of every bookie the seeder wrote directories for (as an operator runs it on each host,
    unthrottled), each into ``out/<bookie>``; returns the scan directories."""
    import json

    from pulsar_ops.bookiescan.run import ScanConfig, scan
    from pulsar_ops.testing.bookie_dirs import LAYOUT_FILE

    scans = []
    for b in json.loads((bookie_dirs / LAYOUT_FILE).read_text(encoding="utf-8"))["bookies"]:
        target = out / str(b["bookie_id"]).replace(":", "_")
        scan(
            ScanConfig(
                ledger_dirs=[Path(d) for d in b["ledger_dirs"]],
                bookie_id=str(b["bookie_id"]),
                out=target,
                max_scan_mb_s=0,
            )
        )
        scans.append(target)
    return scans


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
    scans: bool = False,
    bookie_scans: list[Path] | None = None,
    now_ms: int | None = None,
    spark_conf: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Time the Spark audit and DuckDB over the same snapshot(s); returns the figures (``runs``, one per size).

    ``scans``: seed every size with its six bookies' directories (testing/bookie_dirs.py, the seeder's clock
    :data:`AHEAD_MS` ahead so its storage defects are old enough) and scan each bookie; ``bookie_scans`` (with
    ``snapshot``): those scans. With scans, each audit is two stages timed apart: the metadata audit (no scan:
    what a snapshot-only audit runs) and the storage stage (the storage detections and the capacity view over
    the scans, in an audit of its own whose SQL tree holds only them), each also on DuckDB. ``spark_conf``: the
    operator's settings (``--spark-conf``), over the sizing's defaults, as ``audit --spark-conf`` sets them.

    The seeded snapshots and audit outputs live in a temporary directory removed at the end (a 600,000-topic
    snapshot is 1.4 GB), unless ``keep``: then ``work_dir`` in the figures says where they are.
    """
    require_duckdb()  # before seeding anything or starting a JVM
    work = Path(tempfile.mkdtemp(prefix="pulsar-ops-bench-audit-"))
    try:
        doc = _run(
            topics,
            snapshot,
            master,
            info,
            work,
            max(1, repeat),
            scans,
            list(bookie_scans or []),
            now_ms,
            dict(spark_conf or {}),
        )
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    doc["work_dir"] = str(work) if keep else None
    return doc


@dataclass(frozen=True)
class Snap:
    topics: int | None
    path: Path
    generate_s: float
    scans: tuple[Path, ...] = ()
    scan_s: float = 0.0
    now_ms: int | None = None


def storage_sql_root(work: Path) -> Path:
    """A copy of the SQL tree whose detections are only the storage ones and without coverage: an audit over
    it with scans runs the storage stage (and the intermediates they read, timed apart). Written afresh on every
    run: a copy left in a reused ``--workdir`` by an older version would run that version's SQL."""
    from pulsar_ops.audit.sql_files import sql_root

    src = sql_root()
    root = work / "sql-storage"
    if root.exists():
        shutil.rmtree(root)
    for kind in ("staging", "intermediate", "storage"):
        shutil.copytree(src / kind, root / kind)
    (root / "coverage").mkdir(parents=True)
    (root / "detect").mkdir()
    for name in sorted(STORAGE_DETECTIONS):
        f = src / "detect" / f"{name.replace('-', '_')}.sql"
        shutil.copy2(f, root / "detect" / f.name)
    return root


def _stage(result: Any, steps: tuple[str, ...], wall_s: float) -> dict[str, Any]:
    """One stage's figures from an audit: wall (the given), and Spark's stages/shuffles/task CPU of ``steps``."""
    by_step = (result.audit.get("stages") or {}).get("by_step") or {}
    figs = [v for k, v in by_step.items() if k in steps or k.split(" ", 1)[0] in steps]  # "storage owners": storage
    out: dict[str, Any] = {"wall_s": round(wall_s, 2)}
    for key in ("stages", "shuffles", "tasks", "task_cpu_s", "shuffle_read_mb", "shuffle_write_mb", "spill_mb"):
        vals = [f[key] for f in figs if isinstance(f.get(key), int | float)]
        out[key] = round(sum(vals), 2) if vals else None
    out["jvm"] = result.audit.get("jvm", {})
    out["timings_s"] = result.audit.get("timings_s", {})
    out["jvm_by_step"] = result.audit.get("jvm_by_step", {})  # JIT and codegen per step, and per intermediate
    out["intermediate"] = result.audit.get("intermediate", {})
    return out


def _run(
    topics: int | list[int],
    snapshot: Path | None,
    master: str,
    info: Any,
    work: Path,
    repeat: int = 1,
    scans: bool = False,
    bookie_scans: list[Path] | None = None,
    now_ms: int | None = None,
    spark_conf: dict[str, str] | None = None,
) -> dict[str, Any]:
    from pulsar_ops.audit.manifest import read_manifest
    from pulsar_ops.audit.runner import SnapshotSize, jvm_options, session_conf
    from pulsar_ops.audit.session import build_session

    sizes = [topics] if isinstance(topics, int) else list(topics)
    snaps: list[Snap] = []
    if snapshot is not None:
        snaps.append(Snap(None, snapshot, 0.0, tuple(bookie_scans or ()), now_ms=now_ms))
    else:
        for size in sizes:
            info(f"seeding and scraping {size:,} topics{' with bookie directories' if scans else ''} ...")
            base = work / f"snap-{size}"
            now = int(time.time() * 1000) + AHEAD_MS if scans else None
            t0 = time.monotonic()
            snap = seeded_snapshot(base / "snap", size, now_ms=now, bookie_dirs=base / "bookies" if scans else None)
            gen_s = time.monotonic() - t0
            found: tuple[Path, ...] = ()
            scan_s = 0.0
            if scans:
                info(f"scanning the seeded bookies of {size:,} topics ...")
                t0 = time.monotonic()
                found = tuple(scan_seeded_bookies(base / "bookies", base / "scans"))
                scan_s = time.monotonic() - t0
                shutil.rmtree(base / "bookies", ignore_errors=True)  # the scans are what the audit reads
            snaps.append(Snap(size, snap, gen_s, found, scan_s, now))
    manifests = [read_manifest(s.path) for s in snaps]
    largest = max(range(len(snaps)), key=lambda i: sum(manifests[i].get("row_counts", {}).values()))
    sized_for = SnapshotSize.of(snaps[largest].path, manifests[largest])
    conf = session_conf(sized_for, master)
    t0 = time.monotonic()
    given = dict(spark_conf or {})
    spark = build_session(master=master, conf=given, jvm_options=jvm_options(sized_for), defaults=conf)
    for key, value in given.items():  # a session already running (spark-submit, a test's) takes the SQL ones now
        if key.startswith("spark.sql."):
            spark.conf.set(key, value)
    startup_s = time.monotonic() - t0
    runs = [_one(spark, s, m, work, repeat, info) for s, m in zip(snaps, manifests, strict=True)]
    return {
        "spark_startup_s": round(startup_s, 2),
        "spark_conf": {**conf, **given},
        "spark_conf_given": given,  # --spark-conf: the operator's, over the sizing's defaults
        "cpus": os.cpu_count(),
        "load_1min": round(os.getloadavg()[0], 2),
        "master": master,
        "runs": runs,
    }


def _one(spark: Any, snap: Snap, manifest: dict[str, Any], work: Path, repeat: int, info: Any) -> dict[str, Any]:
    from pulsar_ops.audit.runner import run_audit
    from pulsar_ops.bench.duckdb_sql import connect, register_scans, run_detections, run_storage
    from pulsar_ops.pulsar_names import ownership_in_zk

    n = snap.topics
    params = AuditParams(now_ms=snap.now_ms if snap.now_ms is not None else int(manifest["finished_at_ms"]))
    storage_root = storage_sql_root(work) if snap.scans else None
    info(f"auditing {snap.path} with Spark and DuckDB{' (metadata, then storage)' if snap.scans else ''} ...")
    out = work / f"out-{n if n is not None else 'given'}"
    audits: list[dict[str, Any]] = []  # one per repeat: the metadata audit, then the storage stage
    first: Any = None
    first_storage: Any = None
    peak = None
    for i in range(repeat):  # the first is cold; the others in the same session, as a driver that outlives one
        t0 = time.monotonic()
        result = run_audit(snap.path, out.with_name(f"{out.name}-{i + 1}"), params, spark=spark)
        wall = time.monotonic() - t0
        entry: dict[str, Any] = {
            "metadata": _stage(result, ("intermediate", "detections", "coverage"), wall),
        }
        entry["metadata"]["steps"] = result.audit.get("stages")
        if first is None:
            first, peak = result, jvm_peak_rss_bytes(spark)
        else:
            entry["same_findings"] = [f.to_json() for f in result.findings] == [f.to_json() for f in first.findings]
        if storage_root is not None:
            t0 = time.monotonic()
            stored = run_audit(
                snap.path,
                out.with_name(f"{out.name}-storage-{i + 1}"),
                params,
                spark=spark,
                sql_root=storage_root,
                bookie_scans=list(snap.scans),
            )
            total = time.monotonic() - t0
            timings = stored.audit.get("timings_s", {})
            steps = ("detections", "storage", "findings")  # findings: the write of every finding, with scans
            wall = sum(float(timings.get(k, 0.0)) for k in steps)
            entry["storage"] = _stage(stored, steps, wall)
            entry["storage"]["audit_s"] = round(total, 2)  # with its own copy of the intermediates
            entry["storage"]["steps"] = stored.audit.get("stages")
            if first_storage is None:
                first_storage = stored
            else:
                entry["same_storage_findings"] = [f.to_json() for f in stored.findings] == [
                    f.to_json() for f in first_storage.findings
                ]
        entry["driver_peak_rss_mb"] = _mb(jvm_peak_rss_bytes(spark))  # the peak so far, after this audit
        audits.append(entry)
    con = connect(
        snap.path,
        params,
        admin_scraped=bool(manifest.get("admin_scraped")),
        ownership_in_zk=ownership_in_zk(manifest.get("load_manager")),
    )
    t0 = time.monotonic()
    duck_counts = run_detections(con)
    duck_s = time.monotonic() - t0
    duck_storage: dict[str, Any] | None = None
    if snap.scans:
        register_scans(con, list(snap.scans), params, manifest)
        t0 = time.monotonic()
        duck_seconds: dict[str, float] = {}
        duck_storage_counts, storage_rows = run_storage(con, seconds=duck_seconds)
        duck_storage = {
            "wall_s": round(time.monotonic() - t0, 2),
            "findings": duck_storage_counts,
            "storage_rows": storage_rows,
            "seconds": duck_seconds,
        }
    con.close()
    znodes = int(manifest.get("row_counts", {}).get("znodes", 0))
    spark_s = audits[0]["metadata"]["wall_s"]
    spark_counts = {d: sum(c.values()) for d, c in first.counts.items() if d not in STORAGE_DETECTIONS}
    doc: dict[str, Any] = {
        "topics": n,
        "snapshot": str(snap.path),
        "znodes": znodes,
        "generate_s": round(snap.generate_s, 2),
        "spark_audit_s": spark_s,
        "duckdb_s": round(duck_s, 2),
        "ratio_spark_over_duckdb": round(spark_s / duck_s, 2) if duck_s else None,
        "spark_s_per_million_znodes": round(spark_s / (znodes / 1e6), 2) if znodes else None,
        "duckdb_s_per_million_znodes": round(duck_s / (znodes / 1e6), 2) if znodes else None,
        "driver_peak_rss_mb": _mb(peak),
        "findings_spark": spark_counts,
        "findings_duckdb": duck_counts,
        "same_counts": spark_counts == duck_counts,
        "jvm": first.audit.get("jvm", {}),  # CPU, JIT, Spark codegen, GC and jobs of the audit's steps
        "stages": first.audit.get("stages"),  # Spark's own metrics of each step's stages
        "audits": audits,  # per repeat: each stage's wall, Spark stages/shuffles, JVM figures
        "again": [  # with repeat > 1: the metadata audit again in the same session
            {
                "spark_audit_s": a["metadata"]["wall_s"],
                "same_findings": a.get("same_findings", True),
                "jvm": a["metadata"]["jvm"],
                "driver_peak_rss_mb": a["driver_peak_rss_mb"],
            }
            for a in audits[1:]
        ],
    }
    if snap.scans and first_storage is not None and duck_storage is not None:
        spark_storage = {d: sum(c.values()) for d, c in first_storage.counts.items() if d in STORAGE_DETECTIONS}
        storage_s = audits[0]["storage"]["wall_s"]
        doc["scans"] = {
            "bookies": len(snap.scans),
            "scan_s": round(snap.scan_s, 2),
            "pairs": _scan_pairs(snap.scans),
            "storage_spark_s": storage_s,
            "storage_duckdb_s": duck_storage["wall_s"],
            "ratio_storage_spark_over_duckdb": round(storage_s / duck_storage["wall_s"], 2)
            if duck_storage["wall_s"]
            else None,
            "ratio_storage_over_metadata": round(storage_s / spark_s, 2) if spark_s else None,
            "findings_spark": spark_storage,
            "findings_duckdb": duck_storage["findings"],
            "same_counts": spark_storage == duck_storage["findings"],
            "storage_rows_duckdb": duck_storage["storage_rows"],
            "queries": storage_queries(audits[0]["storage"].get("steps"), duck_storage["seconds"]),
        }
    return doc


def storage_queries(steps: dict[str, Any] | None, duck_seconds: dict[str, float]) -> list[dict[str, Any]]:
    """The cold storage stage query by query, Spark beside DuckDB: each storage step's task CPU seconds and seconds in
    Spark's stages (``in_stages_s``: the stages' wall, not the driver's planning), DuckDB's wall seconds for the same
    SQL (``storage``: the three storage detections, one statement in Spark), the heaviest by task CPU first. Where
    the ratio of the whole stage stands apart from DuckDB's, this says which query holds it. Task CPU is the measure
    (``ratio_task_cpu``): the stage runs its statements from two driver threads (etl.STORAGE_THREADS), so a query's
    seconds in stages count the other thread's tasks running beside it (stale_keepers: 5.06 s in stages for 0.59 s
    of task CPU at 600,000 topics)."""
    by_step = (steps or {}).get("by_step") or {}
    out = []
    for step, duck in duck_seconds.items():
        m = by_step.get(step) or {}
        in_stages, cpu = m.get("in_stages_s"), m.get("task_cpu_s")
        out.append(
            {
                "query": "detections" if step == storage_step() else step.removeprefix(storage_step("")),
                "spark_in_stages_s": in_stages,
                "spark_task_cpu_s": cpu,
                "duckdb_s": round(duck, 2),
                "ratio_task_cpu": round(cpu / duck, 2) if cpu is not None and duck > 0 else None,
                "ratio_in_stages": round(in_stages / duck, 2) if in_stages is not None and duck > 0 else None,
            }
        )
    return sorted(out, key=lambda q: -(q["spark_task_cpu_s"] or 0.0))


def _scan_pairs(scans: tuple[Path, ...]) -> int | None:
    """(ledger, log) pairs over the scans (rows of their ``entry_log_ledgers`` tables)."""
    import pyarrow.parquet as pq

    from pulsar_ops.audit.bookie_scans import read_scans

    total = 0
    try:
        for s in read_scans(list(scans)):
            total += pq.ParquetFile(s.tables["entry_log_ledgers"]).metadata.num_rows
    except Exception:
        return None
    return total
