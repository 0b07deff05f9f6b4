"""``delete-ledger-metadata``: delete one orphan ledger's metadata znode (``orphan-ledger`` findings).

Rule (:func:`pulsar_ops.repair.rules.ledger_delete_rule`): the ledger's own custom metadata makes it Pulsar-owned
of a plannable kind; its znode's ctime is older than min-age; its id is below the highest ledger id referenced in
the tree; nothing references it, and no znode that could reference it fails to decode. At delete the transaction
also checks the version of every referencing znode of its owner (re-decoded first).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pulsar_ops.errors import DecodeError
from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_kind import ML_OWNED
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.repair import rules as R
from pulsar_ops.repair.actions import (
    KIND_DELETE_LEDGER,
    ROLE_CURSOR,
    ROLE_MANAGED_LEDGER,
    ROLE_SCHEMA_LOCATOR,
    Action,
    Precondition,
    Reference,
    ZnodeRef,
)
from pulsar_ops.repair.facts import Facts, SnapshotFacts
from pulsar_ops.repair.kind import Kind, Skip, absent_ref, checked
from pulsar_ops.strict import zk_path_problem

# Custom-metadata keys that identify who owns a ledger: re-checked before delete (PIP-186 style).
IDENTITY_KEYS = (
    "application",
    "component",
    "pulsar/managed-ledger",
    "pulsar/cursor",
    "pulsar/schemaId",
    "pulsar/compactedTopic",
)
MANAGED_LEDGERS = "/managed-ledgers"
SCHEMAS = "/schemas"
COMPACTION_CURSOR = "__compaction"
_ROLE_ROOTS = {ROLE_MANAGED_LEDGER: MANAGED_LEDGERS, ROLE_CURSOR: MANAGED_LEDGERS, ROLE_SCHEMA_LOCATOR: SCHEMAS}


def _ml_refs(facts: SnapshotFacts, ml_name: str) -> list[Reference]:
    """The owner's managed-ledger znode and its cursor znodes (or the absent ML path)."""
    ml = facts.managed_ledgers.get(ml_name)
    if ml is None:
        return [Reference(ROLE_MANAGED_LEDGER, absent_ref("local", f"{MANAGED_LEDGERS}/{ml_name}"), exists=False)]
    refs = [Reference(ROLE_MANAGED_LEDGER, ml)]
    refs.extend(Reference(ROLE_CURSOR, c) for c in sorted(facts.cursors.get(ml.path, ()), key=lambda z: z.path))
    return refs


def _references(ledger_kind: str, owner: str | None, facts: SnapshotFacts) -> tuple[Reference, ...]:
    if not owner:
        raise Skip("owner-unknown", f"orphan {ledger_kind} ledger has no owner in its custom metadata")
    if ledger_kind in ML_OWNED:
        if owner.count("/") not in (3, 4) or "/persistent/" not in owner:
            raise Skip("owner-unmappable", f"owner {owner!r} is not a managed-ledger name")
        return tuple(_ml_refs(facts, owner))
    if ledger_kind == "schema":
        loc = facts.schema_locators.get(owner)
        if loc is None:
            return (Reference(ROLE_SCHEMA_LOCATOR, absent_ref("local", f"{SCHEMAS}/{owner}"), exists=False),)
        return (Reference(ROLE_SCHEMA_LOCATOR, loc),)
    # compacted
    ml_name = facts.ml_name_by_topic.get(owner)
    if ml_name is None:
        try:
            ml_name = names.parse_topic(owner).ml_name
        except DecodeError as e:  # an unmappable owner is never evidence of absence: do not plan
            raise Skip("owner-unmappable", f"compacted owner {owner!r}: {e.reason}") from None
    ml = facts.managed_ledgers.get(ml_name)
    ml_path = ml.path if ml is not None else f"{MANAGED_LEDGERS}/{ml_name}"
    cursor_path = f"{ml_path}/{COMPACTION_CURSOR}"
    for c in facts.cursors.get(ml_path, ()):
        if c.path == cursor_path:
            return (Reference(ROLE_CURSOR, c),)
    return (Reference(ROLE_CURSOR, absent_ref("local", cursor_path), exists=False),)


class DeleteLedger(Kind):
    name = KIND_DELETE_LEDGER
    reads_references = True

    def build(self, f: Finding, facts: SnapshotFacts, view: Facts) -> Action:
        if f.ledger_id is None:
            raise Skip("malformed-finding", "orphan-ledger finding without ledger_id")
        lkind = str(f.evidence.get("kind") or "")
        if lkind not in R.PLANNABLE_LEDGER_KINDS:
            raise Skip("kind-not-plannable", f"orphan kind {lkind or 'unknown'!r} is never planned")
        fact = facts.ledgers.get(f.ledger_id)
        if fact is None:
            raise Skip("missing-in-snapshot", f"ledger {f.ledger_id} is not in the snapshot's bk_ledgers table")
        if f.path and f.path != fact.path:
            raise Skip("path-mismatch", f"finding path {f.path} differs from the snapshot's {fact.path}")
        if fact.custom("application") != "pulsar":
            raise Skip("custom-metadata-mismatch", "ledger custom metadata has no application=pulsar")
        owner_ev = f.evidence.get("owner")
        owner = str(owner_ev) if owner_ev else None
        refs = _references(lkind, owner, facts)
        expected = tuple((k, v) for k in IDENTITY_KEYS if (v := fact.custom(k)) is not None)
        target = ZnodeRef("local", fact.path, fact.version, fact.mzxid, fact.sha256)
        a = self.action(
            f,
            f"ledger-{f.ledger_id}",
            fact.path,
            ledger_id=f.ledger_id,
            preconditions=Precondition(znodes=(target,), custom_metadata=expected, references=refs),
            bytes=max(fact.length, 0),
            time_ms=fact.ctime_ms,
            ledger_kind=lkind,
            owner=owner,
        )
        return checked(self, a, view)  # the rule apply asks again at mark and at delete

    def target(self, a: Action) -> str:
        return str(a.ledger_id)

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        if a.store != "local":
            return "ledger metadata lives in the local metadata store"
        lid = ledger_id_from_path(a.path, ledgers_root)
        if lid is None:
            return f"{a.path} is not a ledger metadata znode under {ledgers_root}"
        if lid != a.ledger_id:
            return f"ledger_id {a.ledger_id} does not match its path {a.path} (ledger {lid})"
        if list(paths) != [a.path]:
            return f"a ledger action deletes exactly its ledger znode {a.path}, not {list(paths)}"
        for r in a.preconditions.references:
            z = r.znode
            problem = zk_path_problem(z.path)
            if problem is not None:
                return f"reference path {z.path!r} {problem}"
            allowed = _ROLE_ROOTS[r.role]
            if not z.path.startswith(allowed + "/"):
                return f"a {r.role} reference must lie under {allowed}, not {z.path}"
        return None

    def rule(self, a: Action, facts: Facts) -> str | None:
        now = facts.ledger(a)
        if now is None:
            return f"{a.path} is gone"
        return R.ledger_delete_rule(now, min_age_ms=facts.params.min_age_ms, now_ms=facts.now_ms)

    def freed(self, a: Action, ledgers_root: str) -> list[int]:
        return [a.ledger_id] if a.ledger_id is not None else []

    def impact_note(self, a: Action, per_ledger: dict[str, Any], ledgers_root: str) -> dict[str, Any]:
        note: dict[str, Any] = per_ledger.get(str(a.ledger_id), {})
        return note


KIND = DeleteLedger()
