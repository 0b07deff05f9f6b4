"""The detection rules of docs/detections.md, evaluated over the typed model (pure; for the ground truth).

The seeder computes its ground truth with these functions while it generates each topic, so the expected
findings follow the same written rules the audit's SQL implements, not the generator's intentions. Tests
re-derive the set-based detections (orphans, dangling references) from the decoded znodes independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pulsar_ops import pulsar_names
from pulsar_ops.formats.cursor import ManagedCursorInfo
from pulsar_ops.formats.managed_ledger import LedgerInfo
from pulsar_ops.formats.names import MlName
from pulsar_ops.pulsar_names import is_system_cursor, system_topic_reason
from pulsar_ops.testing.model_spec import (
    BROKER_DEFAULTS,
    INACTIVE_AFTER_MS,
    MIB,
    MIN_AGE_MS,
    MINUTE_MS,
    NEAR_CAP_FRACTION,
)

PLANNABLE_ORPHAN_KINDS = frozenset({"data", "cursor", "schema", "compacted", "bucket"})
SYSTEM_NAMESPACE = pulsar_names.SYSTEM_NAMESPACE


@dataclass(frozen=True, slots=True)
class BkFacts:
    """What the audit sees of a ledger's BookKeeper metadata. ``ctime_ms`` None = no metadata ctime."""

    ledger_id: int
    last_entry_id: int
    length: int
    ctime_ms: int | None


@dataclass(frozen=True)
class TopicFacts:
    ml: MlName
    ledgers: tuple[LedgerInfo, ...]
    cursors: tuple[tuple[str, ManagedCursorInfo], ...]  # (decoded name, info)
    bk: Mapping[int, BkFacts]  # BookKeeper metadata readable for the topic's ledgers
    owned: bool
    retention_time_minutes: int
    retention_size_mb: int


def is_system_topic(ml: MlName) -> bool:
    """Pulsar's own topic: the registry (:func:`pulsar_ops.pulsar_names.system_topic_reason`), one definition."""
    return system_topic_reason(ml.namespace, ml.local_name) is not None


def effective_retention(ns_time: int | None, ns_size: int | None) -> tuple[int, int, str]:
    """(minutes, MB, source) from namespace values (None = broker default on that dimension)."""
    rt = int(BROKER_DEFAULTS["defaultRetentionTimeInMinutes"]) if ns_time is None else ns_time
    rs = int(BROKER_DEFAULTS["defaultRetentionSizeInMB"]) if ns_size is None else ns_size
    source = "broker" if ns_time is None and ns_size is None else "namespace"
    return rt, rs, source


def _slowest(cursors: Sequence[tuple[str, ManagedCursorInfo]]) -> tuple[int, int] | None:
    positions = [c.mark_delete for _, c in cursors if c.mark_delete is not None]
    return min(positions) if positions else None


@dataclass(frozen=True, slots=True)
class Trim:
    """Ledgers past retention, and the one a load frees only one retention period after the load."""

    ledger_ids: tuple[int, ...]
    after_retention: tuple[int, ...]


def expired_retention(t: TopicFacts, now_ms: int, znode_time_ms: int) -> Trim:
    """Ledgers of an unloaded topic past retention (empty when loaded or nothing expires).

    The last ledger is aged by its BookKeeper ctime (metadata ctime, else the znode ctime) to say it is past
    retention; a load re-stamps it with the load time (``ManagedLedgerImpl.initialize``), so the first trim
    after the load frees it only when the retention time is 0 or the size rule takes it.
    """
    if t.owned or not t.ledgers or is_system_topic(t.ml):  # Pulsar's own topics are never unloaded topics
        return Trim((), ())
    last_idx = len(t.ledgers) - 1
    slowest = _slowest(t.cursors)
    candidates: list[tuple[int, int, int, bool]] = []  # (ledger id, timestamp, size, is last)
    ts: int | None
    for idx, li in enumerate(t.ledgers):
        is_last = idx == last_idx
        bk = t.bk.get(li.ledger_id)
        if is_last:
            if bk is None or bk.last_entry_id < 0:
                continue
            ts_bk = bk.ctime_ms if bk.ctime_ms is not None else znode_time_ms
            entries, ts, size = bk.last_entry_id + 1, ts_bk, bk.length
        else:
            entries, ts, size = li.entries or 0, li.timestamp_ms, li.size or 0
        if slowest is not None:
            md_ledger, md_entry = slowest
            if li.ledger_id > md_ledger:
                break
            if li.ledger_id == md_ledger and md_entry != entries - 1:
                break
        if li.offload is not None and li.offload.bookkeeper_deleted:
            continue
        if ts is None:
            raise ValueError(f"model bug: retention candidate {li.ledger_id} without a timestamp")
        candidates.append((li.ledger_id, ts, size, is_last))
    last_bk = t.bk.get(t.ledgers[-1].ledger_id)  # after a load the last ledger counts with its BookKeeper length
    total = sum(li.size or 0 for li in t.ledgers[:-1]) + (last_bk.length if last_bk is not None else 0)
    rt_ms = t.retention_time_minutes * MINUTE_MS
    rs_bytes = t.retention_size_mb * MIB
    trimmed: list[int] = []
    later: list[int] = []
    so_far = 0
    for ledger_id, ts, size, is_last in candidates:
        by_time = t.retention_time_minutes >= 0 and now_ms - ts > rt_ms
        # ManagedLedgerImpl.internalTrimLedgers: this ledger's size is added first, then isLedgerRetentionOverSizeQuota
        # asks whether what stays after deleting it still meets the quota (totalSize - sizeToDelete >= quota)
        by_size = t.retention_size_mb >= 0 and total - (so_far + size) >= rs_bytes
        if not (by_time or by_size):
            break
        trimmed.append(ledger_id)
        if is_last and not by_size and t.retention_time_minutes != 0:
            later.append(ledger_id)
        so_far += size
    return Trim(tuple(trimmed), tuple(later))


def _user_cursors(t: TopicFacts) -> list[tuple[str, ManagedCursorInfo]]:
    if is_system_topic(t.ml):
        return []
    return [(n, c) for n, c in t.cursors if not is_system_cursor(n)]


def ack_holes(t: TopicFacts) -> list[dict[str, object]]:
    """Only cursors whose ranges are in the znode (``cursors_ledger_id == -1``); see ``ranges_in_ledgers``."""
    cap = int(BROKER_DEFAULTS["managedLedgerMaxUnackedRangesToPersistInMetadataStore"])
    out: list[dict[str, object]] = []
    for name, c in _user_cursors(t):
        if c.cursors_ledger_id == -1:
            n = len(c.individual_deleted)
            if n > 0:
                near = n >= NEAR_CAP_FRACTION * cap
                out.append({"topic": t.ml.topic, "subscription": name, "range_count": n, "near_cap": near})
    return out


def ranges_in_ledgers(t: TopicFacts) -> int:
    """User cursors whose acknowledged ranges live in their cursor ledger (the audit's coverage line)."""
    return sum(1 for _, c in _user_cursors(t) if c.cursors_ledger_id != -1)


def inactive_subscriptions(t: TopicFacts, now_ms: int, znode_time_ms: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for name, c in _user_cursors(t):
        active = c.last_active_ms if c.last_active_ms is not None else znode_time_ms
        if active < now_ms - INACTIVE_AFTER_MS:
            out.append({"topic": t.ml.topic, "subscription": name})
    return out


def ttl_expires_delayed(
    message_ttl_seconds: int | None, delayed_active: bool | None, max_delay_ms: int | None = None
) -> bool:
    """``max_delay_ms``: the namespace's maxDeliveryDelayInMillis as read (None = no delayed-delivery object)."""
    ttl = message_ttl_seconds if message_ttl_seconds and message_ttl_seconds > 0 else 0
    if ttl <= 0:
        ttl = int(BROKER_DEFAULTS["ttlDurationDefaultInSeconds"])
    active = bool(BROKER_DEFAULTS["delayedDeliveryEnabled"]) if delayed_active is None else delayed_active
    cap = int(BROKER_DEFAULTS["delayedDeliveryMaxDelayInMillis"]) if max_delay_ms is None else max_delay_ms
    return ttl > 0 and active and (cap <= 0 or cap > ttl * 1000)


def orphan_plannable(
    *,
    kind: str,
    ctime_ms: int,
    ledger_id: int,
    watermark: int,
    now_ms: int,
    scopes_complete: bool,
) -> tuple[bool, str]:
    """(plannable, first failing reason) per the orphan-ledger rule order. ``ctime_ms``: the instant its age counts
    from, its znode's ctime or its metadata's when that is later."""
    if kind not in PLANNABLE_ORPHAN_KINDS:
        return False, "kind"
    if now_ms - ctime_ms < MIN_AGE_MS:
        return False, "age"
    if ledger_id >= watermark:
        return False, "watermark"
    if not scopes_complete:
        return False, "scopes"
    return True, ""
