"""Protobuf message classes for the Pulsar / BookKeeper metadata formats, built without protoc.

The ``FileDescriptorProto``s below restate (as facts: names, numbers, types, labels) the upstream files
``MLDataFormats.proto`` (apache/pulsar managed-ledger), ``DataFormats.proto`` (apache/bookkeeper, only
``LedgerMetadataFormat`` and ``BookieServiceInfoFormat``) and ``SchemaStorageFormat.proto`` (apache/pulsar
broker). Message and field names are the upstream ones so protobuf text format round-trips with upstream text
(v2 ledger metadata, legacy text ManagedLedgerInfo). They live in a private descriptor pool so they never clash
with other code.

Classes are module-level constants: look them up once, never per decode.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REQ, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REQUIRED, _F.LABEL_REPEATED
_TYPES = {
    "int64": _F.TYPE_INT64,
    "int32": _F.TYPE_INT32,
    "bool": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}

# (name, number, label, type-or-".pkg.Message"/".pkg.Enum", default or None)
FieldSpec = tuple[str, int, Any, str, str | None]


def _field(package: str, spec: FieldSpec, enums: frozenset[str]) -> descriptor_pb2.FieldDescriptorProto:
    name, number, label, ftype, default = spec
    f = descriptor_pb2.FieldDescriptorProto(name=name, number=number, label=label)
    if ftype in _TYPES:
        f.type = _TYPES[ftype]
    else:
        f.type_name = f".{package}.{ftype}"
        f.type = _F.TYPE_ENUM if ftype in enums else _F.TYPE_MESSAGE
    if default is not None:
        f.default_value = default
    return f


def _message(
    package: str,
    name: str,
    fields: list[FieldSpec],
    enums: frozenset[str],
    *,
    nested: list[descriptor_pb2.DescriptorProto] | None = None,
    nested_enums: list[descriptor_pb2.EnumDescriptorProto] | None = None,
) -> descriptor_pb2.DescriptorProto:
    m = descriptor_pb2.DescriptorProto(name=name)
    m.field.extend(_field(package, s, enums) for s in fields)
    if nested:
        m.nested_type.extend(nested)
    if nested_enums:
        m.enum_type.extend(nested_enums)
    return m


def _enum(name: str, values: list[tuple[str, int]]) -> descriptor_pb2.EnumDescriptorProto:
    e = descriptor_pb2.EnumDescriptorProto(name=name)
    for vname, number in values:
        e.value.add(name=vname, number=number)
    return e


def _ml_file() -> descriptor_pb2.FileDescriptorProto:
    pkg = "pulsar.ml"
    enums = frozenset({"CompressionType"})
    pos = "NestedPositionInfo"
    msgs = [
        _message(pkg, "KeyValue", [("key", 1, _REQ, "string", None), ("value", 2, _REQ, "string", None)], enums),
        _message(
            pkg,
            "OffloadDriverMetadata",
            [("name", 1, _REQ, "string", None), ("properties", 2, _REP, "KeyValue", None)],
            enums,
        ),
        _message(
            pkg,
            "OffloadContext",
            [
                ("uidMsb", 1, _OPT, "int64", None),
                ("uidLsb", 2, _OPT, "int64", None),
                ("complete", 3, _OPT, "bool", None),
                ("bookkeeperDeleted", 4, _OPT, "bool", None),
                ("timestamp", 5, _OPT, "int64", None),
                ("driverMetadata", 6, _OPT, "OffloadDriverMetadata", None),
                ("offloadSegment", 7, _REP, "OffloadSegment", None),
            ],
            enums,
        ),
        _message(
            pkg,
            "OffloadSegment",
            [
                ("uidMsb", 1, _OPT, "int64", None),
                ("uidLsb", 2, _OPT, "int64", None),
                ("complete", 3, _OPT, "bool", None),
                ("assignedTimestamp", 4, _OPT, "int64", None),
                ("offloadedTimestamp", 5, _OPT, "int64", None),
                ("endEntryId", 6, _OPT, "int64", None),
                ("driverMetadata", 7, _OPT, "OffloadDriverMetadata", None),
            ],
            enums,
        ),
        _message(
            pkg,
            "ManagedLedgerInfo",
            [
                ("ledgerInfo", 1, _REP, "ManagedLedgerInfo.LedgerInfo", None),
                ("terminatedPosition", 2, _OPT, pos, None),
                ("properties", 3, _REP, "KeyValue", None),
            ],
            enums,
            nested=[
                _message(
                    pkg,
                    "LedgerInfo",
                    [
                        ("ledgerId", 1, _REQ, "int64", None),
                        ("entries", 2, _OPT, "int64", None),
                        ("size", 3, _OPT, "int64", None),
                        ("timestamp", 4, _OPT, "int64", None),
                        ("offloadContext", 5, _OPT, "OffloadContext", None),
                        ("properties", 6, _REP, "KeyValue", None),
                    ],
                    enums,
                )
            ],
        ),
        _message(
            pkg,
            "PositionInfo",
            [
                ("ledgerId", 1, _REQ, "int64", None),
                ("entryId", 2, _REQ, "int64", None),
                ("individualDeletedMessages", 3, _REP, "MessageRange", None),
                ("properties", 4, _REP, "LongProperty", None),
                ("batchedEntryDeletionIndexInfo", 5, _REP, "BatchedEntryDeletionIndexInfo", None),
                ("individualDeletedMessageRanges", 6, _REP, "LongListMap", None),
            ],
            enums,
        ),
        _message(pkg, pos, [("ledgerId", 1, _REQ, "int64", None), ("entryId", 2, _REQ, "int64", None)], enums),
        _message(pkg, "LongListMap", [("key", 1, _REQ, "int64", None), ("values", 2, _REP, "int64", None)], enums),
        _message(
            pkg,
            "MessageRange",
            [("lowerEndpoint", 1, _REQ, pos, None), ("upperEndpoint", 2, _REQ, pos, None)],
            enums,
        ),
        _message(
            pkg,
            "BatchedEntryDeletionIndexInfo",
            [("position", 1, _REQ, pos, None), ("deleteSet", 2, _REP, "int64", None)],
            enums,
        ),
        _message(pkg, "LongProperty", [("name", 1, _REQ, "string", None), ("value", 2, _REQ, "int64", None)], enums),
        _message(pkg, "StringProperty", [("name", 1, _REQ, "string", None), ("value", 2, _REQ, "string", None)], enums),
        _message(
            pkg,
            "ManagedCursorInfo",
            [
                ("cursorsLedgerId", 1, _REQ, "int64", None),
                ("markDeleteLedgerId", 2, _OPT, "int64", None),
                ("markDeleteEntryId", 3, _OPT, "int64", None),
                ("individualDeletedMessages", 4, _REP, "MessageRange", None),
                ("properties", 5, _REP, "LongProperty", None),
                ("lastActive", 6, _OPT, "int64", None),
                ("batchedEntryDeletionIndexInfo", 7, _REP, "BatchedEntryDeletionIndexInfo", None),
                ("cursorProperties", 8, _REP, "StringProperty", None),
            ],
            enums,
        ),
        _message(
            pkg,
            "ManagedLedgerInfoMetadata",
            [("compressionType", 1, _REQ, "CompressionType", None), ("uncompressedSize", 2, _REQ, "int32", None)],
            enums,
        ),
        _message(
            pkg,
            "ManagedCursorInfoMetadata",
            [("compressionType", 1, _REQ, "CompressionType", None), ("uncompressedSize", 2, _REQ, "int32", None)],
            enums,
        ),
    ]
    f = descriptor_pb2.FileDescriptorProto(name="pulsar_ops/MLDataFormats.proto", package=pkg, syntax="proto2")
    f.message_type.extend(msgs)
    f.enum_type.append(_enum("CompressionType", [("NONE", 0), ("LZ4", 1), ("ZLIB", 2), ("ZSTD", 3), ("SNAPPY", 4)]))
    return f


def _bk_file() -> descriptor_pb2.FileDescriptorProto:
    pkg = "bookkeeper.proto"
    enums = frozenset({"LedgerMetadataFormat.State", "LedgerMetadataFormat.DigestType"})
    lmf = _message(
        pkg,
        "LedgerMetadataFormat",
        [
            ("quorumSize", 1, _REQ, "int32", None),
            ("ensembleSize", 2, _REQ, "int32", None),
            ("length", 3, _REQ, "int64", None),
            ("lastEntryId", 4, _OPT, "int64", None),
            ("state", 5, _REQ, "LedgerMetadataFormat.State", "OPEN"),
            ("segment", 6, _REP, "LedgerMetadataFormat.Segment", None),
            ("digestType", 7, _OPT, "LedgerMetadataFormat.DigestType", None),
            ("password", 8, _OPT, "bytes", None),
            ("ackQuorumSize", 9, _OPT, "int32", None),
            ("ctime", 10, _OPT, "int64", None),
            ("customMetadata", 11, _REP, "LedgerMetadataFormat.cMetadataMapEntry", None),
            ("cToken", 12, _OPT, "int64", None),
        ],
        enums,
        nested=[
            _message(
                pkg,
                "Segment",
                [("ensembleMember", 1, _REP, "string", None), ("firstEntryId", 2, _REQ, "int64", None)],
                enums,
            ),
            _message(
                pkg,
                "cMetadataMapEntry",
                [("key", 1, _OPT, "string", None), ("value", 2, _OPT, "bytes", None)],
                enums,
            ),
        ],
        nested_enums=[
            _enum("State", [("OPEN", 1), ("IN_RECOVERY", 2), ("CLOSED", 3)]),
            _enum("DigestType", [("CRC32", 1), ("HMAC", 2), ("CRC32C", 3), ("DUMMY", 4)]),
        ],
    )
    # BookieServiceInfoFormat: the data of a bookie's registration znode (<ledgers>/available[/readonly]/<id>),
    # written by upstream ZKRegistrationManager.serializeBookieServiceInfo. The map<string, string> properties
    # field is restated as its wire form (a repeated entry message, key = 1, value = 2).
    bsi = _message(
        pkg,
        "BookieServiceInfoFormat",
        [
            ("endpoints", 6, _REP, "BookieServiceInfoFormat.Endpoint", None),
            ("properties", 7, _REP, "BookieServiceInfoFormat.PropertiesEntry", None),
        ],
        enums,
        nested=[
            _message(
                pkg,
                "Endpoint",
                [
                    ("id", 1, _REQ, "string", None),
                    ("port", 2, _REQ, "int32", None),
                    ("host", 3, _REQ, "string", None),
                    ("protocol", 4, _REQ, "string", None),
                    ("auth", 5, _REP, "string", None),
                    ("extensions", 6, _REP, "string", None),
                ],
                enums,
            ),
            _message(
                pkg,
                "PropertiesEntry",
                [("key", 1, _OPT, "string", None), ("value", 2, _OPT, "string", None)],
                enums,
            ),
        ],
    )
    f = descriptor_pb2.FileDescriptorProto(name="pulsar_ops/DataFormats.proto", package=pkg, syntax="proto2")
    f.message_type.extend([lmf, bsi])
    return f


def _schema_file() -> descriptor_pb2.FileDescriptorProto:
    pkg = "pulsar.schema"
    none: frozenset[str] = frozenset()
    msgs = [
        _message(
            pkg, "PositionInfo", [("ledgerId", 1, _REQ, "int64", None), ("entryId", 2, _REQ, "int64", None)], none
        ),
        _message(
            pkg,
            "IndexEntry",
            [
                ("version", 1, _REQ, "int64", None),
                ("position", 2, _REQ, "PositionInfo", None),
                ("hash", 3, _REQ, "bytes", None),
            ],
            none,
        ),
        _message(
            pkg,
            "SchemaEntry",
            [("schema_data", 2, _REQ, "bytes", None), ("index", 5, _REP, "IndexEntry", None)],
            none,
        ),
        _message(
            pkg,
            "SchemaLocator",
            [("info", 1, _REQ, "IndexEntry", None), ("index", 2, _REP, "IndexEntry", None)],
            none,
        ),
    ]
    f = descriptor_pb2.FileDescriptorProto(name="pulsar_ops/SchemaStorageFormat.proto", package=pkg, syntax="proto2")
    f.message_type.extend(msgs)
    return f


POOL = descriptor_pool.DescriptorPool()
for _file in (_ml_file(), _bk_file(), _schema_file()):
    POOL.Add(_file)


def _cls(full_name: str) -> Any:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


def _strict_message(m: descriptor_pb2.DescriptorProto) -> None:
    for f in m.field:
        if f.label == _REQ:
            f.label = _OPT
        f.ClearField("default_value")
        if f.type == _F.TYPE_ENUM:
            f.type = _F.TYPE_INT32
            f.ClearField("type_name")
    del m.enum_type[:]
    for nested in m.nested_type:
        _strict_message(nested)


def _strict_file(f: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """The same messages as proto3: parsers validate UTF-8 in proto3 string fields, never in proto2 ones.

    Only a validation twin: required labels, defaults and enums (as int32, same varint wire format) are dropped,
    which changes no parse outcome but the UTF-8 check."""
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(f)
    out.name = "strict/" + f.name
    out.syntax = "proto3"
    del out.enum_type[:]
    for m in out.message_type:
        _strict_message(m)
    return out


STRICT_POOL = descriptor_pool.DescriptorPool()
for _file in (_ml_file(), _bk_file(), _schema_file()):
    STRICT_POOL.Add(_strict_file(_file))

_STRICT: dict[str, Any] = {}


def strict_twin(cls: Any) -> Any:
    """The proto3 twin of a message class here: parsing a value with it fails exactly when a string field (at any
    depth) is not valid UTF-8, given that the class itself parsed it."""
    name = cls.DESCRIPTOR.full_name
    twin = _STRICT.get(name)
    if twin is None:
        twin = _STRICT[name] = message_factory.GetMessageClass(STRICT_POOL.FindMessageTypeByName(name))
    return twin


# pulsar.ml (MLDataFormats)
KeyValue: Any = _cls("pulsar.ml.KeyValue")
OffloadDriverMetadata: Any = _cls("pulsar.ml.OffloadDriverMetadata")
OffloadContext: Any = _cls("pulsar.ml.OffloadContext")
OffloadSegment: Any = _cls("pulsar.ml.OffloadSegment")
ManagedLedgerInfo: Any = _cls("pulsar.ml.ManagedLedgerInfo")
LedgerInfo: Any = _cls("pulsar.ml.ManagedLedgerInfo.LedgerInfo")
PositionInfo: Any = _cls("pulsar.ml.PositionInfo")
NestedPositionInfo: Any = _cls("pulsar.ml.NestedPositionInfo")
LongListMap: Any = _cls("pulsar.ml.LongListMap")
MessageRange: Any = _cls("pulsar.ml.MessageRange")
BatchedEntryDeletionIndexInfo: Any = _cls("pulsar.ml.BatchedEntryDeletionIndexInfo")
LongProperty: Any = _cls("pulsar.ml.LongProperty")
StringProperty: Any = _cls("pulsar.ml.StringProperty")
ManagedCursorInfo: Any = _cls("pulsar.ml.ManagedCursorInfo")
ManagedLedgerInfoMetadata: Any = _cls("pulsar.ml.ManagedLedgerInfoMetadata")
ManagedCursorInfoMetadata: Any = _cls("pulsar.ml.ManagedCursorInfoMetadata")

COMPRESSION_TYPES: dict[int, str] = {
    v.number: v.name for v in POOL.FindEnumTypeByName("pulsar.ml.CompressionType").values
}
COMPRESSION_NUMBERS: dict[str, int] = {name: number for number, name in COMPRESSION_TYPES.items()}

# bookkeeper.proto (DataFormats)
LedgerMetadataFormat: Any = _cls("bookkeeper.proto.LedgerMetadataFormat")
Segment: Any = _cls("bookkeeper.proto.LedgerMetadataFormat.Segment")
CMetadataMapEntry: Any = _cls("bookkeeper.proto.LedgerMetadataFormat.cMetadataMapEntry")
BookieServiceInfoFormat: Any = _cls("bookkeeper.proto.BookieServiceInfoFormat")

LEDGER_STATES: dict[int, str] = {1: "OPEN", 2: "IN_RECOVERY", 3: "CLOSED"}
LEDGER_STATE_NUMBERS: dict[str, int] = {v: k for k, v in LEDGER_STATES.items()}
DIGEST_TYPES: dict[int, str] = {1: "CRC32", 2: "HMAC", 3: "CRC32C", 4: "DUMMY"}
DIGEST_TYPE_NUMBERS: dict[str, int] = {v: k for k, v in DIGEST_TYPES.items()}

# pulsar.schema (SchemaStorageFormat)
SchemaPositionInfo: Any = _cls("pulsar.schema.PositionInfo")
SchemaIndexEntry: Any = _cls("pulsar.schema.IndexEntry")
SchemaEntry: Any = _cls("pulsar.schema.SchemaEntry")
SchemaLocator: Any = _cls("pulsar.schema.SchemaLocator")
