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
