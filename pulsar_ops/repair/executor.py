"""Two-phase apply: ``mark`` (re-verify + back up, no ZooKeeper change) and ``delete`` (re-verify + CAS delete).

Kind-agnostic: every action is re-read and compared (:mod:`pulsar_ops.repair.validate`), then its kind's rule
decides on the live facts (:class:`pulsar_ops.repair.live_facts.LiveFacts`) at mark and again at delete, and its
kind says what else its transaction does (:mod:`pulsar_ops.repair.registry`). Every transition is journaled (fsync)
before the next step, so re-running the same command after a crash resumes without acting twice; final and
transient skips: ``docs/repair.md``, "Final and transient skips".
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ApplyError, QuarantineError, ZooKeeperAuthError, ZooKeeperError
from pulsar_ops.repair import journal as J
from pulsar_ops.repair.actions import ROLE_CURSOR, ROLE_MANAGED_LEDGER, Action, Record
from pulsar_ops.repair.admin_writer import AdminApi
from pulsar_ops.repair.backup import BackupEntry, BackupStore
from pulsar_ops.repair.facts import RuleParams
from pulsar_ops.repair.kind import absent_problem, rewritten
from pulsar_ops.repair.live_facts import LiveFacts
from pulsar_ops.repair.plan_file import Plan
from pulsar_ops.repair.registry import kind_of
from pulsar_ops.repair.validate import (
    Observed,
    ObservedRef,
    Verdict,
    decide_delete,
    decide_mark,
    sha256_hex,
    target_mismatch,
)
from pulsar_ops.repair.zk_writer import ZkSession
from pulsar_ops.units import human_duration

Progress = Callable[[str, int, int], None]
AfterCommit = Callable[[], None]


@dataclass
class ActionOutcome(Record):
    id: str
    kind: str
    target: str
    outcome: str
    reason: str = ""


@dataclass
class ApplyReport:
    phase: str
    applied: bool
    plan_id: str
    plan_checksum: str
    backup_dir: str
    journal: str
    outcomes: list[ActionOutcome] = field(default_factory=list)
    quarantine_ms: int | None = None

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(o.outcome for o in self.outcomes).items()))

    @classmethod
    def of(
        cls, plan: Plan, phase: str, applied: bool, backup_dir: Any, journal: Any, quarantine_ms: int
    ) -> ApplyReport:
        """A report for ``plan``'s ``phase`` (the quarantine only in a delete phase's)."""
        q = quarantine_ms if phase == "delete" else None
        return cls(phase, applied, plan.plan_id, plan.checksum, str(backup_dir), str(journal), quarantine_ms=q)

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "outcomes"}
        return {**d, "counts": self.counts(), "actions": [o.to_json() for o in self.outcomes]}


def _outcome(a: Action, outcome: str, reason: str = "") -> ActionOutcome:
    return ActionOutcome(a.id, a.kind, kind_of(a.kind).target(a), outcome, reason)


def _from_before(st: J.ActionState) -> str:
    """The reason of a final journal state, said to be a previous run's."""
    if st.state == J.SKIPPED:
        return f"final, from a previous run: {st.reason}" if st.reason else "final, from a previous run"
    return st.reason


def _previous(st: J.ActionState) -> str:
    """For an action a previous run skipped transiently: that run's reason, said to be that run's."""
    return f"a previous run skipped it (transient): {st.reason}" if st.transient else ""


def _joined(reason: str, previous: str) -> str:
    return "; ".join(r for r in (reason, previous) if r)


_REMARK = "re-run `--phase mark --apply` to re-create the backup"


def _unreadable(e: ZooKeeperError) -> str:
    """The transient skip reason for a read error."""
    return f"cannot re-read it now ({e.message}); not evidence of anything"


def _still_connected(session: ZkSession, e: ZooKeeperError | None) -> None:
    """After a transient skip is journaled: a read error that was not one znode's ACL may be ZooKeeper gone;
    then this raises and stops the run (the next run retries what was skipped) instead of skipping the rest."""
    if e is not None and not isinstance(e, ZooKeeperAuthError):
        session.ping("local")


def _batches(actions: Sequence[Action], size: int) -> list[Sequence[Action]]:
    size = max(1, size)
    return [actions[i : i + size] for i in range(0, len(actions), size)]


def live_facts(session: ZkSession, plan: Plan, *, remember_failure: bool = True) -> LiveFacts:
    """The facts the kinds' rules read in this run: ZooKeeper now, the plan's rule parameters, apply's clock
    (``remember_failure``: a reference index that failed to read is not re-read in this run)."""
    rules = RuleParams.from_json(plan.params.get("rules"))
    return LiveFacts(session, rules, rules_now_ms(), plan.ledgers_root, remember_failure=remember_failure)


# --- reading -----------------------------------------------------------------------------------------


def _read_targets(session: ZkSession, a: Action) -> list[Observed]:
    if kind_of(a.kind).reads_subtree:
        return session.read_subtree(a.store, a.path)
    return session.read(a.store, [z.path for z in a.preconditions.znodes])


def _read_refs(session: ZkSession, a: Action) -> list[ObservedRef]:
    """Planned referencing znodes, plus every cursor now under a referencing managed-ledger znode."""
    roles: dict[tuple[str, str], str] = {}
    for r in a.preconditions.references:
        roles[(r.znode.store, r.znode.path)] = r.role
    owners = [(r.znode.store, r.znode.path) for r in a.preconditions.references if r.role == ROLE_MANAGED_LEDGER]
    owners += kind_of(a.kind).reference_owners(a)
    for store, path in owners:
        for child in session.children(store, path) or ():
            roles.setdefault((store, f"{path}/{child}"), ROLE_CURSOR)
    out: list[ObservedRef] = []
    for store in sorted({s for s, _ in roles}):
        paths = sorted(p for s, p in roles if s == store)
        for node in session.read(store, paths):
            out.append(ObservedRef(role=roles[(store, node.path)], node=node))
    return out


# --- the eligibility rules, on facts re-read now -------------------------------------------------------


# The clock the eligibility rules age things by, for a seeded cluster whose clock runs ahead of the wall clock
# (`pulsar-ops demo --apply`, the end-to-end tests): the audit's --now, as milliseconds. The operator's
# environment is trusted (it could as well pass --quarantine 0); a plan file is not, and cannot set it.
APPLY_NOW_ENV = "PULSAR_OPS_APPLY_NOW_MS"


def rules_now_ms() -> int:
    """The wall clock, or ``$PULSAR_OPS_APPLY_NOW_MS``."""
    raw = os.environ.get(APPLY_NOW_ENV)
    if not raw:
        return J.now_ms()
    try:
        return int(raw)
    except ValueError:
        raise ApplyError(
            f"{APPLY_NOW_ENV}={raw!r} is not a time in milliseconds; nothing was changed",
            hint=f"unset {APPLY_NOW_ENV} (apply ages ledgers by the wall clock)",
        ) from None


@dataclass
class _Run:
    """One apply run: the plan, the session, the journal and backups, the live facts, and the delete phase's broker
    client, pacing and ``after_commit`` hook."""

    plan: Plan
    session: ZkSession
    journal: J.Journal
    backups: BackupStore
    facts: LiveFacts
    bookie_gc: Any = None
    after_commit: AfterCommit | None = None
    admin: AdminApi | None = None
    pace: Callable[[], None] | None = None

    def missing(self, a: Action) -> str | None:
        """Why the action's backup is not complete (None: it is)."""
        return self.backups.covers(
            self.plan.checksum, a.id, [(z.store, z.path, z.sha256 or "") for z in a.preconditions.znodes]
        )

    def rewritten_sha(self, a: Action) -> str | None:
        e = self.backups.entry(self.plan.checksum, a.id, a.store, a.path)
        return e.replaced_by if e is not None else None

    def done(self, a: Action) -> bool:
        """The action's change is in the tree (its kind's done-check)."""
        return kind_of(a.kind).done(self.session, a, self.rewritten_sha(a))

    def step(self, a: Action) -> ActionOutcome:
        """A kind that runs its own mark and delete steps (``bookie-gc``)."""
        return _outcome(
            a, *kind_of(a.kind).step(self.session, self.journal, self.backups, self.plan, a, self.bookie_gc)
        )

    def skip(self, a: Action, phase: str, reason: str, *, final: bool, st: J.ActionState) -> ActionOutcome:
        """Journal a skip (final or transient) and report it, with a previous run's transient reason if any."""
        previous = _previous(st)  # before journaling: the journal updates its state objects in place
        self.journal.record(a.id, J.SKIPPED, phase=phase, reason=reason, final=final)
        said = f"{reason} (final)" if final else f"{reason} (transient: the next run re-evaluates it)"
        return _outcome(a, "skipped", _joined(said, previous))

    def settle(self, a: Action, state: str, reason: str, **details: Any) -> ActionOutcome:
        """Journal a delete-phase outcome (``committed``, ``failed``, ``skipped``: outcome = state) and report it."""
        self.journal.record(a.id, state, phase="delete", **({"reason": reason} if reason else {}), **details)
        return _outcome(a, state, reason)

    # --- mark ----------------------------------------------------------------------------------------------

    def back_up(self, a: Action) -> tuple[str | None, list[str]]:
        """Re-read every target with stat + ACL, verify against the plan, ask the kind's rule, store bytes.
        (skip reason, shas)."""
        kind, session, backups = kind_of(a.kind), self.session, self.backups
        with_acl = {z.path: session.read_with_acl(z.store, z.path) for z in a.preconditions.znodes}
        observed = [
            got.node if got is not None else Observed(store=a.store, path=p, exists=False)
            for p, got in with_acl.items()
        ]
        if kind.reads_subtree:  # also notice znodes created inside the subtree since the snapshot
            known = {o.path for o in observed}
            observed.extend(o for o in session.read_subtree(a.store, a.path) if o.path not in known)
        verdict = decide_mark(a, observed)
        if not verdict.proceed:
            return verdict.reason, []
        # A leak subtree's rule is only forecast at mark (``would-skip``): it is backed up either way, and delete
        # re-proves it before any write.
        at = self.facts.at([o for o in observed if o.path == a.path])
        why_not = kind.rule(a, at) if kind.rule_at_mark else None
        if why_not is not None:
            return why_not, []
        replaced_by: str | None = None
        if kind.rewrites:
            why = absent_problem(session, a)
            if why is not None:
                return why, []
            current = with_acl[a.path]
            assert current is not None
            new, why = rewritten(a, current.node)
            if new is None:
                return why, []
            replaced_by = backups.put_object(new)
        shas: list[str] = []
        for z in a.preconditions.znodes:
            got = with_acl[z.path]
            assert got is not None
            sha = backups.put_object(got.node.data)
            if sha != z.sha256 or sha256_hex(got.node.data) != sha:
                raise ApplyError(f"backup of {z.path} does not match the verified bytes; nothing was marked")
            backups.add(
                BackupEntry(
                    store=z.store,
                    path=z.path,
                    sha256=sha,
                    stat=got.stat,
                    acl=got.acl,
                    action_id=a.id,
                    plan_id=self.plan.plan_id,
                    plan_checksum=self.plan.checksum,
                    backed_up_at_ms=J.now_ms(),
                    replaced_by=replaced_by if z.path == a.path else None,
                )
            )
            shas.append(sha)
        return None, shas

    def mark_one(self, a: Action, to_mark: list[tuple[Action, list[str]]]) -> ActionOutcome | None:
        """Mark one action (None: backed up, to be journaled ``marked`` once its batch's backups are flushed)."""
        st = self.journal.state(a.id)
        if st.final:
            return _outcome(a, st.state, _from_before(st))
        if st.live != J.PENDING:
            if self.missing(a) is not None and st.live != J.DELETING:
                reason, _ = self.back_up(a)
                if reason is not None:
                    return _outcome(a, "failed", f"backup lost and {reason}")
            return _outcome(a, "marked", _joined(f"already {st.live}", _previous(st)))
        if kind_of(a.kind).steps_itself:
            return self.step(a)
        try:
            reason, shas = self.back_up(a)
        except ZooKeeperError as e:
            out = self.skip(a, "mark", _unreadable(e), final=False, st=st)
            _still_connected(self.session, e)
            return out
        if reason is not None:
            return self.skip(a, "mark", reason, final=True, st=st)
        to_mark.append((a, shas))
        return None

    # --- delete --------------------------------------------------------------------------------------------

    def delete_one(self, a: Action) -> ActionOutcome:
        st = self.journal.state(a.id)
        if st.final:
            return _outcome(a, st.state, _from_before(st))
        if st.live == J.PENDING:
            why = "not marked: run `pulsar-ops apply PLAN --phase mark --apply` first"
            return _outcome(a, "pending", _joined(why, _previous(st)))
        previous = _previous(st)  # before anything is journaled (the journal updates ``st`` in place)
        kind = kind_of(a.kind)
        if kind.steps_itself:
            out = self.step(a)
        elif kind.via_broker:
            out = self.admin_one(a)
        else:
            out = self.delete_verified(a, replace(st))
        return replace(out, reason=_joined(out.reason, previous)) if out.outcome != "skipped" else out

    def delete_verified(self, a: Action, st: J.ActionState) -> ActionOutcome:
        """A ZooKeeper action that is marked (or deleting, failed, or skipped transiently from one of those)."""
        kind, session = kind_of(a.kind), self.session
        missing = self.missing(a)
        if missing is None and kind.rewrites and self.rewritten_sha(a) is None:
            missing = f"the backup of {a.path} does not record the bytes the rewrite writes"
        if st.live == J.DELETING and self.done(a):
            if missing is None:
                recovered = "deleted before an interruption (target gone, backup present)"
                return self.settle(a, J.COMMITTED, recovered, recovered=True)
            return self.settle(a, J.FAILED, f"target gone but {missing}")
        if missing is not None:
            return self.settle(a, J.FAILED, f"{missing}; {_REMARK}")
        sets: tuple[tuple[str, bytes, int], ...] = ()
        error: ZooKeeperError | None = None  # a read error: the skip is transient
        try:
            targets = _read_targets(session, a)
            refs = _read_refs(session, a) if kind.reads_references else []
            verdict = decide_delete(a, targets, refs)
        except ZooKeeperError as e:  # nothing was learned about the action: the next run re-evaluates it
            verdict, error = Verdict.skip(_unreadable(e)), e
        if verdict.proceed:
            try:  # the kind's own rule on the live facts, and the rest of its transaction
                v = kind.verify(session, a, targets, refs, self.facts.at(targets), self.rewritten_sha(a))
                why, sets = v.why, v.sets
                if v.checks is not None:
                    verdict = replace(verdict, checks=v.checks)
            except ZooKeeperError as e:
                why, error = f"cannot re-prove it is safe ({e.message}); not evidence of absence", e
            if why is not None:
                verdict = verdict.skip(why)
        if not verdict.proceed:
            out = self.skip(a, "delete", verdict.reason, final=error is None, st=st)
            _still_connected(session, error)
            return out
        # a rewrite sets its managed-ledger znode instead of deleting it
        deletes = tuple(d for d in verdict.deletes if not sets or d[0] != a.path)
        if st.live != J.DELETING:
            self.journal.record(
                a.id,
                J.DELETING,
                phase="delete",
                checks=[list(c) for c in verdict.checks],
                deletes=[list(d) for d in deletes],
                **({"sets": [[p, sha256_hex(b), v] for p, b, v in sets]} if sets else {}),
            )
        result = session.commit(a.store, verdict.checks, sets, deletes)
        if result.committed:
            if self.after_commit is not None:
                self.after_commit()
            return self.settle(a, J.COMMITTED, "", ops=list(result.ops))
        if result.unknown and self.done(a):
            return self.settle(a, J.COMMITTED, f"commit outcome confirmed by re-read after {result.error}")
        return self.settle(a, J.FAILED, f"transaction failed: {result.error}", ops=list(result.ops))

    def admin_one(self, a: Action) -> ActionOutcome:
        """An admin-API action whose journal state is not final: re-verify, call the broker once (the kind's
        call), then let ZooKeeper say what happened. An error answer is never read as success; an unknown outcome
        (timeout) is ``failed`` and the next run re-reads the tree before calling again."""
        kind = kind_of(a.kind)
        st = self.journal.state(a.id)
        missing = self.missing(a)
        if missing is not None:
            return self.settle(a, J.FAILED, f"{missing}; {_REMARK}")
        if st.live in (J.DELETING, J.FAILED) and self.done(a):
            recovered = "the broker acted before an interruption (the tree shows it; backup present)"
            return self.settle(a, J.COMMITTED, recovered, recovered=True)
        # the action's znode exactly as scraped (version, bytes: a cursor's lastActive and position too), then its rule
        node = self.session.read(a.store, [a.path])[0]
        why = target_mismatch(a.preconditions.znodes[0], node) or kind.rule(a, self.facts.at([node]))
        if why is not None:
            return self.settle(a, J.SKIPPED, why, final=True)
        if self.admin is None:
            raise ApplyError(
                f"{a.id} calls a broker's admin API, but no admin URL was given; nothing was called",
                hint="pass --admin-url http://broker:8080 (and --client-conf for authentication)",
            )
        if kind.paced and self.pace is not None:
            self.pace()  # --max-loads-per-minute: every load makes the broker read the topic back
        if st.live != J.DELETING:
            self.journal.record(a.id, J.DELETING, phase="delete", call=kind.call_text(a))
        called = kind.call(self.session, a, self.admin, lambda: self.done(a))
        self.journal.record(a.id, called.state, phase="delete", **called.details)  # the state is the journal's
        return _outcome(a, called.state, called.reason)


def run_mark(
    plan: Plan,
    session: ZkSession,
    journal: J.Journal,
    backups: BackupStore,
    *,
    batch_size: int = 100,
    progress: Progress | None = None,
    bookie_gc: Any = None,
) -> ApplyReport:
    """Re-verify every target, back it up, journal ``marked``. Changes no ZooKeeper data. ``bookie_gc``: the
    bookies' HTTP clients of a kind that runs its own steps (``bookie-gc``)."""
    report = ApplyReport.of(plan, "mark", True, backups.root, journal.path, 0)
    # an unreadable reference index is re-read by the next action
    run = _Run(plan, session, journal, backups, live_facts(session, plan, remember_failure=False), bookie_gc)
    done = 0
    for batch in _batches(plan.actions, batch_size):
        to_mark: list[tuple[Action, list[str]]] = []
        for a in batch:
            out = run.mark_one(a, to_mark)
            if out is not None:
                report.outcomes.append(out)
        if backups.dirty:
            backups.flush()  # the manifest holding these entries is on disk before anything is journaled
        for a, shas in to_mark:
            previous = _previous(journal.state(a.id))
            journal.record(a.id, J.MARKED, phase="mark", backup=shas, znodes=a.znode_count)
            outcome, why = kind_of(a.kind).forecast(session, a, run.facts)
            report.outcomes.append(_outcome(a, outcome, _joined(why, previous)))
        done += len(batch)
        if progress:
            progress("mark", done, len(plan.actions))
    return report


# --- delete --------------------------------------------------------------------------------------------


def check_quarantine(plan: Plan, journal: J.Journal, quarantine_ms: int, now_ms: int) -> None:
    """Refuse the whole delete run before ``quarantine_ms`` has passed since the latest mark."""
    marks = [
        st.marked_at_ms
        for a in plan.actions
        if (st := journal.state(a.id)).live in (J.MARKED, J.DELETING, J.FAILED) and st.marked_at_ms is not None
    ]
    if not marks:
        return
    ready_at = max(marks) + quarantine_ms
    if now_ms < ready_at:
        raise QuarantineError(
            f"quarantine of {human_duration(quarantine_ms)} has not passed since the last mark: "
            f"{human_duration(ready_at - now_ms)} to go; nothing was deleted"
        )


def run_delete(
    plan: Plan,
    session: ZkSession,
    journal: J.Journal,
    backups: BackupStore,
    *,
    quarantine_ms: int,
    now_ms: int,
    batch_size: int = 100,
    progress: Progress | None = None,
    after_commit: AfterCommit | None = None,
    admin: AdminApi | None = None,
    loads_per_minute: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
    bookie_gc: Any = None,
) -> ApplyReport:
    """``after_commit`` runs right after each committed transaction, before it is journaled (tests use it to
    crash at the worst moment)."""
    check_quarantine(plan, journal, quarantine_ms, now_ms)
    report = ApplyReport.of(plan, "delete", True, backups.root, journal.path, quarantine_ms)
    last_load: list[float] = []

    def pace() -> None:  # at most loads_per_minute topic loads per minute
        interval = 60.0 / loads_per_minute if loads_per_minute > 0 else 0.0
        if last_load and interval > 0:
            wait = last_load[0] + interval - time.monotonic()
            if wait > 0:
                sleep(wait)
        last_load[:] = [time.monotonic()]

    # the reference index: read once, and not re-read after it failed
    run = _Run(plan, session, journal, backups, live_facts(session, plan), bookie_gc, after_commit, admin, pace)
    done = 0
    for batch in _batches(plan.actions, batch_size):
        committed: list[Action] = []
        for a in batch:
            was_final = journal.state(a.id).final
            out = run.delete_one(a)
            report.outcomes.append(out)
            if out.outcome == "committed" and not was_final:
                committed.append(a)
        for a in committed:  # verify the batch before the next one begins
            if kind_of(a.kind).steps_itself:
                continue  # its own step waited for its change (bookie-gc: GET /api/v1/bookie/gc)
            if not run.done(a):
                raise ApplyError(
                    f"verification failed: {a.path} is not as its committed transaction left it; stopping",
                    hint="inspect the znode and the journal before re-running `pulsar-ops apply`",
                )
        done += len(batch)
        if progress:
            progress("delete", done, len(plan.actions))
    return report


# --- dry run -------------------------------------------------------------------------------------------


def dry_run(
    plan: Plan,
    phase: str,
    journal_path: Path,
    backup_dir: Path,
    *,
    quarantine_ms: int,
    now_ms: int,
) -> ApplyReport:
    """What ``--apply`` would do, from the plan and the journal file alone (no ZooKeeper access)."""
    journal = J.Journal.read_only(journal_path, plan_checksum=plan.checksum)
    report = ApplyReport.of(plan, phase, False, backup_dir, journal_path, quarantine_ms)
    for a in plan.actions:
        st = journal.state(a.id)
        previous = _previous(st)
        if st.final:
            report.outcomes.append(_outcome(a, st.state, _from_before(st)))
            continue
        if phase == "mark" and st.live == J.PENDING:
            verb, why = "would-mark", kind_of(a.kind).dry_run_mark(a)
        elif phase == "mark":
            verb, why = "marked", f"already {st.live}"
        elif st.live == J.PENDING:
            verb, why = "pending", "not marked: run --phase mark first"
        else:
            assert st.marked_at_ms is not None or st.live != J.MARKED
            wait = (st.marked_at_ms or 0) + quarantine_ms - now_ms
            verb, why = kind_of(a.kind).dry_run(a)
            if wait > 0:
                why += f" (quarantine: {human_duration(wait)} to go)"
        report.outcomes.append(_outcome(a, verb, _joined(why, previous)))
    return report
