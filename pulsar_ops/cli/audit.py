"""`pulsar-ops audit SNAPSHOT --out DIR`: run the Spark detections over a snapshot, write findings.

Exit codes (findings.exit_code): 0 nothing found or info only, 1 warnings, 2 critical, 3 the tool failed.
``--json`` prints ``{"snapshot", "audit", "findings"}`` on stdout; the human summary goes to stderr.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.audit.sql_files import STORAGE_TOP_N_MAX
from pulsar_ops.audit.storage_view import DEFAULT_TOP_N
from pulsar_ops.cli.common import emit_json, err_console, guarded, info
from pulsar_ops.errors import ConfigError


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
    app.command("audit")(audit)


@guarded
def audit(
    snapshot: Path | None = typer.Argument(None, help="Snapshot directory written by `pulsar-ops scrape`."),
    out: Path | None = typer.Option(
        None, "--out", help="Audit directory to write (findings.json + findings/); with --compare-scans a JSON file."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the findings document on stdout."),
    min_age: str | None = typer.Option(None, "--min-age", help="Minimum orphan age, e.g. 24h (default 24h)."),
    inactive_after: str | None = typer.Option(
        None, "--inactive-after", help="Subscription inactivity threshold, e.g. 7d (default 7d)."
    ),
    now: str | None = typer.Option(
        None, "--now", help="Evaluation time, ISO-8601 or epoch ms (default: the snapshot's finish time)."
    ),
    broker_config: Path | None = typer.Option(
        None, "--broker-config", help="broker.conf (key=value lines) or a JSON object of broker settings."
    ),
    bookie_scan: list[Path] = typer.Option(
        [],
        "--bookie-scan",
        help="A `pulsar-ops scan-bookie` output directory (repeatable, one per bookie): adds the storage "
        "detections (unreclaimed-ledger-data, ledger-data-missing, stale-entry-log).",
    ),
    storage_top: int = typer.Option(
        DEFAULT_TOP_N,
        "--storage-top",
        min=1,
        max=STORAGE_TOP_N_MAX,
        help="With --bookie-scan: how many owners (tenants, namespaces, topics) and oldest entry logs per bookie "
        "the capacity view (findings.json audit.storage) keeps.",
    ),
    bookie_config: Path | None = typer.Option(
        None,
        "--bookie-config",
        help="The bookies' bookkeeper.conf (GC and compaction settings; default: Pulsar's shipped values).",
    ),
    master: str | None = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    config: Path | None = typer.Option(
        None, "--config", help="JSON file with the same parameters (flags override it); see sql/README.md."
    ),
    prometheus: Path | None = typer.Option(
        None, "--prometheus", help="Also write Prometheus textfile metrics to this file."
    ),
    spark_conf: list[str] = typer.Option(
        [],
        "--spark-conf",
        help="A Spark setting KEY=VALUE (repeatable), e.g. --spark-conf spark.driver.memory=12g. Overrides the "
        "config file's spark_conf and the local-mode defaults derived from the machine and the snapshot.",
    ),
    compare_scans: list[str] = typer.Option(
        [],
        "--compare-scans",
        metavar="OLD=NEW",
        help="Instead of an audit: two `scan-bookie` directories of one bookie, before and after a reclaim "
        "(repeatable, one per bookie); reports per bookie the freed bytes, against --plan's prediction.",
    ),
    plan: Path | None = typer.Option(
        None, "--plan", help="With --compare-scans: the plan whose bookie-gc actions predicted the reclaim."
    ),
) -> None:
    """Audit a snapshot: orphan and dangling ledgers, znode leaks, expired retention, ack holes, ...

    In local mode the Spark driver's JVM maps a class-data archive of Spark's classes that the first local audit
    builds as its JVM exits (~/.cache/pulsar-ops/jvm, about 190 MB; PULSAR_OPS_JVM_CACHE=DIR moves it, =off
    disables it): later sessions start in about half the time."""
    if compare_scans:
        from pulsar_ops.cli.compare_scans import run_compare

        raise typer.Exit(run_compare(compare_scans, plan, out, json_out))
    if snapshot is None or out is None:
        raise ConfigError(
            "audit needs SNAPSHOT and --out (or --compare-scans OLD=NEW)",
            hint="pulsar-ops audit SNAPSHOT --out DIR",
            code="audit-args-missing",
        )
    from pulsar_ops.audit.params import (
        AuditParams,
        load_bookie_config,
        load_broker_config,
        load_config_file,
        params_from_config,
        parse_duration_ms,
        parse_time_ms,
    )

    params = AuditParams()
    doc = load_config_file(config) if config is not None else {}
    params = params_from_config(doc, params)
    if broker_config is not None:
        params = replace(params, broker=load_broker_config(broker_config, params.broker))
    if bookie_config is not None:
        params = replace(params, bookie=load_bookie_config(bookie_config))
    if min_age is not None:
        params = replace(params, min_age_ms=parse_duration_ms(min_age, flag="--min-age"))
    if inactive_after is not None:
        params = replace(params, inactive_after_ms=parse_duration_ms(inactive_after, flag="--inactive-after"))
    if now is not None:
        params = replace(params, now_ms=parse_time_ms(now))
    from pulsar_ops.audit.sizing import parse_spark_conf, spark_conf_from_config

    conf = spark_conf_from_config(doc)
    conf.update(parse_spark_conf(spark_conf))
    spark_master = master or str(doc.get("master") or "local[*]")
    prom = prometheus or (Path(str(doc["prometheus"])) if doc.get("prometheus") else None)

    from pulsar_ops.audit.runner import run_audit

    info(f"auditing {snapshot} with Spark ({spark_master}) ...")
    result = run_audit(
        snapshot,
        out,
        params,
        master=spark_master,
        spark_conf=conf,
        bookie_scans=bookie_scan,
        storage_top_n=storage_top,
    )
    _summarise(result.out_dir, result.document())
    if prom is not None:
        _write_prometheus(result.out_dir, prom)
    if json_out:
        emit_json(result.document())
    raise typer.Exit(result.exit_code)


def _summarise(out_dir: Path, doc: dict[str, object]) -> None:
    try:
        from pulsar_ops.report.model import load_report
        from pulsar_ops.report.terminal import summary_lines
    except ImportError:  # the report package is optional at this layer
        _minimal_summary(doc)
        return
    for line in summary_lines(load_report(out_dir)):
        err_console.print(line, markup=False, highlight=False)
    snap = doc.get("snapshot")
    for table, why in ((snap.get("tables_read_as_empty") or {}) if isinstance(snap, dict) else {}).items():
        err_console.print(f"snapshot table {table}: {why}", markup=False, highlight=False)
    err_console.print(f"findings written to {out_dir / 'findings.json'}", markup=False)


def _minimal_summary(doc: dict[str, object]) -> None:
    audit = doc.get("audit")
    if not isinstance(audit, dict):
        return
    for detection, sev in audit.get("counts", {}).items():
        err_console.print(f"{detection:28} {sev}", markup=False)
    err_console.print(f"bytes reclaimable: {audit.get('bytes_reclaimable', 0)}", markup=False)


def _write_prometheus(out_dir: Path, path: Path) -> None:
    from pulsar_ops.report import prometheus
    from pulsar_ops.report.model import load_report

    prometheus.write(path, load_report(out_dir))
    info(f"prometheus metrics written to {path}")
