"""``delete-subtree``: delete a leaked metadata subtree (``znode-leak`` findings) in one transaction.

Rule: the condition that made it a leak still holds (:func:`pulsar_ops.repair.safety.prove_leak`, per leak kind:
the table in ``docs/repair.md``) and its newest znode was modified at least min-age ago
(:func:`pulsar_ops.repair.rules.leak_age_rule`). At mark the proof is only a forecast (``would-skip``); delete
re-proves it. The transaction deletes exactly the planned znodes (children first), each at its scraped version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pulsar_ops.errors import ZooKeeperError
from pulsar_ops.findings import Finding
from pulsar_ops.repair import rules as R
from pulsar_ops.repair import safety as S
from pulsar_ops.repair.actions import KIND_DELETE_SUBTREE, Action, Precondition
from pulsar_ops.repair.facts import SNAPSHOT_SAYS, Facts, Refusal, SnapshotFacts
from pulsar_ops.repair.kind import Kind, Skip, checked, hashed_id

if TYPE_CHECKING:
    from pulsar_ops.repair.zk_writer import ZkSession


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


class DeleteSubtree(Kind):
    name = KIND_DELETE_SUBTREE
    reads_subtree = True
    rule_at_mark = False
    nests = True

    def build(self, f: Finding, facts: SnapshotFacts, view: Facts, subtree_max_znodes: int) -> Action:
        root = f.path
        if not root or not root.startswith("/") or (root != "/" and root.endswith("/")):
            raise Skip("malformed-finding", f"znode-leak finding has no usable path ({root!r})")
        if root in S.PROTECTED_ROOTS or root.startswith("/ledgers/") or _depth(root) < 2:
            raise Skip("protected-path", f"{root} is a protected root and is never deleted")
        shape = S.leak_shape(root)
        if shape is None:
            raise Skip("protected-path", f"{root} is not the root of any znode-leak kind; never deleted")
        claimed = f.evidence.get("leak")
        if claimed is not None and claimed != shape.leak:
            raise Skip("leak-mismatch", f"{root} is a {shape.leak} root, the finding says {claimed!r}")
        nodes = facts.subtrees.get(root) or ()
        probe = self.action(
            f,
            hashed_id("subtree", "", root),
            root,
            store=nodes[0].znode.store if nodes else "",
            preconditions=Precondition(znodes=tuple(n.znode for n in nodes)),
            bytes=0,
            time_ms=0,
        )
        checked(self, probe, view)  # the rule apply re-runs on the live tree, here on the snapshot
        if not nodes:
            raise Skip("missing-in-snapshot", f"{root} is not in the snapshot's znodes table")
        stores = {n.znode.store for n in nodes}
        if len(stores) != 1:
            raise Skip("ambiguous-store", f"{root} appears in both stores ({', '.join(sorted(stores))})")
        if len(nodes) > subtree_max_znodes:
            raise Skip(
                "subtree-too-large", f"{root} holds {len(nodes)} znodes (> {subtree_max_znodes} per transaction)"
            )
        eph = [n.znode.path for n in nodes if n.ephemeral_owner]
        if eph:
            raise Skip("ephemeral-in-subtree", f"{root} holds ephemeral znode {eph[0]} (a live session)")
        if any(n.znode.sha256 is None for n in nodes):
            raise Skip("missing-in-snapshot", f"{root}: a znode has no scraped sha256")
        ordered = tuple(sorted((n.znode for n in nodes), key=lambda z: (_depth(z.path), z.path)))
        if ordered[0].path != root:
            raise Skip("missing-in-snapshot", f"{root} itself is not in the snapshot's znodes table")
        store = next(iter(stores))
        return self.action(
            f,
            hashed_id("subtree", store, root),
            root,
            store=store,
            preconditions=Precondition(znodes=ordered),
            bytes=sum(max(n.data_length, 0) for n in nodes),
            time_ms=max(n.mtime_ms for n in nodes),
            leak=shape.leak,
        )

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        path = a.path
        if a.ledger_id is not None or a.preconditions.references or a.preconditions.custom_metadata:
            return "a subtree action carries no ledger, references or custom metadata"
        if S.within(path, ledgers_root) or S.within(ledgers_root, path):
            return f"{path} overlaps the ledgers root {ledgers_root}; ledger metadata is only deleted per ledger"
        shape = S.leak_shape(path)
        if shape is None:
            return f"{path} is not the root of any znode-leak kind ({', '.join(S.LEAK_KINDS)})"
        if a.leak is not None and a.leak != shape.leak:
            return f"{path} is a {shape.leak} root, not {a.leak}"
        if a.store != shape.store:
            return f"{shape.leak} subtrees live in the {shape.store} store, not {a.store}"
        if path not in paths:
            return f"the subtree root {path} is not among the znodes it deletes"
        outside = [p for p in paths if not S.within(p, path)]
        if outside:
            return f"{outside[0]} lies outside the subtree {path}"
        return None

    def rule(self, a: Action, facts: Facts) -> str | None:
        own = R.system_subtree_rule(a.path)  # never a path of Pulsar's own: no re-proof can make it a leak
        if own is not None:
            return own
        subtree = facts.subtree(a)
        why = S.prove_leak(a, subtree, facts.tree)
        if why is not None:
            return Refusal(why, SNAPSHOT_SAYS)
        newest = max((n.mtime_ms for n in subtree), default=None)
        return R.leak_age_rule(a.path, newest, min_age_ms=facts.params.min_age_ms, now_ms=facts.now_ms)

    def forecast(self, session: ZkSession, a: Action, facts: Facts) -> tuple[str, str]:
        """``would-skip`` for a leak the live tree already disproves (delete would skip it), else ``marked``.
        Either way it is marked and backed up (mark changes nothing); delete re-proves the leak and decides."""
        try:
            why = self.rule(a, facts)
        except ZooKeeperError as e:
            return "marked", f"the leak could not be re-proved now ({e.message}); delete re-proves it"
        if why is None:
            return "marked", ""
        return "would-skip", f"the leak is already disproved: {why}; backed up, but delete re-proves it and skips it"


KIND = DeleteSubtree()
