"""One apply run, from the plan file to the report (``pulsar-ops apply``). Every refusal comes before anything is
journaled: the plan's schema, checksum and safety (``plan-unsafe``), then the dry run, the quarantine, the
confirmation, then the target (identity and address: :mod:`pulsar_ops.repair.target`), and only then the journal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ApplyError, ConfigError, PlanUnsafeError, TargetMismatchError
from pulsar_ops.identity import ClusterIdentity, identity_mismatch
from pulsar_ops.repair import journal as J
from pulsar_ops.repair.admin_writer import AdminApi
from pulsar_ops.repair.backup import MANIFEST, BackupStore, default_backup_dir
from pulsar_ops.repair.executor import AfterCommit, ApplyReport, check_quarantine, dry_run, run_delete, run_mark
from pulsar_ops.repair.kinds import bookie_gc
from pulsar_ops.repair.output_paths import check_dir_target, check_file_target, usable_recorded_dir
from pulsar_ops.repair.plan_file import Plan, load_plan
from pulsar_ops.repair.registry import kind_of
from pulsar_ops.repair.safety import plan_problems
from pulsar_ops.repair.target import HINT_RESCRAPE, StoreAddress, address_problem
from pulsar_ops.repair.zk_writer import ZkSession, redact_hosts
from pulsar_ops.scrape.zk import ZkTarget
from pulsar_ops.units import human_duration
from pulsar_ops.zkconn import NO_SECURITY, ZkSecurity

PHASES = ("mark", "delete")


@dataclass(frozen=True)
class ApplyRequest:
    plan_path: Path
    zookeeper: str
    config_zookeeper: str | None
    phase: str
    quarantine_ms: int
    backup_dir: Path | None = None
    journal_path: Path | None = None
    batch_size: int = 100
    apply: bool = False
    yes: bool = False
    security: ZkSecurity = field(default=NO_SECURITY, repr=False)
    admin: AdminApi | None = field(default=None, repr=False)  # a broker's admin REST API (admin-API actions)
    loads_per_minute: float = 60.0  # load-topic pacing
    bookie_gc: bookie_gc.GcApply | None = field(default=None, repr=False)  # bookie-gc: clients, pacing, wait
    zk_timeout_s: float = 30.0  # ZooKeeper: to connect, and per request (a stopped server is noticed after it)


def check_plan_safe(plan: Plan, source: str) -> None:
    problems = plan_problems(plan.actions, ledgers_root=plan.ledgers_root)
    scans = plan.impact.get("bookie_scans") or {}
    problems += [  # a bookie-gc action acts on a bookie the plan scanned, and only that one
        (a.id, why)
        for a in plan.actions
        if a.bookie_gc is not None and (why := bookie_gc.plan_problem(a.bookie_gc, scans)) is not None
    ]
    if problems:
        first_id, first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PlanUnsafeError(f"{source}: action {first_id}: {first}{more}; nothing was done")


def actual_address(hosts: str, config_hosts: str | None) -> dict[str, StoreAddress]:
    """The command line's ``--zookeeper`` / ``--config-zookeeper``, parsed as scrape parses them."""
    local = ZkTarget.parse(hosts, flag="--zookeeper")
    config = ZkTarget.parse(config_hosts, flag="--config-zookeeper") if config_hosts else local
    return {
        "local": StoreAddress.of(local.hosts, local.chroot),
        "config": StoreAddress.of(config.hosts, config.chroot),
    }


def verify_target(session: ZkSession, target: Mapping[str, Any], hosts: str, config_hosts: str | None) -> None:
    """Refuse a ZooKeeper whose chroot is missing, whose cluster is not the one recorded at scrape time
    (identity), or whose address is not the scraped one (chroot, ensemble): a copy has the same identity."""
    ident = target.get("identity")
    try:
        expected = None if ident is None else ClusterIdentity.from_json(ident)
    except ValueError as e:
        raise TargetMismatchError(f"the recorded target is malformed: {e}", code="target-unverifiable") from None
    if expected is None:
        raise TargetMismatchError(
            "the plan records no cluster identity (its snapshot was scraped before identities were recorded), "
            "so the target cannot be verified",
            hint="scrape again, audit and re-create the plan: `pulsar-ops scrape`, `audit`, `plan`",
            code="target-unverifiable",
        )
    for store, where in (("local", hosts), ("config", config_hosts or hosts)):
        if not session.chroot_exists(store):
            raise TargetMismatchError(
                f"the chroot of {redact_hosts(where)} does not exist ({store} metadata store)",
                code="target-chroot-missing",
            )
    actual = session.identity(str(target.get("ledgers_root") or "/ledgers"))
    why = identity_mismatch(expected, actual)
    if why is not None:
        raise TargetMismatchError(f"{redact_hosts(hosts)} is not the cluster this was made for: {why}")
    problem = address_problem(target, actual_address(hosts, config_hosts))
    if problem is not None:
        raise TargetMismatchError(
            f"{redact_hosts(hosts)} is not the ZooKeeper this was made from: {problem.message}; nothing was "
            "journaled or changed",
            hint=HINT_RESCRAPE,
            code=problem.code,
        )


def snapshot_age_line(snapshot: Mapping[str, Any], now_ms: int) -> str:
    """How old the plan's snapshot is: apply re-derives every action from the live ensemble (compare-and-set on
    the recorded stat), so an old snapshot only means more actions skipped, but the operator should know. A
    snapshot read from a ZooKeeper data directory (`scrape --zk-data-dir`) is as old as its last transaction."""
    at = snapshot.get("finished_at_ms")
    sid = snapshot.get("id", "?")
    if not isinstance(at, int):
        return f"snapshot {sid}: its age is unknown (the plan records no time)"
    age = human_duration(max(0, now_ms - at))
    zxid = snapshot.get("zxid")
    source = f" (read from a ZooKeeper data directory at zxid {zxid:#x})" if isinstance(zxid, int) else ""
    return f"snapshot {sid} is {age} old{source}; every action is re-checked against the live ensemble"


def resolve_paths(req: ApplyRequest, plan: Plan) -> tuple[Path, Path]:
    jpath = req.journal_path or J.default_journal_path(req.plan_path)
    check_file_target(jpath, "--journal", "journal-path-invalid")  # before reading or writing anything
    recorded = usable_recorded_dir(J.Journal.read_only(jpath, plan_checksum=plan.checksum).backup_dir)
    bdir = req.backup_dir or recorded or default_backup_dir(req.plan_path)
    check_dir_target(bdir, "--backup-dir", "backup-dir-invalid")
    return jpath, bdir


def run_apply(
    req: ApplyRequest,
    *,
    confirm: Callable[[str], None],
    say: Callable[[str], None],
    after_commit: AfterCommit | None = None,
) -> ApplyReport:
    if req.phase not in PHASES:
        raise ConfigError(f"--phase must be mark or delete, not {req.phase!r}", hint="pass --phase mark first")
    plan = load_plan(req.plan_path)
    check_plan_safe(plan, str(req.plan_path))
    actual_address(req.zookeeper, req.config_zookeeper)  # a malformed HOSTS[/chroot] is refused before anything
    jpath, bdir = resolve_paths(req, plan)
    now = J.now_ms()
    say(snapshot_age_line(plan.snapshot, now))
    if not plan.actions:
        return _nothing_to_do(req, plan, jpath, bdir, say)
    if not req.apply:
        return dry_run(plan, req.phase, jpath, bdir, quarantine_ms=req.quarantine_ms, now_ms=now)
    if req.phase == "delete":
        if not (bdir / MANIFEST).exists():
            raise ApplyError(
                f"no backup manifest in {bdir}: nothing of this plan has been marked there",
                hint=f"run `pulsar-ops apply {req.plan_path} --zookeeper HOSTS --phase mark --apply` first "
                "(or pass the --backup-dir it used)",
            )
        # refuse before asking or connecting when the quarantine has not passed
        check_quarantine(plan, J.Journal.read_only(jpath, plan_checksum=plan.checksum), req.quarantine_ms, now)
    calls = sum(1 for a in plan.actions if kind_of(a.kind).via_broker)
    if req.phase == "delete" and calls and req.admin is None:
        raise ConfigError(
            f"{calls} action(s) of this plan ask a broker's admin REST API; no admin URL was given; nothing was done",
            hint="pass --admin-url http://broker:8080 (and --client-conf client.conf for authentication)",
        )
    gc_calls = [a.bookie_gc for a in plan.actions if a.bookie_gc is not None]
    no_http = [
        c.bookie_id for c in gc_calls if req.bookie_gc is None or req.bookie_gc.clients(c.bookie_id, c.url) is None
    ]
    if no_http:
        raise ConfigError(
            f"{len(gc_calls)} action(s) of this plan call a bookie's HTTP API; no endpoint is known for bookie "
            f"{no_http[0]}; nothing was done",
            hint="pass --bookie-http BOOKIE_ID=http://bookie:8000 (one per bookie), or scrape with --bookie-url",
        )
    question = (
        f"{req.phase} {len(plan.actions)} action(s) of plan {plan.plan_id} on {redact_hosts(req.zookeeper)}"
        + (f" after a {human_duration(req.quarantine_ms)} quarantine" if req.phase == "delete" else "")
        + "?"
    )
    confirm(question)
    with ZkSession(req.zookeeper, req.config_zookeeper, timeout_s=req.zk_timeout_s, security=req.security) as session:
        verify_target(session, plan.target, req.zookeeper, req.config_zookeeper)
        with J.Journal.open(
            jpath,
            plan_checksum=plan.checksum,
            plan_id=plan.plan_id,
            actions=len(plan.actions),
            backup_dir=str(bdir.resolve()),
        ) as journal:
            backups = BackupStore.open(bdir, create=True)
            backups.record_plan(plan.plan_id, plan.checksum, plan.target)
            total = len(plan.actions)

            def progress(ph: str, done: int, _total: int) -> None:
                if done == total or done % (req.batch_size * 10) == 0:
                    say(f"  {ph}: {done}/{total} actions")

            run = (plan, session, journal, backups)
            both: dict[str, Any] = {"batch_size": req.batch_size, "progress": progress, "bookie_gc": req.bookie_gc}
            if req.phase == "mark":
                return run_mark(*run, **both)
            return run_delete(
                *run,
                **both,
                quarantine_ms=req.quarantine_ms,
                now_ms=J.now_ms(),
                after_commit=after_commit,
                admin=req.admin,
                loads_per_minute=req.loads_per_minute,
            )


def _nothing_to_do(req: ApplyRequest, plan: Plan, jpath: Path, bdir: Path, say: Callable[[str], None]) -> ApplyReport:
    """A plan with no action: a clean cluster is a success. With --apply the journal and (empty) backup
    manifest are written so a scheduled pipeline finds the files it expects."""
    say(f"plan {plan.plan_id} has no actions: nothing to do")
    if req.apply:
        with J.Journal.open(
            jpath, plan_checksum=plan.checksum, plan_id=plan.plan_id, actions=0, backup_dir=str(bdir.resolve())
        ):
            backups = BackupStore.open(bdir, create=True)
            backups.record_plan(plan.plan_id, plan.checksum, plan.target)
            backups.flush()
    return ApplyReport.of(plan, req.phase, req.apply, bdir, jpath, req.quarantine_ms)
