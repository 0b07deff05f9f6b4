"""Repair actions and their preconditions: frozen values, serialised into the plan file. Pure.

An action names what it deletes (``ledger_id`` + ledger znode ``path`` for ``delete-ledger-metadata``, the
subtree root ``path`` for ``delete-subtree``) and what must still hold right before it runs:

* ``znodes``: every znode it deletes, as scraped (version, mzxid, sha256 of the exact bytes). Listed parents
  before children; the delete transaction runs them children-first.
* ``custom_metadata``: the BookKeeper custom metadata the ledger must still carry (PIP-186 style re-check).
* ``references``: the znodes that would reference the ledger if it were still in use (the owner's
  managed-ledger znode and its cursors, the schema locator, the topic's ``__compaction`` cursor) with their
  scraped versions. ``exists: false`` records a path that was absent at plan time: if it appears later, it is
  decoded and checked like the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pulsar_ops.errors import PlanError

KIND_DELETE_LEDGER = "delete-ledger-metadata"
KIND_DELETE_SUBTREE = "delete-subtree"
ACTION_KINDS = (KIND_DELETE_LEDGER, KIND_DELETE_SUBTREE)
STORES = ("local", "config")

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
        return {
            "store": self.store,
            "path": self.path,
            "version": self.version,
            "mzxid": self.mzxid,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ZnodeRef:
        return cls(
            store=str(d["store"]),
            path=str(d["path"]),
            version=int(d["version"]),
            mzxid=int(d["mzxid"]),
            sha256=None if d.get("sha256") is None else str(d["sha256"]),
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
    def from_json(cls, d: Mapping[str, Any]) -> Reference:
        role = str(d["role"])
        if role not in REFERENCE_ROLES:
            raise PlanError(f"unknown reference role {role!r} in plan")
        return cls(role=role, znode=ZnodeRef.from_json(d), exists=bool(d.get("exists", True)))


@dataclass(frozen=True)
class Precondition:
    znodes: tuple[ZnodeRef, ...]
    custom_metadata: tuple[tuple[str, str], ...] = ()
    references: tuple[Reference, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "znodes": [z.to_json() for z in self.znodes],
            "custom_metadata": dict(self.custom_metadata),
            "references": [r.to_json() for r in self.references],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Precondition:
        cm = d.get("custom_metadata") or {}
        return cls(
            znodes=tuple(ZnodeRef.from_json(z) for z in d.get("znodes") or ()),
            custom_metadata=tuple(sorted((str(k), str(v)) for k, v in cm.items())),
            references=tuple(Reference.from_json(r) for r in d.get("references") or ()),
        )


@dataclass(frozen=True)
class FindingRef:
    key: str
    detection: str

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "detection": self.detection}


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

    @property
    def znode_count(self) -> int:
        return len(self.preconditions.znodes)

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
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Action:
        try:
            kind = str(d["kind"])
            if kind not in ACTION_KINDS:
                raise PlanError(f"unknown action kind {kind!r} in plan")
            store = str(d["store"])
            if store not in STORES:
                raise PlanError(f"unknown store {store!r} in plan action {d.get('id')!r}")
            ledger_id = d.get("ledger_id")
            if kind == KIND_DELETE_LEDGER and ledger_id is None:
                raise PlanError(f"plan action {d.get('id')!r} deletes ledger metadata but has no ledger_id")
            fd = d["finding"]
            return cls(
                id=str(d["id"]),
                kind=kind,
                store=store,
                path=str(d["path"]),
                finding=FindingRef(key=str(fd["key"]), detection=str(fd["detection"])),
                preconditions=Precondition.from_json(d["preconditions"]),
                bytes=int(d.get("bytes") or 0),
                time_ms=int(d.get("time_ms") or 0),
                ledger_id=None if ledger_id is None else int(ledger_id),
                ledger_kind=d.get("ledger_kind"),
                owner=d.get("owner"),
                leak=d.get("leak"),
                loads_topics=bool(d.get("loads_topics", False)),
                impact=dict(d.get("impact") or {}),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise PlanError(f"malformed plan action {d.get('id') if isinstance(d, Mapping) else d!r}: {e}") from e


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
        return {
            "key": self.key,
            "detection": self.detection,
            "reason_code": self.reason_code,
            "reason": self.reason,
            "bytes": self.bytes,
            "path": self.path,
            "ledger_id": self.ledger_id,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NotPlanned:
        lid = d.get("ledger_id")
        return cls(
            key=str(d["key"]),
            detection=str(d["detection"]),
            reason_code=str(d["reason_code"]),
            reason=str(d["reason"]),
            bytes=int(d.get("bytes") or 0),
            path=d.get("path"),
            ledger_id=None if lid is None else int(lid),
        )
