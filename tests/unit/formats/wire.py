"""A tiny independent protobuf wire writer: golden bytes built from the reference field tables."""

from __future__ import annotations


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def vint(field: int, value: int) -> bytes:
    """A varint field (int32 / int64 / bool / enum)."""
    return varint(field << 3) + varint(value)


def ld(field: int, payload: bytes | str) -> bytes:
    """A length-delimited field (string / bytes / message)."""
    raw = payload.encode("utf-8") if isinstance(payload, str) else payload
    return varint((field << 3) | 2) + varint(len(raw)) + raw
