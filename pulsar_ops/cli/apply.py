"""`pulsar-ops apply PLAN.json --phase mark|delete`: two-phase, journaled, compare-and-set apply.

Exit codes: 0 everything done (or a dry run), 1 some actions skipped, still pending or (mark) already disproved
(``would-skip``), 2 some actions failed, 3 the tool failed (nothing is changed by a refusal: quarantine,
confirmation, journal conflict, checksum, target).
"""

from __future__ import annotations

from pathlib import Path

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.cli.common import (
    ZK_AUTH,
    ZK_AUTH_FILE,
    ZK_SASL,
    ZK_SASL_FILE,
    ZK_TLS_CA,
    ZK_TLS_CERT,
    ZK_TLS_KEY,
    confirm,
    emit_json,
    err_console,
    guarded,
)
from pulsar_ops.errors import ConfigError
from pulsar_ops.repair.admin_writer import AdminApi
from pulsar_ops.repair.apply_run import ApplyRequest, run_apply
from pulsar_ops.repair.executor import ApplyReport
from pulsar_ops.repair.kinds.bookie_gc import BookieApi, GcApply
from pulsar_ops.units import parse_duration_ms
from pulsar_ops.zkconn import security_from_flags

_SHOW = 50


def _say(line: str, style: str | None = None) -> None:
    err_console.print(line, markup=False, highlight=False, emoji=False, style=style)


def exit_code_for(report: ApplyReport) -> int:
    counts = report.counts()
    if counts.get("failed"):
        return 2
    if report.applied and (counts.get("skipped") or counts.get("pending") or counts.get("would-skip")):
        return 1
    return 0


def print_report(report: ApplyReport) -> None:
    mode = "applied" if report.applied else "DRY RUN (nothing changed; add --apply to act)"
    _say(f"apply --phase {report.phase}: {mode}", style="bold")
    _say(f"  plan {report.plan_id} (checksum {report.plan_checksum[:16]}...)")
    _say(f"  journal {report.journal}")
    _say(f"  backup dir {report.backup_dir}")
    shown = 0
    for o in report.outcomes:
        if o.outcome in ("committed", "marked") and report.applied:
            continue
        if shown >= _SHOW:
            _say(f"  ... {len(report.outcomes) - shown} more (see --json)")
            break
        _say(f"  {o.outcome:<12} {o.kind:<24} {o.target}  {o.reason}".rstrip())
        shown += 1
    _say("  counts: " + ", ".join(f"{k}={v}" for k, v in report.counts().items()))


def _admin(url: str | None, conf_path: Path | None, token: str | None, timeout_s: float) -> AdminApi | None:
    """The admin-API client for delete-subscription actions (None when no URL is given or in client.conf)."""
    from pulsar_ops.repair.admin_writer import HttpAdmin
    from pulsar_ops.scrape.client_conf import read_client_conf
    from pulsar_ops.scrape.http import admin_settings, make_client

    conf = read_client_conf(conf_path) if conf_path else None
    url = url or (conf.admin_url() if conf else None)
    if not url:
        return None
    settings, insecure = admin_settings(conf, token, timeout_s)
    if insecure:
        _say("warning: tlsAllowInsecureConnection=true: the broker is not verified")
    return HttpAdmin(make_client(url, settings))


def _bookie_gc(pairs: list[str], timeout_s: float, interval_s: float, wait_s: float) -> GcApply:
    """bookie-gc actions' clients: ``--bookie-http ID=URL`` first, else the endpoint the plan recorded."""
    from pulsar_ops.repair.bookie_writer import bookie_client

    urls: dict[str, str] = {}
    for p in pairs:
        bid, sep, url = p.partition("=")
        if not sep or not bid or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"--bookie-http {p!r}: expected BOOKIE_ID=http(s)://host:port",
                hint="e.g. --bookie-http bookie-1:3181=http://bookie-1:8000",
                code="bookie-http-invalid",
            )
        urls[bid] = url
    made: dict[str, BookieApi] = {}

    def clients(bookie_id: str, planned: str | None) -> BookieApi | None:
        url = urls.get(bookie_id) or planned
        if url is None:
            return None
        if url not in made:
            made[url] = bookie_client(url, timeout_s)
        return made[url]

    return GcApply(clients=clients, interval_s=interval_s, timeout_s=wait_s)


def register(app: typer.Typer) -> None:
    """Add `apply` to the root app."""

    @app.command("apply")
    @guarded
    def apply(
        plan_path: Path = typer.Argument(..., help="Plan written by `pulsar-ops plan`."),
        zookeeper: str = typer.Option(..., "--zookeeper", help="Local metadata store: HOSTS[/chroot]."),
        config_zookeeper: str | None = typer.Option(
            None, "--config-zookeeper", help="Configuration store HOSTS[/chroot] (default: --zookeeper)."
        ),
        zk_auth: str | None = ZK_AUTH,
        zk_auth_file: Path | None = ZK_AUTH_FILE,
        zk_sasl: str | None = ZK_SASL,
        zk_sasl_file: Path | None = ZK_SASL_FILE,
        zk_tls_ca: Path | None = ZK_TLS_CA,
        zk_tls_cert: Path | None = ZK_TLS_CERT,
        zk_tls_key: Path | None = ZK_TLS_KEY,
        phase: str = typer.Option(..., "--phase", help="mark (verify + back up) or delete (verify + CAS delete)."),
        quarantine: str = typer.Option(
            "1h", "--quarantine", help="Minimum time between mark and delete (0 allowed), e.g. 1h, 30m."
        ),
        backup_dir: Path | None = typer.Option(
            None, "--backup-dir", help="Backup directory (default: <plan>.backup/)."
        ),
        journal_path: Path | None = typer.Option(
            None, "--journal", help="Journal file (default: <plan>.journal.jsonl)."
        ),
        batch_size: int = typer.Option(100, "--batch-size", min=1, help="Actions per verified batch."),
        do_apply: bool = typer.Option(False, "--apply", help="Act. Without it, only print what would happen."),
        yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
        admin_url: str | None = typer.Option(
            None,
            "--admin-url",
            help="A broker's admin REST URL, for actions that go through a broker (delete-subscription, load-topic).",
        ),
        client_conf: Path | None = typer.Option(
            None,
            "--client-conf",
            envvar="PULSAR_OPS_CLIENT_CONF",
            help="Pulsar's client.conf (webServiceUrl, authPlugin/authParams, TLS), read as pulsar-admin reads it.",
        ),
        token: str | None = typer.Option(
            None, "--token", envvar="PULSAR_OPS_TOKEN", help="Bearer token for the admin API (never printed)."
        ),
        http_timeout: float = typer.Option(30.0, "--http-timeout", min=0.5, help="Seconds per admin API request."),
        zk_timeout: float = typer.Option(
            30.0,
            "--zk-timeout",
            min=0.5,
            help="Seconds to connect to ZooKeeper, and per request: a ZooKeeper that stops answering stops the "
            "run after it (re-run the same command: skipped actions are retried).",
        ),
        max_loads_per_minute: float = typer.Option(
            60.0,
            "--max-loads-per-minute",
            min=0.1,
            help="Pace load-topic actions: each load makes the broker read the topic back from the bookies.",
        ),
        bookie_http: list[str] = typer.Option(
            [],
            "--bookie-http",
            metavar="BOOKIE_ID=URL",
            help="A bookie's HTTP endpoint for bookie-gc actions (repeatable); default: the one the snapshot "
            "recorded (scrape --bookie-url).",
        ),
        bookie_gc_interval: float = typer.Option(
            60.0,
            "--bookie-gc-interval",
            min=0.0,
            help="Seconds between the end of one forced bookie GC and the next request (one bookie at a time).",
        ),
        bookie_gc_timeout: float = typer.Option(
            3600.0,
            "--bookie-gc-timeout",
            min=1.0,
            help="Seconds to wait for a forced GC to end (GET /api/v1/bookie/gc); then bookie-gc-timeout.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print per-action outcomes as JSON on stdout."),
    ) -> None:
        """Apply a plan in two phases: `mark` backs up and changes nothing; `delete` deletes with CAS."""
        admin = _admin(admin_url, client_conf, token, http_timeout)
        req = ApplyRequest(
            plan_path=plan_path,
            zookeeper=zookeeper,
            config_zookeeper=config_zookeeper,
            phase=phase,
            quarantine_ms=parse_duration_ms(quarantine, flag="--quarantine"),
            backup_dir=backup_dir,
            journal_path=journal_path,
            batch_size=batch_size,
            apply=do_apply,
            yes=yes,
            admin=admin,
            loads_per_minute=max_loads_per_minute,
            bookie_gc=_bookie_gc(bookie_http, http_timeout, bookie_gc_interval, bookie_gc_timeout),
            zk_timeout_s=zk_timeout,
            security=security_from_flags(
                zk_auth=zk_auth,
                zk_auth_file=zk_auth_file,
                zk_sasl=zk_sasl,
                zk_sasl_file=zk_sasl_file,
                zk_tls_ca=zk_tls_ca,
                zk_tls_cert=zk_tls_cert,
                zk_tls_key=zk_tls_key,
            ),
        )
        report = run_apply(req, confirm=lambda q: confirm(q, yes=yes), say=_say)
        print_report(report)
        if as_json:
            emit_json(report.to_json())
        raise typer.Exit(exit_code_for(report))
