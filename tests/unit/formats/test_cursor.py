from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.ack_ranges import bitset_entries
from pulsar_ops.formats.compression import CODECS, wrap
from pulsar_ops.formats.cursor import (
    ManagedCursorInfo,
    MessageRange,
    PositionInfo,
    decode_cursor_info,
    decode_position_info,
    encode_cursor_info,
    encode_position_info,
)

from .strategies import cursor_infos, position_infos
from .wire import ld, vint

PATH = "/managed-ledgers/public/default/persistent/my-topic/my-sub"


def _pos(ledger: int, entry: int) -> bytes:
    return vint(1, ledger) + vint(2, entry)


# ManagedCursorInfo from the reference table §4.2 / §4.4.
GOLDEN = (
    vint(1, -1 & (2**64 - 1))
    + vint(2, 5)
    + vint(3, 1225)
    + ld(4, ld(1, _pos(5, 1226)) + ld(2, _pos(5, 1280)))
    + ld(4, ld(1, _pos(5, 1300)) + ld(2, _pos(6, 3)))
    + ld(5, ld(1, "CompactedTopicLedger") + vint(2, 77))
    + vint(6, 1_700_000_000_000)
    + ld(7, ld(1, _pos(6, 9)) + vint(2, 3) + vint(2, 12))
    + ld(8, ld(1, "#pulsar.internal.delayed.bucket_10_20") + ld(2, "4242"))
    + ld(8, ld(1, "#pulsar.internal.delayed.bucket_21_30") + ld(2, "oops"))
    + ld(8, ld(1, "user-prop") + ld(2, "x"))
)

EXPECTED = ManagedCursorInfo(
    cursors_ledger_id=-1,
    mark_delete=(5, 1225),
    individual_deleted=(MessageRange((5, 1226), (5, 1280)), MessageRange((5, 1300), (6, 3))),
    properties=(("CompactedTopicLedger", 77),),
    last_active_ms=1_700_000_000_000,
    batched_deletion=(((6, 9), (3, 12)),),
    cursor_properties=(
        ("#pulsar.internal.delayed.bucket_10_20", "4242"),
        ("#pulsar.internal.delayed.bucket_21_30", "oops"),
        ("user-prop", "x"),
    ),
)


def test_golden_cursor() -> None:
    decoded = decode_cursor_info(GOLDEN, PATH)
    assert decoded.info == EXPECTED
    assert decoded.compression == "NONE"
    assert encode_cursor_info(EXPECTED) == GOLDEN


def test_cursor_helpers() -> None:
    assert EXPECTED.compacted_topic_ledger == 77
    assert EXPECTED.bucket_ledgers == (("#pulsar.internal.delayed.bucket_10_20", 4242),)
    assert EXPECTED.bucket_property_errors == (("#pulsar.internal.delayed.bucket_21_30", "oops"),)
    plain = ManagedCursorInfo(12, (3, 4))
    assert plain.compacted_topic_ledger is None
    assert plain.bucket_ledgers == ()


def test_bucket_values_past_int64_are_not_ledger_ids() -> None:
    """The broker reads a bucket property with Long.parseLong: past int64 it is no ledger id (and the tables could
    not store it: the scrape's writer failed on it before)."""
    b = "#pulsar.internal.delayed.bucket_"
    props = ((b + "1", str(2**63 - 1)), (b + "2", str(2**63)), (b + "3", str(-(2**63))), (b + "4", str(-(2**63) - 1)))
    info = ManagedCursorInfo(12, (3, 4), cursor_properties=props)
    assert info.bucket_ledgers == ((b + "1", 2**63 - 1), (b + "3", -(2**63)))
    assert info.bucket_property_errors == (props[1], props[3])


@pytest.mark.parametrize("codec", CODECS)
def test_golden_behind_every_codec(codec: str) -> None:
    decoded = decode_cursor_info(wrap(GOLDEN, codec, always_header=True), PATH)
    assert decoded.info == EXPECTED
    assert decoded.compression == codec


def test_range_less_snapshot_of_a_loaded_cursor() -> None:
    data = vint(1, 42) + vint(2, 7) + vint(3, 3)
    info = decode_cursor_info(data, PATH).info
    assert info == ManagedCursorInfo(42, (7, 3))


@pytest.mark.parametrize(
    "data",
    [
        b"",  # no cursorsLedgerId
        vint(2, 5),  # markDeleteLedgerId only: required cursorsLedgerId missing
        vint(1, 5) + ld(4, ld(1, _pos(1, 1))),  # range without upperEndpoint
        b"\xff\xff",
        wrap(GOLDEN, "ZSTD")[:-4],
    ],
)
def test_cursor_decode_errors(data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_cursor_info(data, PATH)
    assert info.value.path == PATH


@given(cursor_infos, st.sampled_from(CODECS))
def test_cursor_round_trip(info: ManagedCursorInfo, codec: str) -> None:
    decoded = decode_cursor_info(encode_cursor_info(info, compression=codec), PATH)
    assert decoded.info == info
    assert decoded.compression == codec


def test_golden_position_info_with_long_list_map() -> None:
    data = (
        _pos(5, 99)
        + ld(3, ld(1, _pos(5, 100)) + ld(2, _pos(5, 110)))
        + ld(4, ld(1, "CompactedTopicLedger") + vint(2, 8))
        + ld(5, ld(1, _pos(5, 120)) + vint(2, 1))
        + ld(6, vint(1, 5) + vint(2, 0b1011) + vint(2, -(2**63) & (2**64 - 1)))
    )
    pi = decode_position_info(data, "/ledger/5/entry")
    assert pi == PositionInfo(
        5,
        99,
        (MessageRange((5, 100), (5, 110)),),
        (("CompactedTopicLedger", 8),),
        (((5, 120), (1,)),),
        ((5, (0b1011, -(2**63))),),
    )
    assert bitset_entries(pi.deleted_ranges_bitsets[0][1]) == (0, 1, 3, 127)
    assert decode_position_info(encode_position_info(pi), "/x") == pi


def test_position_info_requires_entry_id() -> None:
    with pytest.raises(DecodeError):
        decode_position_info(vint(1, 5), "/x")


@given(position_infos)
def test_position_info_round_trip(pi: PositionInfo) -> None:
    assert decode_position_info(encode_position_info(pi), "/x") == pi
