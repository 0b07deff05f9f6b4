from __future__ import annotations

import pytest
from hypothesis import given

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.schema_locator import (
    SchemaIndexEntry,
    SchemaLocator,
    decode_schema_locator,
    encode_schema_locator,
)

from .strategies import schema_locators
from .wire import ld, vint

PATH = "/schemas/public/default/my-topic"


def _entry(version: int, ledger: int, entry: int, digest: bytes) -> bytes:
    return vint(1, version) + ld(2, vint(1, ledger) + vint(2, entry)) + ld(3, digest)


GOLDEN = ld(1, _entry(1, 21, 0, b"h1")) + ld(2, _entry(0, 20, 0, b"h0")) + ld(2, _entry(1, 21, 0, b"h1"))


def test_golden_locator() -> None:
    loc = decode_schema_locator(GOLDEN, PATH)
    assert loc == SchemaLocator(
        SchemaIndexEntry(1, 21, 0, b"h1"),
        (SchemaIndexEntry(0, 20, 0, b"h0"), SchemaIndexEntry(1, 21, 0, b"h1")),
    )
    assert loc.ledger_ids == (21, 20)
    assert encode_schema_locator(loc) == GOLDEN


@pytest.mark.parametrize(
    "data",
    [
        b"",
        ld(2, _entry(0, 20, 0, b"h0")),  # no info
        ld(1, vint(1, 1) + ld(3, b"h")),  # info without position
        ld(1, vint(1, 1) + ld(2, vint(1, 20)) + ld(3, b"h")),  # position without entryId
        b"\x0a\xff",
    ],
)
def test_decode_errors(data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_schema_locator(data, PATH)
    assert info.value.path == PATH


@given(schema_locators)
def test_round_trip(loc: SchemaLocator) -> None:
    assert decode_schema_locator(encode_schema_locator(loc), PATH) == loc


# Upstream: Pulsar pulsar-broker BookkeeperSchemaStorage reads the locator with protobuf-java's
# SchemaStorageFormat.SchemaLocator.parseFrom (proto2, LITE_RUNTIME): unknown fields skipped, required fields checked
# (docs/formats.md, "Schema locators").
_INFO = _entry(1, 21, 0, b"h1")


@pytest.mark.parametrize(
    ("data", "ledgers"),
    [
        (GOLDEN + vint(9, 1) + ld(10, b"x"), (21, 20)),  # unknown fields (a newer broker's)
        (GOLDEN + bytes([9 << 3 | 3]) + vint(1, 1) + bytes([9 << 3 | 4]), (21, 20)),  # ... of the group wire type
        (GOLDEN + bytes([9 << 3 | 5]) + bytes(4) + bytes([10 << 3 | 1]) + bytes(8), (21, 20)),  # fixed32, fixed64
        (ld(1, _INFO + vint(7, 3)) + ld(2, _entry(0, 20, 0, b"h0") + ld(8, b"y")), (21, 20)),  # ... nested
        (ld(1, vint(1, 1) + ld(2, vint(1, 21) + vint(2, 0) + vint(5, 5)) + ld(3, b"h")), (21,)),  # ... in position
        (ld(2, _entry(0, 20, 0, b"h0")) + ld(1, _INFO), (21, 20)),  # fields in another order
        (ld(1, _INFO), (21,)),  # no index: the latest version only
        (ld(1, _INFO) + ld(2, _entry(0, 20, 0, b"h0")) + ld(2, _entry(3, 20, 1, b"h3")), (21, 20)),  # info not in index
        (ld(1, vint(1, 1) + ld(3, b"h")) + ld(1, ld(2, vint(1, 22) + vint(2, 0))), (22,)),  # info twice: merged
        (ld(1, _INFO + vint(1, 5)), (21,)),  # a singular scalar twice: the last wins
        (GOLDEN + ld(1, b""), (21, 20)),  # an empty info merged into the first changes nothing
        (ld(1, _INFO) + vint(1, 0), (21,)),  # info's number with the varint wire type: an unknown field
    ],
)  # fmt: skip
def test_accepts_what_protobuf_java_parse_from_accepts(data: bytes, ledgers: tuple[int, ...]) -> None:
    assert decode_schema_locator(data, PATH).ledger_ids == ledgers


def test_merged_and_last_values_are_protobuf_java_s() -> None:
    merged = decode_schema_locator(ld(1, vint(1, 1) + ld(3, b"h")) + ld(1, ld(2, vint(1, 22) + vint(2, 4))), PATH)
    assert merged.info == SchemaIndexEntry(1, 22, 4, b"h")
    assert decode_schema_locator(ld(1, _INFO + vint(1, 5)), PATH).info.version == 5


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (ld(1, vint(1, 1) + ld(2, vint(1, 21) + vint(2, 0))), "hash"),  # info.hash missing
        (ld(1, ld(2, vint(1, 21) + vint(2, 0)) + ld(3, b"h")), "version"),  # info.version missing
        (ld(1, _INFO) + ld(2, vint(1, 0) + ld(3, b"h")), "position"),  # an index entry without position
        (ld(1, _INFO) + ld(2, vint(1, 0) + ld(2, vint(2, 0)) + ld(3, b"h")), "ledgerId"),  # position.ledgerId
        (GOLDEN + bytes([9 << 3 | 6]), "not a valid binary protobuf"),  # wire types 6 and 7 do not exist
        (GOLDEN + bytes([9 << 3 | 3]), "not a valid binary protobuf"),  # a group never closed
        (GOLDEN + vint(9, 1)[:1] + b"\xff" * 10 + b"\x01", "not a valid binary protobuf"),  # an 11-byte varint
        (GOLDEN[:-3], "not a valid binary protobuf"),  # truncated
        (ld(1, b"\x08"), "not a valid binary protobuf"),  # truncated inside info
    ],
)
def test_refuses_what_protobuf_java_parse_from_refuses(data: bytes, why: str) -> None:
    with pytest.raises(DecodeError, match=why):
        decode_schema_locator(data, PATH)
