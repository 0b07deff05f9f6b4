"""``drop-missing-ledger``: rewrite an unloaded topic's managed-ledger info without the ledgers BookKeeper lost
(opt-in ``dangling-ledger`` findings; one action per managed ledger).

Rule: every dropped id is listed now and its metadata is absent now under every path it may have
(:func:`pulsar_ops.repair.rules.drop_missing_rule`), the list is never left empty, and the topic is not loaded
(:meth:`pulsar_ops.repair.facts.Facts.loaded`). The transaction sets the managed-ledger znode (compare-and-set on
its scraped version) while every dropped ledger's metadata paths are still absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_id_from_path, ledger_paths
from pulsar_ops.repair import rules as R
from pulsar_ops.repair.actions import KIND_DROP_MISSING_LEDGER, Action, Precondition, RemovedLedger, Rewrite
from pulsar_ops.repair.facts import SNAPSHOT_SAYS, Facts, Refusal, SnapshotFacts
from pulsar_ops.repair.kind import RewriteKind, Skip, checked, hashed_id, ml_target, rewrite_shape

LOADED = "its list belongs to the broker; unload it first"


class DropMissingLedger(RewriteKind):
    name = KIND_DROP_MISSING_LEDGER

    def _one(self, f: Finding, facts: SnapshotFacts, view: Facts) -> Action:
        ref = f.evidence.get("ref")
        if ref != "data":
            raise Skip(
                "ref-not-droppable",
                f"the {ref} reference is not a ledger-list entry: only a managed ledger's list entry can be dropped",
            )
        if f.ledger_id is None or not f.path or not f.topic:
            raise Skip("malformed-finding", "dangling-ledger finding without ledger_id, path or topic")
        if f.evidence.get("blocked_scopes") or f.severity != "critical":
            raise Skip("not-plannable", f.reason or "the ledger listing is incomplete: absence is not confirmed")
        ml, znode = ml_target(f, facts, rewrite=True)
        entry = facts.list_entries.get((f.path, f.ledger_id), (None, None))
        removed = RemovedLedger(f.ledger_id, entry[0], entry[1], finding=f.key())
        return checked(self, self._action(f, znode, ml.topic, [removed], facts.ledgers_root), view)

    def _action(self, f: Finding, znode: Any, topic: str, removed: list[RemovedLedger], root: str) -> Action:
        absent = tuple(p for r in removed for p in ledger_paths(r.ledger_id, root))
        return self.action(
            f,
            hashed_id("rewrite", "local", znode.path),
            znode.path,
            preconditions=Precondition(znodes=(znode,), absent=absent),
            bytes=0,  # the ledgers hold nothing any more: a drop frees no storage, it lets the topic load
            time_ms=0,
            owner=topic,
            rewrite=Rewrite(path=znode.path, topic=topic, removed=tuple(removed)),
        )

    def build_all(
        self, fs: Sequence[Finding], facts: SnapshotFacts, view: Facts
    ) -> tuple[list[Action], list[tuple[Finding, Skip]]]:
        """One action per managed ledger, removing every missing ledger of its list."""
        skipped: list[tuple[Finding, Skip]] = []
        by_path: dict[str, list[tuple[Finding, Action]]] = {}
        for f in fs:
            try:
                a = self._one(f, facts, view)
            except Skip as s:
                skipped.append((f, s))
                continue
            by_path.setdefault(a.path, []).append((f, a))
        actions = []
        for path, items in sorted(by_path.items()):
            items.sort(key=lambda x: x[0].ledger_id or 0)
            removed = [r for _, a in items for r in (a.rewrite.removed if a.rewrite else ())]
            znode = items[0][1].preconditions.znodes[0]
            topic = names.ml_name_from_path(path).topic
            actions.append(self._action(items[0][0], znode, topic, removed, facts.ledgers_root))
        return actions, skipped

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        problem = rewrite_shape(a, paths, ledgers_root)
        if problem is not None:
            return problem
        if list(paths) != [a.path]:
            return f"a drop-missing-ledger action changes exactly its managed-ledger znode, not {list(paths)}"
        assert a.rewrite is not None
        found = {ledger_id_from_path(p, ledgers_root) for p in a.preconditions.absent}
        if found != set(a.rewrite.ledger_ids):
            return "every ledger a drop-missing-ledger action removes must be required absent from BookKeeper"
        return None

    def rule(self, a: Action, facts: Facts) -> str | None:
        assert a.rewrite is not None
        ids = a.rewrite.ledger_ids
        why = R.drop_missing_rule(ids, facts.listed(a.path), facts.present(ids))
        if why is not None:
            return Refusal(why, SNAPSHOT_SAYS)
        loaded = facts.loaded(a.rewrite.topic, LOADED)
        return None if loaded is None else Refusal(loaded, "topic-loaded")

    def dry_run(self, a: Action) -> tuple[str, str]:
        assert a.rewrite is not None
        ids = ", ".join(str(i) for i in a.rewrite.ledger_ids)
        return "would-rewrite", (
            f"re-verify {a.path}, that ledger(s) {ids} are still missing and {a.rewrite.topic} "
            "unloaded, then rewrite its list without them with compare-and-set"
        )

    def impact_note(self, a: Action, per_ledger: dict[str, Any], ledgers_root: str) -> dict[str, Any]:
        assert a.rewrite is not None
        lost = a.rewrite.removed
        return {
            "bytes_on_disk": 0,
            "note": "rewrites the ledger list only: the dropped ledgers have no BookKeeper metadata, so no "
            "bookie data is freed; the topic can load again",
            "acknowledged_loss": {
                "ledgers": len(lost),
                "entries": sum(r.entries or 0 for r in lost),
                "bytes": sum(r.size or 0 for r in lost),
            },
        }


KIND = DropMissingLedger()
