"""ManagedLedgerInfo (value of a topic znode ``/managed-ledgers/.../persistent/<enc>``).

Decode order (reference §14): empty value -> empty info; ``0x4778`` header -> codec; binary protobuf; protobuf
text format (legacy, pre-2017 clusters; only for values without a compression header).

``LedgerInfo.timestamp_ms`` is kept as stored: ``None`` when absent, ``0`` for the open ledger (never use it
as an age). ``entries`` / ``size`` are ``None`` when absent (the open ledger).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf import text_format

from pulsar_ops import native
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import proto
from pulsar_ops.formats._pb import try_binary, try_text
from pulsar_ops.formats.compression import unwrap, wrap

MlFormat = Literal["binary", "text", "empty"]


@dataclass(frozen=True, slots=True)
class OffloadInfo:
    complete: bool
    bookkeeper_deleted: bool
    timestamp_ms: int | None


@dataclass(frozen=True, slots=True)
class LedgerInfo:
    ledger_id: int
    entries: int | None
    size: int | None
    timestamp_ms: int | None
    offload: OffloadInfo | None = None
    properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ManagedLedgerInfo:
    ledgers: tuple[LedgerInfo, ...]
    terminated_position: tuple[int, int] | None = None
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def ledger_ids(self) -> tuple[int, ...]:
        return tuple(li.ledger_id for li in self.ledgers)

    def property(self, key: str) -> str | None:
        for k, v in self.properties:
            if k == key:
                return v
        return None


@dataclass(frozen=True, slots=True)
class DecodedManagedLedger:
    info: ManagedLedgerInfo
    format: MlFormat
    compression: str


EMPTY_INFO = ManagedLedgerInfo(())


def ledger_info(li: Any) -> LedgerInfo:
    """A ``LedgerInfo`` protobuf message as a value."""
    offload = None
    if li.HasField("offloadContext"):
        oc = li.offloadContext
        offload = OffloadInfo(oc.complete, oc.bookkeeperDeleted, oc.timestamp if oc.HasField("timestamp") else None)
    props = tuple([(kv.key, kv.value) for kv in li.properties[:]]) if len(li.properties) else ()
    return LedgerInfo(
        li.ledgerId,
        li.entries if li.HasField("entries") else None,
        li.size if li.HasField("size") else None,
        li.timestamp if li.HasField("timestamp") else None,
        offload,
        props,
    )


def _from_message(msg: Any) -> ManagedLedgerInfo:
    term = None
    if msg.HasField("terminatedPosition"):
        term = (msg.terminatedPosition.ledgerId, msg.terminatedPosition.entryId)
    props = tuple([(kv.key, kv.value) for kv in msg.properties[:]]) if len(msg.properties) else ()
    return ManagedLedgerInfo(tuple([ledger_info(li) for li in msg.ledgerInfo[:]]), term, props)


def _has_known_field(msg: Any) -> bool:
    """``bool(msg.ListFields())`` for a ManagedLedgerInfo, without building the list (the scrape's hot path)."""
    return bool(len(msg.ledgerInfo) or msg.HasField("terminatedPosition") or len(msg.properties))


assert [f.name for f in proto.ManagedLedgerInfo.DESCRIPTOR.fields] == ["ledgerInfo", "terminatedPosition", "properties"]


def _decode_message(data: bytes, path: str) -> tuple[Any | None, MlFormat, str]:
    """(protobuf message or None for an empty value, format, codec): the one decode-order implementation."""
    if not data:
        return None, "empty", "NONE"
    plain, codec = unwrap(bytes(data), path)
    return _decode_plain(plain, codec, path)


def _decode_plain(plain: bytes, codec: str, path: str) -> tuple[Any, MlFormat, str]:
    msg, reason = try_binary(proto.ManagedLedgerInfo, plain)
    if msg is not None and plain and not _has_known_field(msg):
        # Non-empty bytes that parse to no known field at all are not a ManagedLedgerInfo (garbage or a
        # value of another kind parsing as unknown fields): never report them as an empty ledger list.
        msg, reason = None, "bytes parse to unknown fields only"
    if msg is not None:
        return msg, "binary", codec
    if codec == "NONE":
        tmsg, treason = try_text(proto.ManagedLedgerInfo, plain)
        if tmsg is not None and not tmsg.ListFields():
            tmsg, treason = None, "text holds no field (blank or comments only)"
        if tmsg is not None:
            return tmsg, "text", codec
        raise DecodeError(path, f"ManagedLedgerInfo: binary: {reason}; text: {treason}")
    raise DecodeError(path, f"ManagedLedgerInfo ({codec}-compressed): {reason}")


def decode_managed_ledger_info(data: bytes, path: str) -> DecodedManagedLedger:
    """Decode a topic znode value. Any failure is a DecodeError (or subclass) naming ``path``."""
    msg, fmt, codec = _decode_message(data, path)
    if msg is None:
        return DecodedManagedLedger(EMPTY_INFO, fmt, codec)
    return DecodedManagedLedger(_from_message(msg), fmt, codec)


# (ledger_id, entries, size, timestamp_ms, offloaded, bookkeeper_deleted, offload_timestamp_ms) per ledger
LedgerRow = tuple[int, int | None, int | None, int | None, bool, bool, int | None]


@dataclass(frozen=True, slots=True)
class ManagedLedgerFields:
    """What the scraper stores of a ManagedLedgerInfo (``managed_ledger_fields``)."""

    format: MlFormat
    compression: str
    ledgers: list[LedgerRow]
    terminated: bool
    properties: tuple[tuple[str, str], ...]


_native_ml = native.ml_info


def managed_ledger_fields(data: bytes, path: str) -> ManagedLedgerFields:
    """The scraper's view of a topic znode value without building ``LedgerInfo`` objects.

    Same values and the same errors as ``decode_managed_ledger_info`` (property-tested): ``offloaded`` is
    ``offload.complete``, ``bookkeeper_deleted`` ``offload.bookkeeper_deleted`` (False without an offload
    context), ``offload_timestamp_ms`` None without one.
    """
    if not data:
        return ManagedLedgerFields("empty", "NONE", [], False, ())
    plain, codec = unwrap(bytes(data), path)
    if _native_ml is not None:
        fast = _native_ml(plain)
        if fast is not None:
            return ManagedLedgerFields("binary", codec, fast[0], fast[1], fast[2])
    msg, fmt, codec = _decode_plain(plain, codec, path)
    rows: list[LedgerRow] = []
    for li in msg.ledgerInfo:
        has = li.HasField
        if has("offloadContext"):
            oc = li.offloadContext
            off: tuple[bool, bool, int | None] = (
                oc.complete,
                oc.bookkeeperDeleted,
                oc.timestamp if oc.HasField("timestamp") else None,
            )
        else:
            off = (False, False, None)
        rows.append(
            (
                li.ledgerId,
                li.entries if has("entries") else None,
                li.size if has("size") else None,
                li.timestamp if has("timestamp") else None,
                *off,
            )
        )
    props = tuple([(kv.key, kv.value) for kv in msg.properties]) if len(msg.properties) else ()
    return ManagedLedgerFields(fmt, codec, rows, msg.HasField("terminatedPosition"), props)


def to_message(info: ManagedLedgerInfo) -> Any:
    msg = proto.ManagedLedgerInfo()
    for li in info.ledgers:
        m = msg.ledgerInfo.add(ledgerId=li.ledger_id)
        if li.entries is not None:
            m.entries = li.entries
        if li.size is not None:
            m.size = li.size
        if li.timestamp_ms is not None:
            m.timestamp = li.timestamp_ms
        if li.offload is not None:
            oc = m.offloadContext
            oc.complete = li.offload.complete
            oc.bookkeeperDeleted = li.offload.bookkeeper_deleted
            if li.offload.timestamp_ms is not None:
                oc.timestamp = li.offload.timestamp_ms
        for k, v in li.properties:
            m.properties.add(key=k, value=v)
    if info.terminated_position is not None:
        msg.terminatedPosition.ledgerId = info.terminated_position[0]
        msg.terminatedPosition.entryId = info.terminated_position[1]
    for k, v in info.properties:
        msg.properties.add(key=k, value=v)
    return msg


def encode_managed_ledger_info(info: ManagedLedgerInfo, *, compression: str = "NONE", text: bool = False) -> bytes:
    """Encode as the broker would (binary, optionally behind the compression header), or as legacy text.

    ``text=True`` writes protobuf text format (what pre-2017 brokers wrote); it cannot be combined with a
    compression codec (ValueError).
    """
    msg = to_message(info)
    if text:
        if compression.upper() != "NONE":
            raise ValueError("legacy text format is never compressed")
        return text_format.MessageToString(msg).encode("utf-8")
    return wrap(msg.SerializeToString(), compression)
