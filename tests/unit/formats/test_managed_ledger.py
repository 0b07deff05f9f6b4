from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.compression import CODECS, wrap
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    OffloadInfo,
    decode_managed_ledger_info,
    encode_managed_ledger_info,
)

from .strategies import ml_infos
from .wire import ld, vint

PATH = "/managed-ledgers/public/default/persistent/my-topic"

# Built from the reference field tables (§4.1, §4.4), independently of pulsar_ops.formats.proto.
GOLDEN = (
    ld(1, vint(1, 3) + vint(2, 10) + vint(3, 1234) + vint(4, 1_700_000_000_000))
    + ld(1, vint(1, 5) + vint(2, 7) + vint(3, 99) + vint(4, 1_700_000_100_000)
         + ld(5, vint(3, 1) + vint(4, 1) + vint(5, 1_700_000_200_000))
         + ld(6, ld(1, "k") + ld(2, "v")))
    + ld(1, vint(1, 8) + vint(4, 0))
    + ld(2, vint(1, 8) + vint(2, 41))
    + ld(3, ld(1, "pulsar.topic.epoch") + ld(2, "2"))
)  # fmt: skip

EXPECTED = ManagedLedgerInfo(
    ledgers=(
        LedgerInfo(3, 10, 1234, 1_700_000_000_000),
        LedgerInfo(5, 7, 99, 1_700_000_100_000, OffloadInfo(True, True, 1_700_000_200_000), (("k", "v"),)),
        LedgerInfo(8, None, None, 0),
    ),
    terminated_position=(8, 41),
    properties=(("pulsar.topic.epoch", "2"),),
)

LEGACY_TEXT = b"""ledgerInfo {
  ledgerId: 3
  entries: 10
  size: 1234
  timestamp: 1700000000000
}
ledgerInfo {
  ledgerId: 8
  timestamp: 0
}
"""


def test_golden_plain_binary() -> None:
    decoded = decode_managed_ledger_info(GOLDEN, PATH)
    assert decoded.info == EXPECTED
    assert decoded.format == "binary"
    assert decoded.compression == "NONE"
    assert decoded.info.ledger_ids == (3, 5, 8)
    assert decoded.info.property("pulsar.topic.epoch") == "2"
    assert encode_managed_ledger_info(EXPECTED) == GOLDEN


@pytest.mark.parametrize("codec", CODECS)
def test_golden_behind_every_codec(codec: str) -> None:
    decoded = decode_managed_ledger_info(wrap(GOLDEN, codec, always_header=True), PATH)
    assert decoded.info == EXPECTED
    assert decoded.compression == codec
    assert decoded.format == "binary"


def test_empty_znode_is_empty_info() -> None:
    decoded = decode_managed_ledger_info(b"", PATH)
    assert decoded.format == "empty"
    assert decoded.info.ledgers == ()
    assert decoded.info.terminated_position is None


def test_legacy_text_format() -> None:
    decoded = decode_managed_ledger_info(LEGACY_TEXT, PATH)
    assert decoded.format == "text"
    assert decoded.info == ManagedLedgerInfo((LedgerInfo(3, 10, 1234, 1_700_000_000_000), LedgerInfo(8, None, None, 0)))
    assert encode_managed_ledger_info(decoded.info, text=True) == LEGACY_TEXT


def test_text_cannot_be_compressed() -> None:
    with pytest.raises(ValueError):
        encode_managed_ledger_info(EXPECTED, text=True, compression="LZ4")


@pytest.mark.parametrize(
    "data",
    [
        ld(1, vint(2, 10)),  # LedgerInfo without required ledgerId
        b"ledgerInfo {\n  entries: 10\n}\n",  # text without required ledgerId
        ld(2, vint(1, 8)),  # terminatedPosition without entryId
        b"\x08\x01",  # parses to unknown fields only
        b"\n  # just a comment\n",  # text with no field
        b"\xff\xff\xff",
        b"not protobuf at all",
        wrap(GOLDEN[:-3], "LZ4"),  # compressed, but the payload is truncated protobuf
    ],
)
def test_garbage_and_missing_required_fields(data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_managed_ledger_info(data, PATH)
    assert info.value.path == PATH


@given(ml_infos, st.sampled_from(CODECS))
def test_binary_round_trip(info: ManagedLedgerInfo, codec: str) -> None:
    decoded = decode_managed_ledger_info(encode_managed_ledger_info(info, compression=codec), PATH)
    assert decoded.info == info
    if info.ledgers or info.terminated_position or info.properties:
        assert decoded.compression == codec


@given(ml_infos.filter(lambda i: bool(i.ledgers or i.terminated_position or i.properties)))
def test_text_round_trip(info: ManagedLedgerInfo) -> None:
    decoded = decode_managed_ledger_info(encode_managed_ledger_info(info, text=True), PATH)
    assert decoded.format == "text"
    assert decoded.info == info
