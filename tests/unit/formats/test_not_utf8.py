"""A protobuf string field holding bytes that are not UTF-8 (a bit flip, a foreign writer) is a DecodeError
naming the znode, never a crash of the extraction: proto2 parsers hand such a value back as ``bytes``, which used
to reach json.dumps and kill a decode worker (found by tests/unit/test_native.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats._pb import NOT_TEXT
from pulsar_ops.formats.cursor import ManagedCursorInfo, cursor_fields, decode_cursor_info, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import (
    LedgerMetadata,
    decode_ledger_metadata,
    encode_ledger_metadata,
    ledger_metadata_fields,
)
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    decode_managed_ledger_info,
    encode_managed_ledger_info,
    managed_ledger_fields,
)
from pulsar_ops.scrape.extract import ExtractConfig
from pulsar_ops.scrape.extract_fast import extract_columns

MARK = "ZZZZ"


def _corrupt(data: bytes) -> bytes:
    assert data.count(MARK.encode()) == 1
    return data.replace(MARK.encode(), b"\xe1ZZZ")  # a lead byte followed by no continuation byte


def _ledger(**over: Any) -> bytes:
    base: dict[str, Any] = dict(
        ledger_id=None, format_version=3, ensemble_size=1, write_quorum=1, ack_quorum=1, state="CLOSED",
        length=1, last_entry_id=0, ensembles=((0, ("b1:3181",)),), digest_type="CRC32C", password=b"",
        ctime_ms=1, custom_metadata=(("application", b"pulsar"),), ctoken=None,
    )  # fmt: skip
    base.update(over)
    return encode_ledger_metadata(LedgerMetadata(**base), 3)


CASES: list[tuple[str, bytes, list[Callable[[bytes, str], Any]], str]] = [
    (
        "ledger custom key",
        _ledger(custom_metadata=((MARK, b"v"),)),
        [decode_ledger_metadata, ledger_metadata_fields],
        "/ledgers/00/0000/L0001",
    ),
    (
        "bookie id",
        _ledger(ensembles=((0, (MARK,)),)),
        [decode_ledger_metadata, ledger_metadata_fields],
        "/ledgers/00/0000/L0001",
    ),
    (
        "managed-ledger property",
        encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(1, 1, 1, 1),), None, (("k", MARK),))),
        [decode_managed_ledger_info, managed_ledger_fields],
        "/managed-ledgers/t/ns/persistent/x",
    ),
    (
        "ledger-info property",
        encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(1, 1, 1, 1, None, ((MARK, "v"),)),))),
        [decode_managed_ledger_info, managed_ledger_fields],
        "/managed-ledgers/t/ns/persistent/x",
    ),
    (
        "cursor property name",
        encode_cursor_info(ManagedCursorInfo(7, (1, 2), properties=((MARK, 1),))),
        [decode_cursor_info, cursor_fields],
        "/managed-ledgers/t/ns/persistent/x/sub",
    ),
    (
        "cursor string property",
        encode_cursor_info(ManagedCursorInfo(7, (1, 2), cursor_properties=(("k", MARK),))),
        [decode_cursor_info, cursor_fields],
        "/managed-ledgers/t/ns/persistent/x/sub",
    ),
]


@pytest.mark.parametrize(("what", "data", "decoders", "path"), CASES, ids=[c[0] for c in CASES])
def test_non_utf8_strings_are_a_decode_error(
    what: str, data: bytes, decoders: list[Callable[[bytes, str], Any]], path: str
) -> None:
    for decode in decoders:
        decode(data, path)  # the uncorrupted value decodes
    bad = _corrupt(data)
    for decode in decoders:
        with pytest.raises(DecodeError) as info:
            decode(bad, path)
        assert info.value.path == path
        assert NOT_TEXT in info.value.reason


@pytest.mark.parametrize(("what", "data", "decoders", "path"), CASES, ids=[c[0] for c in CASES])
def test_the_scrape_records_the_znode_as_undecodable_and_goes_on(
    what: str, data: bytes, decoders: list[Callable[[bytes, str], Any]], path: str
) -> None:
    bad = _corrupt(data)
    stat = (1, 2, 3, 4, 0, 0, 0, 0, len(bad), 0, 5)
    zrow, _info, rows, error = extract_columns("local", path, bad, stat, ExtractConfig())
    assert rows == []
    assert error is not None and NOT_TEXT in error.reason
    assert zrow[-1] == error.code
