"""The fact types and the :class:`Facts` interface the kinds' rules read. No I/O.

Two implementations, each the only reader of its source: ``snapshot_tree.SnapshotView`` (the planner) and
``live_facts.LiveFacts`` (apply; a failed read raises ZooKeeperError, never absence). A value that does not decode
is an unknown fact, which the rule refuses, with a :class:`Refusal`'s reason code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from pulsar_ops.repair.actions import Action, Record, ZnodeRef

MIB = 1024 * 1024
SNAPSHOT_SAYS = "contradicted-by-snapshot"  # the reason code of a refusal the facts (not the finding) decide


class Refusal(str):
    """Why a rule refuses, with the plan's ``reason_code`` for it (``refused-by-rule`` unless said)."""

    code: str

    def __new__(cls, reason: str, code: str = "refused-by-rule") -> Refusal:
        r = super().__new__(cls, reason)
        r.code = code
        return r


def code_of(why: str, default: str = "refused-by-rule") -> str:
    """The reason code of a rule's refusal (a plain ``str`` from a rule function: ``default``)."""
    return why.code if isinstance(why, Refusal) else default


@dataclass(frozen=True)
class Observed:
    """A znode as just read (``exists`` false when it is gone)."""

    store: str
    path: str
    exists: bool
    data: bytes = b""
    version: int = -1
    mzxid: int = 0
    ephemeral_owner: int = 0
    ctime_ms: int = 0  # 0: not read (the eligibility rules then treat the age as unknown)
    mtime_ms: int = 0


@dataclass(frozen=True)
class ObservedRef:
    role: str
    node: Observed


@dataclass(frozen=True)
class RuleParams(Record):
    """The audit parameters the rules depend on, as the plan records them (``params.rules``). None: the plan does
    not record it (an older plan, or an audit that did not say), and every rule needing it refuses."""

    min_age_ms: int | None = None
    inactive_after_ms: int | None = None
    default_retention_time_minutes: int | None = None
    default_retention_size_mb: int | None = None

    @classmethod
    def from_json(cls, doc: Any) -> RuleParams:
        if not isinstance(doc, Mapping):
            return cls()

        def num(key: str) -> int | None:
            v = doc.get(key)
            return int(v) if isinstance(v, int) and not isinstance(v, bool) else None

        return cls(*(num(f.name) for f in fields(cls)))

    @classmethod
    def from_audit(cls, audit: Mapping[str, Any]) -> RuleParams:
        """From findings.json's ``audit.params`` (:class:`pulsar_ops.audit.params.AuditParams` as JSON)."""
        params = audit.get("params")
        if not isinstance(params, Mapping):
            return cls()
        broker = params.get("broker")
        broker = broker if isinstance(broker, Mapping) else {}
        return cls.from_json(
            {
                "min_age_ms": params.get("min_age_ms"),
                "inactive_after_ms": params.get("inactive_after_ms"),
                "default_retention_time_minutes": broker.get("default_retention_time_minutes"),
                "default_retention_size_mb": broker.get("default_retention_size_mb"),
            }
        )


@dataclass(frozen=True)
class LedgerNow:
    """One ledger as the rule sees it. ``custom``: its custom metadata (None: it does not decode);
    ``watermark``: the highest ledger id referenced in the tree (None: unknown); ``referenced_by``: a znode that
    references it (None: nothing does)."""

    ledger_id: int
    custom: Mapping[str, str] | None
    ctime_ms: int | None  # its metadata znode's ctime (ZooKeeper's clock: the age's; rules.orphan_created_ms)
    watermark: int | None
    referenced_by: str | None = None
    references_unknown: str | None = None  # a znode that could reference it does not decode
    metadata_ctime_ms: int | None = None  # the metadata's own ctime when stored (only ever delays the age)


@dataclass(frozen=True)
class ListedLedger:
    """One entry of a managed ledger's list, with the values the broker uses after a load (the audit's
    ``int_ledgers``): the last (open) ledger takes BookKeeper's last entry id + 1, length and ctime."""

    ledger_id: int
    entries: int | None
    size: int | None
    timestamp_ms: int | None
    bookkeeper_deleted: bool = False  # offloaded and deleted from BookKeeper: never trimmed here
    bk_last_entry_id: int | None = None  # the last ledger only: BookKeeper's last entry id


BkLast = tuple[int | None, int | None, int | None]  # a ledger's (last entry id, length, ctime) from its metadata


def listed_ledger(
    lid: int, entries: int | None, size: int | None, ts: int | None, deleted: bool, bk: BkLast | None
) -> ListedLedger:
    """A list entry as the broker takes it after a load; the last ledger (``bk``) takes BookKeeper's values."""
    if bk is None:
        return ListedLedger(lid, entries or 0, size or 0, ts, deleted)
    last, length, ctime = bk
    return ListedLedger(lid, None if last is None else last + 1, length, ctime, deleted, last)


@dataclass(frozen=True)
class Retention:
    time_minutes: int | None  # -1: infinite; None: no time rule
    size_mb: int | None  # -1: infinite; None: no size rule
    source: str = "broker"  # topic | namespace | broker


RetentionPair = tuple[int | None, int | None]


@dataclass(frozen=True)
class TopicNow:
    """What the retention rules need of one managed ledger. ``problem``: why the facts are incomplete (a value
    that does not decode, a read that failed): then every retention rule refuses."""

    ledgers: tuple[ListedLedger, ...]
    mark_deletes: tuple[tuple[int, int] | None, ...]  # one per cursor (None: the cursor has no position)
    retention: Retention | None
    problem: str | None = None
    # Why the managed ledger is Pulsar's own (pulsar_ops.pulsar_names.system_topic_reason): no retention repair
    own: str | None = None
    # Why its topic-level policies are unknown (its namespace has __change_events): no offline trim
    topic_policies_unknown: str | None = None
    # Why bundle ownership is not (all) in /namespace znodes (the extensible load manager): no offline trim
    ownership_unknown: str | None = None

    @property
    def slowest(self) -> tuple[int, int] | None:
        """The slowest cursor's mark-delete position: the lowest ledger, then the lowest entry in it."""
        known = [p for p in self.mark_deletes if p is not None]
        return min(known) if known else None


@dataclass(frozen=True)
class LedgerFact:
    """One ``bk_ledgers`` row, reduced to what the planner needs."""

    ledger_id: int
    path: str
    version: int
    mzxid: int
    sha256: str
    ctime_ms: int
    length: int
    custom_metadata: tuple[tuple[str, str], ...] = ()
    last_entry_id: int | None = None
    znode_ctime_ms: int | None = None  # the metadata znode's ctime (the min-age rule ages a ledger by it)

    def custom(self, key: str) -> str | None:
        for k, v in self.custom_metadata:
            if k == key:
                return v
        return None


@dataclass(frozen=True)
class CursorFact:
    """One ``cursors`` row, for subscription actions: the znode, its cursor ledger and mark-delete position."""

    znode: ZnodeRef
    ml_path: str
    subscription: str
    is_system: bool
    cursors_ledger_id: int
    mark_delete: tuple[int, int] | None
    last_active_ms: int | None = None  # the cursor's lastActive
    mtime_ms: int | None = None  # its znode's mtime (the activity when lastActive is absent)


@dataclass(frozen=True)
class SubtreeZnode:
    znode: ZnodeRef
    mtime_ms: int
    ephemeral_owner: int = 0
    data_length: int = 0


class TreeReader(Protocol):
    """Live reads (the executor passes its ZooKeeper session). A failed read raises; it never means absent."""

    def exists(self, store: str, path: str) -> bool: ...

    def children(self, store: str, path: str) -> list[str] | None: ...

    def data(self, store: str, path: str) -> bytes | None: ...


@dataclass(frozen=True)
class SubtreeNode:
    """A znode of the subtree to delete: its bytes (live), or, on the snapshot, the ledger count the scraper
    decoded (``listed``) or why it could not (``undecodable``)."""

    path: str
    data: bytes
    listed: int | None = None
    undecodable: str | None = None
    mtime_ms: int = 0  # 0: unknown (the leak's min-age rule then refuses)


@dataclass(frozen=True)
class Ownership:
    """Bundle ownership as the snapshot shows it, read the way the audit's expired_retention_unloaded.sql reads it
    (the rule: :func:`pulsar_ops.repair.rules.topic_load_problem`). ``owned``: per namespace, the ranges of its
    ``/namespace`` ownership znodes, and of its ``Owned`` service units when ``/service_unit_state`` is the truth;
    ``in_flight``: then, the ranges whose service unit is neither owned nor free; ``loaded_topics``: what the
    brokers listed loaded; ``unowned_unknown``: why a bundle without an owner is not known to be unowned (None: it
    is); ``all_answered``: every broker listed its topics; ``bundles_unknown``: namespaces whose policies or local
    policies do not decode. The defaults are a complete snapshot of the modular load manager."""

    owned: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    in_flight: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    loaded_topics: frozenset[str] = frozenset()
    unowned_unknown: str | None = None
    all_answered: bool = False
    bundles_unknown: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SnapshotFacts:
    """Everything the planner reads from the snapshot, as plain values keyed for lookup."""

    snapshot_id: str = ""
    ledgers: Mapping[int, LedgerFact] = field(default_factory=dict)
    managed_ledgers: Mapping[str, ZnodeRef] = field(default_factory=dict)  # by ml_name
    ml_name_by_topic: Mapping[str, str] = field(default_factory=dict)  # persistent://... -> ml_name
    cursors: Mapping[str, tuple[ZnodeRef, ...]] = field(default_factory=dict)  # by managed-ledger path
    schema_locators: Mapping[str, ZnodeRef] = field(default_factory=dict)  # by schema_id
    subtrees: Mapping[str, tuple[SubtreeZnode, ...]] = field(default_factory=dict)  # by root path
    ledgers_root: str = "/ledgers"
    # What the snapshot says against a leak finding (a hand-edited findings.json cannot plan past it): the part
    # of the tree prove_leak reads for the leak roots (None: not loaded, no leak is planned), and the ledger
    # count of each managed ledger inside a /managed-ledgers leak root (absent: the scraper could not decode it)
    leak_tree: TreeReader | None = None
    ml_listed: Mapping[str, int] = field(default_factory=dict)
    referenced_ledgers: Mapping[int, str] = field(default_factory=dict)  # candidate id -> where referenced
    watermark: int | None = None  # highest ledger id Pulsar references in the snapshot
    # For rewrite actions (opt-in detections): managed-ledger formats by path, the ledger-list entries
    # (ml_path, ledger_id) -> (entries, size), the bundle ranges owned per namespace, topics a broker reported
    # loaded (admin API), and every ledger id the snapshot has metadata for.
    ml_formats: Mapping[str, str] = field(default_factory=dict)
    list_entries: Mapping[tuple[str, int], tuple[int | None, int | None]] = field(default_factory=dict)
    owned_ranges: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    loaded_topics: frozenset[str] = frozenset()
    referenced_elsewhere: Mapping[int, str] = field(default_factory=dict)  # trim candidate -> other referencer
    cursor_facts: Mapping[str, CursorFact] = field(default_factory=dict)  # by cursor path (subscription actions)
    # For the eligibility rules (pulsar_ops.repair.rules): the audit's parameters and clock, and per rewritten
    # managed-ledger path its list (oldest first) and the retention the broker applies to it (None: unknown)
    rules: RuleParams = field(default_factory=RuleParams)
    now_ms: int = 0
    ledger_lists: Mapping[str, tuple[ListedLedger, ...]] = field(default_factory=dict)
    retention: Mapping[str, Retention | None] = field(default_factory=dict)
    # Namespaces whose topic-level policies may live in __change_events, and why bundle ownership is not (all)
    # in /namespace znodes (None: it is): the offline-trim conditions of pulsar_ops.repair.rules.trim_rule
    policy_topic_namespaces: frozenset[str] = frozenset()
    ownership_unknown: str | None = None
    # For the drop rule's absence (rules.drop_missing_rule): per ledger id listed by a rewritten managed ledger,
    # which of its metadata paths exist in the snapshot's znodes, decodable or not (None: not loaded, the decoded
    # ledgers' paths are taken), and why an absent one proves nothing (its scope was not read completely)
    ledger_znodes: Mapping[int, tuple[str, ...]] | None = None
    ledgers_unknown: str | None = None
    # Whether a rewritten topic is loaded (rules.topic_load_problem); None: only owned_ranges and loaded_topics
    ownership: Ownership | None = None


@dataclass(frozen=True)
class CursorNow:
    """A subscription's cursor as the rule sees it: its activity (``lastActive``, else the znode's mtime).
    ``problem``: why its activity is unknown (gone, does not decode)."""

    subscription: str
    last_active_ms: int | None
    mtime_ms: int | None
    problem: str | None = None


class Facts(Protocol):
    """What the eligibility rules read (snapshot or live). A live read that fails raises ZooKeeperError."""

    @property
    def params(self) -> RuleParams: ...

    @property
    def now_ms(self) -> int: ...

    @property
    def ledgers_root(self) -> str: ...

    @property
    def tree(self) -> TreeReader: ...

    def ledger(self, action: Action) -> LedgerNow | None:
        """The ledger a ``delete-ledger-metadata`` deletes (None: its znode is gone)."""
        ...

    def topic(self, ml_path: str) -> TopicNow:
        """A managed ledger's list, cursors' mark-delete positions and retention."""
        ...

    def listed(self, ml_path: str) -> tuple[tuple[int, bool], ...] | None:
        """The ledgers a managed ledger lists, ``(id, offloaded with its BookKeeper copy deleted)`` each (None: gone
        or undecodable)."""
        ...

    def present(self, ledger_ids: Sequence[int]) -> list[str]:
        """Of the hierarchical and flat metadata paths of ``ledger_ids``, those that exist."""
        ...

    def cursor(self, path: str, subscription: str) -> CursorNow: ...

    def subtree(self, action: Action) -> list[SubtreeNode]:
        """The znodes of a ``delete-subtree`` as they are (snapshot: with the ledger counts decoded)."""
        ...

    def loaded(self, topic: str, then: str) -> str | None:
        """Why ``topic`` may be loaded (or that it cannot be told), ending with ``then``; None when unloaded."""
        ...

    def trim_blocked(self, action: Action) -> str | None:
        """Why a trim's ledgers are referenced by something other than its own list (or cannot be told)."""
        ...
