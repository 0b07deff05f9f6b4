"""Pulsar metadata compression header (ManagedLedgerInfo / ManagedCursorInfo znode values).

Layout: magic ``0x4778`` (2 bytes, big-endian), N (int32 big-endian), N bytes of ``ManagedLedgerInfoMetadata``
(same shape as ``ManagedCursorInfoMetadata``: 1 compressionType, 2 uncompressedSize), then the payload.
Codecs: LZ4 = raw LZ4 block (no size prefix), ZLIB = zlib stream, ZSTD = zstd frame, SNAPPY = raw snappy block.

A plain protobuf value can never start with ``0x47`` (field 8 with the invalid wire type 7), so a value that
starts with the magic is a header. As the broker does, a header that does not parse makes the whole value be
treated as plain; a header that parses but whose payload does not decompress is a DecodeError.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import cramjam
import lz4.block
import zstandard

from pulsar_ops.errors import DecodeError, OversizedInputError
from pulsar_ops.formats import proto

MAGIC = b"\x47\x78"
MAX_UNCOMPRESSED_SIZE = 64 * 1024 * 1024
CODECS: tuple[str, ...] = ("NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY")

_ZSTD_D = zstandard.ZstdDecompressor()


def _lz4_decompress(payload: bytes, size: int) -> bytes:
    out: bytes = lz4.block.decompress(payload, uncompressed_size=size)
    return out


def _zlib_decompress(payload: bytes, size: int) -> bytes:
    d = zlib.decompressobj()
    out = d.decompress(payload, size + 1)
    if not d.eof:
        raise ValueError("zlib stream truncated or longer than uncompressedSize")
    return out


def _zstd_decompress(payload: bytes, size: int) -> bytes:
    return _ZSTD_D.decompress(payload, max_output_size=max(size, 1))


def _snappy_decompress(payload: bytes, size: int) -> bytes:
    claimed = cramjam.snappy.decompress_raw_len(payload)
    if claimed != size:
        raise ValueError(f"snappy block announces {claimed} bytes, header says {size}")
    return bytes(cramjam.snappy.decompress_raw(payload))


_DECOMPRESS: dict[str, Callable[[bytes, int], bytes]] = {
    "NONE": lambda payload, size: payload,
    "LZ4": _lz4_decompress,
    "ZLIB": _zlib_decompress,
    "ZSTD": _zstd_decompress,
    "SNAPPY": _snappy_decompress,
}

DECOMPRESS = _DECOMPRESS  # (payload, uncompressedSize) -> bytes per codec; scrape.native_batch hands them to C

_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "NONE": lambda payload: payload,
    "LZ4": lambda payload: lz4.block.compress(payload, store_size=False),
    "ZLIB": zlib.compress,
    "ZSTD": lambda payload: zstandard.ZstdCompressor().compress(payload),
    "SNAPPY": lambda payload: bytes(cramjam.snappy.compress_raw(payload)),
}


def _parse_header(data: bytes) -> tuple[str, int, int] | None:
    """(codec name, uncompressedSize, payload offset) or None when the header does not parse."""
    if len(data) < 6 or data[:2] != MAGIC:
        return None
    n = int.from_bytes(data[2:6], "big", signed=True)
    if n < 0 or 6 + n > len(data):
        return None
    meta = proto.ManagedLedgerInfoMetadata()
    try:
        meta.ParseFromString(data[6 : 6 + n])
    except Exception:  # any protobuf failure = "header does not parse" -> plain fallback
        return None
    if not meta.IsInitialized():
        return None
    codec = proto.COMPRESSION_TYPES.get(meta.compressionType)
    if codec is None:
        return None
    return codec, meta.uncompressedSize, 6 + n


def header_codec(data: bytes) -> str | None:
    """The codec named by ``data``'s compression header, or None when it has no header that parses."""
    header = _parse_header(data)
    return header[0] if header is not None else None


def unwrap(data: bytes, path: str) -> tuple[bytes, str]:
    """Strip the compression header: (plain protobuf bytes, codec name or ``"NONE"``)."""
    if data[:2] != MAGIC:
        return data, "NONE"
    header = _parse_header(data)
    if header is None:
        return data, "NONE"
    codec, size, offset = header
    if size < 0:
        raise DecodeError(path, f"compression header: negative uncompressedSize {size} ({codec})")
    if size > MAX_UNCOMPRESSED_SIZE:
        raise OversizedInputError(
            path, f"compression header claims {size} uncompressed bytes (> {MAX_UNCOMPRESSED_SIZE}, {codec})"
        )
    payload = data[offset:]
    try:
        out = _DECOMPRESS[codec](payload, size)
    except Exception as exc:  # every codec library has its own error type; all mean "corrupt payload"
        raise DecodeError(path, f"{codec} payload does not decompress: {exc}") from None
    if codec != "NONE" and len(out) != size:
        raise DecodeError(
            path, f"{codec} payload decompressed to {len(out)} bytes, header says uncompressedSize {size}"
        )
    return out, codec


def wrap(payload: bytes, compression: str, *, always_header: bool = False) -> bytes:
    """Encode like the broker: ``NONE`` gives the plain payload (unless ``always_header``), else the header.

    Raises ValueError for an unknown codec name or a payload over 64 MiB (programming errors of the caller).
    """
    codec = compression.upper()
    if codec not in _COMPRESS:
        raise ValueError(f"unknown compression {compression!r}; expected one of {', '.join(CODECS)}")
    if codec == "NONE" and not always_header:
        return bytes(payload)
    if len(payload) > MAX_UNCOMPRESSED_SIZE:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_UNCOMPRESSED_SIZE}")
    meta: bytes = proto.ManagedLedgerInfoMetadata(
        compressionType=proto.COMPRESSION_NUMBERS[codec], uncompressedSize=len(payload)
    ).SerializeToString()
    body: bytes = _COMPRESS[codec](bytes(payload))
    return MAGIC + len(meta).to_bytes(4, "big") + meta + body
