"""``trim-unloaded``: rewrite an unloaded topic's ledger list without the ledgers the broker's first trim after a
load would remove, and delete their metadata, in one transaction (``expired-retention-unloaded`` findings with
``plan --offline-trim``).

Rule: the topic is not loaded; no znode but its own list references the removed ledgers; they are the first-trim
set (or a subset) re-computed from the list, the cursors and the resolved retention
(:func:`pulsar_ops.repair.rules.trim_rule`), never emptying the list. The transaction sets the managed-ledger
znode, checks every cursor at its planned version (a new or moved cursor means the topic was loaded) and deletes
the removed ledgers' metadata znodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.repair import rules as R
from pulsar_ops.repair.actions import KIND_TRIM_UNLOADED, ROLE_CURSOR, Action, Precondition, Reference, Rewrite
from pulsar_ops.repair.facts import SNAPSHOT_SAYS, Facts, ObservedRef, Refusal, SnapshotFacts
from pulsar_ops.repair.kind import (
    CheckOp,
    RewriteKind,
    Skip,
    checked,
    freed_bytes,
    hashed_id,
    retention_target,
    rewrite_shape,
)

LOADED = "let its broker trim"


def _cursor_checks(a: Action, refs: Sequence[ObservedRef]) -> tuple[str | None, tuple[CheckOp, ...]]:
    """A trim runs only while its topic's cursors are exactly the planned ones at their planned versions (an
    unloaded topic's cursors do not move); the transaction checks each version."""
    planned = {r.znode.path: r.znode.version for r in a.preconditions.references}
    now = {r.node.path: r.node for r in refs if r.role == ROLE_CURSOR and r.node.path != a.path}
    new = sorted(p for p, n in now.items() if n.exists and p not in planned)
    if new:
        return f"{new[0]}: a cursor created since the snapshot; re-audit before trimming", ()
    for path, version in sorted(planned.items()):
        node = now.get(path)
        if node is None or not node.exists:
            return f"cursor {path} is gone since the snapshot; re-audit before trimming", ()
        if node.version != version:
            return f"cursor {path} changed: version {version} -> {node.version} (the topic was loaded)", ()
    return None, tuple((p, v) for p, v in sorted(planned.items()))


class TrimUnloaded(RewriteKind):
    name = KIND_TRIM_UNLOADED
    reads_references = True

    def build(self, f: Finding, facts: SnapshotFacts, view: Facts) -> Action:
        ml, znode, removed, targets = retention_target(f, facts, rewrite=True)
        if f.evidence.get("owned") is True:
            raise Skip("topic-loaded", f"{f.topic} is loaded (the finding says so): {LOADED}")
        refs = tuple(Reference(ROLE_CURSOR, c) for c in sorted(facts.cursors.get(znode.path, ()), key=lambda z: z.path))
        a = self.action(
            f,
            hashed_id("trim", "local", znode.path),
            znode.path,
            preconditions=Precondition(znodes=(znode, *targets), references=refs),
            bytes=freed_bytes(removed, facts),
            time_ms=min(facts.ledgers[r.ledger_id].ctime_ms for r in removed),
            owner=ml.topic,
            rewrite=Rewrite(path=znode.path, topic=ml.topic, removed=tuple(removed)),
        )
        return checked(self, a, view)

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        problem = rewrite_shape(a, paths, ledgers_root)
        if problem is not None:
            return problem
        assert a.rewrite is not None
        if a.preconditions.absent:
            return "a trim-unloaded action deletes the ledgers it removes; it requires nothing absent"
        deleted = []
        for p in paths[1:]:
            lid = ledger_id_from_path(p, ledgers_root)
            if lid is None:
                return f"{p} is not a ledger metadata znode under {ledgers_root}"
            deleted.append(lid)
        if sorted(deleted) != sorted(a.rewrite.ledger_ids):
            return "a trim-unloaded action deletes the metadata of exactly the ledgers it removes from the list"
        return None

    def rule(self, a: Action, facts: Facts) -> str | None:
        assert a.rewrite is not None
        loaded = facts.loaded(a.rewrite.topic, LOADED)
        if loaded is not None:
            return Refusal(loaded, "topic-loaded")
        blocked = facts.trim_blocked(a)
        if blocked is not None:
            return Refusal(blocked, SNAPSHOT_SAYS)
        return R.trim_rule(facts.topic(a.path), a.rewrite.ledger_ids, facts.now_ms)

    def reference_owners(self, a: Action) -> list[tuple[str, str]]:
        return [(a.store, a.path)]  # its own topic's cursors, including any created since the snapshot

    def transaction_checks(self, a: Action, refs: Sequence[ObservedRef]) -> tuple[str | None, tuple[CheckOp, ...]]:
        return _cursor_checks(a, refs)

    def dry_run(self, a: Action) -> tuple[str, str]:
        assert a.rewrite is not None
        ids = ", ".join(str(i) for i in a.rewrite.ledger_ids)
        n, refs = a.znode_count, len(a.preconditions.references)
        return "would-rewrite", (
            f"re-verify {a.path}, its {n - 1} expired ledger znode(s) and {refs} cursor(s), that "
            f"{a.rewrite.topic} is unloaded, then rewrite its list without ledger(s) {ids} and delete "
            "their metadata in one compare-and-set transaction"
        )

    def freed(self, a: Action, ledgers_root: str) -> list[int]:
        return list(a.rewrite.ledger_ids) if a.rewrite is not None else []

    def impact_note(self, a: Action, per_ledger: dict[str, Any], ledgers_root: str) -> dict[str, Any]:
        return {
            "note": "rewrites the ledger list as the broker's first trim after a load would, then deletes "
            "those ledgers' metadata; bookies reclaim their data at GC",
            "why_safe": "re-verified at apply: no bundle ownership znode covers the topic; the managed-ledger "
            "znode (compare-and-set), every cursor (check) and every deleted ledger znode are at their "
            "scraped versions in the same transaction; nothing else references those ledgers; a broker "
            "that loads the topic later reads the new list",
            "cannot_protect_against": "a broker holding the topic open while its ownership is not in "
            "/namespace (extensible load manager) and without writing since the snapshot: its next list "
            "update fails its own compare-and-set and reloads the new list; the data of deleted ledgers "
            "goes at the bookies' next GC (restore is a short safety net)",
            "ledgers": {str(lid): per_ledger.get(str(lid), {}) for lid in self.freed(a, ledgers_root)},
        }


KIND = TrimUnloaded()
