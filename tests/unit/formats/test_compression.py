from __future__ import annotations

import zlib

import cramjam
import lz4.block
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError, OversizedInputError
from pulsar_ops.formats.compression import CODECS, MAGIC, unwrap, wrap

from .wire import vint

PAYLOAD = b"\x0a\x02\x08\x03" * 50  # ManagedLedgerInfo with 50 ledgerInfo {ledgerId: 3}


def _header(codec_number: int, size: int, body: bytes) -> bytes:
    meta = vint(1, codec_number) + vint(2, size)
    return MAGIC + len(meta).to_bytes(4, "big") + meta + body


@pytest.mark.parametrize(
    ("number", "name", "compress"),
    [
        (0, "NONE", lambda b: b),
        (1, "LZ4", lambda b: lz4.block.compress(b, store_size=False)),
        (2, "ZLIB", zlib.compress),
        (3, "ZSTD", lambda b: zstandard.ZstdCompressor().compress(b)),
        (4, "SNAPPY", lambda b: bytes(cramjam.snappy.compress_raw(b))),
    ],
)
def test_unwrap_hand_built_headers(number: int, name: str, compress) -> None:  # type: ignore[no-untyped-def]
    data = _header(number, len(PAYLOAD), compress(PAYLOAD))
    assert unwrap(data, "/p") == (PAYLOAD, name)


def test_wrap_layout_is_magic_length_metadata_payload() -> None:
    data = wrap(PAYLOAD, "LZ4")
    assert data[:2] == b"\x47\x78"
    n = int.from_bytes(data[2:6], "big")
    assert data[6 : 6 + n] == vint(1, 1) + vint(2, len(PAYLOAD))
    assert lz4.block.decompress(data[6 + n :], uncompressed_size=len(PAYLOAD)) == PAYLOAD


def test_none_is_plain_unless_forced() -> None:
    assert wrap(PAYLOAD, "NONE") == PAYLOAD
    forced = wrap(PAYLOAD, "none", always_header=True)
    assert forced[:2] == MAGIC
    assert unwrap(forced, "/p") == (PAYLOAD, "NONE")


@given(st.binary(max_size=3000), st.sampled_from(CODECS))
def test_wrap_unwrap_round_trip(payload: bytes, codec: str) -> None:
    assert unwrap(wrap(payload, codec, always_header=True), "/p") == (payload, codec)


def test_plain_values_pass_through() -> None:
    assert unwrap(PAYLOAD, "/p") == (PAYLOAD, "NONE")
    assert unwrap(b"", "/p") == (b"", "NONE")


@pytest.mark.parametrize(
    "data",
    [
        MAGIC,  # too short for a length
        MAGIC + b"\x00\x00\x00\x10" + b"\x08\x01",  # length beyond the value
        MAGIC + b"\xff\xff\xff\xff" + b"\x08\x01",  # negative length
        MAGIC + b"\x00\x00\x00\x02" + b"\x08\x01" + b"rest",  # metadata missing uncompressedSize
        MAGIC + b"\x00\x00\x00\x04" + vint(1, 9) + vint(2, 4) + b"rest",  # unknown codec number
        MAGIC + b"\x00\x00\x00\x02" + b"\xff\xff" + b"rest",  # metadata not protobuf
    ],
)
def test_unparseable_header_falls_back_to_plain(data: bytes) -> None:
    assert unwrap(data, "/p") == (data, "NONE")


@pytest.mark.parametrize(("number", "name"), [(1, "LZ4"), (2, "ZLIB"), (3, "ZSTD"), (4, "SNAPPY")])
def test_corrupt_payload_is_decode_error_naming_codec(number: int, name: str) -> None:
    data = _header(number, 100, b"\xff\x00garbage\x13\x37" * 3)
    with pytest.raises(DecodeError) as info:
        unwrap(data, "/managed-ledgers/t/ns/persistent/x")
    assert info.value.code == "decode-failed"
    assert info.value.path == "/managed-ledgers/t/ns/persistent/x"
    assert name in info.value.reason


@pytest.mark.parametrize("name", ["LZ4", "ZLIB", "ZSTD", "SNAPPY"])
def test_size_mismatch_is_decode_error(name: str) -> None:
    good = wrap(PAYLOAD, name)
    n = int.from_bytes(good[2:6], "big")
    meta = vint(1, {"LZ4": 1, "ZLIB": 2, "ZSTD": 3, "SNAPPY": 4}[name]) + vint(2, len(PAYLOAD) + 7)
    bad = MAGIC + len(meta).to_bytes(4, "big") + meta + good[6 + n :]
    with pytest.raises(DecodeError):
        unwrap(bad, "/p")


def test_absurd_uncompressed_size_is_oversized() -> None:
    data = _header(1, 64 * 1024 * 1024 + 1, b"\x00")
    with pytest.raises(OversizedInputError) as info:
        unwrap(data, "/p")
    assert info.value.code == "input-oversized"


def test_unknown_codec_name_on_wrap() -> None:
    with pytest.raises(ValueError):
        wrap(b"x", "BROTLI")
