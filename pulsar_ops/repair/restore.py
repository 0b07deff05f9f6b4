"""Restore backed-up znodes: parents first, with their ACLs, byte-identical (sha256 verified after writing).

Per entry outcome: ``restored`` | ``already-present`` (same bytes) | ``conflict`` (other bytes: never
overwritten) | ``skipped`` (an ancestor is in conflict) | ``failed`` | and in a dry run ``would-create`` /
``would-rewrite``. A znode an action rewrote (a managed-ledger info) is written back, compare-and-set, only while
it holds exactly the bytes the action wrote (``BackupEntry.replaced_by``); anything else is a conflict.
Missing ancestors that are not in the backup are created empty with the restored node's ACL and reported.

WARNING: bookies discard a deleted ledger's data at their next garbage-collection run (minutes; ``gcWaitTime``
defaults to 15 min). Restoring ledger metadata is a safety net for that short window only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import RestoreError
from pulsar_ops.identity import ClusterIdentity
from pulsar_ops.repair.backup import BackupEntry, BackupStore
from pulsar_ops.repair.plan_file import Plan
from pulsar_ops.repair.validate import sha256_hex
from pulsar_ops.repair.zk_writer import ZkSession

GC_WARNING = (
    "WARNING: bookies discard a deleted ledger's data at their next garbage-collection run (minutes; "
    "gcWaitTime defaults to 15 min). Restoring ledger metadata after that brings back metadata whose data "
    "is gone: restore is a safety net for a short window only."
)


@dataclass
class RestoreOutcome:
    store: str
    path: str
    sha256: str
    outcome: str
    reason: str = ""
    created_parents: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "path": self.path,
            "sha256": self.sha256,
            "outcome": self.outcome,
            "reason": self.reason,
            "created_parents": list(self.created_parents),
        }


@dataclass
class RestoreReport:
    backup_dir: str
    applied: bool
    outcomes: list[RestoreOutcome] = field(default_factory=list)
    warning: str = GC_WARNING

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(o.outcome for o in self.outcomes).items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "backup_dir": self.backup_dir,
            "applied": self.applied,
            "warning": self.warning,
            "counts": self.counts(),
            "znodes": [o.to_json() for o in self.outcomes],
        }


def _depth(path: str) -> int:
    return path.count("/")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass(frozen=True)
class RestoreTarget:
    """Which plan's znodes to restore, and the cluster that plan was made for."""

    plan_id: str
    identity: ClusterIdentity | None
    ledgers_root: str


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
        return RestoreTarget(plan_id, plan.identity, plan.ledgers_root)
    recorded = backups.plans.get(plan_id, {}).get("target") or {}
    ident = recorded.get("identity")
    try:
        identity = None if ident is None else ClusterIdentity.from_json(ident)
    except ValueError as e:
        raise RestoreError(f"{backups.root}: plan {plan_id}: {e}") from None
    return RestoreTarget(plan_id, identity, str(recorded.get("ledgers_root") or "/ledgers"))


def select_entries(entries: tuple[BackupEntry, ...], only: str | None, plan_id: str | None = None) -> list[BackupEntry]:
    """One entry per (store, path), parents first. The newest backup of a path wins; two different byte
    versions of one path in the backup is an error (which one to restore would be a guess)."""
    chosen: dict[tuple[str, str], BackupEntry] = {}
    for e in sorted(entries, key=lambda x: x.backed_up_at_ms):
        if only is not None and not _within(e.path, only):
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
    return sorted(chosen.values(), key=lambda e: (e.store, _depth(e.path), e.path))


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


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
    report = RestoreReport(str(backups.root), apply)
    blocked: set[tuple[str, str]] = set()
    for n, e in enumerate(entries, start=1):
        out = _restore_one(backups, session, e, apply=apply, blocked=blocked)
        if out.outcome in ("conflict", "skipped", "failed"):
            blocked.add((e.store, e.path))
        report.outcomes.append(out)
        if progress:
            progress(n, len(entries))
    return report


def _restore_one(
    backups: BackupStore, session: ZkSession, e: BackupEntry, *, apply: bool, blocked: set[tuple[str, str]]
) -> RestoreOutcome:
    out = RestoreOutcome(e.store, e.path, e.sha256, "failed")
    for store, path in blocked:
        if store == e.store and _within(e.path, path) and e.path != path:
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
        elif e.replaced_by is not None and now_sha == e.replaced_by:
            return _put_back(session, e, data, current.version, out, apply=apply)
        else:
            out.outcome, out.reason = "conflict", "the znode exists with other bytes; not overwritten"
        return out
    missing_parents: list[str] = []
    p = _parent(e.path)
    while p != "/" and not session.read(e.store, [p])[0].exists:
        missing_parents.append(p)
        p = _parent(p)
    missing_parents.reverse()
    if not apply:
        out.outcome = "would-create"
        out.created_parents = missing_parents
        return out
    for parent in missing_parents:
        if session.create(e.store, parent, b"", e.acl) == "created":
            out.created_parents.append(parent)
    if session.create(e.store, e.path, data, e.acl) == "exists":
        now = session.read(e.store, [e.path])[0]
        same = now.exists and sha256_hex(now.data) == e.sha256
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


def _put_back(
    session: ZkSession, e: BackupEntry, data: bytes, version: int, out: RestoreOutcome, *, apply: bool
) -> RestoreOutcome:
    """A znode an action rewrote and nobody changed since: write the backed-up bytes back, compare-and-set on
    the version just read (a broker writing in between makes it a conflict, never overwritten)."""
    if not apply:
        out.outcome, out.reason = "would-rewrite", "holds the bytes the action wrote; the backed-up bytes go back"
        return out
    result = session.commit(e.store, (), ((e.path, data, version),), ())
    if not result.committed:
        now = session.read(e.store, [e.path])[0]
        if now.exists and sha256_hex(now.data) == e.sha256:
            out.outcome = "already-present"
        elif result.unknown:
            out.reason = f"outcome unknown ({result.error}); re-run restore"
        else:
            out.outcome, out.reason = "conflict", f"changed while restoring ({result.error}); not overwritten"
        return out
    now = session.read(e.store, [e.path])[0]
    if not now.exists or sha256_hex(now.data) != e.sha256:
        out.reason = "read-back after the rewrite does not match the backup bytes"
        return out
    out.outcome, out.reason = "restored", "rewritten back to the backed-up bytes"
    return out


def _norm_acl(acl: Any) -> list[tuple[int, str, str]]:
    return sorted((int(a["perms"]), str(a["scheme"]), str(a["id"])) for a in acl)


def open_backup(path: Path) -> BackupStore:
    return BackupStore.open(Path(path), create=False)
