from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.ack_ranges import (
    bitset_entries,
    entries_to_bitset,
    format_ack_ranges,
    parse_ack_ranges_json,
    parse_ack_ranges_string,
)
from pulsar_ops.formats.cursor import MessageRange

from .strategies import ranges

TWO = (MessageRange((3, 5), (3, 10)), MessageRange((3, 12), (3, 20)))


@pytest.mark.parametrize(
    "text",
    ["[(3:5..3:10],(3:12..3:20]]", "[(3:5..3:10], (3:12..3:20]]", " [ (3:5..3:10] ,  (3:12..3:20] ] "],
)
def test_both_spellings(text: str) -> None:
    assert parse_ack_ranges_string(text) == TWO


def test_empty_and_negative_entries() -> None:
    assert parse_ack_ranges_string("[]") == ()
    assert parse_ack_ranges_string("[(7:-1..7:4]]") == (MessageRange((7, -1), (7, 4)),)


@pytest.mark.parametrize(
    "bad", ["", "[", "(3:5..3:10]", "[(3:5..3:10]", "[(3:5..3:10)]", "[(3:5..3:10],]", "[(a:5..3:10]]", "[x]"]
)
def test_malformed_strings(bad: str) -> None:
    with pytest.raises(DecodeError) as info:
        parse_ack_ranges_string(bad, "internalStats:t/sub")
    assert info.value.path == "internalStats:t/sub"


@given(st.lists(ranges, max_size=20), st.booleans())
def test_format_parse_round_trip(items: list[MessageRange], guava: bool) -> None:
    assert parse_ack_ranges_string(format_ack_ranges(items, guava=guava)) == tuple(items)


def test_internal_info_json() -> None:
    items = [
        {"from": {"ledgerId": 3, "entryId": 5}, "to": {"ledgerId": 3, "entryId": 10}},
        {"from": "3:12", "to": "3:20"},
    ]
    assert parse_ack_ranges_json(items) == TWO
    for bad in [{"from": 1}, [{"from": "x", "to": "3:1"}], [{"from": {"ledgerId": True, "entryId": 1}, "to": "1:1"}]]:
        with pytest.raises(DecodeError):
            parse_ack_ranges_json(bad)


def test_bitset_words_like_java() -> None:
    # java.util.BitSet with bits {0, 1, 3, 64, 127}.toLongArray() == [11, Long.MIN_VALUE | 1]
    assert entries_to_bitset([0, 1, 3, 64, 127]) == (11, -(2**63) + 1)
    assert bitset_entries((11, -(2**63) + 1)) == (0, 1, 3, 64, 127)
    assert entries_to_bitset([]) == ()


@given(st.sets(st.integers(0, 2000)))
def test_bitset_round_trip(entries: set[int]) -> None:
    assert bitset_entries(entries_to_bitset(entries)) == tuple(sorted(entries))
