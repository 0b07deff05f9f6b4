"""Random and mutated bytes into every decoder: the result is a value or a DecodeError, never anything else."""

from __future__ import annotations

import base64
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import (
    ack_ranges,
    compression,
    cursor,
    ledger_metadata,
    ledger_path,
    managed_ledger,
    names,
    policies,
    schema_locator,
)

from .test_cursor import GOLDEN as CURSOR_GOLDEN
from .test_ledger_metadata import V1, V2_CTIME, V3
from .test_managed_ledger import GOLDEN as ML_GOLDEN
from .test_schema_locator import GOLDEN as SCHEMA_GOLDEN

BYTE_DECODERS: dict[str, Callable[[bytes, str], object]] = {
    "managed_ledger": managed_ledger.decode_managed_ledger_info,
    "cursor": cursor.decode_cursor_info,
    "position_info": cursor.decode_position_info,
    "ledger_metadata": ledger_metadata.decode_ledger_metadata,
    "schema_locator": schema_locator.decode_schema_locator,
    "unwrap": compression.unwrap,
    "namespace_policies": policies.parse_namespace_policies,
    "partitioned_topic": policies.parse_partitioned_topic,
    "json_object": policies.parse_json_object,
}

TEXT_DECODERS: dict[str, Callable[[str], object]] = {
    "names.decode": lambda s: names.decode(s, "/x"),
    "parse_ml_name": names.parse_ml_name,
    "ml_name_from_path": lambda s: names.ml_name_from_path("/managed-ledgers/" + s),
    "parse_topic": names.parse_topic,
    "split_ml_path": lambda s: names.split_ml_path("/managed-ledgers/" + s),
    "ledger_id_from_path": lambda s: ledger_path.ledger_id_from_path("/ledgers/" + s),
    "ack_ranges": ack_ranges.parse_ack_ranges_string,
    "bundle_range": policies.parse_bundle_range,
}

PREFIXES = [
    b"",
    compression.MAGIC,
    compression.wrap(b"", "LZ4")[:6],
    b"BookieMetadataFormatVersion\t1\n",
    b"BookieMetadataFormatVersion\t2\n",
    b"BookieMetadataFormatVersion\t3\n",
    b"ledgerInfo {",
    b'{"partitions": ',
]

VALID = [
    ML_GOLDEN,
    CURSOR_GOLDEN,
    SCHEMA_GOLDEN,
    compression.wrap(ML_GOLDEN, "LZ4"),
    compression.wrap(CURSOR_GOLDEN, "ZSTD"),
    compression.wrap(ML_GOLDEN, "SNAPPY"),
    compression.wrap(ML_GOLDEN, "ZLIB"),
    base64.b64decode(V1),
    base64.b64decode(V2_CTIME),
    base64.b64decode(V3),
    policies.encode_namespace_policies(retention_time_minutes=5, delayed_delivery_active=True),
]


def _total(data: bytes) -> None:
    for name, decode in BYTE_DECODERS.items():
        try:
            decode(data, "/fuzz")
        except DecodeError as exc:
            assert exc.path == "/fuzz", name
            assert exc.reason


@settings(max_examples=300)
@given(st.sampled_from(PREFIXES), st.binary(max_size=200))
def test_random_bytes(prefix: bytes, tail: bytes) -> None:
    _total(prefix + tail)


@settings(max_examples=300)
@given(st.sampled_from(VALID), st.data())
def test_mutated_valid_values(value: bytes, data: st.DataObject) -> None:
    buf = bytearray(value)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "truncate", "insert"]))
        pos = data.draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] ^= data.draw(st.integers(1, 255))
        elif op == "truncate":
            del buf[pos:]
        else:
            buf[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
    _total(bytes(buf))


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_random_text(s: str) -> None:
    for decode in TEXT_DECODERS.values():
        try:
            decode(s)
        except DecodeError as exc:
            assert exc.reason
