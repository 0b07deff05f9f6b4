"""The live :class:`pulsar_ops.repair.facts.Facts`: ZooKeeper now, the only reader of the live tree for the rules.

A failed read raises ZooKeeperError (the executor skips the action, transiently); a value that does not decode is
an unknown fact. The reference index is read once per run; when that read fails, later ledger actions of the run
are skipped with that error, not re-read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pulsar_ops import pulsar_names
from pulsar_ops.errors import DecodeError, ZooKeeperError
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_paths
from pulsar_ops.formats.policies import parse_bundle_range
from pulsar_ops.repair.actions import Action
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
from pulsar_ops.repair.references import ReferenceIndex, build_index
from pulsar_ops.repair.rules import resolve_retention, topic_load_problem, topic_policies_reason, topic_policy_pair
from pulsar_ops.repair.safety import CONFIG, LOCAL, MANAGED_LEDGERS, OWNERSHIP, PARTITIONED, POLICIES, SCHEMAS
from pulsar_ops.repair.zk_writer import ZkSession

TOPIC_POLICIES = "/admin/topic-policies"
BROKERS = "/loadbalance/brokers"


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


def listed_now(session: ZkSession, ml_path: str) -> tuple[int, ...] | None:
    """The ledger ids ``ml_path`` lists now (None: gone or undecodable)."""
    entries = list_entries_now(session, ml_path)
    return None if entries is None else tuple(lid for lid, _ in entries)


def list_entries_now(session: ZkSession, ml_path: str) -> tuple[tuple[int, bool], ...] | None:
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


def present_paths(session: ZkSession, ledger_ids: tuple[int, ...], ledgers_root: str) -> list[str]:
    """Of the hierarchical and flat metadata paths of ``ledger_ids``, those that exist now."""
    paths = [p for lid in ledger_ids for p in ledger_paths(lid, ledgers_root)]
    return [o.path for o in session.read(LOCAL, paths) if o.exists]


def reference_index(session: ZkSession) -> ReferenceIndex:
    """Read ``/managed-ledgers`` and ``/schemas`` of the local store and index every referenced ledger."""
    return build_index(session.read_subtree("local", MANAGED_LEDGERS), session.read_subtree("local", SCHEMAS))


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
            try:
                self.index = reference_index(self.session)
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
        return list_entries_now(self.session, ml_path)

    def present(self, ledger_ids: Sequence[int]) -> list[str]:
        return present_paths(self.session, tuple(ledger_ids), self.ledgers_root)

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
