"""`pulsar-ops restore BACKUP_DIR`: recreate backed-up znodes byte-identically, parents first, with ACLs.

Exit codes: 0 everything restored / already present (or a dry run without conflicts), 1 conflicts or skipped
znodes, 2 failures, 3 the tool failed.
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
from pulsar_ops.repair.apply_run import verify_target
from pulsar_ops.repair.plan_file import load_plan
from pulsar_ops.repair.restore import (
    GC_WARNING,
    RestoreReport,
    open_backup,
    restore_target,
    run_restore,
    select_entries,
)
from pulsar_ops.repair.zk_writer import ZkSession, redact_hosts
from pulsar_ops.zkconn import security_from_flags

_SHOW = 50


def _say(line: str, style: str | None = None) -> None:
    err_console.print(line, markup=False, highlight=False, emoji=False, style=style)


def exit_code_for(report: RestoreReport) -> int:
    counts = report.counts()
    if counts.get("failed"):
        return 2
    if counts.get("conflict") or counts.get("skipped"):
        return 1
    return 0


def register(app: typer.Typer) -> None:
    """Add `restore` to the root app."""

    @app.command("restore")
    @guarded
    def restore(
        backup_dir: Path = typer.Argument(..., help="Backup directory written by `apply --phase mark`."),
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
        only: str | None = typer.Option(None, "--only", help="Restore only this znode path and its subtree."),
        plan_path: Path | None = typer.Option(
            None, "--plan", help="The plan whose backups to restore (needed when the directory holds several)."
        ),
        plan_id: str | None = typer.Option(None, "--plan-id", help="The same, by plan id."),
        do_apply: bool = typer.Option(False, "--apply", help="Write. Without it, only report what would happen."),
        yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
        as_json: bool = typer.Option(False, "--json", help="Print per-znode outcomes as JSON on stdout."),
    ) -> None:
        """Recreate backed-up znodes (never overwriting a znode that exists with other bytes)."""
        security = security_from_flags(
            zk_auth=zk_auth,
            zk_auth_file=zk_auth_file,
            zk_sasl=zk_sasl,
            zk_sasl_file=zk_sasl_file,
            zk_tls_ca=zk_tls_ca,
            zk_tls_cert=zk_tls_cert,
            zk_tls_key=zk_tls_key,
        )
        _say(GC_WARNING, style="bold yellow")
        backups = open_backup(backup_dir)
        target = restore_target(backups, load_plan(plan_path) if plan_path else None, plan_id)
        entries = select_entries(backups.entries, only, target.plan_id)
        if do_apply:
            confirm(
                f"restore {len(entries)} znode(s) of plan {target.plan_id} into {redact_hosts(zookeeper)}?", yes=yes
            )
        with ZkSession(zookeeper, config_zookeeper, security=security) as session:
            if entries:
                verify_target(session, target.recorded, zookeeper, config_zookeeper)
            report = run_restore(backups, session, only=only, apply=do_apply, plan_id=target.plan_id)
        if not entries:
            _say("nothing to do: the backup holds no znode to restore")
        mode = "applied" if do_apply else "DRY RUN (nothing written; add --apply to restore)"
        _say(f"restore {backup_dir}: {mode}", style="bold")
        shown = 0
        for o in report.outcomes:
            if o.outcome in ("restored", "already-present"):
                continue
            if shown >= _SHOW:
                _say("  ... more (see --json)")
                break
            extra = f" (creates parents {', '.join(o.created_parents)})" if o.created_parents else ""
            _say(f"  {o.outcome:<16} {o.store}:{o.path}{extra}  {o.reason}".rstrip())
            shown += 1
        for c in report.action_conflicts:
            _say(f"  action {c.action_id} not restored: {c.reason}", style="yellow")
            _say(f"    what you can do: {c.what_to_do}")
        _say("  counts: " + ", ".join(f"{k}={v}" for k, v in report.counts().items()))
        if as_json:
            emit_json(report.to_json())
        raise typer.Exit(exit_code_for(report))
