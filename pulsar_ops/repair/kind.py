"""What an action kind is: the :class:`Kind` each ``pulsar_ops.repair.kinds.<kind>`` module defines one of (``build``,
``shape``, ``rule``, ``verify``, ``done``, the dry run and the impact), and what several kinds share, so that a
kind module never imports another. Nothing outside ``kinds/`` branches on a kind: it asks the registry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pulsar_ops.errors import DecodeError, ZooKeeperError
from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.formats.ml_rewrite import rewrite_without_ledgers
from pulsar_ops.repair.actions import ROLE_CURSOR, Action, FindingRef, RemovedLedger, ZnodeRef
from pulsar_ops.repair.facts import Facts, Observed, ObservedRef, SnapshotFacts, code_of

if TYPE_CHECKING:
    from pulsar_ops.repair.admin_writer import AdminApi
    from pulsar_ops.repair.zk_writer import ZkSession

SetOp = tuple[str, bytes, int]
CheckOp = tuple[str, int]


class Skip(Exception):
    """The planner does not plan this finding: a stable reason code and a human reason."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def hashed_id(prefix: str, store: str, path: str) -> str:
    """A stable action id for an action on one znode: ``<prefix>-`` and 16 hex digits of sha256(store:path)."""
    return f"{prefix}-" + hashlib.sha256(f"{store}:{path}".encode()).hexdigest()[:16]


def absent_ref(store: str, path: str) -> ZnodeRef:
    return ZnodeRef(store=store, path=path, version=-1, mzxid=0, sha256=None)


def ml_target(f: Finding, facts: SnapshotFacts, *, rewrite: bool) -> tuple[names.MlName, ZnodeRef]:
    """The managed ledger a finding's ``path`` names and its znode as scraped (binary when it is to be
    rewritten), or Skip."""
    path = f.path or ""
    try:
        ml = names.ml_name_from_path(path)
    except DecodeError as e:
        raise Skip("owner-unmappable", f"{path}: {e.reason}") from None
    if ml.topic != f.topic:
        raise Skip("path-mismatch", f"{path} is not the managed-ledger znode of {f.topic}")
    znode = facts.managed_ledgers.get(ml.ml_name)
    if znode is None or znode.path != path or znode.sha256 is None:
        raise Skip("missing-in-snapshot", f"{path} is not in the snapshot's managed_ledgers/znodes tables")
    fmt = facts.ml_formats.get(path)
    if rewrite and fmt != "binary":
        raise Skip("not-rewritable", f"{path} is a {fmt} managed-ledger info; only binary values are rewritten")
    return ml, znode


def ledger_ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise Skip("malformed-finding", f"evidence ledger ids {value!r} are not a list of integers")
    return [int(v) for v in value]


@dataclass(frozen=True)
class Verified:
    """A delete-time verification: why not (None: go), and the transaction's extra set and check ops."""

    why: str | None = None
    sets: tuple[SetOp, ...] = ()
    checks: tuple[CheckOp, ...] | None = None  # None: keep the checks the generic verification computed


class Kind:
    """The default behaviour; each kind module overrides what differs."""

    name: ClassVar[str]
    via_broker: ClassVar[bool] = False  # its delete phase asks a broker (admin REST API)
    paced: ClassVar[bool] = False  # broker calls paced by --max-loads-per-minute
    rewrites: ClassVar[bool] = False  # it rewrites a managed-ledger znode (new bytes stored at mark)
    reads_subtree: ClassVar[bool] = False  # its targets are a subtree (new znodes inside are noticed)
    reads_references: ClassVar[bool] = False  # delete re-reads its referencing znodes (and checks them)
    rule_at_mark: ClassVar[bool] = True  # mark asks the rule (a leak subtree: only a forecast)
    nests: ClassVar[bool] = False  # an action inside another of the kind is dropped (subtrees)
    steps_itself: ClassVar[bool] = False  # it runs its own mark and delete steps (``step``), not a znode backup

    # --- the plan ------------------------------------------------------------------------------------------
    def action(self, f: Finding, action_id: str, path: str, *, store: str = "local", **fields: Any) -> Action:
        """An action of this kind answering finding ``f`` (the other fields: :class:`Action`'s)."""
        return Action(action_id, self.name, store, path, FindingRef(f.key(), f.detection), **fields)

    def target(self, a: Action) -> str:
        return a.path

    def kept_znodes(self, a: Action) -> int:
        """Of the action's znodes, how many it does not delete."""
        return 1 if a.rewrite is not None else 0

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        raise NotImplementedError

    def rule(self, a: Action, facts: Facts) -> str | None:
        raise NotImplementedError

    # --- apply -----------------------------------------------------------------------------------------------
    def reference_owners(self, a: Action) -> list[tuple[str, str]]:
        """Znodes whose children (cursors) delete re-reads as references, besides the planned references."""
        return []

    def verify(
        self,
        session: ZkSession,
        a: Action,
        targets: Sequence[Observed],
        refs: Sequence[ObservedRef],
        facts: Facts,
        rewritten_sha: str | None,
    ) -> Verified:
        """At delete, after the generic target check: the kind's rule on the live facts, and its own ops."""
        return Verified(self.rule(a, facts))

    def done(self, session: ZkSession, a: Action, rewritten_sha: str | None) -> bool:
        """The action's change is in the tree (by default: every znode it deletes is gone)."""
        paths = [z.path for z in a.preconditions.znodes]
        return not any(o.exists for o in session.read(a.store, paths))

    def forecast(self, session: ZkSession, a: Action, facts: Facts) -> tuple[str, str]:
        """A marked action's outcome at mark."""
        return "marked", ""

    def call_text(self, a: Action) -> str:
        """A broker kind: the call its delete phase journals before making it."""
        raise NotImplementedError

    def call(self, session: ZkSession, a: Action, admin: AdminApi, done: Callable[[], bool]) -> Called:
        """A broker kind: make the call once and say what it came to (``done``: the tree shows the change)."""
        raise NotImplementedError

    def step(
        self, session: ZkSession, journal: Any, backups: Any, plan: Any, a: Action, clients: Any
    ) -> tuple[str, str]:
        """A kind that ``steps_itself``: its mark (journal state pending) or delete step. (outcome, reason)."""
        raise NotImplementedError

    def dry_run_mark(self, a: Action) -> str:
        return f"re-read and back up {a.znode_count} znode(s) of {a.path}"

    def dry_run(self, a: Action) -> tuple[str, str]:
        n, refs = a.znode_count, len(a.preconditions.references)
        return "would-delete", f"re-verify {n} znode(s) and {refs} reference(s), then delete with compare-and-set"

    # --- the impact ----------------------------------------------------------------------------------------
    def freed(self, a: Action, ledgers_root: str) -> list[int]:
        """Ledger ids whose bookie data the action lets the bookies reclaim."""
        return []

    def impact_note(self, a: Action, per_ledger: dict[str, Any], ledgers_root: str) -> dict[str, Any]:
        return {"bytes_on_disk": 0, "note": "metadata only: no bookie data"}


# --- what the rewrite kinds share (drop-missing-ledger, trim-unloaded) ---------------------------------------


def rewrite_shape(a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
    """A rewrite changes exactly one managed-ledger znode (the topic's), in the local store, listed first, and
    carries no ledger id or custom metadata; it checks only its own managed ledger's cursors; every absent path
    is the metadata znode of a ledger it removes."""
    rw = a.rewrite
    if rw is None:
        return f"a {a.kind} action has no rewrite"
    if a.store != "local":
        return "managed-ledger infos live in the local metadata store"
    if a.ledger_id is not None or a.preconditions.custom_metadata:
        return "a rewrite action carries no ledger_id or custom metadata"
    if rw.path != a.path or not paths or paths[0] != a.path:
        return f"a {a.kind} action rewrites its managed-ledger znode {a.path} (listed first)"
    for r in a.preconditions.references:
        inside = r.znode.path.startswith(a.path.rstrip("/") + "/")
        if r.role != ROLE_CURSOR or not inside:
            return f"a rewrite only checks the cursors of its own managed ledger, not {r.znode.path}"
    try:
        ml = names.split_ml_path(a.path)
        topic = names.parse_topic(rw.topic)
    except DecodeError as e:
        return f"{a.path} / {rw.topic}: {e.reason}"
    if ml[1] is not None or topic.ml_name != ml[0].ml_name:
        return f"{a.path} is not the managed-ledger znode of {rw.topic}"
    ids = rw.ledger_ids
    if len(set(ids)) != len(ids):
        return "a ledger is removed twice"
    for p in a.preconditions.absent:
        lid = ledger_id_from_path(p, ledgers_root)
        if lid is None or lid not in ids:
            return f"absent path {p} is not the metadata znode of a removed ledger under {ledgers_root}"
    return None


def rewritten(a: Action, current: Observed) -> tuple[bytes | None, str]:
    """(the bytes the rewrite writes, "") or (None, why it cannot be rewritten)."""
    assert a.rewrite is not None
    try:
        return rewrite_without_ledgers(current.data, a.rewrite.ledger_ids, a.path).data, ""
    except DecodeError as e:
        return None, f"{a.path} cannot be rewritten: {e.reason}"


def absent_problem(session: ZkSession, a: Action) -> str | None:
    """Why a ledger the action requires absent (``preconditions.absent``) is there again (or cannot be told)."""
    paths = list(a.preconditions.absent)
    if not paths:
        return None
    try:
        present = [o.path for o in session.read(a.store, paths) if o.exists]
    except ZooKeeperError as e:
        return f"cannot re-read the missing ledgers' znodes ({e.message}); not evidence of absence"
    if present:
        return f"{present[0]} exists again: that ledger is not missing"
    return None


class RewriteKind(Kind):
    """A kind that rewrites a managed-ledger znode: at delete, its ledgers still absent and the bytes recorded at
    mark, then its own transaction checks, then its rule; done when the znode holds them."""

    rewrites = True

    def transaction_checks(
        self, a: Action, refs: Sequence[ObservedRef]
    ) -> tuple[str | None, tuple[CheckOp, ...] | None]:
        """(why not, the transaction's check ops; None: the generic ones)."""
        return None, None

    def verify(
        self,
        session: ZkSession,
        a: Action,
        targets: Sequence[Observed],
        refs: Sequence[ObservedRef],
        facts: Facts,
        rewritten_sha: str | None,
    ) -> Verified:
        """Its targets are verified as scraped: every ledger it requires absent still is and the new bytes are those
        recorded at mark (then the set_data op), and its own checks and its rule allow it."""
        why = absent_problem(session, a)
        if why is not None:
            return Verified(why)
        current = next(t for t in targets if t.path == a.path)
        new, why = rewritten(a, current)
        if new is None:
            return Verified(why)
        if hashlib.sha256(new).hexdigest() != rewritten_sha:
            why = f"the rewrite of {a.path} no longer gives the bytes recorded at mark; re-run the mark phase"
            return Verified(why)
        why, checks = self.transaction_checks(a, refs)
        return Verified(why or self.rule(a, facts), ((a.path, new, current.version),), checks)

    def done(self, session: ZkSession, a: Action, rewritten_sha: str | None) -> bool:
        """Its znode holds the bytes the action writes and every other target is gone."""
        nodes = {o.path: o for o in session.read(a.store, [z.path for z in a.preconditions.znodes])}
        node = nodes.pop(a.path)
        return (
            rewritten_sha is not None
            and node.exists
            and hashlib.sha256(node.data).hexdigest() == rewritten_sha
            and not any(o.exists for o in nodes.values())
        )


# --- what the broker kinds share (delete-subscription, load-topic) --------------------------------------------


def broker_shape(a: Action) -> tuple[str | None, tuple[names.MlName, str | None] | None]:
    """Every admin-API action: a local znode of its topic's managed ledger, nothing rewritten, no references,
    absent paths or custom metadata, and ``loads_topics`` set (the broker loads the topic).
    (problem, None) or (None, (managed ledger, encoded cursor name or None))."""
    call = a.admin
    assert call is not None
    if a.store != "local" or a.rewrite is not None or a.ledger_id is not None:
        return f"a {a.kind} action is a local znode, with no rewrite or ledger_id", None
    if a.preconditions.references or a.preconditions.absent or a.preconditions.custom_metadata:
        return f"a {a.kind} action carries no references, absent paths or custom metadata", None
    if not a.loads_topics:
        return f"a {a.kind} action goes through a broker, which loads the topic: loads_topics must say so", None
    try:
        ml, enc = names.split_ml_path(a.path)
        topic = names.parse_topic(call.topic)
    except DecodeError as e:
        return f"{a.path} / {call.topic}: {e.reason}", None
    if topic.ml_name != ml.ml_name:
        return f"{a.path} is not under the managed ledger of {call.topic}", None
    return None, (ml, enc)


@dataclass(frozen=True)
class Called:
    """What a broker call came to: the journal state (``committed``, ``failed``, ``skipped``), the reported
    reason, and the journal record's details."""

    state: str
    reason: str
    details: dict[str, Any]


# --- what the retention kinds share (trim-unloaded, load-topic) ------------------------------------------------


def retention_target(
    f: Finding, facts: SnapshotFacts, *, rewrite: bool
) -> tuple[names.MlName, ZnodeRef, list[RemovedLedger], list[ZnodeRef]]:
    """(managed ledger, its znode, the first-trim ledgers, their metadata znodes) of an expired-retention-unloaded
    finding, or Skip."""
    from pulsar_ops.repair.rules import keep_current_ledger

    if not f.path or not f.topic:
        raise Skip("malformed-finding", "expired-retention-unloaded finding without path or topic")
    ids = ledger_ids(f.evidence.get("first_trim_ledger_ids"))
    if not ids:
        raise Skip(
            "nothing-at-first-trim",
            "only the last ledger is past retention and a load re-stamps it: nothing is trimmed before "
            "load time + retention (load the topic to start that clock)",
        )
    ml, znode = ml_target(f, facts, rewrite=rewrite)
    if rewrite:
        ids = keep_current_ledger(facts.ledger_lists.get(f.path, ()), ids)
        if not ids:
            raise Skip("nothing-at-first-trim", "the first trim would remove the only ledger; the topic keeps it")
    removed, targets = [], []
    for lid in sorted(set(ids)):
        entry = facts.list_entries.get((f.path, lid))
        if entry is None:
            raise Skip("contradicted-by-snapshot", f"{f.path} does not list ledger {lid} in the snapshot")
        fact = facts.ledgers.get(lid)
        if fact is None:
            raise Skip("missing-in-snapshot", f"ledger {lid} has no metadata in the snapshot (dangling)")
        owner = fact.custom("pulsar/managed-ledger")
        if owner is not None and owner != ml.ml_name:
            raise Skip("custom-metadata-mismatch", f"ledger {lid} names managed ledger {owner!r}, not {ml.ml_name}")
        removed.append(RemovedLedger(lid, entry[0], entry[1], finding=f.key()))
        targets.append(ZnodeRef("local", fact.path, fact.version, fact.mzxid, fact.sha256))
    return ml, znode, removed, targets


def freed_bytes(removed: Sequence[RemovedLedger], facts: SnapshotFacts) -> int:
    """What BookKeeper holds of the ledgers a retention repair removes (their metadata's length)."""
    return sum(max(facts.ledgers[r.ledger_id].length, 0) for r in removed)


def checked(kind: Kind, a: Action, facts: Facts) -> Action:
    """``a`` when its kind's rule allows it on ``facts``, else Skip with the rule's reason code."""
    why = kind.rule(a, facts)
    if why is not None:
        raise Skip(code_of(why), why)
    return a
