"""The snapshot-backed :class:`pulsar_ops.repair.facts.Facts` (:class:`SnapshotView`) and the part of the snapshot
tree :func:`pulsar_ops.repair.safety.prove_leak` reads (:class:`SnapshotTree`). Pure. A read outside what was
loaded, in an incomplete scope or of an undecodable value raises :class:`SnapshotUnknown`, never absence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pulsar_ops import pulsar_names
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.repair.actions import Action
from pulsar_ops.repair.facts import (
    CursorNow,
    LedgerNow,
    Ownership,
    RuleParams,
    SnapshotFacts,
    SubtreeNode,
    TopicNow,
    TreeReader,
)
from pulsar_ops.repair.rules import topic_load_problem, topic_policies_reason
from pulsar_ops.repair.safety import (
    CONFIG,
    LOCAL,
    LOCAL_POLICIES,
    MANAGED_LEDGERS,
    OWNERSHIP,
    POLICIES,
    LeakShape,
    schema_topic_witnesses,
    within,
)


class SnapshotUnknown(Exception):
    """The snapshot cannot answer a read (not loaded, incomplete scope, undecodable value)."""


@dataclass(frozen=True)
class LeakReads:
    """What :func:`prove_leak` reads for a set of leak roots: exact znodes and directories whose children it
    lists (each as ``(store, path)``)."""

    exact: frozenset[tuple[str, str]] = frozenset()
    parents: frozenset[tuple[str, str]] = frozenset()


def _policies(ns: str) -> set[tuple[str, str]]:
    out = {(CONFIG, f"{POLICIES}/{ns}")}
    parts = ns.split("/")
    if len(parts) == 3:
        out.add((CONFIG, f"{POLICIES}/{parts[0]}/{parts[1]}"))
    return out


def leak_reads(shapes: Iterable[LeakShape]) -> LeakReads:
    """The reads :func:`pulsar_ops.repair.safety.prove_leak` makes for these shapes, except the V1 namespaces of
    a schema leak (``/managed-ledgers/<t>/<cluster>/<ns>/persistent``: :func:`v1_schema_parents`, once the
    children of ``/managed-ledgers/<t>`` are known)."""
    exact: set[tuple[str, str]] = set()
    parents: set[tuple[str, str]] = set()
    for s in shapes:
        ns = s.namespace
        if s.leak == "managed-ledgers-tenant":
            exact.add((CONFIG, f"{POLICIES}/{s.tenant}"))
        elif s.leak in ("managed-ledgers-namespace", "local-policies") and ns is not None:
            exact |= _policies(ns)
        elif s.leak == "partitioned-topic" and ns is not None:
            parents.add((LOCAL, f"{MANAGED_LEDGERS}/{ns}/persistent"))
        elif s.leak == "schema" and ns is not None and s.topic is not None:
            parents.add((LOCAL, f"{MANAGED_LEDGERS}/{s.tenant}"))
            parents.add((LOCAL, f"{MANAGED_LEDGERS}/{ns}/persistent"))
            exact |= {(CONFIG, w) for w in schema_topic_witnesses(ns, s.topic)}
        elif s.leak == "bundle-data" and ns is not None:
            parents.add((LOCAL, f"{OWNERSHIP}/{ns}"))
            exact |= {(CONFIG, f"{POLICIES}/{ns}"), (LOCAL, f"{LOCAL_POLICIES}/{ns}")}
    exact |= parents  # children() of a missing directory is None: whether it exists is read too
    return LeakReads(frozenset(exact), frozenset(parents))


def v1_schema_parents(shapes: Iterable[LeakShape], tree: SnapshotTree) -> LeakReads:
    """The V1 ``/managed-ledgers/<t>/<cluster>/<ns>/persistent`` directories a schema leak's proof lists."""
    parents: set[tuple[str, str]] = set()
    for s in shapes:
        if s.leak != "schema" or s.namespace is None:
            continue
        t, ns = s.namespace.split("/")
        for c in tree.children(LOCAL, f"{MANAGED_LEDGERS}/{t}") or ():
            if c != ns:
                parents.add((LOCAL, f"{MANAGED_LEDGERS}/{t}/{c}/{ns}/persistent"))
    return LeakReads(frozenset(parents), frozenset(parents))


@dataclass(frozen=True)
class SnapshotTree:
    """The loaded part of the snapshot's znodes table. ``nodes``: every loaded ``(store, path)``; ``values``: the
    decoded value of the few znodes :func:`prove_leak` reads data of (namespace and local policies JSON);
    ``undecodable``: znodes the scraper could not decode (code); ``incomplete``: ``(store, scope)`` the scraper
    could not read completely; ``loaded``: what :func:`leak_reads` asked for (None: the whole tree is loaded)."""

    nodes: frozenset[tuple[str, str]] = frozenset()
    values: Mapping[tuple[str, str], bytes] = field(default_factory=dict)
    undecodable: Mapping[tuple[str, str], str] = field(default_factory=dict)
    incomplete: frozenset[tuple[str, str]] = frozenset()
    loaded: LeakReads | None = None
    _children: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    @staticmethod
    def build(
        nodes: Iterable[tuple[str, str]],
        *,
        values: Mapping[tuple[str, str], bytes] | None = None,
        undecodable: Mapping[tuple[str, str], str] | None = None,
        incomplete: Iterable[tuple[str, str]] = (),
        loaded: LeakReads | None = None,
    ) -> SnapshotTree:
        ns = frozenset(nodes)
        kids: dict[tuple[str, str], list[str]] = {}
        for store, path in ns:
            parent, _, name = path.rpartition("/")
            kids.setdefault((store, parent or "/"), []).append(name)
        return SnapshotTree(
            nodes=ns,
            values=dict(values or {}),
            undecodable=dict(undecodable or {}),
            incomplete=frozenset(incomplete),
            loaded=loaded,
            _children={k: tuple(sorted(v)) for k, v in kids.items()},
        )

    def merged(self, other: SnapshotTree) -> SnapshotTree:
        lo = self.loaded
        if lo is not None and other.loaded is not None:
            lo = LeakReads(lo.exact | other.loaded.exact, lo.parents | other.loaded.parents)
        return SnapshotTree.build(
            self.nodes | other.nodes,
            values={**self.values, **other.values},
            undecodable={**self.undecodable, **other.undecodable},
            incomplete=self.incomplete | other.incomplete,
            loaded=lo,
        )

    def _known(self, store: str, path: str, *, listing: bool) -> None:
        for s, scope in self.incomplete:
            if s == store and within(path, scope):
                raise SnapshotUnknown(f"the snapshot's scope {scope} ({store}) is incomplete: {path} is unknown")
        if self.loaded is None:
            return
        if listing:
            known = (store, path) in self.loaded.parents
        else:  # a znode read exactly, or one of a directory whose children were read
            known = (store, path) in self.loaded.exact or (store, path.rsplit("/", 1)[0]) in self.loaded.parents
        if not known:
            raise SnapshotUnknown(f"{path} ({store}) was not loaded from the snapshot")

    def exists(self, store: str, path: str) -> bool:
        self._known(store, path, listing=False)
        return (store, path) in self.nodes

    def children(self, store: str, path: str) -> list[str] | None:
        self._known(store, path, listing=True)
        if (store, path) not in self.nodes:
            return None
        return list(self._children.get((store, path), ()))

    def data(self, store: str, path: str) -> bytes | None:
        self._known(store, path, listing=False)
        if (store, path) not in self.nodes:
            return None
        code = self.undecodable.get((store, path))
        if code is not None:
            raise SnapshotUnknown(f"the snapshot could not decode {path} ({code}); not evidence of absence")
        value = self.values.get((store, path))
        if value is None:
            raise SnapshotUnknown(f"the snapshot does not hold the value of {path}")
        return value


@dataclass(frozen=True)
class SnapshotView:
    """The snapshot-backed :class:`pulsar_ops.repair.facts.Facts` (the planner's): the values
    ``pulsar_ops.repair.snapshot_facts`` loaded, read the way the live facts read ZooKeeper. A read the snapshot
    cannot answer raises :class:`SnapshotUnknown` (never absence)."""

    facts: SnapshotFacts

    @property
    def params(self) -> RuleParams:
        return self.facts.rules

    @property
    def now_ms(self) -> int:
        return self.facts.now_ms

    @property
    def ledgers_root(self) -> str:
        return self.facts.ledgers_root

    @property
    def tree(self) -> TreeReader:
        if self.facts.leak_tree is None:
            raise SnapshotUnknown("the snapshot's tree around the leak was not loaded")
        return self.facts.leak_tree

    def ledger(self, action: Action) -> LedgerNow | None:
        assert action.ledger_id is not None
        fact = self.facts.ledgers.get(action.ledger_id)
        if fact is None:
            return None
        where = self.facts.referenced_ledgers.get(action.ledger_id)
        # the age's two stamps (rules.orphan_created_ms): the znode's ctime, and ctime_ms (the metadata's, else the
        # znode's: the same age as the metadata's alone); no znode ctime is an unknown age, never the other clock
        return LedgerNow(
            action.ledger_id,
            dict(fact.custom_metadata),
            fact.znode_ctime_ms,
            self.facts.watermark,
            where,
            metadata_ctime_ms=fact.ctime_ms,
        )

    def topic(self, ml_path: str) -> TopicNow:
        listed = self.facts.ledger_lists.get(ml_path)
        if listed is None:
            return TopicNow((), (), None, problem=f"{ml_path}: its ledger list is not in the snapshot's facts")
        marks = tuple(c.mark_delete for c in self.facts.cursor_facts.values() if c.ml_path == ml_path)
        ml = names.ml_name_from_path(ml_path)
        policies_unknown = ml.namespace in self.facts.policy_topic_namespaces
        return TopicNow(
            listed,
            marks,
            self.facts.retention.get(ml_path),
            own=pulsar_names.system_topic_reason(ml.namespace, ml.local_name),
            topic_policies_unknown=topic_policies_reason(ml.namespace) if policies_unknown else None,
            ownership_unknown=self.facts.ownership_unknown,
        )

    def listed(self, ml_path: str) -> tuple[tuple[int, bool], ...] | None:
        gone = {li.ledger_id for li in self.facts.ledger_lists.get(ml_path, ()) if li.bookkeeper_deleted}
        return tuple((lid, lid in gone) for (path, lid) in self.facts.list_entries if path == ml_path)

    def present(self, ledger_ids: Sequence[int]) -> list[str]:
        """The metadata paths of ``ledger_ids`` the snapshot holds (decodable or not, as the live read sees them);
        an absence the snapshot cannot confirm raises :class:`SnapshotUnknown`."""
        if self.facts.ledgers_unknown is not None:
            raise SnapshotUnknown(self.facts.ledgers_unknown)
        found = self.facts.ledger_znodes
        if found is None:
            return [self.facts.ledgers[i].path for i in ledger_ids if i in self.facts.ledgers]
        out: list[str] = []
        for i in ledger_ids:
            if i not in found:
                raise SnapshotUnknown(f"ledger {i}'s metadata paths were not loaded from the snapshot")
            out.extend(found[i])
        return out

    def cursor(self, path: str, subscription: str) -> CursorNow:
        c = self.facts.cursor_facts.get(path)
        if c is None:
            return CursorNow(subscription, None, None, problem=f"{path} is not in the snapshot's cursors table")
        return CursorNow(c.subscription, c.last_active_ms, c.mtime_ms)

    def subtree(self, action: Action) -> list[SubtreeNode]:
        out = []
        for n in self.facts.subtrees.get(action.path, ()):
            listed: int | None = None
            undecodable: str | None = None
            if n.znode.store == LOCAL and _is_ml_znode(n.znode.path):
                listed = self.facts.ml_listed.get(n.znode.path)
                undecodable = "not in the snapshot's managed_ledgers table" if listed is None else None
            out.append(SubtreeNode(n.znode.path, b"", listed=listed, undecodable=undecodable, mtime_ms=n.mtime_ms))
        return out

    def loaded(self, topic: str, then: str) -> str | None:
        """Why the snapshot says ``topic`` may be loaded, or cannot tell (:func:`rules.topic_load_problem`), else
        None."""
        o = self.facts.ownership
        if o is None:  # facts built without the ownership tables: what they hold, the rest known
            o = Ownership(owned=self.facts.owned_ranges, loaded_topics=self.facts.loaded_topics)
        why = topic_load_problem(topic, o)
        return None if why is None else f"{why}: {then}"

    def trim_blocked(self, action: Action) -> str | None:
        ids = action.rewrite.ledger_ids if action.rewrite else action.admin.expect_trimmed if action.admin else ()
        for lid in ids:
            where = self.facts.referenced_elsewhere.get(lid)
            if where is not None:
                return f"ledger {lid} is also referenced by {where}"
        return None


def _is_ml_znode(path: str) -> bool:
    """A managed-ledger znode (not a directory level, not a cursor): what prove_leak decodes."""
    try:
        _ml, cursor = names.split_ml_path(path)
    except DecodeError:
        return False
    return cursor is None
