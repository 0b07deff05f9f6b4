"""Plain-value builders for the pure repair tests: findings and snapshot facts."""

from __future__ import annotations

import hashlib
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.actions import ZnodeRef
from pulsar_ops.repair.planner import LedgerFact, SnapshotFacts, SubtreeZnode
from pulsar_ops.repair.rules import RuleParams
from pulsar_ops.repair.snapshot_tree import SnapshotTree

NOW = 1_700_000_000_000
DAY = 86_400_000
# the audit parameters the eligibility rules use: min-age 1 day, inactive after 7 days, no broker retention
RULES = RuleParams(
    min_age_ms=DAY, inactive_after_ms=7 * DAY, default_retention_time_minutes=0, default_retention_size_mb=0
)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def ml_custom(ml_name: str, cursor: str | None = None) -> tuple[tuple[str, str], ...]:
    out = [("application", "pulsar"), ("component", "managed-ledger"), ("pulsar/managed-ledger", ml_name)]
    if cursor is not None:
        out.append(("pulsar/cursor", cursor))
    return tuple(out)


def ledger_fact(
    lid: int, *, ctime_ms: int = NOW - 10 * DAY, length: int = 1000, custom: tuple[tuple[str, str], ...] | None = None
) -> LedgerFact:
    return LedgerFact(
        ledger_id=lid,
        path=ledger_path(lid),
        version=0,
        mzxid=100 + lid,
        sha256=sha(str(lid).encode()),
        ctime_ms=ctime_ms,
        length=length,
        custom_metadata=custom if custom is not None else ml_custom("t/ns/persistent/topic"),
        znode_ctime_ms=ctime_ms,  # a snapshot always has the znode's ctime: the orphan age counts from it
    )


def orphan(
    lid: int,
    *,
    kind: str = "data",
    owner: str | None = "t/ns/persistent/topic",
    plannable: bool = True,
    nbytes: int = 1000,
    reason: str = "",
) -> Finding:
    return Finding(
        detection="orphan-ledger",
        severity="warning",
        ledger_id=lid,
        path=ledger_path(lid),
        plannable=plannable,
        bytes=nbytes,
        reason=reason,
        evidence={"kind": kind, "owner": owner},
    )


def leak(path: str, *, plannable: bool = True, kind: str | None = None) -> Finding:
    """A znode-leak finding; ``kind`` None leaves the sub-kind to the planner (it derives it from the path)."""
    return Finding(
        detection="znode-leak",
        severity="warning",
        path=path,
        plannable=plannable,
        evidence={"leak": kind} if kind else {},
    )


def znode(path: str, *, store: str = "local", version: int = 0, data: bytes = b"") -> ZnodeRef:
    return ZnodeRef(store=store, path=path, version=version, mzxid=len(path), sha256=sha(data))


def subtree(
    root: str,
    children: list[str],
    *,
    mtime_ms: int = NOW - 5 * DAY,
    store: str = "local",
    ephemeral: set[str] | None = None,
) -> tuple[SubtreeZnode, ...]:
    paths = [root, *(f"{root}/{c}" for c in children)]
    return tuple(
        SubtreeZnode(
            znode=znode(p, store=store),
            mtime_ms=mtime_ms,
            ephemeral_owner=1 if ephemeral and p in ephemeral else 0,
            data_length=len(p),
        )
        for p in paths
    )


def facts(**kw: Any) -> SnapshotFacts:
    """Snapshot facts; by default the watermark is far above every test ledger id."""
    kw.setdefault("watermark", 10**12)
    kw.setdefault("rules", RULES)
    kw.setdefault("now_ms", NOW)
    # the whole (empty) tree is loaded: nothing outside the subtrees exists; every managed ledger in them is empty
    kw.setdefault("leak_tree", SnapshotTree.build(()))
    kw.setdefault("ml_listed", {z.znode.path: 0 for nodes in kw.get("subtrees", {}).values() for z in nodes})
    return SnapshotFacts(**kw)
