"""Pure re-verification of an action's targets and references against freshly read znodes (both apply phases).

A target gone, at another version or mzxid, with other bytes, ephemeral, or (subtrees) with a new znode inside ->
skip; a ledger whose identity custom metadata changed -> skip. A referencing znode is re-decoded, not compared: the
action is skipped only when it references the ledger again or does not decode, and the transaction then
``check``s the version just read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pulsar_ops.errors import DecodeError
from pulsar_ops.repair.actions import ROLE_CURSOR, ROLE_MANAGED_LEDGER, ROLE_SCHEMA_LOCATOR, Action, ZnodeRef
from pulsar_ops.repair.facts import Observed, ObservedRef

__all__ = ["Observed", "ObservedRef"]


@dataclass(frozen=True)
class Verdict:
    proceed: bool
    reason: str = ""
    checks: tuple[tuple[str, int], ...] = ()  # (path, version) check ops, same store as the target
    deletes: tuple[tuple[str, int], ...] = ()  # (path, version), children first

    @classmethod
    def skip(cls, reason: str) -> Verdict:
        return cls(proceed=False, reason=reason)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def depth(path: str) -> int:
    return path.count("/")


def target_mismatch(expected: ZnodeRef, obs: Observed) -> str | None:
    """Why a freshly read target no longer matches the plan (None when it matches)."""
    if not obs.exists:
        return f"{expected.path} is gone"
    if obs.version != expected.version:
        return f"{expected.path} changed: version {expected.version} -> {obs.version}"
    if obs.mzxid != expected.mzxid:
        return f"{expected.path} was re-created or rewritten: mzxid {expected.mzxid} -> {obs.mzxid}"
    if expected.sha256 is not None and sha256_hex(obs.data) != expected.sha256:
        return f"{expected.path} bytes changed (sha256 differs from the scraped value)"
    if obs.ephemeral_owner:
        return f"{expected.path} is now an ephemeral znode (session {obs.ephemeral_owner:#x})"
    return None


def verify_targets(action: Action, observed: Sequence[Observed]) -> str | None:
    """Every znode the action deletes must still be exactly as scraped, and (subtrees) nothing new inside."""
    expected = {z.path: z for z in action.preconditions.znodes}
    seen = {o.path: o for o in observed}
    for path in sorted(expected, key=lambda p: (depth(p), p)):
        obs = seen.get(path) or Observed(store=action.store, path=path, exists=False)
        reason = target_mismatch(expected[path], obs)
        if reason is not None:
            return reason
    extra = sorted(p for p, o in seen.items() if o.exists and p not in expected)
    if extra:
        return f"{extra[0]} appeared inside {action.path} after the snapshot"
    return None


def verify_custom_metadata(action: Action, data: bytes) -> str | None:
    """PIP-186 style: the ledger must still carry the identity custom metadata recorded in the plan."""
    if action.ledger_id is None:  # only a ledger action carries one (its static check)
        return None
    if not action.preconditions.custom_metadata:
        return f"the plan records no custom metadata for {action.path}: a ledger is never deleted without it; re-plan"
    from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata

    try:
        md = decode_ledger_metadata(data, action.path)
    except DecodeError as e:
        return f"{action.path}: ledger metadata no longer decodes ({e.reason})"
    for key, value in action.preconditions.custom_metadata:
        now = md.custom(key)
        if now != value:
            return f"custom metadata {key} changed: {value!r} -> {now!r}"
    return None


def referenced_ledgers(role: str, data: bytes, path: str) -> frozenset[int]:
    """Ledger ids a referencing znode points at. Raises DecodeError when it cannot be decoded."""
    if role == ROLE_MANAGED_LEDGER:
        from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info

        ml = decode_managed_ledger_info(data, path)
        return frozenset(li.ledger_id for li in ml.info.ledgers)
    if role == ROLE_CURSOR:
        from pulsar_ops.formats.cursor import decode_cursor_info

        c = decode_cursor_info(data, path).info
        bad = c.bucket_property_errors
        if bad:
            raise DecodeError(path, f"cursor property {bad[0][0]} is not a ledger id ({bad[0][1]!r})")
        ids = {lid for _, lid in c.bucket_ledgers}
        if c.cursors_ledger_id != -1:
            ids.add(c.cursors_ledger_id)
        compacted = c.compacted_topic_ledger
        if compacted is not None:
            ids.add(compacted)
        return frozenset(ids)
    if role == ROLE_SCHEMA_LOCATOR:
        from pulsar_ops.formats.schema_locator import decode_schema_locator

        return frozenset(decode_schema_locator(data, path).ledger_ids)
    raise ValueError(f"unknown reference role {role!r}")


def check_references(
    ledger_id: int, store: str, refs: Iterable[ObservedRef]
) -> tuple[str | None, tuple[tuple[str, int], ...]]:
    """(skip reason or None, check ops for every existing referencing znode in ``store``)."""
    checks: dict[str, int] = {}
    for r in sorted(refs, key=lambda x: (x.node.path, x.role)):
        node = r.node
        if not node.exists:
            continue
        try:
            ids = referenced_ledgers(r.role, node.data, node.path)
        except DecodeError as e:
            return f"referencing znode {node.path} cannot be decoded ({e.reason}); not evidence of absence", ()
        if ledger_id in ids:
            return f"ledger {ledger_id} is referenced again by {node.path} ({r.role})", ()
        if node.store == store:
            checks[node.path] = node.version
    return None, tuple(sorted(checks.items()))


def delete_order(action: Action) -> tuple[tuple[str, int], ...]:
    """Children first (deepest paths first), every znode with its planned version."""
    nodes = sorted(action.preconditions.znodes, key=lambda z: (-depth(z.path), z.path))
    return tuple((z.path, z.version) for z in nodes)


def decide_mark(action: Action, targets: Sequence[Observed]) -> Verdict:
    reason = verify_targets(action, targets)
    if reason is None:  # a ledger action's identity (the others carry none)
        reason = verify_custom_metadata(action, next((o.data for o in targets if o.path == action.path), b""))
    if reason is not None:
        return Verdict.skip(reason)
    return Verdict(proceed=True, deletes=delete_order(action))


def decide_delete(action: Action, targets: Sequence[Observed], refs: Sequence[ObservedRef]) -> Verdict:
    mark = decide_mark(action, targets)
    if not mark.proceed:
        return mark
    checks: tuple[tuple[str, int], ...] = ()
    if action.ledger_id is not None:
        reason, checks = check_references(action.ledger_id, action.store, refs)
        if reason is not None:
            return Verdict.skip(reason)
    return Verdict(proceed=True, checks=checks, deletes=mark.deletes)
