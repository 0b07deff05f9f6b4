"""The live :class:`pulsar_ops.repair.facts.Facts`: ZooKeeper now, the only reader of the live tree for the rules.

A failed read raises ZooKeeperError (the executor skips the action, transiently); a value that does not decode is
an unknown fact. The reference index is read once per run; when that read fails, later ledger actions of the run
are skipped with that error, not re-read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pulsar_ops import pulsar_names
from pulsar_ops.errors import DecodeError, ZooKeeperError
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_kind import ML_OWNED
from pulsar_ops.formats.ledger_path import ledger_paths
from pulsar_ops.formats.policies import parse_bundle_range
from pulsar_ops.repair.actions import ROLE_CURSOR, ROLE_MANAGED_LEDGER, ROLE_SCHEMA_LOCATOR, Action
from pulsar_ops.repair.facts import (
    CursorNow,
    LedgerNow,
    ListedLedger,
    Observed,
    Ownership,
    RetentionPair,
    RuleParams,
    SubtreeNode,
    TopicNow,
    TreeReader,
    listed_ledger,
)
from pulsar_ops.repair.rules import resolve_retention, topic_load_problem, topic_policies_reason, topic_policy_pair
from pulsar_ops.repair.safety import CONFIG, LOCAL, MANAGED_LEDGERS, OWNERSHIP, PARTITIONED, POLICIES, SCHEMAS, within
from pulsar_ops.repair.validate import referenced_ledgers
from pulsar_ops.repair.zk_writer import ZkSession

TOPIC_POLICIES = "/admin/topic-policies"
BROKERS = "/loadbalance/brokers"


@dataclass
class ReferenceIndex:
    """Every ledger the live tree references (``/managed-ledgers``, ``/schemas``), read once per delete run: a
    ledger that ANY managed ledger, cursor or schema locator references is never deleted, whatever the plan says
    about its owner. An undecodable value blocks only the ledgers of the managed ledger or schema it belongs to."""

    referenced: dict[int, str] = field(default_factory=dict)  # ledger id -> first referencing znode
    also: dict[int, str] = field(default_factory=dict)  # ledger id -> a second, different referencing znode
    undecodable: dict[str, str] = field(default_factory=dict)  # znode path -> why it does not decode
    znodes: int = 0

    def add(self, role: str, node: Observed) -> None:
        self.znodes += 1
        try:
            ids = referenced_ledgers(role, node.data, node.path)
        except DecodeError as e:
            self.undecodable[node.path] = e.reason
            return
        for lid in ids:
            first = self.referenced.setdefault(lid, node.path)
            if first != node.path:
                self.also.setdefault(lid, node.path)

    @property
    def watermark(self) -> int | None:
        """The highest ledger id referenced in the tree as read (None: none). A znode that does not decode may
        reference a higher one, so this is a lower bound: a ledger below it is below the true highest too."""
        return max(self.referenced) if self.referenced else None

    def blocks_trim(self, action: Action) -> str | None:
        """Why a trim must not remove its ledgers: one is referenced by a znode other than its own managed
        ledger's list, or a znode of that managed ledger (its info or a cursor) does not decode."""
        assert action.rewrite is not None
        for lid in action.rewrite.ledger_ids:
            first = self.referenced.get(lid)
            other = first if first is not None and first != action.path else self.also.get(lid)
            if other is not None:
                return f"ledger {lid} is also referenced by {other}"
        return self._undecodable_under([action.path])

    def _undecodable_under(self, roots: list[str]) -> str | None:
        for root in roots:
            bad = next((p for p in self.undecodable if within(p, root)), None)
            if bad is not None:
                return f"{bad} cannot be decoded ({self.undecodable[bad]}); not evidence of absence"
        return None

    def owner_undecodable(self, action: Action) -> str | None:
        """Why a ledger action's references are unknown: a znode that would reference its ledger if the owner
        still used it (its managed ledger and cursors, its schema locator) does not decode."""
        return self._undecodable_under(_owner_roots(action))


_SCHEMA_OWNED = frozenset({"schema"})


def _owner_roots(action: Action) -> list[str]:
    """The znodes (subtrees) that could reference this ledger if its owner still used it."""
    refs = action.preconditions.references
    roots = [r.znode.path for r in sorted(refs, key=lambda r: r.role != ROLE_MANAGED_LEDGER)]  # its MLs first
    if action.owner and action.ledger_kind in ML_OWNED:
        roots.append(f"{MANAGED_LEDGERS}/{action.owner}")
    if action.owner and action.ledger_kind in _SCHEMA_OWNED:
        roots.append(f"{SCHEMAS}/{action.owner}")
    return roots


def build_index(managed_ledgers: Iterable[Observed], schemas: Iterable[Observed]) -> ReferenceIndex:
    """Index the subtrees of ``/managed-ledgers`` and ``/schemas`` as just read."""
    index = ReferenceIndex()
    for node in managed_ledgers:
        if not node.exists:
            continue
        try:
            _ml, cursor = names.split_ml_path(node.path)
        except DecodeError:
            continue  # tenant / namespace / domain directory levels
        index.add(ROLE_CURSOR if cursor is not None else ROLE_MANAGED_LEDGER, node)
    for node in schemas:
        if node.exists and node.path.count("/") == 4:  # /schemas/<tenant>/<ns>/<topic>
            index.add(ROLE_SCHEMA_LOCATOR, node)
    return index


def ledger_now(node: Observed, ledger_id: int, index: ReferenceIndex, action: Action | None = None) -> LedgerNow:
    """Ledger ``ledger_id`` as its metadata znode ``node`` (just read) and the tree's references show it (with
    ``action``: a znode that could reference it and does not decode makes its references unknown)."""
    from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata

    custom: dict[str, str] | None
    metadata_ctime: int | None = None
    try:
        md = decode_ledger_metadata(node.data, node.path)
        custom = {k: v.decode("utf-8", errors="replace") for k, v in md.custom_metadata}
        metadata_ctime = md.ctime_ms or None  # as the scrape records it (0: not stored)
    except DecodeError:
        custom = None
    return LedgerNow(
        ledger_id=ledger_id,
        custom=custom,
        ctime_ms=node.ctime_ms or None,
        watermark=index.watermark,
        referenced_by=index.referenced.get(ledger_id),
        references_unknown=index.owner_undecodable(action) if action is not None else None,
        metadata_ctime_ms=metadata_ctime,
    )


def _bk_last(session: ZkSession, ledger_id: int, ledgers_root: str) -> tuple[int | None, int | None, int | None]:
    """(last entry id, length, ctime) of a ledger from its metadata (hierarchical or flat path), or Nones."""
    from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata

    for node in session.read(LOCAL, ledger_paths(ledger_id, ledgers_root)):
        if node.exists:
            md = decode_ledger_metadata(node.data, node.path)  # ctime: the metadata's, else the znode's
            return md.last_entry_id, md.length, md.ctime_ms or node.ctime_ms or None
    return None, None, None


def _retention_json(data: bytes, path: str) -> RetentionPair:
    from pulsar_ops.formats.policies import parse_json_object

    doc: dict[str, Any] = parse_json_object(data, path)
    ret = doc.get("retentionPolicies")
    ret = ret if isinstance(ret, dict) else {}

    def num(v: Any) -> int | None:
        return int(v) if isinstance(v, int) and not isinstance(v, bool) else None

    return num(ret.get("retentionTimeInMinutes")), num(ret.get("retentionSizeInMB"))


def _topic_policy(session: ZkSession, ml: names.MlName) -> RetentionPair | None:
    """The retention of one topic's topic policies (local scope first), or None when it sets none."""
    pairs: dict[str, RetentionPair | None] = {}
    for scope in ("local", "global"):
        path = f"{TOPIC_POLICIES}/{scope}/{ml.namespace}/persistent/{ml.encoded_name}"
        data = session.data(CONFIG, path)
        pairs[scope] = None if data is None else _retention_json(data, path)
    return topic_policy_pair(pairs["local"], pairs["global"])


def topic_now(session: ZkSession, ml_path: str, rules: RuleParams, ledgers_root: str) -> TopicNow:
    """The managed ledger at ``ml_path`` now: its list (the last ledger with BookKeeper's values, as the audit's
    ``int_ledgers``), its cursors' mark-delete positions and the retention the broker applies to it."""
    from pulsar_ops.formats.cursor import decode_cursor_info
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
    from pulsar_ops.formats.policies import parse_namespace_policies

    node = session.read(LOCAL, [ml_path])[0]
    if not node.exists:
        return TopicNow((), (), None, problem=f"{ml_path} is gone")
    try:
        ml = names.ml_name_from_path(ml_path)
        info = decode_managed_ledger_info(node.data, ml_path).info
        listed: list[ListedLedger] = []
        for i, li in enumerate(info.ledgers):
            deleted = bool(li.offload is not None and li.offload.bookkeeper_deleted)
            bk = _bk_last(session, li.ledger_id, ledgers_root) if i == len(info.ledgers) - 1 else None
            listed.append(listed_ledger(li.ledger_id, li.entries, li.size, li.timestamp_ms, deleted, bk))
        marks: list[tuple[int, int] | None] = []
        for child in session.children(LOCAL, ml_path) or ():
            cpath = f"{ml_path}/{child}"
            data = session.data(LOCAL, cpath)
            if data is None:
                continue
            md = decode_cursor_info(data, cpath).info.mark_delete
            marks.append(None if md is None else (int(md[0]), int(md[1])))
        ns_data = session.data(CONFIG, f"{POLICIES}/{ml.namespace}")
        ns_pair: RetentionPair | None = None
        if ns_data is not None:
            p = parse_namespace_policies(ns_data, f"{POLICIES}/{ml.namespace}")
            ns_pair = (p.retention_time_minutes, p.retention_size_mb)
        own = _topic_policy(session, ml)
        base_name, idx = names.partition_suffix(ml.local_name)
        base = None
        if idx >= 0:
            base = _topic_policy(session, names.parse_topic(f"persistent://{ml.namespace}/{base_name}"))
    except DecodeError as e:
        return TopicNow((), (), None, problem=f"{e.path}: {e.reason}; not evidence of expiry")
    facts = {
        "own": pulsar_names.system_topic_reason(ml.namespace, ml.local_name),
        "topic_policies_unknown": topic_policies_unknown(session, ml.namespace),
        "ownership_unknown": ownership_unknown(session),
    }
    if rules.default_retention_time_minutes is None or rules.default_retention_size_mb is None:
        return TopicNow(tuple(listed), tuple(marks), None, **facts)
    defaults = (rules.default_retention_time_minutes, rules.default_retention_size_mb)
    return TopicNow(tuple(listed), tuple(marks), resolve_retention(own, base, ns_pair, defaults), **facts)


def topic_policies_unknown(session: ZkSession, namespace: str) -> str | None:
    """Why the topic-level policies of ``namespace``'s topics are unknown now, by the one rule
    (:func:`pulsar_ops.pulsar_names.is_topic_policies_topic`): a managed-ledger znode of ``__change_events`` or of
    a partition, or its persistent partitioned-topic node, among the namespace's children now (listed, so a znode
    that does not decode counts; the snapshot side: ``snapshot_facts._policy_topic_namespaces``). A listing that
    fails raises (the action is skipped, never told "no topic policies")."""
    for store, root in ((LOCAL, MANAGED_LEDGERS), (CONFIG, PARTITIONED)):
        for child in session.children(store, f"{root}/{namespace}/persistent") or ():
            try:
                local = names.decode(child)
            except DecodeError:
                continue  # not a name Pulsar writes, so not __change_events (the audit's try_url_decode: NULL)
            if pulsar_names.is_topic_policies_topic(local):
                return topic_policies_reason(namespace)
    return None


def ownership_unknown(session: ZkSession) -> str | None:
    """Why bundle ownership is not (all) in /namespace znodes now: the registrations under /loadbalance/brokers
    and the extensible load manager's znodes (:func:`pulsar_ops.pulsar_names.load_manager_kind`)."""
    regs: dict[str, str | None] = {}
    ids = session.children(LOCAL, BROKERS) or []
    for o in session.read(LOCAL, [f"{BROKERS}/{b}" for b in ids]):
        if o.exists:
            regs[o.path.rsplit("/", 1)[1]] = pulsar_names.registration_class(o.data)
    elm = session.read(LOCAL, [pulsar_names.ELM_LEADER_PATH, pulsar_names.SERVICE_UNIT_STATE_ROOT])
    manager = pulsar_names.load_manager_kind(regs, any(o.exists for o in elm))
    if manager in ("modular", "none"):
        return None
    return f"load manager {manager!r} now: ownership is kept outside /namespace znodes"


def listed_now(session: ZkSession, ml_path: str) -> tuple[tuple[int, bool], ...] | None:
    """The ledgers ``ml_path`` lists now, ``(id, offloaded with its BookKeeper copy deleted)`` each (None: gone or
    undecodable)."""
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info

    node = session.read(LOCAL, [ml_path])[0]
    if not node.exists:
        return None
    try:
        info = decode_managed_ledger_info(node.data, ml_path).info
    except DecodeError:
        return None
    return tuple((li.ledger_id, li.offload is not None and li.offload.bookkeeper_deleted) for li in info.ledgers)


@dataclass
class _IndexOnce:
    """The reference index of one run: read once; a read that failed is not retried in the same run."""

    session: ZkSession
    remember_failure: bool = True
    index: ReferenceIndex | None = None
    failed: ZooKeeperError | None = None

    def get(self) -> ReferenceIndex:
        if self.failed is not None:
            raise self.failed
        if self.index is None:
            try:  # /managed-ledgers and /schemas of the local store, every referenced ledger indexed
                read = self.session.read_subtree
                self.index = build_index(read(LOCAL, MANAGED_LEDGERS), read(LOCAL, SCHEMAS))
            except ZooKeeperError as e:
                if self.remember_failure:
                    self.failed = e
                raise
        return self.index


@dataclass
class LiveFacts:
    """:class:`pulsar_ops.repair.facts.Facts` over the apply session. :meth:`at` gives the same facts with the
    znodes the executor has just read (the action's targets), which are then not read again."""

    session: ZkSession
    params: RuleParams
    now_ms: int
    ledgers_root: str
    remember_failure: bool = True
    _index: _IndexOnce | None = None
    _seen: dict[tuple[str, str], Observed] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self._index is None:
            self._index = _IndexOnce(self.session, self.remember_failure)

    def at(self, nodes: Sequence[Observed]) -> LiveFacts:
        return replace(self, _seen={(n.store, n.path): n for n in nodes})

    def references(self) -> ReferenceIndex:
        assert self._index is not None
        return self._index.get()

    def _node(self, store: str, path: str) -> Observed:
        seen = self._seen.get((store, path))
        return seen if seen is not None else self.session.read(store, [path])[0]

    @property
    def tree(self) -> TreeReader:
        return self.session  # failed reads raise

    def ledger(self, action: Action) -> LedgerNow | None:
        assert action.ledger_id is not None
        node = self._node(action.store, action.path)
        if not node.exists:
            return None
        return ledger_now(node, action.ledger_id, self.references(), action)

    def topic(self, ml_path: str) -> TopicNow:
        return topic_now(self.session, ml_path, self.params, self.ledgers_root)

    def listed(self, ml_path: str) -> tuple[tuple[int, bool], ...] | None:
        return listed_now(self.session, ml_path)

    def present(self, ledger_ids: Sequence[int]) -> list[str]:
        paths = [p for lid in ledger_ids for p in ledger_paths(lid, self.ledgers_root)]
        return [o.path for o in self.session.read(LOCAL, paths) if o.exists]

    def cursor(self, path: str, subscription: str) -> CursorNow:
        from pulsar_ops.formats.cursor import decode_cursor_info

        node = self._node(LOCAL, path)
        if not node.exists:
            return CursorNow(subscription, None, None, problem=f"{path} is gone")
        try:
            last_active = decode_cursor_info(node.data, path).info.last_active_ms
        except DecodeError as e:
            return CursorNow(
                subscription, None, None, problem=f"{path} does not decode ({e.reason}); its activity is unknown"
            )
        return CursorNow(subscription, last_active, node.mtime_ms or None)

    def subtree(self, action: Action) -> list[SubtreeNode]:
        seen = [
            n
            for (s, p), n in self._seen.items()
            if s == action.store and (p == action.path or p.startswith(action.path + "/"))
        ]
        nodes = seen if seen else self.session.read_subtree(action.store, action.path)
        return [SubtreeNode(n.path, n.data, mtime_ms=n.mtime_ms) for n in nodes if n.exists]

    def loaded(self, topic: str, then: str) -> str | None:
        """Why ``topic`` may be loaded, or that it cannot be told; None when it is not:
        :func:`pulsar_ops.repair.rules.topic_load_problem` on the ownership there is now, the ranges of the
        ``/namespace/<ns>`` ownership znodes, with a bundle without one unowned only while the load manager keeps
        ownership in those znodes (:func:`ownership_unknown`, as the snapshot's ``load_manager`` decides it at plan
        time). Apply asks no broker for its loaded topics, so under the extensible load manager (or a mix, or
        registrations it cannot read) whether the topic is loaded is unknown: refused."""
        try:
            ns = names.parse_topic(topic).namespace
        except DecodeError as e:
            return f"topic {topic}: {e.reason}"
        root = f"{OWNERSHIP}/{ns}"
        try:
            ranges = self.session.children(LOCAL, root) or []
            elsewhere = ownership_unknown(self.session)
        except ZooKeeperError as e:
            return f"cannot read the bundle ownership of {ns} ({e.message}); not evidence of absence"
        owned = []
        for r in ranges:
            try:
                owned.append(parse_bundle_range(r, f"{root}/{r}"))
            except DecodeError:
                return f"{root}/{r} is not a bundle range; cannot tell whether {topic} is loaded"
        unknown = None if elsewhere is None else f"bundle ownership is unknown ({elsewhere})"  # trim_rule's words
        why = topic_load_problem(topic, Ownership(owned={ns: tuple(owned)}, unowned_unknown=unknown))
        return None if why is None else f"{why} under {root}: {then}"

    def trim_blocked(self, action: Action) -> str | None:
        return self.references().blocks_trim(action)
