"""The pure planner: findings + snapshot facts (plain values) -> actions and not-planned findings.

No I/O. ``plan_builder`` loads the audit and the snapshot, calls ``plan_actions`` and adds the impact.

Which findings become actions:

* ``orphan-ledger`` with ``plannable`` true and a Pulsar-owned kind (data, cursor, schema, compacted, bucket)
  -> ``delete-ledger-metadata``;
* ``znode-leak`` with ``plannable`` true -> ``delete-subtree``;
* everything else is listed as not planned with a stable ``reason_code``.

Caps (``max_actions``, ``max_bytes``) are applied in the plan order: oldest first (ledger ctime for ledger
actions, newest znode mtime for subtrees), then biggest first, then ledger id / path. The walk keeps every
action that still fits: an action bigger than the remaining byte budget is cut and smaller later ones may still
be planned; once ``max_actions`` actions are kept every later one is cut. Cut actions are reported.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pulsar_ops.errors import DecodeError
from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.policies import topic_hash
from pulsar_ops.repair import safety
from pulsar_ops.repair.actions import (
    KIND_DELETE_LEDGER,
    KIND_DELETE_SUBSCRIPTION,
    KIND_DELETE_SUBTREE,
    KIND_DROP_MISSING_LEDGER,
    KIND_LOAD_TOPIC,
    KIND_TRIM_UNLOADED,
    ROLE_CURSOR,
    ROLE_MANAGED_LEDGER,
    ROLE_SCHEMA_LOCATOR,
    Action,
    AdminCall,
    FindingRef,
    NotPlanned,
    Precondition,
    Reference,
    RemovedLedger,
    Rewrite,
    ZnodeRef,
)
from pulsar_ops.repair.facts import CursorFact, LedgerFact, SnapshotFacts, SubtreeZnode
from pulsar_ops.repair.rules import (
    PLANNABLE_LEDGER_KINDS,
    LedgerNow,
    TopicNow,
    drop_missing_rule,
    keep_current_ledger,
    ledger_delete_rule,
    load_topic_rule,
    subscription_rule,
    trim_rule,
)
from pulsar_ops.repair.safety import (
    LOCAL,
    PROTECTED_ROOTS,
    SubtreeNode,
    action_problem,
    leak_shape,
)
from pulsar_ops.repair.snapshot_tree import SnapshotUnknown

__all__ = ["CursorFact", "LedgerFact", "SnapshotFacts", "SubtreeZnode"]

# Custom-metadata keys that identify who owns a ledger: re-checked before delete (PIP-186 style).
IDENTITY_KEYS = (
    "application",
    "component",
    "pulsar/managed-ledger",
    "pulsar/cursor",
    "pulsar/schemaId",
    "pulsar/compactedTopic",
)
DEFAULT_SUBTREE_MAX_ZNODES = 1000
MANAGED_LEDGERS_ROOT = "/managed-ledgers"
SCHEMAS_ROOT = "/schemas"
COMPACTION_CURSOR = "__compaction"

ORDER_DOC = (
    "oldest first (ledger ctime / newest subtree mtime), then biggest first, then ledger id / path; "
    "an action that does not fit the remaining --max-bytes is cut and later smaller ones may still fit"
)


# Detections whose repair is opt-in (`plan --include DETECTION`), and the action each becomes.
OPT_IN = {
    "dangling-ledger": KIND_DROP_MISSING_LEDGER,
    "inactive-subscription": KIND_DELETE_SUBSCRIPTION,
    "expired-retention-unloaded": KIND_LOAD_TOPIC,  # with --offline-trim: KIND_TRIM_UNLOADED instead
}


@dataclass(frozen=True)
class PlanParams:
    max_actions: int | None = None
    max_bytes: int | None = None
    subtree_max_znodes: int = DEFAULT_SUBTREE_MAX_ZNODES
    include: frozenset[str] = frozenset()  # opt-in detections (keys of OPT_IN)
    offline_trim: bool = False  # expired-retention-unloaded -> trim-unloaded (rewrite without loading)
    offline_trim_namespaces: frozenset[str] = frozenset()  # the same, for these namespaces only

    @property
    def rewrite_detections(self) -> frozenset[str]:
        """Detections whose findings become opt-in actions in this plan."""
        offline = self.offline_trim or bool(self.offline_trim_namespaces)
        return self.include | ({"expired-retention-unloaded"} if offline else frozenset())

    def trims_offline(self, f: Finding) -> bool | None:
        """For an expired-retention-unloaded finding: True (trim-unloaded), False (load-topic), None (neither)."""
        if self.offline_trim or (f.namespace or "") in self.offline_trim_namespaces:
            return True
        return False if "expired-retention-unloaded" in self.include else None


@dataclass(frozen=True)
class PlanDraft:
    actions: tuple[Action, ...]
    not_planned: tuple[NotPlanned, ...]


class _Skip(Exception):  # internal control flow, never escapes this module
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def _np(f: Finding, code: str, reason: str) -> NotPlanned:
    return NotPlanned(
        key=f.key(),
        detection=f.detection,
        reason_code=code,
        reason=reason,
        bytes=f.bytes,
        path=f.path,
        ledger_id=f.ledger_id,
    )


def _action_id(kind: str, store: str, target: str) -> str:
    if kind == KIND_DELETE_LEDGER:
        return f"ledger-{target}"
    return _hashed_id("subtree", store, target)


def _hashed_id(prefix: str, store: str, path: str) -> str:
    """A stable action id for an action on one znode: ``<prefix>-`` and 16 hex digits of sha256(store:path)."""
    return f"{prefix}-" + hashlib.sha256(f"{store}:{path}".encode()).hexdigest()[:16]


def _absent(store: str, path: str) -> ZnodeRef:
    return ZnodeRef(store=store, path=path, version=-1, mzxid=0, sha256=None)


def _ml_path(ml_name: str) -> str:
    return f"{MANAGED_LEDGERS_ROOT}/{ml_name}"


def _ml_refs(facts: SnapshotFacts, ml_name: str) -> list[Reference]:
    """The owner's managed-ledger znode and its cursor znodes (or the absent ML path)."""
    ml = facts.managed_ledgers.get(ml_name)
    if ml is None:
        return [Reference(ROLE_MANAGED_LEDGER, _absent("local", _ml_path(ml_name)), exists=False)]
    refs = [Reference(ROLE_MANAGED_LEDGER, ml)]
    refs.extend(Reference(ROLE_CURSOR, c) for c in sorted(facts.cursors.get(ml.path, ()), key=lambda z: z.path))
    return refs


def _references(f: Finding, kind: str, owner: str | None, facts: SnapshotFacts) -> tuple[Reference, ...]:
    if not owner:
        raise _Skip("owner-unknown", f"orphan {kind} ledger has no owner in its custom metadata")
    if kind in ("data", "cursor", "bucket"):
        if owner.count("/") not in (3, 4) or "/persistent/" not in owner:
            raise _Skip("owner-unmappable", f"owner {owner!r} is not a managed-ledger name")
        return tuple(_ml_refs(facts, owner))
    if kind == "schema":
        loc = facts.schema_locators.get(owner)
        if loc is None:
            return (Reference(ROLE_SCHEMA_LOCATOR, _absent("local", f"{SCHEMAS_ROOT}/{owner}"), exists=False),)
        return (Reference(ROLE_SCHEMA_LOCATOR, loc),)
    if kind == "compacted":
        ml_name = facts.ml_name_by_topic.get(owner)
        if ml_name is None:
            try:
                ml_name = names.parse_topic(owner).ml_name
            except DecodeError as e:  # an unmappable owner is never evidence of absence: do not plan
                raise _Skip("owner-unmappable", f"compacted owner {owner!r}: {e.reason}") from None
        ml = facts.managed_ledgers.get(ml_name)
        ml_path = ml.path if ml is not None else _ml_path(ml_name)
        cursor_path = f"{ml_path}/{COMPACTION_CURSOR}"
        for c in facts.cursors.get(ml_path, ()):
            if c.path == cursor_path:
                return (Reference(ROLE_CURSOR, c),)
        return (Reference(ROLE_CURSOR, _absent("local", cursor_path), exists=False),)
    raise _Skip("kind-not-plannable", f"orphan kind {kind!r} is never planned")


def _ledger_action(f: Finding, facts: SnapshotFacts) -> Action:
    if f.ledger_id is None:
        raise _Skip("malformed-finding", "orphan-ledger finding without ledger_id")
    kind = str(f.evidence.get("kind") or "")
    if kind not in PLANNABLE_LEDGER_KINDS:
        raise _Skip("kind-not-plannable", f"orphan kind {kind or 'unknown'!r} is never planned")
    fact = facts.ledgers.get(f.ledger_id)
    if fact is None:
        raise _Skip("missing-in-snapshot", f"ledger {f.ledger_id} is not in the snapshot's bk_ledgers table")
    where = facts.referenced_ledgers.get(f.ledger_id)
    if where is not None:
        raise _Skip("contradicted-by-snapshot", f"the snapshot shows ledger {f.ledger_id} referenced by {where}")
    if facts.watermark is None or f.ledger_id >= facts.watermark:
        raise _Skip(
            "contradicted-by-snapshot",
            f"ledger {f.ledger_id} is not below the highest referenced ledger id ({facts.watermark}): "
            "it may be in flight",
        )
    if f.path and f.path != fact.path:
        raise _Skip("path-mismatch", f"finding path {f.path} differs from the snapshot's {fact.path}")
    if fact.custom("application") != "pulsar":
        raise _Skip("custom-metadata-mismatch", "ledger custom metadata has no application=pulsar")
    # the one rule apply also calls (on the ledger re-read at mark and at delete)
    ctime = fact.znode_ctime_ms if fact.znode_ctime_ms is not None else fact.ctime_ms
    now = LedgerNow(f.ledger_id, dict(fact.custom_metadata), ctime, facts.watermark, where)
    why = ledger_delete_rule(now, min_age_ms=facts.rules.min_age_ms, now_ms=facts.now_ms)
    if why is not None:
        raise _Skip("refused-by-rule", why)
    owner_ev = f.evidence.get("owner")
    owner = str(owner_ev) if owner_ev else None
    refs = _references(f, kind, owner, facts)
    expected = tuple((k, v) for k in IDENTITY_KEYS if (v := fact.custom(k)) is not None)
    target = ZnodeRef("local", fact.path, fact.version, fact.mzxid, fact.sha256)
    return Action(
        id=_action_id(KIND_DELETE_LEDGER, "local", str(f.ledger_id)),
        kind=KIND_DELETE_LEDGER,
        store="local",
        path=fact.path,
        ledger_id=f.ledger_id,
        finding=FindingRef(f.key(), f.detection),
        preconditions=Precondition(znodes=(target,), custom_metadata=expected, references=refs),
        bytes=max(fact.length, 0),
        time_ms=fact.ctime_ms,
        ledger_kind=kind,
        owner=owner,
    )


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


def _subtree_action(f: Finding, facts: SnapshotFacts, params: PlanParams) -> Action:
    root = f.path
    if not root or not root.startswith("/") or (root != "/" and root.endswith("/")):
        raise _Skip("malformed-finding", f"znode-leak finding has no usable path ({root!r})")
    if root in PROTECTED_ROOTS or root.startswith("/ledgers/") or _depth(root) < 2:
        raise _Skip("protected-path", f"{root} is a protected root and is never deleted")
    shape = leak_shape(root)
    if shape is None:
        raise _Skip("protected-path", f"{root} is not the root of any znode-leak kind; never deleted")
    claimed = f.evidence.get("leak")
    if claimed is not None and claimed != shape.leak:
        raise _Skip("leak-mismatch", f"{root} is a {shape.leak} root, the finding says {claimed!r}")
    nodes = facts.subtrees.get(root)
    why = _leak_disproved(f, root, nodes or (), facts)
    if why is not None:
        raise _Skip("contradicted-by-snapshot", why)
    if not nodes:
        raise _Skip("missing-in-snapshot", f"{root} is not in the snapshot's znodes table")
    stores = {n.znode.store for n in nodes}
    if len(stores) != 1:
        raise _Skip("ambiguous-store", f"{root} appears in both stores ({', '.join(sorted(stores))})")
    if len(nodes) > params.subtree_max_znodes:
        raise _Skip(
            "subtree-too-large",
            f"{root} holds {len(nodes)} znodes (> {params.subtree_max_znodes} per transaction)",
        )
    eph = [n.znode.path for n in nodes if n.ephemeral_owner]
    if eph:
        raise _Skip("ephemeral-in-subtree", f"{root} holds ephemeral znode {eph[0]} (a live session)")
    if any(n.znode.sha256 is None for n in nodes):
        raise _Skip("missing-in-snapshot", f"{root}: a znode has no scraped sha256")
    ordered = tuple(sorted((n.znode for n in nodes), key=lambda z: (_depth(z.path), z.path)))
    if ordered[0].path != root:
        raise _Skip("missing-in-snapshot", f"{root} itself is not in the snapshot's znodes table")
    store = next(iter(stores))
    return Action(
        id=_action_id(KIND_DELETE_SUBTREE, store, root),
        kind=KIND_DELETE_SUBTREE,
        store=store,
        path=root,
        finding=FindingRef(f.key(), f.detection),
        preconditions=Precondition(znodes=ordered),
        bytes=sum(max(n.data_length, 0) for n in nodes),
        time_ms=max(n.mtime_ms for n in nodes),
        leak=shape.leak,
    )


def _leak_disproved(f: Finding, root: str, nodes: Sequence[SubtreeZnode], facts: SnapshotFacts) -> str | None:
    """What in the snapshot says this subtree is not leaked (None when nothing does): apply's own rule,
    :func:`pulsar_ops.repair.safety.prove_leak`, run on the snapshot (through :class:`SnapshotTree`). A read the
    snapshot cannot answer (not loaded, incomplete scope, undecodable) leaves the finding not planned."""
    if facts.leak_tree is None:
        raise _Skip("not-plannable", "the snapshot's tree around the leak was not loaded; absence is not confirmed")
    subtree = []
    for n in nodes:
        listed: int | None = None
        undecodable: str | None = None
        if n.znode.store == LOCAL and _is_ml_znode(n.znode.path):
            listed = facts.ml_listed.get(n.znode.path)
            undecodable = "not in the snapshot's managed_ledgers table" if listed is None else None
        subtree.append(SubtreeNode(n.znode.path, b"", listed=listed, undecodable=undecodable))
    probe = Action(
        id=_action_id(KIND_DELETE_SUBTREE, "", root),
        kind=KIND_DELETE_SUBTREE,
        store=nodes[0].znode.store if nodes else "",
        path=root,
        finding=FindingRef(f.key(), f.detection),
        preconditions=Precondition(znodes=tuple(n.znode for n in nodes)),
        bytes=0,
        time_ms=0,
    )
    try:
        return safety.prove_leak(probe, subtree, facts.leak_tree)
    except SnapshotUnknown as e:
        raise _Skip("not-plannable", f"{e}; absence is not confirmed") from None


def _is_ml_znode(path: str) -> bool:
    """A managed-ledger znode (not a directory level, not a cursor): what prove_leak decodes."""
    try:
        _ml, cursor = names.split_ml_path(path)
    except DecodeError:
        return False
    return cursor is None


def topic_loaded(facts: SnapshotFacts, topic: str, namespace: str) -> str | None:
    """Why the snapshot says ``topic`` is loaded (its bundle owned, or a broker listed it), else None."""
    if topic in facts.loaded_topics:
        return f"a broker reported {topic} loaded"
    h = topic_hash(topic)
    for lo, hi in facts.owned_ranges.get(namespace, ()):
        if lo <= h < hi or h == hi == 0xFFFFFFFF:
            return f"its bundle 0x{lo:08x}_0x{hi:08x} is owned"
    return None


def _ml_target(f: Finding, facts: SnapshotFacts, *, rewrite: bool) -> tuple[names.MlName, ZnodeRef]:
    """The managed ledger a finding's ``path`` names and its znode as scraped (binary when it is to be
    rewritten), or _Skip."""
    path = f.path or ""
    try:
        ml = names.ml_name_from_path(path)
    except DecodeError as e:
        raise _Skip("owner-unmappable", f"{path}: {e.reason}") from None
    if ml.topic != f.topic:
        raise _Skip("path-mismatch", f"{path} is not the managed-ledger znode of {f.topic}")
    znode = facts.managed_ledgers.get(ml.ml_name)
    if znode is None or znode.path != path or znode.sha256 is None:
        raise _Skip("missing-in-snapshot", f"{path} is not in the snapshot's managed_ledgers/znodes tables")
    fmt = facts.ml_formats.get(path)
    if rewrite and fmt != "binary":
        raise _Skip("not-rewritable", f"{path} is a {fmt} managed-ledger info; only binary values are rewritten")
    return ml, znode


def _drop_missing(f: Finding, facts: SnapshotFacts) -> tuple[str, RemovedLedger]:
    """(managed-ledger path, the list entry to drop) for one dangling-ledger finding, or _Skip."""
    ref = f.evidence.get("ref")
    if ref != "data":
        raise _Skip(
            "ref-not-droppable",
            f"the {ref} reference is not a ledger-list entry: only a managed ledger's list entry can be dropped",
        )
    if f.ledger_id is None or not f.path or not f.topic:
        raise _Skip("malformed-finding", "dangling-ledger finding without ledger_id, path or topic")
    if f.evidence.get("blocked_scopes") or f.severity != "critical":
        raise _Skip("not-plannable", f.reason or "the ledger listing is incomplete: absence is not confirmed")
    ml, _znode = _ml_target(f, facts, rewrite=True)
    # the one rule apply also calls (on the list and the ledgers root re-read at mark and at delete)
    listed = [lid for (path, lid) in facts.list_entries if path == f.path]
    present = [facts.ledgers[f.ledger_id].path] if f.ledger_id in facts.ledgers else []
    why = drop_missing_rule([f.ledger_id], listed, present)
    if why is not None:
        raise _Skip("contradicted-by-snapshot", why)
    entry = facts.list_entries[(f.path, f.ledger_id)]
    loaded = topic_loaded(facts, f.topic, ml.namespace)
    if loaded is not None:
        raise _Skip("topic-loaded", f"{f.topic} is loaded ({loaded}): its list belongs to the broker; unload it first")
    return f.path, RemovedLedger(f.ledger_id, entry[0], entry[1], finding=f.key())


def _drop_missing_actions(fs: Sequence[Finding], facts: SnapshotFacts) -> tuple[list[Action], list[NotPlanned]]:
    """One ``drop-missing-ledger`` action per managed ledger, removing every missing ledger of its list."""
    not_planned: list[NotPlanned] = []
    by_path: dict[str, list[tuple[Finding, RemovedLedger]]] = {}
    for f in fs:
        try:
            path, removed = _drop_missing(f, facts)
        except _Skip as s:
            not_planned.append(_np(f, s.code, s.reason))
            continue
        by_path.setdefault(path, []).append((f, removed))
    actions = []
    for path, items in sorted(by_path.items()):
        items.sort(key=lambda x: x[1].ledger_id)
        first = items[0][0]
        ml = names.ml_name_from_path(path)
        znode = facts.managed_ledgers[ml.ml_name]
        absent = tuple(
            p
            for _, r in items
            for p in dict.fromkeys(
                (ledger_path(r.ledger_id, facts.ledgers_root), ledger_path(r.ledger_id, facts.ledgers_root, flat=True))
            )
        )
        actions.append(
            Action(
                id=_hashed_id("rewrite", "local", path),
                kind=KIND_DROP_MISSING_LEDGER,
                store="local",
                path=path,
                finding=FindingRef(first.key(), first.detection),
                preconditions=Precondition(znodes=(znode,), absent=absent),
                bytes=0,  # the ledgers hold nothing any more: a drop frees no storage, it lets the topic load
                time_ms=0,
                owner=ml.topic,
                rewrite=Rewrite(path=path, topic=ml.topic, removed=tuple(r for _, r in items)),
            )
        )
    return actions, not_planned


def _ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _Skip("malformed-finding", f"evidence ledger ids {value!r} are not a list of integers")
    return [int(v) for v in value]


def _load_action(f: Finding, facts: SnapshotFacts) -> Action:
    """``load-topic`` for one expired-retention-unloaded finding: a broker loads the topic and trims it; the plan
    predicts the first trim (``first_trim_ledger_ids``) and apply reports what the broker actually trimmed."""
    ml, znode, removed, _targets = _retention_target(f, facts, rewrite=False)
    return Action(
        id=_hashed_id("load", "local", znode.path),
        kind=KIND_LOAD_TOPIC,
        store="local",
        path=znode.path,
        finding=FindingRef(f.key(), f.detection),
        preconditions=Precondition(znodes=(znode,)),
        bytes=_freed_bytes(removed, facts),
        time_ms=min(facts.ledgers[r.ledger_id].ctime_ms for r in removed),
        owner=ml.topic,
        loads_topics=True,
        admin=AdminCall(topic=ml.topic, expect_trimmed=tuple(r.ledger_id for r in removed)),
    )


def _freed_bytes(removed: Sequence[RemovedLedger], facts: SnapshotFacts) -> int:
    """What BookKeeper holds of the ledgers a retention repair removes (their metadata's length)."""
    return sum(max(facts.ledgers[r.ledger_id].length, 0) for r in removed)


def _trim_action(f: Finding, facts: SnapshotFacts) -> Action:
    """``trim-unloaded`` for one expired-retention-unloaded finding: remove from the list, and delete the metadata
    of, the ledgers the broker's first trim after a load would (``first_trim_ledger_ids``), or _Skip."""
    ml, znode, removed, targets = _retention_target(f, facts, rewrite=True)
    cursors = tuple(Reference(ROLE_CURSOR, c) for c in sorted(facts.cursors.get(znode.path, ()), key=lambda z: z.path))
    return Action(
        id=_hashed_id("trim", "local", znode.path),
        kind=KIND_TRIM_UNLOADED,
        store="local",
        path=znode.path,
        finding=FindingRef(f.key(), f.detection),
        preconditions=Precondition(znodes=(znode, *targets), references=cursors),
        bytes=_freed_bytes(removed, facts),
        time_ms=min(facts.ledgers[r.ledger_id].ctime_ms for r in removed),
        owner=ml.topic,
        rewrite=Rewrite(path=znode.path, topic=ml.topic, removed=tuple(removed)),
    )


def _retention_target(
    f: Finding, facts: SnapshotFacts, *, rewrite: bool
) -> tuple[names.MlName, ZnodeRef, list[RemovedLedger], list[ZnodeRef]]:
    """The checks both retention repairs share: (managed ledger, its znode, the first-trim ledgers, their
    metadata znodes), or _Skip."""
    if not f.path or not f.topic:
        raise _Skip("malformed-finding", "expired-retention-unloaded finding without path or topic")
    ids = _ids(f.evidence.get("first_trim_ledger_ids"))
    if not ids:
        raise _Skip(
            "nothing-at-first-trim",
            "only the last ledger is past retention and a load re-stamps it: nothing is trimmed before "
            "load time + retention (load the topic to start that clock)",
        )
    ml, znode = _ml_target(f, facts, rewrite=rewrite)
    loaded = topic_loaded(facts, f.topic, ml.namespace)
    if f.evidence.get("owned") is True or loaded is not None:
        raise _Skip("topic-loaded", f"{f.topic} is loaded ({loaded or 'the finding says so'}): let its broker trim")
    if rewrite:
        ids = keep_current_ledger(facts.ledger_lists.get(f.path, ()), ids)
        if not ids:
            raise _Skip("nothing-at-first-trim", "the first trim would remove the only ledger; the topic keeps it")
    removed, targets = [], []
    for lid in sorted(set(ids)):
        entry = facts.list_entries.get((f.path, lid))
        if entry is None:
            raise _Skip("contradicted-by-snapshot", f"{f.path} does not list ledger {lid} in the snapshot")
        fact = facts.ledgers.get(lid)
        if fact is None:
            raise _Skip("missing-in-snapshot", f"ledger {lid} has no metadata in the snapshot (dangling)")
        owner = fact.custom("pulsar/managed-ledger")
        if owner is not None and owner != ml.ml_name:
            raise _Skip("custom-metadata-mismatch", f"ledger {lid} names managed ledger {owner!r}, not {ml.ml_name}")
        where = facts.referenced_elsewhere.get(lid)
        if where is not None:
            raise _Skip("contradicted-by-snapshot", f"ledger {lid} is also referenced by {where}")
        removed.append(RemovedLedger(lid, entry[0], entry[1], finding=f.key()))
        targets.append(ZnodeRef("local", fact.path, fact.version, fact.mzxid, fact.sha256))
    # the one rule apply also calls (on the managed ledger, cursors and policies re-read at mark and at delete)
    topic = snapshot_topic(facts, f.path)
    ids_now = [r.ledger_id for r in removed]
    why = trim_rule(topic, ids_now, facts.now_ms) if rewrite else load_topic_rule(topic, ids_now, facts.now_ms)
    if why is not None:
        raise _Skip("refused-by-rule", why)
    return ml, znode, removed, targets


def snapshot_topic(facts: SnapshotFacts, ml_path: str) -> TopicNow:
    """The retention rules' facts for one managed ledger, from the snapshot."""
    listed = facts.ledger_lists.get(ml_path)
    if listed is None:
        return TopicNow((), (), None, problem=f"{ml_path}: its ledger list is not in the snapshot's facts")
    marks = tuple(c.mark_delete for c in facts.cursor_facts.values() if c.ml_path == ml_path)
    return TopicNow(listed, marks, facts.retention.get(ml_path))


def trimmable_after_delete(c: CursorFact, facts: SnapshotFacts) -> tuple[int, bool]:
    """(bytes that become trimmable, whether it is the slowest durable cursor) when ``c`` goes: the ledgers from
    its mark-delete ledger up to the next slowest cursor's (or to the current ledger when it is the only one),
    by the snapshot's ledger list. Retention may keep them longer; the broker's trim decides."""
    others = [
        o.mark_delete
        for o in facts.cursor_facts.values()
        if o.ml_path == c.ml_path and o.znode.path != c.znode.path and o.mark_delete is not None
    ]
    if c.mark_delete is None:
        return 0, False
    listed = sorted((lid, size or 0) for (ml, lid), (_e, size) in facts.list_entries.items() if ml == c.ml_path)
    if any(o < c.mark_delete for o in others):
        return 0, False
    upto = min((o[0] for o in others), default=listed[-1][0] if listed else c.mark_delete[0])
    return sum(size for lid, size in listed if c.mark_delete[0] <= lid < upto), True


def _subscription_action(f: Finding, facts: SnapshotFacts) -> Action:
    if not f.path or not f.topic or f.subscription is None:
        raise _Skip("malformed-finding", "inactive-subscription finding without path, topic or subscription")
    c = facts.cursor_facts.get(f.path)
    if c is None or c.znode.sha256 is None:
        raise _Skip("missing-in-snapshot", f"cursor {f.path} is not in the snapshot's cursors/znodes tables")
    if c.subscription != f.subscription:
        raise _Skip("path-mismatch", f"{f.path} is subscription {c.subscription!r}, not {f.subscription!r}")
    if c.is_system or names.is_system_cursor(c.subscription):
        raise _Skip("kind-not-plannable", f"{c.subscription!r} is a system cursor; it is never deleted")
    # the one rule apply also calls (on the cursor znode re-read at mark and before the broker call)
    why = subscription_rule(
        c.subscription,
        c.last_active_ms,
        c.mtime_ms,
        inactive_after_ms=facts.rules.inactive_after_ms,
        now_ms=facts.now_ms,
    )
    if why is not None:
        raise _Skip("refused-by-rule", why)
    znodes = [c.znode]
    ledger = facts.ledgers.get(c.cursors_ledger_id) if c.cursors_ledger_id >= 0 else None
    if ledger is not None:  # the broker deletes the cursor ledger with the cursor: back it up too
        znodes.append(ZnodeRef("local", ledger.path, ledger.version, ledger.mzxid, ledger.sha256))
    trimmable, slowest = trimmable_after_delete(c, facts)
    return Action(
        id=_hashed_id("subscription", "local", f.path),
        kind=KIND_DELETE_SUBSCRIPTION,
        store="local",
        path=f.path,
        finding=FindingRef(f.key(), f.detection),
        preconditions=Precondition(znodes=tuple(znodes)),
        bytes=trimmable,
        time_ms=int(f.evidence.get("last_active_ms") or 0),
        owner=f.topic,
        loads_topics=True,
        admin=AdminCall(topic=f.topic, subscription=f.subscription),
        impact={
            "backlog_bytes": int(f.evidence.get("backlog_bytes") or 0),
            "slowest_cursor": slowest,
            "trimmable_bytes": trimmable,
            "note": "the bytes become trimmable (retention permitting) because this was the slowest cursor"
            if slowest
            else "another cursor is slower: deleting this one frees nothing until that one moves",
        },
    )


def _order_key(a: Action) -> tuple[Any, ...]:
    return (a.time_ms, -a.bytes, a.kind, a.ledger_id if a.ledger_id is not None else -1, a.path, a.id)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _drop_overlaps(actions: list[Action]) -> tuple[list[Action], list[tuple[Action, str]]]:
    """Keep the outermost of nested subtree actions (same store); report the inner ones."""
    subtrees = sorted((a for a in actions if a.kind == KIND_DELETE_SUBTREE), key=lambda a: (a.store, a.path))
    dropped: dict[str, str] = {}
    kept_roots: list[Action] = []
    for a in subtrees:
        outer = next((k for k in kept_roots if k.store == a.store and _within(a.path, k.path)), None)
        if outer is not None:
            dropped[a.id] = outer.path
        else:
            kept_roots.append(a)
    keep = [a for a in actions if a.id not in dropped]
    return keep, [(a, dropped[a.id]) for a in actions if a.id in dropped]


def by_key_of(findings: Sequence[Finding], a: Action) -> Finding:
    return next(f for f in findings if f.key() == a.finding.key)


def plan_actions(findings: Iterable[Finding], facts: SnapshotFacts, params: PlanParams) -> PlanDraft:
    """Turn findings into ordered, capped actions. Deterministic for any order of ``findings``."""
    not_planned: list[NotPlanned] = []
    candidates: list[tuple[Action, Finding]] = []
    seen_keys: set[str] = set()
    seen_targets: set[str] = set()
    opt_in: list[Finding] = []
    for f in sorted(findings, key=lambda x: (x.key(), x.severity, x.reason)):
        k = f.key()
        if k in seen_keys:
            not_planned.append(_np(f, "duplicate", "duplicate finding"))
            continue
        seen_keys.add(k)
        if f.detection in params.rewrite_detections:
            opt_in.append(f)
            continue
        if f.detection not in ("orphan-ledger", "znode-leak"):
            why = f"{f.detection} has no repair action"
            if f.detection in OPT_IN:
                why = f"{f.detection} is repaired only on request: `pulsar-ops plan --include {f.detection}`"
                if f.detection == "expired-retention-unloaded":
                    why += " (a broker loads and trims it) or `--offline-trim` (no broker)"
            not_planned.append(_np(f, "no-repair-action", why))
            continue
        if not f.plannable:
            not_planned.append(_np(f, "not-plannable", f.reason or "finding is not plannable"))
            continue
        try:
            is_ledger = f.detection == "orphan-ledger"
            action = _ledger_action(f, facts) if is_ledger else _subtree_action(f, facts, params)
        except _Skip as s:
            not_planned.append(_np(f, s.code, s.reason))
            continue
        unsafe = action_problem(action, ledgers_root=facts.ledgers_root)
        if unsafe is not None:
            not_planned.append(_np(f, "protected-path", unsafe))
            continue
        if action.id in seen_targets:
            not_planned.append(_np(f, "duplicate", f"target of {action.id} is already planned"))
            continue
        seen_targets.add(action.id)
        candidates.append((action, f))

    rewrites, skipped = _drop_missing_actions([f for f in opt_in if f.detection == "dangling-ledger"], facts)
    not_planned.extend(skipped)
    for f in opt_in:
        if f.detection != "expired-retention-unloaded":
            continue
        offline = params.trims_offline(f)
        if offline is None:
            not_planned.append(_np(f, "no-repair-action", f"{f.namespace} is not among --offline-trim-namespace"))
            continue
        try:
            rewrites.append(_trim_action(f, facts) if offline else _load_action(f, facts))
        except _Skip as s:
            not_planned.append(_np(f, s.code, s.reason))
    for f in opt_in:
        if f.detection != "inactive-subscription":
            continue
        try:
            rewrites.append(_subscription_action(f, facts))
        except _Skip as s:
            not_planned.append(_np(f, s.code, s.reason))
    taken: dict[str, str] = {}
    for a in list(rewrites):  # one rewrite per managed-ledger znode: a drop and a trim of one topic conflict
        if a.path in taken:
            rewrites.remove(a)
            not_planned.append(
                _np(by_key_of(opt_in, a), "duplicate", f"{a.path} is already rewritten by {taken[a.path]}")
            )
        else:
            taken[a.path] = a.id
    by_key = {f.key(): f for f in opt_in}
    for a in rewrites:
        unsafe = action_problem(a, ledgers_root=facts.ledgers_root)
        if unsafe is not None:
            not_planned.append(_np(by_key[a.finding.key], "protected-path", unsafe))
            continue
        candidates.append((a, by_key[a.finding.key]))

    by_id = {a.id: f for a, f in candidates}
    actions, overlapped = _drop_overlaps([a for a, _ in candidates])
    for a, outer in overlapped:
        not_planned.append(_np(by_id[a.id], "contained-in-subtree", f"inside planned subtree {outer}"))

    kept: list[Action] = []
    total_bytes = 0
    for a in sorted(actions, key=_order_key):
        if params.max_actions is not None and len(kept) >= params.max_actions:
            not_planned.append(_np(by_id[a.id], "cut-max-actions", f"cut by --max-actions {params.max_actions}"))
            continue
        if params.max_bytes is not None and total_bytes + a.bytes > params.max_bytes:
            not_planned.append(_np(by_id[a.id], "cut-max-bytes", f"cut by --max-bytes {params.max_bytes}"))
            continue
        kept.append(a)
        total_bytes += a.bytes
    not_planned.sort(key=lambda n: (n.detection, n.reason_code, n.key))
    return PlanDraft(actions=tuple(kept), not_planned=tuple(not_planned))


def with_impact(draft: PlanDraft, impacts: Mapping[str, Mapping[str, Any]]) -> PlanDraft:
    """Attach per-action impact documents (by action id)."""
    return replace(
        draft,
        actions=tuple(replace(a, impact={**a.impact, **impacts.get(a.id, {})}) for a in draft.actions),
    )


def summarize(actions: Sequence[Action], not_planned: Sequence[NotPlanned]) -> dict[str, Any]:
    by_kind: dict[str, dict[str, int]] = {}
    for a in actions:
        s = by_kind.setdefault(a.kind, {"actions": 0, "bytes": 0, "znodes": 0})
        s["actions"] += 1
        s["bytes"] += a.bytes
        s["znodes"] += a.delete_count
        if a.rewrite is not None:
            s["rewrites"] = s.get("rewrites", 0) + 1
            s["dropped_ledgers"] = s.get("dropped_ledgers", 0) + len(a.rewrite.removed)
    ledger_kinds = Counter(a.ledger_kind for a in actions if a.ledger_kind)
    leaks = Counter(a.leak or "unknown" for a in actions if a.kind == KIND_DELETE_SUBTREE)
    by_reason = Counter(n.reason_code for n in not_planned)
    by_detection = Counter(n.detection for n in not_planned)
    cut = [n for n in not_planned if n.reason_code.startswith("cut-")]
    return {
        "actions": len(actions),
        "bytes": sum(a.bytes for a in actions),
        "znodes": sum(a.delete_count for a in actions),
        "rewrites": sum(1 for a in actions if a.rewrite is not None),
        "by_kind": dict(sorted(by_kind.items())),
        "ledger_kinds": dict(sorted(ledger_kinds.items())),
        "leaks": dict(sorted(leaks.items())),
        "loads_topics": sum(1 for a in actions if a.loads_topics),
        "loads_topics_note": "these actions go through a broker, which loads the topic (paced at apply by "
        "--max-loads-per-minute for load-topic)"
        if any(a.loads_topics for a in actions)
        else "no action in this plan loads a topic (metadata-only changes)",
        "order": ORDER_DOC,
        "not_planned": {
            "total": len(not_planned),
            "by_reason": dict(sorted(by_reason.items())),
            "by_detection": dict(sorted(by_detection.items())),
        },
        "cut": {
            "actions": len(cut),
            "bytes": sum(n.bytes for n in cut),
            "by_reason": dict(sorted(Counter(n.reason_code for n in cut).items())),
        },
    }
