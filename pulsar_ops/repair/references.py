"""Every ledger the live tree references (``/managed-ledgers``, ``/schemas``), read once per delete run: a ledger
that ANY managed ledger, cursor or schema locator references is never deleted, whatever the plan says about its
owner. An undecodable value blocks only the ledgers of the managed ledger or schema it belongs to. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.repair.actions import ROLE_CURSOR, ROLE_MANAGED_LEDGER, ROLE_SCHEMA_LOCATOR, Action
from pulsar_ops.repair.safety import MANAGED_LEDGERS, SCHEMAS, within
from pulsar_ops.repair.validate import Observed, referenced_ledgers


@dataclass
class ReferenceIndex:
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


_ML_OWNED = frozenset({"data", "cursor", "bucket"})  # ledger kinds a managed ledger (or its cursors) owns
_SCHEMA_OWNED = frozenset({"schema"})


def _owner_roots(action: Action) -> list[str]:
    """The znodes (subtrees) that could reference this ledger if its owner still used it."""
    refs = action.preconditions.references
    roots = [r.znode.path for r in sorted(refs, key=lambda r: r.role != ROLE_MANAGED_LEDGER)]  # its MLs first
    if action.owner and action.ledger_kind in _ML_OWNED:
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
