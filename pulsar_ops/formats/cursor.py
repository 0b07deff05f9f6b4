"""ManagedCursorInfo (cursor znode value) and PositionInfo (cursor-ledger entry payload).

A ManagedCursorInfo with ``cursors_ledger_id == -1`` is authoritative (clean close); otherwise the mark-delete
snapshot in the znode may be stale and the real state is the cursor ledger's last PositionInfo entry.
Ranges are open-closed: ``lower`` exclusive, ``upper`` inclusive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulsar_ops import native
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import proto
from pulsar_ops.formats._pb import parse_binary, try_binary
from pulsar_ops.formats.compression import unwrap, wrap

Position = tuple[int, int]

COMPACTED_TOPIC_LEDGER = "CompactedTopicLedger"
BUCKET_PROPERTY_PREFIX = "#pulsar.internal.delayed.bucket_"


def bucket_ledger_id(value: str) -> int | None:
    """The snapshot ledger id a delayed-delivery bucket property holds: ``int(value.strip())`` within int64, else
    None. The broker reads it with ``Long.parseLong`` (pulsar-broker ``BucketDelayedDeliveryTracker``, deleting a
    cursor's bucket snapshots), which refuses a value past int64; so does this (a ledger id the tables cannot store
    either)."""
    try:
        lid = int(value.strip())
    except ValueError:
        return None
    return lid if -(2**63) <= lid < 2**63 else None


@dataclass(frozen=True, slots=True)
class MessageRange:
    """An acknowledged range ``(lower .. upper]``: lower exclusive, upper inclusive."""

    lower: Position
    upper: Position


BatchedDeletion = tuple[Position, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class ManagedCursorInfo:
    cursors_ledger_id: int
    mark_delete: Position | None
    individual_deleted: tuple[MessageRange, ...] = ()
    properties: tuple[tuple[str, int], ...] = ()
    last_active_ms: int | None = None
    batched_deletion: tuple[BatchedDeletion, ...] = ()
    cursor_properties: tuple[tuple[str, str], ...] = ()

    @property
    def compacted_topic_ledger(self) -> int | None:
        """The ``CompactedTopicLedger`` mark-delete property (set on the ``__compaction`` cursor)."""
        for name, value in self.properties:
            if name == COMPACTED_TOPIC_LEDGER:
                return value
        return None

    @property
    def bucket_ledgers(self) -> tuple[tuple[str, int], ...]:
        """Delayed-delivery bucket snapshot ledgers: ``(property key, ledger id)`` for every
        ``#pulsar.internal.delayed.bucket_<start>_<end>`` cursor property whose value is an integer.
        Keys with a non-integer value are listed by ``bucket_property_errors`` (never silently dropped)."""
        out = []
        for name, value in self.cursor_properties:
            if name.startswith(BUCKET_PROPERTY_PREFIX):
                lid = bucket_ledger_id(value)
                if lid is not None:
                    out.append((name, lid))
        return tuple(out)

    @property
    def bucket_property_errors(self) -> tuple[tuple[str, str], ...]:
        """Bucket cursor properties whose value is not a ledger id."""
        bad = []
        for name, value in self.cursor_properties:
            if name.startswith(BUCKET_PROPERTY_PREFIX) and bucket_ledger_id(value) is None:
                bad.append((name, value))
        return tuple(bad)


@dataclass(frozen=True, slots=True)
class DecodedCursor:
    info: ManagedCursorInfo
    compression: str


@dataclass(frozen=True, slots=True)
class PositionInfo:
    """One cursor-ledger entry. ``deleted_ranges_bitsets``: per ledger id, ``java.util.BitSet`` words
    (bit n set = entry n acknowledged), the ``individualDeletedMessageRanges`` LongListMap form."""

    ledger_id: int
    entry_id: int
    individual_deleted: tuple[MessageRange, ...] = ()
    properties: tuple[tuple[str, int], ...] = ()
    batched_deletion: tuple[BatchedDeletion, ...] = ()
    deleted_ranges_bitsets: tuple[tuple[int, tuple[int, ...]], ...] = ()


def _ranges(rep: Any) -> tuple[MessageRange, ...]:
    if not len(rep):
        return ()
    return tuple(
        [
            MessageRange(
                (r.lowerEndpoint.ledgerId, r.lowerEndpoint.entryId),
                (r.upperEndpoint.ledgerId, r.upperEndpoint.entryId),
            )
            for r in rep[:]
        ]
    )


def _batched(rep: Any) -> tuple[BatchedDeletion, ...]:
    if not len(rep):
        return ()
    return tuple([((b.position.ledgerId, b.position.entryId), tuple(b.deleteSet[:])) for b in rep[:]])


def _long_props(rep: Any) -> tuple[tuple[str, int], ...]:
    return tuple([(p.name, p.value) for p in rep[:]]) if len(rep) else ()


def _from_message(msg: Any) -> ManagedCursorInfo:
    md = None
    if msg.HasField("markDeleteLedgerId") and msg.HasField("markDeleteEntryId"):
        md = (msg.markDeleteLedgerId, msg.markDeleteEntryId)
    cprops = tuple([(p.name, p.value) for p in msg.cursorProperties[:]]) if len(msg.cursorProperties) else ()
    return ManagedCursorInfo(
        msg.cursorsLedgerId,
        md,
        _ranges(msg.individualDeletedMessages),
        _long_props(msg.properties),
        msg.lastActive if msg.HasField("lastActive") else None,
        _batched(msg.batchedEntryDeletionIndexInfo),
        cprops,
    )


def _decode_message(data: bytes, path: str) -> tuple[Any, str]:
    if not data:
        raise DecodeError(path, "ManagedCursorInfo: empty value (required cursorsLedgerId missing)")
    plain, codec = unwrap(bytes(data), path)
    return _decode_plain(plain, codec, path)


def _decode_plain(plain: bytes, codec: str, path: str) -> tuple[Any, str]:
    msg, reason = try_binary(proto.ManagedCursorInfo, plain)
    if msg is None:
        raise DecodeError(path, f"ManagedCursorInfo{f' ({codec}-compressed)' if codec != 'NONE' else ''}: {reason}")
    return msg, codec


def decode_cursor_info(data: bytes, path: str) -> DecodedCursor:
    """Decode a cursor znode value (optionally behind the compression header)."""
    msg, codec = _decode_message(data, path)
    return DecodedCursor(_from_message(msg), codec)


@dataclass(frozen=True, slots=True)
class CursorFields:
    """What the scraper stores of a ManagedCursorInfo (``cursor_fields``); ranges as
    ``(lower ledger, lower entry, upper ledger, upper entry)``."""

    compression: str
    cursors_ledger_id: int
    mark_delete: Position | None
    last_active_ms: int | None
    ranges: list[tuple[int, int, int, int]]
    batch_index_count: int
    properties: tuple[tuple[str, int], ...]
    cursor_properties: tuple[tuple[str, str], ...]


_native_cursor = native.cursor_info


def cursor_fields(data: bytes, path: str) -> CursorFields:
    """The scraper's view of a cursor znode value without building ``MessageRange`` objects.

    Same values and the same errors as ``decode_cursor_info`` (property-tested).
    """
    if not data:
        raise DecodeError(path, "ManagedCursorInfo: empty value (required cursorsLedgerId missing)")
    plain, codec = unwrap(bytes(data), path)
    if _native_cursor is not None:
        fast = _native_cursor(plain)
        if fast is not None:
            return CursorFields(codec, *fast)
    msg, codec = _decode_plain(plain, codec, path)
    has = msg.HasField
    md = None
    if has("markDeleteLedgerId") and has("markDeleteEntryId"):
        md = (msg.markDeleteLedgerId, msg.markDeleteEntryId)
    rep = msg.individualDeletedMessages
    ranges = []
    if len(rep):
        for r in rep:
            lo, up = r.lowerEndpoint, r.upperEndpoint
            ranges.append((lo.ledgerId, lo.entryId, up.ledgerId, up.entryId))
    cprops = tuple([(p.name, p.value) for p in msg.cursorProperties]) if len(msg.cursorProperties) else ()
    return CursorFields(
        codec,
        msg.cursorsLedgerId,
        md,
        msg.lastActive if has("lastActive") else None,
        ranges,
        len(msg.batchedEntryDeletionIndexInfo),
        _long_props(msg.properties),
        cprops,
    )


def _set_range(m: Any, r: MessageRange) -> None:
    m.lowerEndpoint.ledgerId, m.lowerEndpoint.entryId = r.lower
    m.upperEndpoint.ledgerId, m.upperEndpoint.entryId = r.upper


def _set_batched(rep: Any, items: tuple[BatchedDeletion, ...]) -> None:
    for pos, words in items:
        b = rep.add()
        b.position.ledgerId, b.position.entryId = pos
        b.deleteSet.extend(words)


def cursor_to_message(info: ManagedCursorInfo) -> Any:
    msg = proto.ManagedCursorInfo(cursorsLedgerId=info.cursors_ledger_id)
    if info.mark_delete is not None:
        msg.markDeleteLedgerId, msg.markDeleteEntryId = info.mark_delete
    for r in info.individual_deleted:
        _set_range(msg.individualDeletedMessages.add(), r)
    for name, value in info.properties:
        msg.properties.add(name=name, value=value)
    if info.last_active_ms is not None:
        msg.lastActive = info.last_active_ms
    _set_batched(msg.batchedEntryDeletionIndexInfo, info.batched_deletion)
    for name, svalue in info.cursor_properties:
        msg.cursorProperties.add(name=name, value=svalue)
    return msg


def encode_cursor_info(info: ManagedCursorInfo, *, compression: str = "NONE") -> bytes:
    return wrap(cursor_to_message(info).SerializeToString(), compression)


def decode_position_info(data: bytes, path: str) -> PositionInfo:
    """Decode a cursor-ledger entry (uncompressed binary PositionInfo)."""
    msg = parse_binary(proto.PositionInfo, bytes(data), path, "PositionInfo")
    bitsets = (
        tuple([(m.key, tuple(m.values[:])) for m in msg.individualDeletedMessageRanges[:]])
        if len(msg.individualDeletedMessageRanges)
        else ()
    )
    return PositionInfo(
        msg.ledgerId,
        msg.entryId,
        _ranges(msg.individualDeletedMessages),
        _long_props(msg.properties),
        _batched(msg.batchedEntryDeletionIndexInfo),
        bitsets,
    )


def encode_position_info(info: PositionInfo) -> bytes:
    msg = proto.PositionInfo(ledgerId=info.ledger_id, entryId=info.entry_id)
    for r in info.individual_deleted:
        _set_range(msg.individualDeletedMessages.add(), r)
    for name, value in info.properties:
        msg.properties.add(name=name, value=value)
    _set_batched(msg.batchedEntryDeletionIndexInfo, info.batched_deletion)
    for key, words in info.deleted_ranges_bitsets:
        msg.individualDeletedMessageRanges.add(key=key, values=words)
    return bytes(msg.SerializeToString())
