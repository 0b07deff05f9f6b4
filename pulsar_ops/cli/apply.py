"""`pulsar-ops apply PLAN.json --phase mark|delete`: two-phase, journaled, compare-and-set apply.

Exit codes: 0 everything done (or a dry run), 1 some actions skipped or still pending, 2 some actions failed,
3 the tool failed (nothing is changed by a refusal: quarantine, confirmation, journal conflict, checksum).
"""

from __future__ import annotations

from pathlib import Path

import typer

from pulsar_ops.cli.common import confirm, emit_json, err_console, guarded
from pulsar_ops.errors import ApplyError, ConfigError
from pulsar_ops.repair import journal as J
from pulsar_ops.repair.backup import MANIFEST, BackupStore, default_backup_dir
from pulsar_ops.repair.executor import ApplyReport, check_quarantine, dry_run, run_delete, run_mark
from pulsar_ops.repair.plan_file import load_plan
from pulsar_ops.repair.units import human_duration, parse_duration_ms
from pulsar_ops.repair.zk_writer import ZkSession, redact_hosts

_SHOW = 50


def _say(line: str, style: str | None = None) -> None:
    err_console.print(line, markup=False, highlight=False, emoji=False, style=style)


def exit_code_for(report: ApplyReport) -> int:
    counts = report.counts()
    if counts.get("failed"):
        return 2
    if report.applied and (counts.get("skipped") or counts.get("pending")):
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
        as_json: bool = typer.Option(False, "--json", help="Print per-action outcomes as JSON on stdout."),
    ) -> None:
        """Apply a plan in two phases: `mark` backs up and changes nothing; `delete` deletes with CAS."""
        if phase not in ("mark", "delete"):
            raise ConfigError(f"--phase must be mark or delete, not {phase!r}", hint="pass --phase mark first")
        quarantine_ms = parse_duration_ms(quarantine, flag="--quarantine")
        plan = load_plan(plan_path)  # verifies schema version and checksum
        jpath = journal_path or J.default_journal_path(plan_path)
        recorded = J.Journal.read_only(jpath, plan_checksum=plan.checksum).backup_dir
        bdir = backup_dir or (Path(recorded) if recorded else default_backup_dir(plan_path))
        now = J.now_ms()
        if not do_apply:
            report = dry_run(plan, phase, jpath, bdir, quarantine_ms=quarantine_ms, now_ms=now)
        else:
            if phase == "delete" and not (bdir / MANIFEST).exists():
                raise ApplyError(
                    f"no backup manifest in {bdir}: nothing of this plan has been marked there",
                    hint=f"run `pulsar-ops apply {plan_path} --zookeeper HOSTS --phase mark --apply` first "
                    "(or pass the --backup-dir it used)",
                )
            question = (
                f"{phase} {len(plan.actions)} action(s) of plan {plan.plan_id} on {redact_hosts(zookeeper)}"
                + (f" after a {human_duration(quarantine_ms)} quarantine" if phase == "delete" else "")
                + "?"
            )
            if phase == "delete":  # refuse before asking or connecting when the quarantine has not passed
                check_quarantine(plan, J.Journal.read_only(jpath, plan_checksum=plan.checksum), quarantine_ms, now)
            confirm(question, yes=yes)
            with J.Journal.open(
                jpath,
                plan_checksum=plan.checksum,
                plan_id=plan.plan_id,
                actions=len(plan.actions),
                backup_dir=str(bdir.resolve()),
            ) as journal:
                backups = BackupStore.open(bdir, create=True)

                def progress(ph: str, done: int, total: int) -> None:
                    if done == total or done % (batch_size * 10) == 0:
                        _say(f"  {ph}: {done}/{total} actions")

                with ZkSession(zookeeper, config_zookeeper) as session:
                    if phase == "mark":
                        report = run_mark(plan, session, journal, backups, batch_size=batch_size,
                                          progress=progress)
                    else:
                        report = run_delete(
                            plan, session, journal, backups, quarantine_ms=quarantine_ms, now_ms=J.now_ms(),
                            batch_size=batch_size, progress=progress,
                        )
        print_report(report)
        if as_json:
            emit_json(report.to_json())
        raise typer.Exit(exit_code_for(report))
