"""Two-phase apply: ``mark`` (re-verify + back up, no ZooKeeper change) and ``delete`` (re-verify + CAS delete).

Both phases walk the plan's actions in plan order, in batches of ``batch_size``; every transition is
journaled (fsync per record) before the next step, so a crash at any point followed by the same command
finishes the work without deleting anything twice:

* an action journaled ``deleting`` whose target is gone (and whose backup exists) counts as committed;
* one whose target still exists is re-verified and deleted;
* ``failed`` actions are re-verified and retried.

After each delete batch every committed target is re-read; a target still present stops the run.

A skip is final or transient (:mod:`pulsar_ops.repair.journal`). Final: the cluster changed under the action
(a version or bytes mismatch, a leak disproved, a reference found, a broker saying the subscription is in use
or gone); it is reported again, as a previous run's, and never retried. Transient: the action could not be
re-verified (a read error: no permission, a lost connection); nothing about it was learned, so the next run
re-evaluates it from the state it was in and reports the old reason as a previous run's.

Before its transaction every action is re-proved against the live tree, whatever the plan says:

* a ledger action: the ledger's owner (managed ledger + cursors, schema locator, ``__compaction`` cursor) is
  re-read and re-decoded (the transaction then checks their versions), and no managed ledger, cursor or schema
  locator anywhere references the ledger (:mod:`pulsar_ops.repair.references`, read once per delete run);
* a subtree action: the condition that made it a leak still holds (:func:`pulsar_ops.repair.safety.prove_leak`);
* every action, at mark and again at delete: its kind's eligibility rule (:mod:`pulsar_ops.repair.rules`, the
  functions the planner calls) on facts re-read now (:func:`rule_problem`); what it refuses is skipped with the
  rule's reason before any write.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ApplyError, DecodeError, QuarantineError, ZooKeeperAuthError, ZooKeeperError
from pulsar_ops.repair import bookie_gc as GC
from pulsar_ops.repair import journal as J
from pulsar_ops.repair import rewrite as RW
from pulsar_ops.repair import rules as R
from pulsar_ops.repair.actions import (
    ADMIN_KINDS,
    KIND_BOOKIE_GC,
    KIND_DELETE_LEDGER,
    KIND_DELETE_SUBSCRIPTION,
    KIND_DELETE_SUBTREE,
    KIND_DROP_MISSING_LEDGER,
    KIND_LOAD_TOPIC,
    KIND_TRIM_UNLOADED,
    REWRITE_KINDS,
    ROLE_CURSOR,
    ROLE_MANAGED_LEDGER,
    Action,
)
from pulsar_ops.repair.admin_writer import AdminApi
from pulsar_ops.repair.backup import BackupEntry, BackupStore
from pulsar_ops.repair.live_facts import ledger_now, listed_now, present_paths, topic_now
from pulsar_ops.repair.plan_file import Plan
from pulsar_ops.repair.references import ReferenceIndex, build_index
from pulsar_ops.repair.safety import MANAGED_LEDGERS, SCHEMAS, SubtreeNode, prove_leak
from pulsar_ops.repair.units import human_duration
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

Progress = Callable[[str, int, int], None]
AfterCommit = Callable[[], None]


@dataclass
class ActionOutcome:
    id: str
    kind: str
    target: str
    outcome: str
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "target": self.target, "outcome": self.outcome, "reason": self.reason}


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

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "applied": self.applied,
            "plan_id": self.plan_id,
            "plan_checksum": self.plan_checksum,
            "backup_dir": self.backup_dir,
            "journal": self.journal,
            "quarantine_ms": self.quarantine_ms,
            "counts": self.counts(),
            "actions": [o.to_json() for o in self.outcomes],
        }


def _target(a: Action) -> str:
    return str(a.ledger_id) if a.kind == KIND_DELETE_LEDGER else a.path


def _outcome(a: Action, outcome: str, reason: str = "") -> ActionOutcome:
    return ActionOutcome(a.id, a.kind, _target(a), outcome, reason)


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


def _skip(
    journal: J.Journal, a: Action, phase: str, reason: str, *, final: bool, st: J.ActionState, **details: Any
) -> ActionOutcome:
    """Journal a skip (final or transient) and report it, with a previous run's transient reason if any."""
    previous = _previous(st)  # before journaling: the journal updates its state objects in place
    journal.record(a.id, J.SKIPPED, phase=phase, reason=reason, final=final, **details)
    said = f"{reason} (final)" if final else f"{reason} (transient: the next run re-evaluates it)"
    return _outcome(a, "skipped", _joined(said, previous))


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


class _SessionReader:
    """:class:`pulsar_ops.repair.safety.TreeReader` over the apply session (failed reads raise)."""

    def __init__(self, session: ZkSession) -> None:
        self._s = session

    def exists(self, store: str, path: str) -> bool:
        return self._s.read(store, [path])[0].exists

    def children(self, store: str, path: str) -> list[str] | None:
        return self._s.children(store, path)

    def data(self, store: str, path: str) -> bytes | None:
        return self._s.data(store, path)


def reference_index(session: ZkSession) -> ReferenceIndex:
    """Read ``/managed-ledgers`` and ``/schemas`` of the local store and index every referenced ledger."""
    return build_index(session.read_subtree("local", MANAGED_LEDGERS), session.read_subtree("local", SCHEMAS))


# --- reading -----------------------------------------------------------------------------------------


def _read_targets(session: ZkSession, a: Action) -> list[Observed]:
    if a.kind == KIND_DELETE_LEDGER or a.kind in REWRITE_KINDS:
        return session.read(a.store, [z.path for z in a.preconditions.znodes])
    return session.read_subtree(a.store, a.path)


def _read_refs(session: ZkSession, a: Action) -> list[ObservedRef]:
    """Planned referencing znodes, plus every cursor now under a referencing managed-ledger znode."""
    roles: dict[tuple[str, str], str] = {}
    for r in a.preconditions.references:
        roles[(r.znode.store, r.znode.path)] = r.role
    owners = [(r.znode.store, r.znode.path) for r in a.preconditions.references if r.role == ROLE_MANAGED_LEDGER]
    if a.kind == KIND_TRIM_UNLOADED:
        owners.append((a.store, a.path))  # its own topic's cursors, including any created since the snapshot
    for store, path in owners:
        for child in session.children(store, path) or ():
            roles.setdefault((store, f"{path}/{child}"), ROLE_CURSOR)
    out: list[ObservedRef] = []
    for store in sorted({s for s, _ in roles}):
        paths = sorted(p for s, p in roles if s == store)
        for node in session.read(store, paths):
            out.append(ObservedRef(role=roles[(store, node.path)], node=node))
    return out


def _all_gone(session: ZkSession, a: Action) -> bool:
    paths = [z.path for z in a.preconditions.znodes]
    return not any(session.exists(a.store, paths).values())


def _rewritten_sha(backups: BackupStore, plan: Plan, a: Action) -> str | None:
    e = backups.entry(plan.checksum, a.id, a.store, a.path)
    return e.replaced_by if e is not None else None


def _done(session: ZkSession, backups: BackupStore, plan: Plan, a: Action) -> bool:
    """The action's change is in the tree: its targets are gone, or (a rewrite) its znode holds the bytes the
    action writes and every other target is gone."""
    if a.kind == KIND_LOAD_TOPIC:  # the broker loaded the topic: a load always rewrites the managed-ledger znode
        node = session.read(a.store, [a.path])[0]
        return node.exists and node.version != a.preconditions.znodes[0].version
    if a.kind in ADMIN_KINDS:  # the broker deleted the cursor znode (its ledger goes asynchronously)
        return not session.read(a.store, [a.path])[0].exists
    if a.kind not in REWRITE_KINDS:
        return _all_gone(session, a)
    want = _rewritten_sha(backups, plan, a)
    nodes = {o.path: o for o in session.read(a.store, [z.path for z in a.preconditions.znodes])}
    node = nodes.pop(a.path)
    return (
        want is not None and node.exists and sha256_hex(node.data) == want and not any(o.exists for o in nodes.values())
    )


def _backup_spec(a: Action) -> list[tuple[str, str, str]]:
    return [(z.store, z.path, z.sha256 or "") for z in a.preconditions.znodes]


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


def rule_problem(
    session: ZkSession, plan: Plan, a: Action, target: Observed | None, refs_index: Callable[[], ReferenceIndex]
) -> str | None:
    """Why the action's own eligibility rule (:mod:`pulsar_ops.repair.rules`, the one the planner calls) refuses
    it on the facts as they are now (None: it allows it). ``target``: the action's target znode as just read.
    Called at mark and again at delete. A failed read raises :class:`ZooKeeperError`: the caller skips the action
    as transient (the next run re-derives it), never taking the error as evidence of absence."""
    params = R.RuleParams.from_json(plan.params.get("rules"))
    now = rules_now_ms()
    if a.kind == KIND_DELETE_LEDGER:
        assert a.ledger_id is not None
        if target is None or not target.exists:
            return f"{a.path} is gone"
        fact = ledger_now(target, a.ledger_id, refs_index())
        return R.ledger_delete_rule(fact, min_age_ms=params.min_age_ms, now_ms=now)
    if a.kind == KIND_TRIM_UNLOADED:
        assert a.rewrite is not None
        return R.trim_rule(topic_now(session, a.path, params, plan.ledgers_root), a.rewrite.ledger_ids, now)
    if a.kind == KIND_LOAD_TOPIC:
        assert a.admin is not None
        fact_t = topic_now(session, a.path, params, plan.ledgers_root)
        return R.load_topic_rule(fact_t, a.admin.expect_trimmed, now)
    if a.kind == KIND_DROP_MISSING_LEDGER:
        assert a.rewrite is not None
        ids = a.rewrite.ledger_ids
        return R.drop_missing_rule(ids, listed_now(session, a.path), present_paths(session, ids, plan.ledgers_root))
    if a.kind == KIND_DELETE_SUBSCRIPTION:
        assert a.admin is not None and a.admin.subscription is not None
        if target is None or not target.exists:
            return f"{a.path} is gone"
        from pulsar_ops.formats.cursor import decode_cursor_info

        try:
            last_active = decode_cursor_info(target.data, a.path).info.last_active_ms
        except DecodeError as e:
            return f"{a.path} does not decode ({e.reason}); its activity is unknown"
        return R.subscription_rule(
            a.admin.subscription,
            last_active,
            target.mtime_ms or None,
            inactive_after_ms=params.inactive_after_ms,
            now_ms=now,
        )
    if a.kind == KIND_DELETE_SUBTREE:
        nodes = [SubtreeNode(t.path, t.data) for t in session.read_subtree(a.store, a.path) if t.exists]
        return prove_leak(a, nodes, _SessionReader(session))
    return None


# --- bookie-gc (repair/bookie_gc.py owns the kind) ----------------------------------------------------


def _registered(session: ZkSession, plan: Plan) -> GC.Registered:
    """bookie id -> registered now (read-write or read-only); None when the registration cannot be read."""

    def check(bookie_id: str) -> bool | None:
        rw = GC.registration_path(plan.ledgers_root, bookie_id)
        ro = GC.registration_path(plan.ledgers_root, f"readonly/{bookie_id}")
        try:
            return any(o.exists for o in session.read("local", [rw, ro]))
        except ZooKeeperError:
            return None

    return check


def _gc_step(
    session: ZkSession, journal: J.Journal, backups: BackupStore, plan: Plan, a: Action, gc: GC.GcApply | None
) -> ActionOutcome:
    assert a.bookie_gc is not None
    if gc is None:
        raise ApplyError(f"{a.id} calls a bookie's HTTP API, but no bookie client was configured; nothing was called")
    scans = plan.impact.get("bookie_scans") or {}
    st = journal.state(a.id)
    if st.live == J.PENDING:
        outcome, why = GC.mark_one(journal, backups, a.id, a.bookie_gc, scans, gc, _registered(session, plan))
    else:
        outcome, why = GC.delete_one(journal, a.id, a.bookie_gc, scans, gc, _registered(session, plan), st)
    return _outcome(a, outcome, why)


# --- mark ----------------------------------------------------------------------------------------------


def _back_up(
    session: ZkSession,
    backups: BackupStore,
    plan: Plan,
    a: Action,
    refs_index: Callable[[], ReferenceIndex] | None = None,
) -> tuple[str | None, list[str]]:
    """Re-read every target with stat + ACL, verify against the plan, store bytes. (skip reason, shas)."""
    with_acl = {}
    for z in a.preconditions.znodes:
        got = session.read_with_acl(z.store, z.path)
        with_acl[z.path] = got
    observed = [
        got.node if got is not None else Observed(store=a.store, path=p, exists=False) for p, got in with_acl.items()
    ]
    if a.kind == KIND_DELETE_SUBTREE:  # also notice znodes created inside the subtree since the snapshot
        known = {o.path for o in observed}
        observed.extend(o for o in session.read_subtree(a.store, a.path) if o.path not in known)
    verdict = decide_mark(a, observed)
    if not verdict.proceed:
        return verdict.reason, []
    got_target = with_acl.get(a.path)
    target = got_target.node if got_target is not None else None
    # A leak subtree's rule is its re-proof (prove_leak): at mark it is a forecast (``would-skip``, _forecast), the
    # subtree is backed up either way, and delete re-proves it before any write.
    why_not = (
        None
        if a.kind == KIND_DELETE_SUBTREE
        else rule_problem(session, plan, a, target, refs_index or (lambda: reference_index(session)))
    )
    if why_not is not None:
        return why_not, []
    replaced_by: str | None = None
    if a.kind in REWRITE_KINDS:
        why = RW.live_problem(session, a)
        if why is not None:
            return why, []
        current = with_acl[a.path]
        assert current is not None
        new, why = RW.new_bytes(a, current.node)
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
                plan_id=plan.plan_id,
                plan_checksum=plan.checksum,
                backed_up_at_ms=J.now_ms(),
                replaced_by=replaced_by if z.path == a.path else None,
            )
        )
        shas.append(sha)
    return None, shas


def run_mark(
    plan: Plan,
    session: ZkSession,
    journal: J.Journal,
    backups: BackupStore,
    *,
    batch_size: int = 100,
    progress: Progress | None = None,
    bookie_gc: GC.GcApply | None = None,
) -> ApplyReport:
    """Re-verify every target, back it up, journal ``marked``. Changes no ZooKeeper data."""
    report = ApplyReport("mark", True, plan.plan_id, plan.checksum, str(backups.root), str(journal.path))
    index: list[ReferenceIndex] = []

    def refs_index() -> ReferenceIndex:  # read once, when the first ledger action needs it
        if not index:
            index.append(reference_index(session))
        return index[0]

    done = 0
    for batch in _batches(plan.actions, batch_size):
        to_mark: list[tuple[Action, list[str]]] = []
        for a in batch:
            st = journal.state(a.id)
            if st.final:
                report.outcomes.append(_outcome(a, st.state, _from_before(st)))
                continue
            if st.live != J.PENDING:
                missing = backups.covers(plan.checksum, a.id, _backup_spec(a))
                if missing is not None and st.live != J.DELETING:
                    reason, _ = _back_up(session, backups, plan, a, refs_index)
                    if reason is not None:
                        report.outcomes.append(_outcome(a, "failed", f"backup lost and {reason}"))
                        continue
                report.outcomes.append(_outcome(a, "marked", _joined(f"already {st.live}", _previous(st))))
                continue
            if a.kind == KIND_BOOKIE_GC:
                report.outcomes.append(_gc_step(session, journal, backups, plan, a, bookie_gc))
                continue
            try:
                reason, shas = _back_up(session, backups, plan, a, refs_index)
            except ZooKeeperError as e:
                report.outcomes.append(_skip(journal, a, "mark", _unreadable(e), final=False, st=st))
                _still_connected(session, e)
                continue
            if reason is not None:
                report.outcomes.append(_skip(journal, a, "mark", reason, final=True, st=st))
                continue
            to_mark.append((a, shas))
        if backups.dirty:
            backups.flush()  # the manifest holding these entries is on disk before anything is journaled
        for a, shas in to_mark:
            previous = _previous(journal.state(a.id))
            journal.record(a.id, J.MARKED, phase="mark", backup=shas, znodes=a.znode_count)
            outcome, why = _forecast(session, a)
            report.outcomes.append(_outcome(a, outcome, _joined(why, previous)))
        done += len(batch)
        if progress:
            progress("mark", done, len(plan.actions))
    return report


def _forecast(session: ZkSession, a: Action) -> tuple[str, str]:
    """A marked action's outcome at mark: ``would-skip`` for a leak subtree the live tree already disproves
    (the delete phase would skip it), else ``marked``. Either way it is marked and backed up (mark changes
    nothing); delete re-proves the leak and decides."""
    if a.kind != KIND_DELETE_SUBTREE:
        return "marked", ""
    try:
        nodes = [SubtreeNode(o.path, o.data) for o in session.read_subtree(a.store, a.path)]
        why = prove_leak(a, nodes, _SessionReader(session))
    except ZooKeeperError as e:
        return "marked", f"the leak could not be re-proved now ({e.message}); delete re-proves it"
    if why is None:
        return "marked", ""
    return "would-skip", f"the leak is already disproved: {why}; backed up, but delete re-proves it and skips it"


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


def _delete_one(
    session: ZkSession,
    journal: J.Journal,
    backups: BackupStore,
    plan: Plan,
    a: Action,
    refs_index: Callable[[], ReferenceIndex],
    after_commit: AfterCommit | None,
    admin: AdminApi | None = None,
    pace: Callable[[], None] | None = None,
    bookie_gc: GC.GcApply | None = None,
) -> ActionOutcome:
    st = journal.state(a.id)
    if st.final:
        return _outcome(a, st.state, _from_before(st))
    if st.live == J.PENDING:
        why = "not marked: run `pulsar-ops apply PLAN --phase mark --apply` first"
        return _outcome(a, "pending", _joined(why, _previous(st)))
    previous = _previous(st)  # before anything is journaled (the journal updates ``st`` in place)
    if a.kind == KIND_BOOKIE_GC:
        out = _gc_step(session, journal, backups, plan, a, bookie_gc)
    elif a.kind in ADMIN_KINDS:
        out = _admin_one(session, journal, backups, plan, a, admin, pace)
    else:
        out = _delete_verified(session, journal, backups, plan, a, replace(st), refs_index, after_commit)
    return replace(out, reason=_joined(out.reason, previous)) if out.outcome != "skipped" else out


def _delete_verified(
    session: ZkSession,
    journal: J.Journal,
    backups: BackupStore,
    plan: Plan,
    a: Action,
    st: J.ActionState,
    refs_index: Callable[[], ReferenceIndex],
    after_commit: AfterCommit | None,
) -> ActionOutcome:
    """A ZooKeeper action that is marked (or deleting, failed, or skipped transiently from one of those)."""
    missing = backups.covers(plan.checksum, a.id, _backup_spec(a))
    if missing is None and a.kind in REWRITE_KINDS and _rewritten_sha(backups, plan, a) is None:
        missing = f"the backup of {a.path} does not record the bytes the rewrite writes"
    if st.live == J.DELETING and _done(session, backups, plan, a):
        if missing is None:
            reason = "deleted before an interruption (target gone, backup present)"
            journal.record(a.id, J.COMMITTED, phase="delete", reason=reason, recovered=True)
            return _outcome(a, "committed", reason)
        reason = f"target gone but {missing}"
        journal.record(a.id, J.FAILED, phase="delete", reason=reason)
        return _outcome(a, "failed", reason)
    if missing is not None:
        reason = f"{missing}; re-run `--phase mark --apply` to re-create the backup"
        journal.record(a.id, J.FAILED, phase="delete", reason=reason)
        return _outcome(a, "failed", reason)
    sets: tuple[tuple[str, bytes, int], ...] = ()
    error: ZooKeeperError | None = None  # a read error: the skip is transient
    try:
        targets = _read_targets(session, a)
        refs = _read_refs(session, a) if a.kind in (KIND_DELETE_LEDGER, KIND_TRIM_UNLOADED) else []
        verdict = decide_delete(a, targets, refs)
    except ZooKeeperError as e:  # nothing was learned about the action: the next run re-evaluates it
        verdict, error = Verdict.skip(_unreadable(e)), e
    if verdict.proceed:
        try:
            if a.kind == KIND_DELETE_LEDGER:
                why = refs_index().blocks(a)
                if why is None:
                    target = next((t for t in targets if t.path == a.path), None)
                    why = rule_problem(session, plan, a, target, refs_index)
            elif a.kind in REWRITE_KINDS:
                why, sets = _rewrite_ops(session, backups, plan, a, targets)
                if why is None and a.kind == KIND_TRIM_UNLOADED:
                    why, checks = _cursor_checks(a, refs)
                    why = why or refs_index().blocks_trim(a)
                    verdict = replace(verdict, checks=checks)
                why = why or rule_problem(session, plan, a, None, refs_index)
            else:
                nodes = [SubtreeNode(t.path, t.data) for t in targets if t.exists]
                why = prove_leak(a, nodes, _SessionReader(session))
        except ZooKeeperError as e:
            why, error = f"cannot re-prove it is safe ({e.message}); not evidence of absence", e
        if why is not None:
            verdict = verdict.skip(why)
    if not verdict.proceed:
        out = _skip(journal, a, "delete", verdict.reason, final=error is None, st=st)
        _still_connected(session, error)
        return out
    # a rewrite sets its managed-ledger znode instead of deleting it
    deletes = tuple(d for d in verdict.deletes if not sets or d[0] != a.path)
    if st.live != J.DELETING:
        journal.record(
            a.id,
            J.DELETING,
            phase="delete",
            checks=[list(c) for c in verdict.checks],
            deletes=[list(d) for d in deletes],
            **({"sets": [[p, sha256_hex(b), v] for p, b, v in sets]} if sets else {}),
        )
    result = session.commit(a.store, verdict.checks, sets, deletes)
    if result.committed:
        if after_commit is not None:
            after_commit()
        journal.record(a.id, J.COMMITTED, phase="delete", ops=list(result.ops))
        return _outcome(a, "committed")
    if result.unknown and _done(session, backups, plan, a):
        reason = f"commit outcome confirmed by re-read after {result.error}"
        journal.record(a.id, J.COMMITTED, phase="delete", reason=reason)
        return _outcome(a, "committed", reason)
    reason = f"transaction failed: {result.error}"
    journal.record(a.id, J.FAILED, phase="delete", reason=reason, ops=list(result.ops))
    return _outcome(a, "failed", reason)


def _admin_one(
    session: ZkSession,
    journal: J.Journal,
    backups: BackupStore,
    plan: Plan,
    a: Action,
    admin: AdminApi | None,
    pace: Callable[[], None] | None = None,
) -> ActionOutcome:
    """An admin-API action (``delete-subscription``) whose journal state is not final: re-verify, call the
    broker once, then let ZooKeeper say what happened. An error answer is never read as success; an unknown
    outcome (timeout) is ``failed`` and the next run re-reads the tree before calling again."""
    st = journal.state(a.id)
    assert a.admin is not None
    missing = backups.covers(plan.checksum, a.id, _backup_spec(a))
    if missing is not None:
        reason = f"{missing}; re-run `--phase mark --apply` to re-create the backup"
        journal.record(a.id, J.FAILED, phase="delete", reason=reason)
        return _outcome(a, "failed", reason)
    if st.live in (J.DELETING, J.FAILED) and _done(session, backups, plan, a):
        reason = "the broker acted before an interruption (the tree shows it; backup present)"
        journal.record(a.id, J.COMMITTED, phase="delete", reason=reason, recovered=True)
        return _outcome(a, "committed", reason)
    # the cursor (or managed-ledger) znode exactly as scraped (version, bytes: lastActive and the position too);
    # a cursor's ledger is the broker's to delete and is only backed up
    # A load-topic needs no ownership check: a broker that loads a topic rewrites its managed-ledger znode (a new
    # current ledger), so "still at the scraped version" is "not loaded since the snapshot"; and once the test or
    # production broker owns a bundle for one load, its other topics are still unloaded.
    node = session.read(a.store, [a.path])[0]
    why = target_mismatch(a.preconditions.znodes[0], node) or rule_problem(
        session, plan, a, node, lambda: reference_index(session)
    )
    if why is not None:
        journal.record(a.id, J.SKIPPED, phase="delete", reason=why, final=True)
        return _outcome(a, "skipped", why)
    if admin is None:
        raise ApplyError(
            f"{a.id} calls a broker's admin API, but no admin URL was given; nothing was called",
            hint="pass --admin-url http://broker:8080 (and --client-conf for authentication)",
        )
    if a.kind == KIND_LOAD_TOPIC:
        if pace is not None:
            pace()  # --max-loads-per-minute: every load makes the broker read the topic back
        return _load_one(session, journal, a, admin, st)
    call = f"DELETE subscription {a.admin.subscription!r} of {a.admin.topic}"
    if st.live != J.DELETING:
        journal.record(a.id, J.DELETING, phase="delete", call=call)
    assert a.admin.subscription is not None
    result = admin.delete_subscription(a.admin.topic, a.admin.subscription)
    gone = _done(session, backups, plan, a)
    if result.ok and gone:
        journal.record(a.id, J.COMMITTED, phase="delete", status=result.status)
        return _outcome(a, "committed", f"broker answered {result.status}; cursor znode gone")
    if result.ok:
        reason = f"the broker answered {result.status} but {a.path} still exists; not counted as done"
        journal.record(a.id, J.FAILED, phase="delete", reason=reason, status=result.status)
        return _outcome(a, "failed", reason)
    detail = result.describe()
    if result.status == 412:
        reason = f"consumers are connected: {detail}; the subscription is in use, not deleted"
        journal.record(a.id, J.SKIPPED, phase="delete", reason=reason, status=412, final=True)
        return _outcome(a, "skipped", reason)
    if result.status == 404 and gone:
        reason = f"the broker says {detail} and the cursor znode is gone: someone else deleted it"
        journal.record(a.id, J.SKIPPED, phase="delete", reason=reason, status=404, final=True)
        return _outcome(a, "skipped", reason)
    reason = f"{call}: {detail}" + ("" if result.status is not None else "; outcome unknown, re-run to re-check")
    journal.record(a.id, J.FAILED, phase="delete", reason=reason, status=result.status)
    return _outcome(a, "failed", reason)


def _listed(session: ZkSession, a: Action) -> tuple[int, ...] | None:
    node = session.read(a.store, [a.path])[0]
    if not node.exists:
        return None
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info

    try:
        return decode_managed_ledger_info(node.data, a.path).info.ledger_ids
    except DecodeError:
        return None


def _load_one(session: ZkSession, journal: J.Journal, a: Action, admin: AdminApi, st: J.ActionState) -> ActionOutcome:
    """Ask the broker to load the topic and trim it (``trim``; ``stats`` where a broker has no trim endpoint),
    then re-read the managed-ledger znode and report which of the predicted ledgers the broker trimmed."""
    assert a.admin is not None
    call = f"POST trim of {a.admin.topic}"
    if st.live != J.DELETING:
        journal.record(a.id, J.DELETING, phase="delete", call=call)
    result = admin.trim_topic(a.admin.topic)
    # no trim endpoint (an older broker): 405, or a 404 the web server gave rather than the broker's ErrorData
    # ("Topic ... not found"); then only load it
    if result.status == 405 or (result.status == 404 and not result.error_data):
        call = f"GET stats of {a.admin.topic} (this broker has no trim endpoint)"
        result = admin.load_topic(a.admin.topic)
    answer = "no answer" if result.status is None else f"HTTP {result.status}"
    if not result.ok:
        reason = f"{call}: {result.describe()}" + (
            "" if result.status is not None else "; outcome unknown, re-run to re-check"
        )
        code = J.SKIPPED if result.status == 404 else J.FAILED
        final = {"final": True} if code == J.SKIPPED else {}
        journal.record(a.id, code, phase="delete", reason=reason, status=result.status, **final)
        return _outcome(a, "skipped" if code == J.SKIPPED else "failed", reason)
    listed = _listed(session, a)
    expected = a.admin.expect_trimmed
    trimmed = [i for i in expected if listed is not None and i not in listed]
    waiting = [i for i in expected if i not in trimmed]
    reason = f"{call}: {answer}; the broker trimmed {len(trimmed)} of {len(expected)} predicted ledger(s)"
    if waiting:
        reason += f"; still listed: {waiting[:10]} (the broker trims every retentionCheckIntervalInSeconds)"
    journal.record(a.id, J.COMMITTED, phase="delete", status=result.status, trimmed=trimmed, still_listed=waiting)
    return _outcome(a, "committed", reason)


def _cursor_checks(a: Action, refs: Sequence[ObservedRef]) -> tuple[str | None, tuple[tuple[str, int], ...]]:
    """A trim runs only while its topic's cursors are exactly the planned ones at their planned versions (an
    unloaded topic's cursors do not move); the transaction checks each version."""
    planned = {r.znode.path: r.znode.version for r in a.preconditions.references}
    now = {r.node.path: r.node for r in refs if r.role == ROLE_CURSOR and r.node.path != a.path}
    new = sorted(p for p, n in now.items() if n.exists and p not in planned)
    if new:
        return f"{new[0]}: a cursor created since the snapshot; re-audit before trimming", ()
    for path, version in sorted(planned.items()):
        node = now.get(path)
        if node is None or not node.exists:
            return f"cursor {path} is gone since the snapshot; re-audit before trimming", ()
        if node.version != version:
            return f"cursor {path} changed: version {version} -> {node.version} (the topic was loaded)", ()
    return None, tuple((p, v) for p, v in sorted(planned.items()))


def _rewrite_ops(
    session: ZkSession, backups: BackupStore, plan: Plan, a: Action, targets: Sequence[Observed]
) -> tuple[str | None, tuple[tuple[str, bytes, int], ...]]:
    """(skip reason, ()) or (None, the set_data op) for a rewrite whose targets are verified as scraped."""
    why = RW.live_problem(session, a)
    if why is not None:
        return why, ()
    current = next(t for t in targets if t.path == a.path)
    new, why = RW.new_bytes(a, current)
    if new is None:
        return why, ()
    if sha256_hex(new) != _rewritten_sha(backups, plan, a):
        return f"the rewrite of {a.path} no longer gives the bytes recorded at mark; re-run the mark phase", ()
    return None, ((a.path, new, current.version),)


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
    bookie_gc: GC.GcApply | None = None,
) -> ApplyReport:
    """``after_commit`` runs right after each committed transaction, before it is journaled (tests use it to
    crash at the worst moment)."""
    check_quarantine(plan, journal, quarantine_ms, now_ms)
    report = ApplyReport(
        "delete",
        True,
        plan.plan_id,
        plan.checksum,
        str(backups.root),
        str(journal.path),
        quarantine_ms=quarantine_ms,
    )
    index: list[ReferenceIndex] = []
    last_load: list[float] = []

    def pace() -> None:  # at most loads_per_minute topic loads per minute
        interval = 60.0 / loads_per_minute if loads_per_minute > 0 else 0.0
        if last_load and interval > 0:
            wait = last_load[0] + interval - time.monotonic()
            if wait > 0:
                sleep(wait)
        last_load[:] = [time.monotonic()]

    failed: list[ZooKeeperError] = []

    def refs_index() -> ReferenceIndex:  # read once, when the first ledger action gets this far
        if failed:  # unreadable once in this run: every ledger action is a transient skip, not a re-read each
            raise failed[0]
        if not index:
            try:
                index.append(reference_index(session))
            except ZooKeeperError as e:
                failed.append(e)
                raise
        return index[0]

    done = 0
    for batch in _batches(plan.actions, batch_size):
        committed: list[Action] = []
        for a in batch:
            was_final = journal.state(a.id).final
            out = _delete_one(session, journal, backups, plan, a, refs_index, after_commit, admin, pace, bookie_gc)
            report.outcomes.append(out)
            if out.outcome == "committed" and not was_final:
                committed.append(a)
        for a in committed:  # verify the batch before the next one begins
            if a.kind == KIND_BOOKIE_GC:
                continue  # its done-check is the wait on GET /api/v1/bookie/gc (bookie_gc.trigger_and_wait)
            if not _done(session, backups, plan, a):
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
    report = ApplyReport(
        phase,
        False,
        plan.plan_id,
        plan.checksum,
        str(backup_dir),
        str(journal_path),
        quarantine_ms=quarantine_ms if phase == "delete" else None,
    )
    for a in plan.actions:
        st = journal.state(a.id)
        n = a.znode_count
        previous = _previous(st)
        if st.final:
            report.outcomes.append(_outcome(a, st.state, _from_before(st)))
        elif phase == "mark":
            if st.live == J.PENDING and a.bookie_gc is not None:
                why = f"re-read bookie {a.bookie_gc.bookie_id}'s configuration and GC state; change nothing"
                report.outcomes.append(_outcome(a, "would-mark", _joined(why, previous)))
            elif st.live == J.PENDING:
                why = f"re-read and back up {n} znode(s) of {a.path}"
                report.outcomes.append(_outcome(a, "would-mark", _joined(why, previous)))
            else:
                report.outcomes.append(_outcome(a, "marked", _joined(f"already {st.live}", previous)))
        elif st.live == J.PENDING:
            report.outcomes.append(_outcome(a, "pending", _joined("not marked: run --phase mark first", previous)))
        else:
            assert st.marked_at_ms is not None or st.live != J.MARKED
            wait = (st.marked_at_ms or 0) + quarantine_ms - now_ms
            refs = len(a.preconditions.references)
            why = f"re-verify {n} znode(s) and {refs} reference(s), then delete with compare-and-set"
            verb = "would-delete"
            if a.bookie_gc is not None:
                verb, why = "would-call", GC.dry_run_text(a.bookie_gc)
            elif a.admin is not None and a.kind == KIND_LOAD_TOPIC:
                verb = "would-call"
                why = (
                    f"re-verify {a.path} (version, bytes) and that {a.admin.topic} is unloaded, then ask the broker "
                    f"to load and trim it (POST trim), paced by --max-loads-per-minute; predicted: ledger(s) "
                    f"{', '.join(str(i) for i in a.admin.expect_trimmed)}"
                )
            elif a.admin is not None:
                verb = "would-call"
                why = (
                    f"re-verify {a.path} (version, bytes, lastActive), then ask the broker to delete subscription "
                    f"{a.admin.subscription!r} of {a.admin.topic} (DELETE, force=false; 412 if consumers connect)"
                )
            elif a.rewrite is not None:
                verb = "would-rewrite"
                ids = ", ".join(str(i) for i in a.rewrite.ledger_ids)
                if a.kind == KIND_TRIM_UNLOADED:
                    why = (
                        f"re-verify {a.path}, its {n - 1} expired ledger znode(s) and {refs} cursor(s), that "
                        f"{a.rewrite.topic} is unloaded, then rewrite its list without ledger(s) {ids} and delete "
                        "their metadata in one compare-and-set transaction"
                    )
                else:
                    why = (
                        f"re-verify {a.path}, that ledger(s) {ids} are still missing and {a.rewrite.topic} "
                        "unloaded, then rewrite its list without them with compare-and-set"
                    )
            if wait > 0:
                why += f" (quarantine: {human_duration(wait)} to go)"
            report.outcomes.append(_outcome(a, verb, _joined(why, previous)))
    return report
