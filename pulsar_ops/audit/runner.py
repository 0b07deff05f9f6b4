"""Run the audit in-process (CLI) or under spark-submit (jobs/audit.py): snapshot dir -> findings dir."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from pulsar_ops.audit import class_cache, etl, jvm_metrics, sql_files, stage_metrics
from pulsar_ops.audit.bookie_scans import check_scraped_dirs, read_scans, with_gc_settings
from pulsar_ops.audit.failures import classify, unreadable_file
from pulsar_ops.audit.manifest import manifest_summary, read_manifest
from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.session import (
    LOCAL_JVM_OPTIONS,
    SMALL_INPUT_JVM_OPTIONS,
    build_session,
    default_conf,
    set_unless_explicit,
)
from pulsar_ops.audit.sizing import SQL_SIZING_KEYS, local_defaults, small_snapshot, sql_defaults, this_machine
from pulsar_ops.audit.sizing import snapshot_bytes as sizing_snapshot_bytes
from pulsar_ops.audit.storage_view import DEFAULT_TOP_N, storage_summary
from pulsar_ops.errors import AuditError, PulsarOpsError, SnapshotError, debug_enabled
from pulsar_ops.findings import DETECTIONS, SEVERITIES, STORAGE_DETECTIONS, Finding, exit_code
from pulsar_ops.snapshot.reader import verify_parts

RECORDED_JVM_KEYS = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
INTERMEDIATE_DIR = "_intermediate"  # under --out: the materialised intermediate views, removed when the audit ends


@dataclass(frozen=True)
class AuditResult:
    findings: tuple[Finding, ...]
    counts: dict[str, dict[str, int]]
    exit_code: int
    out_dir: Path
    snapshot: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        return {"snapshot": self.snapshot, "audit": self.audit, "findings": [f.to_json() for f in self.findings]}


def sort_key(f: Finding) -> tuple[Any, ...]:
    order = DETECTIONS.index(f.detection) if f.detection in DETECTIONS else len(DETECTIONS)
    return (order, f.path or "", -1 if f.ledger_id is None else f.ledger_id, f.topic or "", f.subscription or "")


def count_findings(findings: tuple[Finding, ...], detections: list[str]) -> dict[str, dict[str, int]]:
    counts = {d: dict.fromkeys(SEVERITIES, 0) for d in detections}
    for f in findings:
        counts.setdefault(f.detection, dict.fromkeys(SEVERITIES, 0))[f.severity] += 1
    return counts


def audit_metadata(
    params: AuditParams, detections: list[str], findings: tuple[Finding, ...], wall: float, master: str
) -> dict[str, Any]:
    counts = count_findings(findings, detections)
    return {
        "params": params.to_json(),
        "detections": detections,
        "counts": counts,
        "severity_counts": {s: sum(c[s] for c in counts.values()) for s in SEVERITIES},
        "total": len(findings),
        "plannable": sum(1 for f in findings if f.plannable),
        "bytes_reclaimable": sum(f.bytes for f in findings if f.plannable),
        "wall_seconds": round(wall, 3),
        "engine": "spark",
        "master": master,
        "exit_code": exit_code(findings),
    }


def coverage_summary(covered: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``audit.coverage`` of findings.json: per coverage query, totals and the per-namespace rows."""
    out: dict[str, Any] = {}
    for name, rows in covered.items():
        out[name] = {
            "namespaces": len(rows),
            "cursors": sum(int(r.get("cursors") or 0) for r in rows),
            "backlog_entries": sum(int(r.get("backlog_entries") or 0) for r in rows),
            "backlog_bytes": sum(int(r.get("backlog_bytes") or 0) for r in rows),
            "by_namespace": rows,
        }
    return out


def write_json_atomic(path: Path, doc: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    tmp.replace(path)


@dataclass(frozen=True)
class SnapshotSize:
    """What the Spark settings are sized from: the manifest's row counts and the Parquet bytes (read once)."""

    row_counts: Mapping[str, int]
    parquet_bytes: int

    @classmethod
    def of(cls, snapshot_dir: Path, manifest: Mapping[str, Any]) -> SnapshotSize:
        return cls(row_counts(manifest), sizing_snapshot_bytes(snapshot_dir))


def row_counts(manifest: Mapping[str, Any]) -> Mapping[str, int]:
    """The manifest's rows per table (``{}`` when it has none: then the snapshot is not known to be small)."""
    counts = manifest.get("row_counts")
    return counts if isinstance(counts, dict) else {}


def session_conf(size: SnapshotSize, master: str, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings ``audit`` gives the session it builds: local-mode sizing (audit/sizing.py), then overrides."""
    conf: dict[str, str] = {}
    if master.startswith("local"):
        conf = local_defaults(size.row_counts, size.parquet_bytes, this_machine())
    conf.update(overrides or {})
    return conf


def jvm_options(size: SnapshotSize) -> tuple[str, ...]:
    """The local driver JVM's options for a snapshot of this size (audit/session.py)."""
    small = SMALL_INPUT_JVM_OPTIONS if small_snapshot(size.row_counts) else ()
    return (*LOCAL_JVM_OPTIONS, *small)


def size_sql(session: SparkSession, size: SnapshotSize) -> None:
    """Size the runtime SQL settings nobody set explicitly (a cluster session's, typically) for this snapshot."""
    wanted = sql_defaults(size.row_counts, size.parquet_bytes, max(1, int(session.sparkContext.defaultParallelism)))
    set_unless_explicit(session, {key: wanted[key] for key in SQL_SIZING_KEYS})


def conf_value(session: SparkSession, key: str) -> str | None:
    """The session's value of ``key``: set, else Spark's default, else ``None`` (a key with neither)."""
    try:
        value = session.conf.get(key)
    except Exception:  # Spark raises for a key that is neither set nor has a default
        return None
    return None if value is None else str(value)


def _not_storage(detection: str) -> bool:
    return detection not in STORAGE_DETECTIONS


def step_walls(timings: Mapping[str, float], materialised: list[etl.Materialised]) -> dict[str, float]:
    """Each labelled step's wall time, under the step names of its jobs' descriptions (audit/stage_metrics.py)."""
    walls = {"register": timings["register"]}
    walls.update({f"materialise {m.name}": m.seconds for m in materialised})
    walls.update({k: timings[k] for k in ("detections", "coverage", "storage", "findings") if k in timings})
    return walls


def run_audit(
    snapshot_dir: Path,
    out_dir: Path,
    params: AuditParams | None = None,
    *,
    spark: SparkSession | None = None,
    master: str = "local[*]",
    sql_root: Path | None = None,
    spark_conf: Mapping[str, str] | None = None,
    one_partition: bool | None = None,
    bookie_scans: Sequence[Path] = (),
    storage_top_n: int = DEFAULT_TOP_N,
) -> AuditResult:
    """Audit ``snapshot_dir`` into ``out_dir`` (``findings.json`` + ``findings/``). ``one_partition``: read every
    table as one partition (etl.read_parquet); by default when the snapshot is small (audit/sizing.py).
    ``bookie_scans``: ``scan-bookie`` output directories, validated before Spark starts (audit/bookie_scans.py);
    with them ``audit.storage`` is each bookie's capacity view, its top ``storage_top_n`` owners and oldest logs."""
    started = time.monotonic()
    snapshot_dir = Path(snapshot_dir)
    out_dir = Path(out_dir)
    manifest = read_manifest(snapshot_dir)
    finished = manifest.get("finished_at_ms")
    if not isinstance(finished, int):
        raise SnapshotError(f"{snapshot_dir}/manifest.json has no finished_at_ms")
    resolved = (params or AuditParams()).resolved(finished)
    if out_dir.exists() and not out_dir.is_dir():
        raise AuditError(f"--out {out_dir} exists and is not a directory", hint="pass a directory to --out")
    verify_parts(snapshot_dir)  # a truncated part file is `snapshot-invalid` naming it, not a Java stack trace
    sql_root = sql_root if sql_root is not None else sql_files.sql_root()  # `sql-not-found` before any JVM starts
    scans = read_scans([Path(p) for p in bookie_scans])  # `bookie-scan-invalid` before any engine starts
    scans = check_scraped_dirs(scans, manifest.get("bookie_dirs"))  # against each bookie's scraped server_config
    scans = with_gc_settings(scans, manifest.get("bookie_gc"), resolved.bookie.gc)  # each bookie's own GC settings
    started_ms = manifest.get("started_at_ms")
    snapshot_times = (started_ms if isinstance(started_ms, int) else finished, finished)
    out_dir.mkdir(parents=True, exist_ok=True)
    work_dir = out_dir / INTERMEDIATE_DIR
    size = SnapshotSize.of(snapshot_dir, manifest) if spark is None else None
    sized = session_conf(size, master) if size is not None else {}  # the product's: the operator's keys win
    conf = {**sized, **(spark_conf or {})}
    try:
        session = spark or build_session(
            master=master, conf=spark_conf, jvm_options=jvm_options(size or SnapshotSize({}, 0)), defaults=sized
        )
        if size is not None:
            size_sql(session, size)
        timings: dict[str, float] = {"session": time.monotonic() - started}
        mark = steps_started = time.monotonic()
        counters = step_counters = jvm_metrics.read(session)
        jvm_steps: dict[str, dict[str, float | int | None]] = {}  # the JIT's and codegen's share of each step

        def jvm_step(name: str) -> None:
            nonlocal step_counters
            now = jvm_metrics.read(session)
            jvm_steps[name] = jvm_metrics.delta(step_counters, now)
            step_counters = now

        stages_before = stage_metrics.last_stage_id(session)
        session.sparkContext.setJobDescription(f"{stage_metrics.STEP_PREFIX}register")
        small = small_snapshot(row_counts(manifest)) if one_partition is None else one_partition  # local or cluster
        admin_scraped = bool(manifest.get("admin_scraped"))
        from pulsar_ops.pulsar_names import ownership_in_zk, service_unit_table_view

        load_manager = manifest.get("load_manager") or {}
        owned_in_zk = ownership_in_zk(load_manager)
        sus_allowed, sus_why = service_unit_table_view(load_manager)
        registered = sorted((load_manager.get("registrations") or {}).keys())
        etl.extract(
            session,
            snapshot_dir,
            resolved,
            admin_scraped=admin_scraped,
            ownership_in_zk=owned_in_zk,
            service_unit_table_view=sus_allowed,
            registered_brokers=registered,
            sql_root=sql_root,
            one_partition=small,
            bookie_scans=scans,
            snapshot_times=snapshot_times,
        )
        timings["register"], mark = time.monotonic() - mark, time.monotonic()
        jvm_step("register")
        small_tables = etl.small_tables(row_counts(manifest))  # the tables the manifest counts small
        materialised = etl.materialise(session, work_dir, sql_root, one_partition=small, small_tables=small_tables)
        timings["intermediate"], mark = time.monotonic() - mark, time.monotonic()
        jvm_step("intermediate")
        session.sparkContext.setJobDescription(f"{stage_metrics.STEP_PREFIX}detections")  # one job writes them all
        small_views = etl.broadcastable(materialised) | small_tables
        # with scans, the storage detections are the storage step's (below); without, they find nothing and stay
        # in the one union
        frame, detections = etl.transform(session, sql_root, small_views, only=_not_storage if scans else None)
        if scans:
            frame = etl.write_findings(frame, work_dir / "findings_detections") if detections else frame
        else:
            rows = etl.load(frame, out_dir).collect()
        timings["detections"], mark = time.monotonic() - mark, time.monotonic()
        jvm_step("detections")
        session.sparkContext.setJobDescription(f"{stage_metrics.STEP_PREFIX}coverage")
        covered = etl.coverage(session, sql_root)
        sus = etl.service_unit_summary(session) if sus_allowed else None
        stores = etl.transaction_store_summary(session)
        timings["coverage"], mark = time.monotonic() - mark, time.monotonic()
        jvm_step("coverage")
        stored: dict[str, list[dict[str, Any]]] | None = None
        storage_one = False
        if scans:  # the storage detections and the capacity view read the scans' tables and what they name
            session.sparkContext.setJobDescription(stage_metrics.STEP_PREFIX + stage_metrics.storage_step())
            storage_one = etl.storage_one_partition(scans, small)
            if storage_one != small:  # small scans of a large snapshot: every input read again as one partition
                etl.repartition_inputs(session, snapshot_dir, scans, materialised, sql_root, storage_one)
            # the shared views, the storage detections (over them) and the capacity view, from two driver threads
            storage_frame, storage_detections, stored = etl.storage_stage(
                session, work_dir, sql_root, small_views, storage_top_n, one_partition=storage_one
            )
            if storage_one != small:
                etl.partition_conf(session, small)  # the snapshot's own settings again (a session that audits on)
            timings["storage"], mark = time.monotonic() - mark, time.monotonic()
            jvm_step("storage")
            session.sparkContext.setJobDescription(f"{stage_metrics.STEP_PREFIX}findings")
            run = {*detections, *storage_detections}
            detections = [f.name for f in sql_files.detect_files(sql_root) if f.name in run]  # in file order
            rows = etl.load(frame.unionByName(storage_frame), out_dir).collect()
            timings["findings"] = time.monotonic() - mark
            jvm_step("findings")
        session.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        jvm = jvm_metrics.delta(counters, jvm_metrics.read(session))
        jvm["wall_s"] = round(time.monotonic() - steps_started, 2)
        driver_java = session.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""
        cache_state = class_cache.state_of(driver_java)
        stages = stage_metrics.read(session, stages_before) if stages_before is not None else None
    except PulsarOpsError as e:
        # a step's error whose Spark cause is a damaged snapshot file: that file, not the step, is the problem
        unreadable = unreadable_file(e.__cause__, snapshot_dir) if e.__cause__ is not None else None
        if unreadable is None or debug_enabled():
            raise
        raise unreadable from e
    except Exception as e:  # a Spark/JVM failure: an error code and the setting to change (frames with --debug)
        known = classify(e, snapshot_dir=snapshot_dir)
        if known is None or debug_enabled():
            raise
        raise known from e
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    findings = tuple(sorted((Finding.from_json(r.asDict()) for r in rows), key=sort_key))
    wall = time.monotonic() - started
    snapshot = manifest_summary(manifest, snapshot_dir)
    audit = audit_metadata(resolved, detections, findings, wall, str(session.sparkContext.master))
    # sized, the JVMs' options (the operator's, under spark-submit), then the plan's
    product = default_conf(str(session.sparkContext.master), None, starts_jvm=False)
    recorded = {*conf, *product, *SQL_SIZING_KEYS, *RECORDED_JVM_KEYS, *etl.PLAN_CONF, *etl.ONE_PARTITION_CONF}
    audit["spark_conf"] = {k: conf_value(session, k) for k in sorted(recorded)}
    audit["coverage"] = coverage_summary(covered)
    # whether a bundle without a /namespace ownership znode may be called unowned (docs/detections.md "Pulsar's own
    # names"): under the extensible load manager it may not, and without every broker's listing the loaded state
    # of those topics is an unknown scope: expired-retention-unloaded judges none of them
    # /service_unit_state (the extensible load manager's metadata-store table view) is read as the truth only when
    # nothing contradicts it (sql/intermediate/14_int_ownership_source.sql): then absent /namespace znodes are not
    # needed, and a bundle with no Owned value is unowned
    sus_known = bool(sus and sus["known"])
    audit["ownership"] = {
        "load_manager": load_manager.get("kind", "not recorded"),
        "in_zookeeper": owned_in_zk,
        "service_unit_state": (sus if sus is not None else {"known": False, "why_not": sus_why, "bundles": {}}),
        "unknown_scope": not owned_in_zk and not sus_known and not bool(manifest.get("admin_scraped")),
        # per kind, whether what opens each transaction store has it open (pending-ack: its origin topic loaded;
        # coordinator log: its coordinator's bundle owned): {"yes": n, "no": n, "unknown": n}
        "transaction_stores": stores,
    }
    audit["storage"] = storage_summary(stored, storage_top_n) if stored is not None else None
    audit["bookie_scans"] = [
        s.summary(snapshot_times[1]) for s in scans
    ]  # each bookie's scope, and what a partial one withheld
    audit["intermediate"] = {m.name: m.to_json() for m in materialised}
    audit["timings_s"] = {k: round(v, 2) for k, v in timings.items()}  # where the wall time went, per step
    # and what the JVM spent it on (audit/jvm_metrics.py), over the steps after the session; its class-data archive
    audit["jvm"] = {**jvm, "class_cache": cache_state}
    audit["jvm_by_step"] = jvm_steps  # the same counters per step (timings_s's steps after the session)
    audit["stages"] = (  # and Spark's own metrics of the stages each step ran (audit/stage_metrics.py)
        stage_metrics.summary(stages, step_walls(timings, materialised), jvm["wall_s"]) if stages is not None else None
    )
    result = AuditResult(
        findings=findings,
        counts=audit["counts"],
        exit_code=audit["exit_code"],
        out_dir=out_dir,
        snapshot=snapshot,
        audit=audit,
    )
    write_json_atomic(out_dir / "findings.json", result.document())
    return result
