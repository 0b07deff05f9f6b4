"""Repair actions and their preconditions: frozen values, serialised into the plan file. Pure.

``preconditions``: every znode the action changes as scraped (``znodes``, parents first), the identity custom
metadata a ledger must still carry, the znodes that would reference the ledger if it were in use (``exists:
false``: absent at plan time, checked like the others if it appears), and paths that must stay absent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pulsar_ops import strict
from pulsar_ops.errors import PlanError

if TYPE_CHECKING:
    from pulsar_ops.repair.kinds.bookie_gc import BookieGcCall

KIND_DELETE_LEDGER = "delete-ledger-metadata"
KIND_DELETE_SUBTREE = "delete-subtree"
KIND_DROP_MISSING_LEDGER = "drop-missing-ledger"  # rewrite a managed-ledger info without a ledger BK lost
KIND_TRIM_UNLOADED = "trim-unloaded"  # rewrite it without expired ledgers and delete their metadata (offline trim)
REWRITE_KINDS = (KIND_DROP_MISSING_LEDGER, KIND_TRIM_UNLOADED)
KIND_DELETE_SUBSCRIPTION = "delete-subscription"  # through a broker's admin REST API
KIND_LOAD_TOPIC = "load-topic"  # a broker loads an unloaded topic and trims it (admin REST API)
ADMIN_KINDS = (KIND_DELETE_SUBSCRIPTION, KIND_LOAD_TOPIC)
KIND_BOOKIE_GC = "bookie-gc"  # a forced GC on a bookie (its HTTP API): repair/kinds/bookie_gc.py
ACTION_KINDS = (KIND_DELETE_LEDGER, KIND_DELETE_SUBTREE, *REWRITE_KINDS, *ADMIN_KINDS, KIND_BOOKIE_GC)
NEEDS_LEDGER_ID = frozenset({KIND_DELETE_LEDGER})  # the plan file's shape: what each kind must carry
NO_ZNODES = frozenset({KIND_BOOKIE_GC})  # changes no znode: carries a bookie_gc call instead
STORES = ("local", "config")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_HINT = "plans are written by `pulsar-ops plan AUDIT_DIR --out PLAN.json`; re-create it instead of editing it"

# Roles of referencing znodes.
ROLE_MANAGED_LEDGER = "managed-ledger"  # ManagedLedgerInfo: ledger list; its children are cursors
ROLE_CURSOR = "cursor"  # ManagedCursorInfo: cursor ledger, CompactedTopicLedger, delayed buckets
ROLE_SCHEMA_LOCATOR = "schema-locator"  # SchemaLocator: index positions
REFERENCE_ROLES = (ROLE_MANAGED_LEDGER, ROLE_CURSOR, ROLE_SCHEMA_LOCATOR)


@dataclass(frozen=True)
class ZnodeRef:
    """A znode as scraped: the compare-and-set token (version), mzxid and sha256 of the exact bytes."""

    store: str
    path: str
    version: int
    mzxid: int
    sha256: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "znode") -> ZnodeRef:
        d = strict.obj(d, where, PlanError, hint=_HINT)
        store = strict.req_text(d, "store", where, PlanError, hint=_HINT)
        if store not in STORES:
            raise PlanError(f"{where}.store: unknown store {strict.describe(store)}", hint=_HINT)
        sha = strict.text(d, "sha256", where, PlanError, nullable=True, hint=_HINT)
        if sha is not None and not _SHA256.fullmatch(sha):
            raise PlanError(f"{where}.sha256: {strict.describe(sha)} is not a sha256 hex digest", hint=_HINT)
        return cls(
            store=store,
            path=strict.req_zk_path(d, "path", where, PlanError, hint=_HINT),
            version=strict.req_int(d, "version", where, PlanError, lo=-1, hi=2**31 - 1, hint=_HINT),
            mzxid=strict.req_int(d, "mzxid", where, PlanError, lo=0, hint=_HINT),
            sha256=sha,
        )


@dataclass(frozen=True)
class Reference:
    """A znode that references (or would reference) the ledger; re-decoded before the delete."""

    role: str
    znode: ZnodeRef
    exists: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "exists": self.exists, **self.znode.to_json()}

    @classmethod
    def from_json(cls, d: Any, where: str = "reference") -> Reference:
        d = strict.obj(d, where, PlanError, hint=_HINT)
        role = strict.req_text(d, "role", where, PlanError, hint=_HINT)
        if role not in REFERENCE_ROLES:
            raise PlanError(f"{where}.role: unknown reference role {strict.describe(role)}", hint=_HINT)
        return cls(
            role=role,
            znode=ZnodeRef.from_json(d, where),
            exists=strict.boolean(d, "exists", where, PlanError, default=True, hint=_HINT),
        )


@dataclass(frozen=True)
class Precondition:
    znodes: tuple[ZnodeRef, ...]
    custom_metadata: tuple[tuple[str, str], ...] = ()
    references: tuple[Reference, ...] = ()
    absent: tuple[str, ...] = ()  # paths (in the action's store) that must still not exist

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "znodes": [z.to_json() for z in self.znodes],
            "custom_metadata": dict(self.custom_metadata),
            "references": [r.to_json() for r in self.references],
        }
        if self.absent:
            d["absent"] = list(self.absent)
        return d

    @classmethod
    def from_json(cls, d: Any, where: str = "preconditions", *, no_znodes: bool = False) -> Precondition:
        """``no_znodes``: the action changes no znode (``bookie-gc``), so it lists none."""
        d = strict.obj(d, where, PlanError, hint=_HINT)
        cm = strict.obj(d.get("custom_metadata") or {}, f"{where}.custom_metadata", PlanError, hint=_HINT)
        for k, v in cm.items():
            if not isinstance(v, str):
                raise PlanError(f"{where}.custom_metadata.{k}: must be a string, not {strict.describe(v)}", hint=_HINT)
        znodes = _list(d, "znodes", where)
        if no_znodes and znodes:
            raise PlanError(f"{where}.znodes: this action changes no znode", hint=_HINT)
        if not znodes and not no_znodes:
            raise PlanError(f"{where}.znodes: an action deletes at least one znode", hint=_HINT)
        absent = _list(d, "absent", where)
        return cls(
            znodes=tuple(ZnodeRef.from_json(z, f"{where}.znodes[{i}]") for i, z in enumerate(znodes)),
            custom_metadata=tuple(sorted((str(k), v) for k, v in cm.items())),
            references=tuple(
                Reference.from_json(r, f"{where}.references[{i}]") for i, r in enumerate(_list(d, "references", where))
            ),
            absent=tuple(
                strict.req_zk_path({"p": p}, "p", f"{where}.absent[{i}]", PlanError, hint=_HINT)
                for i, p in enumerate(absent)
            ),
        )


@dataclass(frozen=True)
class RemovedLedger:
    """A ledger-list entry a rewrite removes, as the snapshot listed it: the data loss the plan acknowledges."""

    ledger_id: int
    entries: int | None
    size: int | None
    finding: str = ""  # key of the finding this entry answers

    def to_json(self) -> dict[str, Any]:
        last = None if self.entries is None else f"{self.ledger_id}:{self.entries - 1}"
        return {
            "ledger_id": self.ledger_id,
            "entries": self.entries,
            "bytes": self.size,
            "message_ids": None if last is None or self.entries == 0 else [f"{self.ledger_id}:0", last],
            "finding": self.finding,
        }


@dataclass(frozen=True)
class Rewrite:
    """A managed-ledger info rewritten without some ledgers (compare-and-set on its scraped version).

    ``path`` is one of the action's ``preconditions.znodes`` (backed up at mark, restored byte for byte);
    ``topic`` (``persistent://t/ns/x``) must be unloaded at apply: no ownership znode under
    ``/namespace/<t>/<ns>`` covers its bundle.
    """

    path: str
    topic: str
    removed: tuple[RemovedLedger, ...]

    @property
    def ledger_ids(self) -> tuple[int, ...]:
        return tuple(r.ledger_id for r in self.removed)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "topic": self.topic, "removed": [r.to_json() for r in self.removed]}

    @classmethod
    def from_json(cls, d: Any, where: str) -> Rewrite:
        E = PlanError
        d = strict.obj(d, where, E, hint=_HINT)
        removed = []
        for i, r in enumerate(_list(d, "removed", where)):
            w = f"{where}.removed[{i}]"
            r = strict.obj(r, w, E, hint=_HINT)
            removed.append(
                RemovedLedger(
                    ledger_id=strict.req_int(r, "ledger_id", w, E, lo=0, hint=_HINT),
                    entries=strict.integer(r, "entries", w, E, lo=0, nullable=True, hint=_HINT),
                    size=strict.integer(r, "bytes", w, E, lo=0, nullable=True, hint=_HINT),
                    finding=strict.text(r, "finding", w, E, nullable=True, hint=_HINT) or "",
                )
            )
        if not removed:
            raise E(f"{where}.removed: a rewrite removes at least one ledger", hint=_HINT)
        return cls(
            path=strict.req_zk_path(d, "path", where, E, hint=_HINT),
            topic=strict.req_text(d, "topic", where, E, hint=_HINT),
            removed=tuple(removed),
        )


@dataclass(frozen=True)
class AdminCall:
    """What an admin-API action asks a broker to do: ``delete-subscription`` of ``subscription`` on ``topic``, or
    ``load-topic`` (load ``topic`` and trim it; ``expect_trimmed``: the ledgers its first trim should remove).
    Names are decoded (``persistent://t/ns/x``); the client encodes them in the URL."""

    topic: str
    subscription: str | None = None
    expect_trimmed: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topic": self.topic, "subscription": self.subscription}
        if self.expect_trimmed:
            d["expect_trimmed"] = list(self.expect_trimmed)
        return d

    @classmethod
    def from_json(cls, d: Any, where: str) -> AdminCall:
        d = strict.obj(d, where, PlanError, hint=_HINT)
        return cls(
            topic=strict.req_text(d, "topic", where, PlanError, hint=_HINT),
            subscription=strict.text(d, "subscription", where, PlanError, nullable=True, hint=_HINT),
            expect_trimmed=tuple(
                strict.req_int({"v": v}, "v", f"{where}.expect_trimmed[{i}]", PlanError, lo=0, hint=_HINT)
                for i, v in enumerate(_list(d, "expect_trimmed", where))
            ),
        )


@dataclass(frozen=True)
class FindingRef:
    key: str
    detection: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Action:
    id: str
    kind: str
    store: str
    path: str
    finding: FindingRef
    preconditions: Precondition
    bytes: int
    time_ms: int  # ledger ctime (ledger actions) or newest znode mtime (subtrees): the cap order key
    ledger_id: int | None = None
    ledger_kind: str | None = None  # data | cursor | schema | compacted | bucket (ledger actions)
    owner: str | None = None
    leak: str | None = None  # znode-leak sub-kind (subtree actions)
    loads_topics: bool = False
    impact: Mapping[str, Any] = field(default_factory=dict)
    rewrite: Rewrite | None = None  # REWRITE_KINDS only
    admin: AdminCall | None = None  # ADMIN_KINDS only
    bookie_gc: BookieGcCall | None = None  # KIND_BOOKIE_GC only

    @property
    def znode_count(self) -> int:
        return len(self.preconditions.znodes)

    @property
    def delete_count(self) -> int:
        """Znodes the action deletes (a rewrite's managed-ledger znode is changed, not deleted; its kind says)."""
        from pulsar_ops.repair.registry import kind_of

        return self.znode_count - kind_of(self.kind).kept_znodes(self)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "kind": self.kind, "store": self.store}
        if self.ledger_id is not None:
            d["ledger_id"] = self.ledger_id
        d.update(
            {
                "path": self.path,
                "finding": self.finding.to_json(),
                "ledger_kind": self.ledger_kind,
                "owner": self.owner,
                "leak": self.leak,
                "bytes": self.bytes,
                "znodes": self.znode_count,
                "time_ms": self.time_ms,
                "loads_topics": self.loads_topics,
                "preconditions": self.preconditions.to_json(),
                "impact": dict(self.impact),
            }
        )
        if self.rewrite is not None:
            d["rewrite"] = self.rewrite.to_json()
        if self.admin is not None:
            d["admin"] = self.admin.to_json()
        if self.bookie_gc is not None:
            d["bookie_gc"] = self.bookie_gc.to_json()
        return d

    @classmethod
    def from_json(cls, d: Any, where: str = "action") -> Action:
        """Strict: exactly the JSON types the planner writes (see :mod:`pulsar_ops.strict`)."""
        E = PlanError
        d = strict.obj(d, where, E, hint=_HINT)
        where = f"{where} {strict.describe(d.get('id'))}"
        kind = strict.req_text(d, "kind", where, E, hint=_HINT)
        if kind not in ACTION_KINDS:
            raise E(f"{where}.kind: unknown action kind {strict.describe(kind)}", hint=_HINT)
        store = strict.req_text(d, "store", where, E, hint=_HINT)
        if store not in STORES:
            raise E(f"{where}.store: unknown store {strict.describe(store)}", hint=_HINT)
        ledger_id = strict.integer(d, "ledger_id", where, E, lo=0, nullable=True, hint=_HINT)
        if kind in NEEDS_LEDGER_ID and ledger_id is None:
            raise E(f"{where}: deletes ledger metadata but has no ledger_id", hint=_HINT)
        fd = strict.obj(d.get("finding"), f"{where}.finding", E, hint=_HINT)
        impact = d.get("impact")
        rewrite = Rewrite.from_json(d["rewrite"], f"{where}.rewrite") if d.get("rewrite") is not None else None
        if (kind in REWRITE_KINDS) != (rewrite is not None):
            raise E(f"{where}: a {kind} action {'needs' if rewrite is None else 'has no'} rewrite", hint=_HINT)
        admin = AdminCall.from_json(d["admin"], f"{where}.admin") if d.get("admin") is not None else None
        if (kind in ADMIN_KINDS) != (admin is not None):
            raise E(f"{where}: a {kind} action {'needs' if admin is None else 'has no'} admin call", hint=_HINT)
        from pulsar_ops.repair.kinds.bookie_gc import BookieGcCall  # the kind's own value (imports this module)

        gc = d.get("bookie_gc")
        gc_call = BookieGcCall.from_json(gc, f"{where}.bookie_gc") if gc is not None else None
        if (kind in NO_ZNODES) != (gc_call is not None):
            raise E(f"{where}: a {kind} action {'needs' if gc_call is None else 'has no'} bookie_gc call", hint=_HINT)
        return cls(
            id=strict.req_text(d, "id", where, E, hint=_HINT),
            kind=kind,
            store=store,
            path=strict.req_zk_path(d, "path", where, E, hint=_HINT),
            finding=FindingRef(
                key=strict.req_text(fd, "key", f"{where}.finding", E, hint=_HINT),
                detection=strict.req_text(fd, "detection", f"{where}.finding", E, hint=_HINT),
            ),
            preconditions=Precondition.from_json(
                d.get("preconditions"), f"{where}.preconditions", no_znodes=kind in NO_ZNODES
            ),
            bytes=strict.integer(d, "bytes", where, E, lo=0, default=0, hint=_HINT) or 0,
            time_ms=strict.integer(d, "time_ms", where, E, default=0, hint=_HINT) or 0,
            ledger_id=ledger_id,
            ledger_kind=strict.text(d, "ledger_kind", where, E, nullable=True, hint=_HINT),
            owner=strict.text(d, "owner", where, E, nullable=True, hint=_HINT),
            leak=strict.text(d, "leak", where, E, nullable=True, hint=_HINT),
            loads_topics=strict.boolean(d, "loads_topics", where, E, default=False, hint=_HINT),
            impact=dict(strict.obj(impact, f"{where}.impact", E, hint=_HINT)) if impact is not None else {},
            rewrite=rewrite,
            admin=admin,
            bookie_gc=gc_call,
        )


def _list(d: Mapping[str, Any], key: str, where: str) -> list[Any]:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise PlanError(f"{where}.{key}: must be a list, not {type(v).__name__}", hint=_HINT)
    return v


@dataclass(frozen=True)
class NotPlanned:
    """A finding the plan does not act on, with a stable reason code and a human reason."""

    key: str
    detection: str
    reason_code: str
    reason: str
    bytes: int = 0
    path: str | None = None
    ledger_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "not_planned") -> NotPlanned:
        E = PlanError
        d = strict.obj(d, where, E, hint=_HINT)
        return cls(
            key=strict.req_text(d, "key", where, E, hint=_HINT),
            detection=strict.req_text(d, "detection", where, E, hint=_HINT),
            reason_code=strict.req_text(d, "reason_code", where, E, hint=_HINT),
            reason=strict.req_text(d, "reason", where, E, hint=_HINT),
            bytes=strict.integer(d, "bytes", where, E, lo=0, default=0, hint=_HINT) or 0,
            path=strict.text(d, "path", where, E, nullable=True, hint=_HINT),
            ledger_id=strict.integer(d, "ledger_id", where, E, lo=0, nullable=True, hint=_HINT),
        )
