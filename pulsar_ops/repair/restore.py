"""Restore backed-up znodes: parents first, with their ACLs, byte-identical (sha256 verified after writing).

Per entry: ``restored`` | ``already-present`` | ``conflict`` (other bytes: never overwritten) | ``skipped`` (an
ancestor is in conflict) | ``failed`` | in a dry run ``would-create`` / ``would-rewrite``. An action that rewrote a
managed-ledger znode (its entry has ``replaced_by``) is restored whole, in one transaction, or not at all
(``action_conflicts``): ``docs/repair.md``, "Whole or nothing per action".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import RestoreError
from pulsar_ops.identity import ClusterIdentity
from pulsar_ops.repair.actions import Record
from pulsar_ops.repair.backup import BackupEntry, BackupStore
from pulsar_ops.repair.plan_file import Plan
from pulsar_ops.repair.safety import within
from pulsar_ops.repair.validate import depth, sha256_hex
from pulsar_ops.repair.zk_writer import ZkSession

GC_WARNING = (
    "WARNING: bookies discard a deleted ledger's data at their next garbage-collection run (minutes; "
    "gcWaitTime defaults to 15 min). Restoring ledger metadata after that brings back metadata whose data "
    "is gone: restore is a safety net for a short window only."
)


@dataclass
class RestoreOutcome(Record):
    store: str
    path: str
    sha256: str
    outcome: str
    reason: str = ""
    created_parents: list[str] = field(default_factory=list)


@dataclass
class ActionConflict(Record):
    """A rewrite action none of whose znodes was restored, because its managed-ledger znode cannot be."""

    action_id: str
    managed_ledger: str
    reason: str
    what_to_do: str


@dataclass
class RestoreReport:
    backup_dir: str
    applied: bool
    outcomes: list[RestoreOutcome] = field(default_factory=list)
    warning: str = GC_WARNING
    action_conflicts: list[ActionConflict] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(o.outcome for o in self.outcomes).items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "backup_dir": self.backup_dir,
            "applied": self.applied,
            "warning": self.warning,
            "counts": self.counts(),
            "znodes": [o.to_json() for o in self.outcomes],
            "action_conflicts": [c.to_json() for c in self.action_conflicts],
        }


@dataclass(frozen=True)
class RestoreTarget:
    """Which plan's znodes to restore, and the cluster that plan was made for."""

    plan_id: str
    identity: ClusterIdentity | None
    ledgers_root: str
    recorded: Mapping[str, Any] = field(default_factory=dict)  # the plan's whole ``target`` (address too)


def restore_target(backups: BackupStore, plan: Plan | None, plan_id: str | None) -> RestoreTarget:
    """The plan a restore is for: ``--plan`` (its file), ``--plan-id``, or the only plan in the directory."""
    in_dir = sorted({e.plan_id for e in backups.entries})
    if plan is not None:
        if plan_id is not None and plan_id != plan.plan_id:
            raise RestoreError(f"--plan is plan {plan.plan_id} but --plan-id says {plan_id}", hint="pass one of them")
        plan_id = plan.plan_id
    if plan_id is None:
        if len(in_dir) > 1:
            raise RestoreError(
                f"{backups.root} holds backups of {len(in_dir)} plans ({', '.join(in_dir)})",
                hint="say which one: `pulsar-ops restore BACKUP_DIR --plan PLAN.json` (or --plan-id ID)",
                code="restore-ambiguous",
            )
        if not in_dir:
            return RestoreTarget("", None, "/ledgers")
        plan_id = in_dir[0]
    if plan_id not in in_dir:
        held = ", ".join(in_dir) or "none"
        raise RestoreError(
            f"{backups.root} holds no backup of plan {plan_id} (it holds: {held})",
            hint="pass the backup directory that plan was marked into",
        )
    if plan is not None:
        return RestoreTarget(plan_id, plan.identity, plan.ledgers_root, dict(plan.target))
    recorded = backups.plans.get(plan_id, {}).get("target") or {}
    ident = recorded.get("identity")
    try:
        identity = None if ident is None else ClusterIdentity.from_json(ident)
    except ValueError as e:
        raise RestoreError(f"{backups.root}: plan {plan_id}: {e}") from None
    return RestoreTarget(plan_id, identity, str(recorded.get("ledgers_root") or "/ledgers"), dict(recorded))


def select_entries(entries: tuple[BackupEntry, ...], only: str | None, plan_id: str | None = None) -> list[BackupEntry]:
    """One entry per (store, path), parents first. The newest backup of a path wins; two different byte
    versions of one path in the backup is an error (which one to restore would be a guess)."""
    chosen: dict[tuple[str, str], BackupEntry] = {}
    for e in sorted(entries, key=lambda x: x.backed_up_at_ms):
        if only is not None and not within(e.path, only):
            continue
        if plan_id and e.plan_id != plan_id:
            continue
        key = (e.store, e.path)
        prev = chosen.get(key)
        if prev is not None and prev.sha256 != e.sha256:
            raise RestoreError(
                f"the backup holds two different versions of {e.path} (actions {prev.action_id} and {e.action_id})",
                hint="restore one of them with `--only PATH` from a backup directory holding one plan",
            )
        chosen[key] = e
    if only is not None and not chosen:
        raise RestoreError(f"no backed-up znode at or below {only}", hint="list the backup with a dry run")
    return sorted(chosen.values(), key=lambda e: (e.store, depth(e.path), e.path))


def _missing_parents(session: ZkSession, store: str, path: str, made: set[str] | None = None) -> list[str]:
    """The ancestors of ``path`` that do not exist (nor are in ``made``), parents first."""
    missing: list[str] = []
    p = path.rsplit("/", 1)[0] or "/"
    while p != "/" and p not in (made or ()) and not session.read(store, [p])[0].exists:
        missing.append(p)
        p = p.rsplit("/", 1)[0] or "/"
    return missing[::-1]


def run_restore(
    backups: BackupStore,
    session: ZkSession,
    *,
    only: str | None,
    apply: bool,
    plan_id: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RestoreReport:
    entries = select_entries(backups.entries, only, plan_id)
    groups = rewrite_groups(backups.entries, entries, plan_id)
    grouped = {(e.store, e.path) for g in groups for e in g.entries}
    plain = [e for e in entries if (e.store, e.path) not in grouped]
    total = len(plain) + len(grouped)
    report = RestoreReport(str(backups.root), apply)
    blocked: set[tuple[str, str]] = set()
    for n, e in enumerate(plain, start=1):
        out = _restore_one(backups, session, e, apply=apply, blocked=blocked)
        if out.outcome in ("conflict", "skipped", "failed"):
            blocked.add((e.store, e.path))
        report.outcomes.append(out)
        if progress:
            progress(n, total)
    done = len(plain)
    for g in groups:  # after the plain entries: an ancestor they restore exists by then
        outs, conflict = _restore_action(backups, session, g, apply=apply, blocked=blocked)
        report.outcomes.extend(outs)
        if conflict is not None:
            report.action_conflicts.append(conflict)
        done += len(g.entries)
        if progress:
            progress(done, total)
    return report


@dataclass(frozen=True)
class RewriteGroup:
    """The backed-up znodes of one action that rewrote a managed-ledger znode: that znode and its ledgers."""

    action_id: str
    info: BackupEntry  # the managed-ledger znode (``replaced_by`` set)
    others: tuple[BackupEntry, ...]  # the ledger znodes the action deleted

    @property
    def entries(self) -> tuple[BackupEntry, ...]:
        return (self.info, *self.others)


def rewrite_groups(
    everything: tuple[BackupEntry, ...], selected: list[BackupEntry], plan_id: str | None
) -> list[RewriteGroup]:
    """The rewrite actions with at least one selected znode, each with all of its znodes (whole actions)."""
    wanted = {e.action_id for e in selected}
    by_action: dict[str, list[BackupEntry]] = {}
    for e in select_entries(everything, None, plan_id):
        if e.action_id in wanted:
            by_action.setdefault(e.action_id, []).append(e)
    out: list[RewriteGroup] = []
    for action_id, es in sorted(by_action.items()):
        infos = [e for e in es if e.replaced_by is not None]
        if len(infos) != 1:
            continue  # not a rewrite action: entry by entry
        others = tuple(e for e in es if e is not infos[0])
        out.append(RewriteGroup(action_id, infos[0], others))
    return out


def _what_to_do(backups: BackupStore, g: RewriteGroup) -> str:
    then = (
        ", then re-run this restore: with the backed-up list in place it restores the ledger znodes that list names"
        if g.others
        else ""
    )
    return (
        "if the topic works, its current list is the broker's and nothing needs restoring; to go back to the "
        f"backed-up list, unload the topic and write the backed-up bytes {backups.object_path(g.info.sha256)} to "
        f"{g.info.path}{then}"
    )


def _restore_action(
    backups: BackupStore, session: ZkSession, g: RewriteGroup, *, apply: bool, blocked: set[tuple[str, str]]
) -> tuple[list[RestoreOutcome], ActionConflict | None]:
    """Restore one rewrite action whole (one transaction) or none of it."""
    info = g.info
    current = session.read(info.store, [info.path])[0]
    now_sha = sha256_hex(current.data) if current.exists else None
    if now_sha == info.sha256:  # the backed-up list is back: its ledgers are restored entry by entry
        present = [RestoreOutcome(info.store, info.path, info.sha256, "already-present")]
        for e in g.others:
            present.append(_restore_one(backups, session, e, apply=apply, blocked=blocked))
        return present, None
    if now_sha is None or now_sha != info.replaced_by:
        why = (
            f"{info.path} was deleted since the action"
            if now_sha is None
            else f"{info.path} was written since the action (it holds neither the backed-up bytes nor the ones "
            "the action wrote)"
        )
        return _nothing(backups, g, why)
    # the managed-ledger znode holds exactly what the action wrote: read the ledger znodes, then one transaction
    data = backups.read_valid_object(info.sha256)
    if data is None:
        return _nothing(backups, g, f"the backup object {info.sha256} of {info.path} is missing or corrupt")
    outs: list[RestoreOutcome] = []
    creates: list[tuple[str, bytes, tuple[Any, ...]]] = []
    made: set[str] = set()
    for e in g.others:
        out = RestoreOutcome(e.store, e.path, e.sha256, "would-create")
        body = backups.read_valid_object(e.sha256)
        if body is None:
            return _nothing(backups, g, f"the backup object {e.sha256} of {e.path} is missing or corrupt")
        node = session.read(e.store, [e.path])[0]
        if node.exists:
            if sha256_hex(node.data) != e.sha256:
                return _nothing(backups, g, f"{e.path} exists with other bytes")
            out.outcome = "already-present"
            outs.append(out)
            continue
        out.created_parents = _missing_parents(session, e.store, e.path, made)
        for p in out.created_parents:
            creates.append((p, b"", e.acl))
            made.add(p)
        creates.append((e.path, body, e.acl))
        outs.append(out)
    info_out = RestoreOutcome(info.store, info.path, info.sha256, "would-rewrite")
    info_out.reason = "holds the bytes the action wrote; the backed-up bytes go back with the action's ledgers"
    outs.append(info_out)
    if not apply:
        return outs, None
    result = session.commit(info.store, (), ((info.path, data, current.version),), (), creates=creates)
    if not result.committed:
        reason = f"outcome unknown ({result.error}); re-run restore" if result.unknown else ""
        if result.unknown:
            for o in outs:
                o.outcome, o.reason, o.created_parents = "failed", reason, []
            return outs, None
        return _nothing(backups, g, f"the transaction failed ({result.error}): changed while restoring")
    for o in outs:
        o.outcome, o.reason = "restored", "restored with its action, in one transaction"
        if not _holds(session, o.store, o.path, o.sha256):
            o.outcome, o.reason = "failed", "read-back after the transaction does not match the backup bytes"
    return outs, None


def _nothing(backups: BackupStore, g: RewriteGroup, why: str) -> tuple[list[RestoreOutcome], ActionConflict]:
    """None of the action's znodes is restored: the managed-ledger znode is a conflict, its ledgers skipped."""
    what = _what_to_do(backups, g)
    info = RestoreOutcome(g.info.store, g.info.path, g.info.sha256, "conflict", f"{why}; not overwritten")
    outs = [info]
    for e in g.others:
        outs.append(
            RestoreOutcome(
                e.store,
                e.path,
                e.sha256,
                "skipped",
                f"not restored: the managed-ledger znode {g.info.path} of the same action ({g.action_id}) cannot "
                "be; restored alone, this ledger would be listed by no managed ledger (an orphan)",
            )
        )
    reason = (
        f"{why}: none of the action's {len(g.others)} ledger znode(s) was restored either (restored alone they "
        "would be orphans)"
        if g.others
        else f"{why}; not overwritten"
    )
    return outs, ActionConflict(g.action_id, g.info.path, reason, what)


def _restore_one(
    backups: BackupStore, session: ZkSession, e: BackupEntry, *, apply: bool, blocked: set[tuple[str, str]]
) -> RestoreOutcome:
    out = RestoreOutcome(e.store, e.path, e.sha256, "failed")
    for store, path in blocked:
        if store == e.store and within(e.path, path) and e.path != path:
            out.outcome, out.reason = "skipped", f"ancestor {path} was not restored"
            return out
    data = backups.read_valid_object(e.sha256)
    if data is None:
        out.reason = f"backup object {e.sha256} is missing or corrupt (sha256 mismatch)"
        return out
    current = session.read(e.store, [e.path])[0]
    if current.exists:
        now_sha = sha256_hex(current.data)
        if now_sha == e.sha256:
            out.outcome = "already-present"
        else:  # (a rewritten managed-ledger znode is never restored alone: _restore_action)
            out.outcome, out.reason = "conflict", "the znode exists with other bytes; not overwritten"
        return out
    missing_parents = _missing_parents(session, e.store, e.path)
    if not apply:
        out.outcome = "would-create"
        out.created_parents = missing_parents
        return out
    for parent in missing_parents:
        if session.create(e.store, parent, b"", e.acl) == "created":
            out.created_parents.append(parent)
    if session.create(e.store, e.path, data, e.acl) == "exists":
        same = _holds(session, e.store, e.path, e.sha256)
        out.outcome = "already-present" if same else "conflict"
        out.reason = "" if same else "created concurrently with other bytes; not overwritten"
        return out
    got = session.read_with_acl(e.store, e.path)
    if got is None or sha256_hex(got.node.data) != e.sha256:
        out.reason = "read-back after create does not match the backup bytes"
        return out
    if _norm_acl(got.acl) != _norm_acl(e.acl) and e.acl:
        out.reason = f"restored bytes, but ACL differs: {list(got.acl)} != {list(e.acl)}"
        return out
    out.outcome = "restored"
    return out


def _holds(session: ZkSession, store: str, path: str, sha256: str) -> bool:
    """The znode exists with exactly the bytes hashing to ``sha256`` (read now)."""
    node = session.read(store, [path])[0]
    return node.exists and sha256_hex(node.data) == sha256


def _norm_acl(acl: Any) -> list[tuple[int, str, str]]:
    return sorted((int(a["perms"]), str(a["scheme"]), str(a["id"])) for a in acl)


def open_backup(path: Path) -> BackupStore:
    return BackupStore.open(Path(path), create=False)
