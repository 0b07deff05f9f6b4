"""The hand-built descriptors carry the exact names, numbers, types and labels of the reference tables."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor

from pulsar_ops.formats import proto

F = descriptor.FieldDescriptor
REQ, OPT, REP = "req", "opt", "rep"


def _label(field: F) -> str:
    if field.is_repeated:
        return REP
    return REQ if field.is_required else OPT


# (message, field, number, type name or message/enum name, label) -- reference §4, §5.2, §8.3.
TABLE = [
    ("pulsar.ml.ManagedLedgerInfo", "ledgerInfo", 1, "LedgerInfo", REP),
    ("pulsar.ml.ManagedLedgerInfo", "terminatedPosition", 2, "NestedPositionInfo", OPT),
    ("pulsar.ml.ManagedLedgerInfo", "properties", 3, "KeyValue", REP),
    ("pulsar.ml.ManagedLedgerInfo.LedgerInfo", "ledgerId", 1, "int64", REQ),
    ("pulsar.ml.ManagedLedgerInfo.LedgerInfo", "entries", 2, "int64", OPT),
    ("pulsar.ml.ManagedLedgerInfo.LedgerInfo", "size", 3, "int64", OPT),
    ("pulsar.ml.ManagedLedgerInfo.LedgerInfo", "timestamp", 4, "int64", OPT),
    ("pulsar.ml.ManagedLedgerInfo.LedgerInfo", "offloadContext", 5, "OffloadContext", OPT),
    ("pulsar.ml.ManagedLedgerInfo.LedgerInfo", "properties", 6, "KeyValue", REP),
    ("pulsar.ml.ManagedCursorInfo", "cursorsLedgerId", 1, "int64", REQ),
    ("pulsar.ml.ManagedCursorInfo", "markDeleteLedgerId", 2, "int64", OPT),
    ("pulsar.ml.ManagedCursorInfo", "markDeleteEntryId", 3, "int64", OPT),
    ("pulsar.ml.ManagedCursorInfo", "individualDeletedMessages", 4, "MessageRange", REP),
    ("pulsar.ml.ManagedCursorInfo", "properties", 5, "LongProperty", REP),
    ("pulsar.ml.ManagedCursorInfo", "lastActive", 6, "int64", OPT),
    ("pulsar.ml.ManagedCursorInfo", "batchedEntryDeletionIndexInfo", 7, "BatchedEntryDeletionIndexInfo", REP),
    ("pulsar.ml.ManagedCursorInfo", "cursorProperties", 8, "StringProperty", REP),
    ("pulsar.ml.PositionInfo", "ledgerId", 1, "int64", REQ),
    ("pulsar.ml.PositionInfo", "entryId", 2, "int64", REQ),
    ("pulsar.ml.PositionInfo", "individualDeletedMessages", 3, "MessageRange", REP),
    ("pulsar.ml.PositionInfo", "properties", 4, "LongProperty", REP),
    ("pulsar.ml.PositionInfo", "batchedEntryDeletionIndexInfo", 5, "BatchedEntryDeletionIndexInfo", REP),
    ("pulsar.ml.PositionInfo", "individualDeletedMessageRanges", 6, "LongListMap", REP),
    ("pulsar.ml.KeyValue", "key", 1, "string", REQ),
    ("pulsar.ml.KeyValue", "value", 2, "string", REQ),
    ("pulsar.ml.NestedPositionInfo", "ledgerId", 1, "int64", REQ),
    ("pulsar.ml.NestedPositionInfo", "entryId", 2, "int64", REQ),
    ("pulsar.ml.MessageRange", "lowerEndpoint", 1, "NestedPositionInfo", REQ),
    ("pulsar.ml.MessageRange", "upperEndpoint", 2, "NestedPositionInfo", REQ),
    ("pulsar.ml.LongListMap", "key", 1, "int64", REQ),
    ("pulsar.ml.LongListMap", "values", 2, "int64", REP),
    ("pulsar.ml.BatchedEntryDeletionIndexInfo", "position", 1, "NestedPositionInfo", REQ),
    ("pulsar.ml.BatchedEntryDeletionIndexInfo", "deleteSet", 2, "int64", REP),
    ("pulsar.ml.LongProperty", "name", 1, "string", REQ),
    ("pulsar.ml.LongProperty", "value", 2, "int64", REQ),
    ("pulsar.ml.StringProperty", "name", 1, "string", REQ),
    ("pulsar.ml.StringProperty", "value", 2, "string", REQ),
    ("pulsar.ml.OffloadContext", "uidMsb", 1, "int64", OPT),
    ("pulsar.ml.OffloadContext", "uidLsb", 2, "int64", OPT),
    ("pulsar.ml.OffloadContext", "complete", 3, "bool", OPT),
    ("pulsar.ml.OffloadContext", "bookkeeperDeleted", 4, "bool", OPT),
    ("pulsar.ml.OffloadContext", "timestamp", 5, "int64", OPT),
    ("pulsar.ml.OffloadContext", "driverMetadata", 6, "OffloadDriverMetadata", OPT),
    ("pulsar.ml.OffloadContext", "offloadSegment", 7, "OffloadSegment", REP),
    ("pulsar.ml.OffloadSegment", "assignedTimestamp", 4, "int64", OPT),
    ("pulsar.ml.OffloadSegment", "offloadedTimestamp", 5, "int64", OPT),
    ("pulsar.ml.OffloadSegment", "endEntryId", 6, "int64", OPT),
    ("pulsar.ml.OffloadSegment", "driverMetadata", 7, "OffloadDriverMetadata", OPT),
    ("pulsar.ml.OffloadDriverMetadata", "name", 1, "string", REQ),
    ("pulsar.ml.OffloadDriverMetadata", "properties", 2, "KeyValue", REP),
    ("pulsar.ml.ManagedLedgerInfoMetadata", "compressionType", 1, "CompressionType", REQ),
    ("pulsar.ml.ManagedLedgerInfoMetadata", "uncompressedSize", 2, "int32", REQ),
    ("pulsar.ml.ManagedCursorInfoMetadata", "compressionType", 1, "CompressionType", REQ),
    ("pulsar.ml.ManagedCursorInfoMetadata", "uncompressedSize", 2, "int32", REQ),
    ("bookkeeper.proto.LedgerMetadataFormat", "quorumSize", 1, "int32", REQ),
    ("bookkeeper.proto.LedgerMetadataFormat", "ensembleSize", 2, "int32", REQ),
    ("bookkeeper.proto.LedgerMetadataFormat", "length", 3, "int64", REQ),
    ("bookkeeper.proto.LedgerMetadataFormat", "lastEntryId", 4, "int64", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat", "state", 5, "State", REQ),
    ("bookkeeper.proto.LedgerMetadataFormat", "segment", 6, "Segment", REP),
    ("bookkeeper.proto.LedgerMetadataFormat", "digestType", 7, "DigestType", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat", "password", 8, "bytes", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat", "ackQuorumSize", 9, "int32", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat", "ctime", 10, "int64", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat", "customMetadata", 11, "cMetadataMapEntry", REP),
    ("bookkeeper.proto.LedgerMetadataFormat", "cToken", 12, "int64", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat.Segment", "ensembleMember", 1, "string", REP),
    ("bookkeeper.proto.LedgerMetadataFormat.Segment", "firstEntryId", 2, "int64", REQ),
    ("bookkeeper.proto.LedgerMetadataFormat.cMetadataMapEntry", "key", 1, "string", OPT),
    ("bookkeeper.proto.LedgerMetadataFormat.cMetadataMapEntry", "value", 2, "bytes", OPT),
    ("pulsar.schema.PositionInfo", "ledgerId", 1, "int64", REQ),
    ("pulsar.schema.PositionInfo", "entryId", 2, "int64", REQ),
    ("pulsar.schema.IndexEntry", "version", 1, "int64", REQ),
    ("pulsar.schema.IndexEntry", "position", 2, "PositionInfo", REQ),
    ("pulsar.schema.IndexEntry", "hash", 3, "bytes", REQ),
    ("pulsar.schema.SchemaEntry", "schema_data", 2, "bytes", REQ),
    ("pulsar.schema.SchemaEntry", "index", 5, "IndexEntry", REP),
    ("pulsar.schema.SchemaLocator", "info", 1, "IndexEntry", REQ),
    ("pulsar.schema.SchemaLocator", "index", 2, "IndexEntry", REP),
]

_SCALARS = {
    F.TYPE_INT64: "int64",
    F.TYPE_INT32: "int32",
    F.TYPE_BOOL: "bool",
    F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes",
}


@pytest.mark.parametrize(("message", "name", "number", "ftype", "label"), TABLE)
def test_field(message: str, name: str, number: int, ftype: str, label: str) -> None:
    field = proto.POOL.FindMessageTypeByName(message).fields_by_name[name]
    assert field.number == number
    if field.type == F.TYPE_MESSAGE:
        assert field.message_type is not None and field.message_type.name == ftype
    elif field.type == F.TYPE_ENUM:
        assert field.enum_type is not None and field.enum_type.name == ftype
    else:
        assert _SCALARS[field.type] == ftype
    assert _label(field) == label


def test_enums() -> None:
    assert proto.COMPRESSION_TYPES == {0: "NONE", 1: "LZ4", 2: "ZLIB", 3: "ZSTD", 4: "SNAPPY"}
    assert proto.LEDGER_STATES == {1: "OPEN", 2: "IN_RECOVERY", 3: "CLOSED"}
    assert proto.DIGEST_TYPES == {1: "CRC32", 2: "HMAC", 3: "CRC32C", 4: "DUMMY"}
    state = proto.POOL.FindMessageTypeByName("bookkeeper.proto.LedgerMetadataFormat").fields_by_name["state"]
    assert state.default_value == 1  # OPEN


def test_state_enum_values_in_descriptor_match_tables() -> None:
    md = proto.POOL.FindMessageTypeByName("bookkeeper.proto.LedgerMetadataFormat")
    assert {v.name: v.number for v in md.enum_types_by_name["State"].values} == {
        "OPEN": 1,
        "IN_RECOVERY": 2,
        "CLOSED": 3,
    }
    assert {v.name: v.number for v in md.enum_types_by_name["DigestType"].values} == {
        "CRC32": 1,
        "HMAC": 2,
        "CRC32C": 3,
        "DUMMY": 4,
    }
