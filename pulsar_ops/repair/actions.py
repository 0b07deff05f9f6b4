"""Repair actions and their preconditions: frozen values, serialised into the plan file. Pure.

``preconditions``: every znode the action changes as scraped (``znodes``, parents first), the identity custom
metadata a ledger must still carry, the znodes that would reference the ledger if it were in use (``exists:
false``: absent at plan time, checked like the others if it appears), and paths that must stay absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

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


# --- the strict reader: each field says how the plan file holds it (exactly the JSON types the planner writes) ---
Reader = Callable[[Mapping[str, Any], str, str], Any]  # (object, key, where) -> value; a PlanError names where.key
T = TypeVar("T")
_hint: ContextVar[str] = ContextVar("_hint", default=_HINT)  # the hint of the document being read


def read_strict(cls: type[T], d: Any, where: str, *, hint: str | None = None, **given: Any) -> T:
    """``cls`` from the JSON object ``d`` (see :mod:`pulsar_ops.strict`): every field not ``given`` is read by its
    metadata's reader, in field order, from its ``json`` key (else its name); a field with no reader is given.
    ``hint``: the errors' hint (by default, and for the objects inside, the plan file's)."""
    token = _hint.set(hint) if hint is not None else None
    try:
        d = strict.obj(d, where, PlanError, hint=_hint.get())
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name not in given and "read" in f.metadata:
                given[f.name] = f.metadata["read"](d, f.metadata.get("json", f.name), where)
        return cls(**given)
    finally:
        if token is not None:
            _hint.reset(token)


def reads(read: Reader, json: str | None = None) -> dict[str, Any]:
    return {"read": read} if json is None else {"read": read, "json": json}


def req_text(d: Mapping[str, Any], k: str, w: str) -> str:
    return strict.req_text(d, k, w, PlanError, hint=_hint.get())


def opt_text(d: Mapping[str, Any], k: str, w: str) -> str | None:
    return strict.text(d, k, w, PlanError, nullable=True, hint=_hint.get())


def zk_path(d: Mapping[str, Any], k: str, w: str) -> str:
    return strict.req_zk_path(d, k, w, PlanError, hint=_hint.get())


def integer(
    *, lo: int = strict.INT64_MIN, hi: int = strict.INT64_MAX, nullable: bool = False, zero: bool = False
) -> Reader:
    """A JSON integer in [lo, hi]; missing or null: an error, or None (``nullable``), or 0 (``zero``)."""
    if zero:
        return lambda d, k, w: strict.integer(d, k, w, PlanError, lo=lo, hi=hi, default=0, hint=_hint.get()) or 0
    return lambda d, k, w: strict.integer(d, k, w, PlanError, lo=lo, hi=hi, nullable=nullable, hint=_hint.get())


def boolean(default: bool) -> Reader:
    return lambda d, k, w: strict.boolean(d, k, w, PlanError, default=default, hint=_hint.get())


def one_of(allowed: Sequence[str], what: str) -> Reader:
    def read(d: Mapping[str, Any], k: str, w: str) -> str:
        v = req_text(d, k, w)
        if v not in allowed:
            raise PlanError(f"{w}.{k}: unknown {what} {strict.describe(v)}", hint=_hint.get())
        return v

    return read


def json_list(d: Mapping[str, Any], key: str, where: str) -> list[Any]:
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise PlanError(f"{where}.{key}: must be a list, not {type(v).__name__}", hint=_hint.get())
    return v


def each(read: Reader, key: str = "v") -> Reader:
    """A list (missing or null: empty) of values each read by ``read`` (as ``key`` of ``where.key[i]``)."""
    return lambda d, k, w: tuple(read({key: v}, key, f"{w}.{k}[{i}]") for i, v in enumerate(json_list(d, k, w)))


def opt_obj(d: Mapping[str, Any], k: str, w: str) -> dict[str, Any]:
    v = d.get(k)
    return {} if v is None else dict(strict.obj(v, f"{w}.{k}", PlanError, hint=_hint.get()))


def _sha256(d: Mapping[str, Any], k: str, w: str) -> str | None:
    sha = opt_text(d, k, w)
    if sha is not None and not _SHA256.fullmatch(sha):
        raise PlanError(f"{w}.{k}: {strict.describe(sha)} is not a sha256 hex digest", hint=_hint.get())
    return sha


_STORE = reads(one_of(STORES, "store"))


class Record:
    """A value written (to a plan, backup manifest or report) as its fields: ``dataclasses.asdict``."""

    def to_json(self) -> dict[str, Any]:
        return asdict(cast(Any, self))


class PlanObject(Record):
    """A plan-file object, read back by :func:`read_strict` from its fields' declarations."""

    @classmethod
    def from_json(cls, d: Any, where: str) -> Self:
        return read_strict(cls, d, where)


@dataclass(frozen=True)
class ZnodeRef(PlanObject):
    """A znode as scraped: the compare-and-set token (version), mzxid and sha256 of the exact bytes."""

    store: str = field(metadata=_STORE)
    path: str = field(metadata=reads(zk_path))
    version: int = field(metadata=reads(integer(lo=-1, hi=2**31 - 1)))
    mzxid: int = field(metadata=reads(integer(lo=0)))
    sha256: str | None = field(metadata=reads(_sha256))


@dataclass(frozen=True)
class Reference(PlanObject):
    """A znode that references (or would reference) the ledger; re-decoded before the delete."""

    role: str = field(metadata=reads(one_of(REFERENCE_ROLES, "reference role")))
    znode: ZnodeRef = field(metadata=reads(lambda d, k, w: ZnodeRef.from_json(d, w)))  # its keys beside role's
    exists: bool = field(default=True, metadata=reads(boolean(True)))

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "exists": self.exists, **self.znode.to_json()}


@dataclass(frozen=True)
class Precondition:
    znodes: tuple[ZnodeRef, ...]
    custom_metadata: tuple[tuple[str, str], ...] = ()
    references: tuple[Reference, ...] = field(
        default=(),
        metadata=reads(each(lambda d, k, w: Reference.from_json(d[k], w))),
    )
    absent: tuple[str, ...] = field(default=(), metadata=reads(each(zk_path, "p")))  # paths (in its store) still absent

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
        znodes = json_list(d, "znodes", where)
        if no_znodes and znodes:
            raise PlanError(f"{where}.znodes: this action changes no znode", hint=_HINT)
        if not znodes and not no_znodes:
            raise PlanError(f"{where}.znodes: an action deletes at least one znode", hint=_HINT)
        return read_strict(
            cls,
            d,
            where,
            znodes=tuple(ZnodeRef.from_json(z, f"{where}.znodes[{i}]") for i, z in enumerate(znodes)),
            custom_metadata=tuple(sorted((str(k), v) for k, v in cm.items())),
        )


@dataclass(frozen=True)
class RemovedLedger:
    """A ledger-list entry a rewrite removes, as the snapshot listed it: the data loss the plan acknowledges."""

    ledger_id: int = field(metadata=reads(integer(lo=0)))
    entries: int | None = field(metadata=reads(integer(lo=0, nullable=True)))
    size: int | None = field(metadata=reads(integer(lo=0, nullable=True), "bytes"))
    finding: str = field(default="", metadata=reads(lambda d, k, w: opt_text(d, k, w) or ""))  # the finding's key

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

    path: str = field(metadata=reads(zk_path))
    topic: str = field(metadata=reads(req_text))
    removed: tuple[RemovedLedger, ...]

    @property
    def ledger_ids(self) -> tuple[int, ...]:
        return tuple(r.ledger_id for r in self.removed)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "topic": self.topic, "removed": [r.to_json() for r in self.removed]}

    @classmethod
    def from_json(cls, d: Any, where: str) -> Rewrite:
        d = strict.obj(d, where, PlanError, hint=_HINT)
        removed = each(lambda r, k, w: read_strict(RemovedLedger, r[k], w))(d, "removed", where)
        if not removed:
            raise PlanError(f"{where}.removed: a rewrite removes at least one ledger", hint=_HINT)
        return read_strict(cls, d, where, removed=removed)


@dataclass(frozen=True)
class AdminCall(PlanObject):
    """What an admin-API action asks a broker to do: ``delete-subscription`` of ``subscription`` on ``topic``, or
    ``load-topic`` (load ``topic`` and trim it; ``expect_trimmed``: the ledgers its first trim should remove).
    Names are decoded (``persistent://t/ns/x``); the client encodes them in the URL."""

    topic: str = field(metadata=reads(req_text))
    subscription: str | None = field(default=None, metadata=reads(opt_text))
    expect_trimmed: tuple[int, ...] = field(default=(), metadata=reads(each(integer(lo=0))))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"topic": self.topic, "subscription": self.subscription}
        if self.expect_trimmed:
            d["expect_trimmed"] = list(self.expect_trimmed)
        return d


@dataclass(frozen=True)
class FindingRef(PlanObject):
    key: str = field(metadata=reads(req_text))
    detection: str = field(metadata=reads(req_text))


@dataclass(frozen=True)
class Action:
    id: str = field(metadata=reads(req_text))
    kind: str
    store: str
    path: str = field(metadata=reads(zk_path))
    finding: FindingRef
    preconditions: Precondition
    bytes: int = field(metadata=reads(integer(lo=0, zero=True)))
    time_ms: int = field(
        metadata=reads(integer(zero=True))
    )  # ledger ctime, or newest znode mtime (subtrees): the cap order
    ledger_id: int | None = None
    ledger_kind: str | None = field(default=None, metadata=reads(opt_text))  # data|cursor|schema|compacted|bucket
    owner: str | None = field(default=None, metadata=reads(opt_text))
    leak: str | None = field(default=None, metadata=reads(opt_text))  # znode-leak sub-kind (subtree actions)
    loads_topics: bool = field(default=False, metadata=reads(boolean(False)))
    impact: Mapping[str, Any] = field(default_factory=dict, metadata=reads(opt_obj))
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
        for key, call in (("rewrite", self.rewrite), ("admin", self.admin), ("bookie_gc", self.bookie_gc)):
            if call is not None:
                d[key] = call.to_json()
        return d

    @classmethod
    def from_json(cls, d: Any, where: str = "action") -> Action:
        """Strict: exactly the JSON types the planner writes (see :mod:`pulsar_ops.strict`)."""
        E = PlanError
        d = strict.obj(d, where, E, hint=_HINT)
        where = f"{where} {strict.describe(d.get('id'))}"
        kind = one_of(ACTION_KINDS, "action kind")(d, "kind", where)
        store = _STORE["read"](d, "store", where)
        ledger_id = integer(lo=0, nullable=True)(d, "ledger_id", where)
        if kind in NEEDS_LEDGER_ID and ledger_id is None:
            raise E(f"{where}: deletes ledger metadata but has no ledger_id", hint=_HINT)
        fd = strict.obj(d.get("finding"), f"{where}.finding", E, hint=_HINT)
        from pulsar_ops.repair.kinds.bookie_gc import BookieGcCall  # the kind's own value (imports this module)

        calls: dict[str, Any] = {}  # each kind's own call: present exactly for its kinds
        for key, call_type, kinds, what in (
            ("rewrite", Rewrite, REWRITE_KINDS, "rewrite"),
            ("admin", AdminCall, ADMIN_KINDS, "admin call"),
            ("bookie_gc", BookieGcCall, NO_ZNODES, "bookie_gc call"),
        ):
            call = call_type.from_json(d[key], f"{where}.{key}") if d.get(key) is not None else None
            if (kind in kinds) != (call is not None):
                raise E(f"{where}: a {kind} action {'needs' if call is None else 'has no'} {what}", hint=_HINT)
            calls[key] = call
        return read_strict(
            cls,
            d,
            where,
            kind=kind,
            store=store,
            finding=FindingRef.from_json(fd, f"{where}.finding"),
            preconditions=Precondition.from_json(
                d.get("preconditions"), f"{where}.preconditions", no_znodes=kind in NO_ZNODES
            ),
            ledger_id=ledger_id,
            **calls,
        )


@dataclass(frozen=True)
class NotPlanned(PlanObject):
    """A finding the plan does not act on, with a stable reason code and a human reason."""

    key: str = field(metadata=reads(req_text))
    detection: str = field(metadata=reads(req_text))
    reason_code: str = field(metadata=reads(req_text))
    reason: str = field(metadata=reads(req_text))
    bytes: int = field(default=0, metadata=reads(integer(lo=0, zero=True)))
    path: str | None = field(default=None, metadata=reads(opt_text))
    ledger_id: int | None = field(default=None, metadata=reads(integer(lo=0, nullable=True)))
