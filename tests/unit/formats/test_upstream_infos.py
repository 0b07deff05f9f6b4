"""Managed-ledger and cursor infos read as Pulsar's MetaStoreImpl reads them (docs/formats.md, one test per row)."""

from __future__ import annotations

import pytest

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.compression import wrap
from pulsar_ops.formats.cursor import ManagedCursorInfo, decode_cursor_info, encode_cursor_info
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    decode_managed_ledger_info,
    encode_managed_ledger_info,
    managed_ledger_fields,
)

ML = "/managed-ledgers/t/n/persistent/x"
UNKNOWN_FIELD = b"\xa0\x06\x07"  # field 100, varint 7: nothing this reader (or today's broker) defines
INFO = ManagedLedgerInfo((LedgerInfo(5, 10, 100, 1000), LedgerInfo(6, None, None, 0)))
CURSOR = ManagedCursorInfo(-1, (5, 3), (), (), 1_700_000_000_000)


@pytest.mark.parametrize("codec", ["NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_plain_and_every_codec_with_a_newer_field(codec: str) -> None:
    data = wrap(encode_managed_ledger_info(INFO) + UNKNOWN_FIELD, codec)
    decoded = decode_managed_ledger_info(data, ML)
    assert decoded.info.ledgers == INFO.ledgers and decoded.compression == codec
    assert managed_ledger_fields(data, ML) == managed_ledger_fields(wrap(encode_managed_ledger_info(INFO), codec), ML)
    cdata = wrap(encode_cursor_info(CURSOR) + UNKNOWN_FIELD, codec)
    assert decode_cursor_info(cdata, ML + "/sub").info == CURSOR


def test_required_fields_missing_are_refused() -> None:
    with pytest.raises(DecodeError, match="required"):
        decode_managed_ledger_info(b"\x0a\x02\x10\x05", ML)  # a LedgerInfo without ledgerId
    with pytest.raises(DecodeError, match="required"):
        decode_cursor_info(b"\x10\x05", ML + "/sub")  # a cursor without cursorsLedgerId


def test_empty_value_is_a_managed_ledger_without_ledgers() -> None:
    assert decode_managed_ledger_info(b"", ML).info.ledgers == ()


@pytest.mark.parametrize(
    "data",
    [
        b"\x47\x78\x00\x00\x00\x04\x08\x01\x10\x40" + b"\x00" * 8,  # LZ4 header, payload that does not decompress
        b"\x47\x78\xff\xff\xff\xff\x08\x01",  # header size negative / past the end
        b"\x47\x78\x00\x00\x00\x09\x08\x01",  # header size past the end
    ],
)
def test_broken_compression_headers_are_refused(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_managed_ledger_info(data, ML)


def test_a_small_value_under_the_brokers_threshold_is_plain() -> None:
    small = encode_managed_ledger_info(INFO)
    assert len(small) < 16384 and decode_managed_ledger_info(small, ML).compression == "NONE"


def test_legacy_text_is_still_read_as_the_old_fallback_did() -> None:
    decoded = decode_managed_ledger_info(b"ledgerInfo {\n  ledgerId: 5\n}\n", ML)
    assert decoded.format == "text" and decoded.info.ledgers[0].ledger_id == 5
