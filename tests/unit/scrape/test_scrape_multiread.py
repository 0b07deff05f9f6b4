"""multiRead (opcode 22) request/response framing against bytes built by hand from the jute definitions."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.scrape.multiread import (
    OP_GET_CHILDREN,
    OP_GET_DATA,
    OP_MULTI_READ,
    MultiRead,
    MultiResponseError,
    OpError,
    ReadOp,
    parse_multi_response,
    serialize_ops,
)


def jute_int(v: int) -> bytes:
    return struct.pack(">i", v)


def jute_long(v: int) -> bytes:
    return struct.pack(">q", v)


def jute_bool(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def jute_ustring(s: str) -> bytes:
    raw = s.encode("utf-8")
    return jute_int(len(raw)) + raw


def jute_buffer(b: bytes | None) -> bytes:
    return jute_int(-1) if b is None else jute_int(len(b)) + b


def multi_header(op_type: int, done: bool, err: int) -> bytes:
    # MultiHeader { int type; boolean done; int err }
    return jute_int(op_type) + jute_bool(done) + jute_int(err)


STAT = (101, 202, 1_700_000_000_000, 1_700_000_000_500, 3, 7, 1, 0x1234, 42, 2, 303)


def jute_stat(s: tuple[int, ...]) -> bytes:
    czxid, mzxid, ctime, mtime, version, cversion, aversion, eph, dlen, nchildren, pzxid = s
    return (
        jute_long(czxid)
        + jute_long(mzxid)
        + jute_long(ctime)
        + jute_long(mtime)
        + jute_int(version)
        + jute_int(cversion)
        + jute_int(aversion)
        + jute_long(eph)
        + jute_int(dlen)
        + jute_int(nchildren)
        + jute_long(pzxid)
    )


def test_opcode_is_multiread() -> None:
    assert MultiRead([]).type == OP_MULTI_READ == 22


def test_request_framing_matches_multi_operation_record() -> None:
    ops = [ReadOp(OP_GET_DATA, "/a"), ReadOp(OP_GET_CHILDREN, "/a/b"), ReadOp(OP_GET_DATA, "/é")]
    expected = (
        multi_header(4, False, -1)
        + jute_ustring("/a")
        + jute_bool(False)
        + multi_header(8, False, -1)
        + jute_ustring("/a/b")
        + jute_bool(False)
        + multi_header(4, False, -1)
        + jute_ustring("/é")
        + jute_bool(False)
        + multi_header(-1, True, -1)
    )
    assert MultiRead(ops).serialize() == expected


def test_empty_request_is_just_the_end_header() -> None:
    assert serialize_ops([]) == multi_header(-1, True, -1)


def test_write_ops_are_refused() -> None:
    with pytest.raises(ValueError, match="getData"):
        serialize_ops([ReadOp(2, "/x")])  # delete


def test_response_with_data_children_and_per_op_errors() -> None:
    body = (
        multi_header(4, False, 0)
        + jute_buffer(b"hello")
        + jute_stat(STAT)
        + multi_header(8, False, 0)
        + jute_int(2)
        + jute_ustring("x")
        + jute_ustring("y%20z")
        + multi_header(-1, False, -101)
        + jute_int(-101)
        + multi_header(4, False, 0)
        + jute_buffer(None)  # a znode created with null data
        + jute_stat(STAT)
        + multi_header(-1, False, -102)
        + jute_int(-102)
        + multi_header(-1, True, -1)
    )
    prefix = b"\x00" * 16  # the reply header kazoo has already consumed
    res = parse_multi_response(prefix + body, len(prefix))
    assert res == [
        (b"hello", STAT),
        ["x", "y%20z"],
        OpError(-101),
        (b"", STAT),
        OpError(-102),
    ]
    assert MultiRead.deserialize(body, 0) == res


def test_truncated_response_is_an_error_not_a_short_list() -> None:
    body = multi_header(4, False, 0) + jute_buffer(b"hello") + jute_stat(STAT)[:20]
    with pytest.raises(MultiResponseError):
        parse_multi_response(body, 0)
    with pytest.raises(MultiResponseError):
        parse_multi_response(multi_header(4, False, 0) + jute_int(50) + b"abc", 0)


def test_unknown_result_type_is_an_error() -> None:
    with pytest.raises(MultiResponseError, match="unexpected result type 5"):
        parse_multi_response(multi_header(5, False, 0) + jute_stat(STAT) + multi_header(-1, True, -1), 0)


_paths = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).map(lambda s: "/" + s)


@given(st.lists(st.tuples(st.sampled_from([OP_GET_DATA, OP_GET_CHILDREN]), _paths), max_size=20))
def test_request_round_trips_through_a_jute_reader(ops: list[tuple[int, str]]) -> None:
    raw = serialize_ops([ReadOp(t, p) for t, p in ops])
    off = 0
    decoded = []
    while True:
        t, done, err = struct.unpack_from(">iBi", raw, off)
        off += 9
        if done:
            assert (t, err) == (-1, -1)
            break
        assert err == -1
        (n,) = struct.unpack_from(">i", raw, off)
        off += 4
        path = raw[off : off + n].decode("utf-8")
        off += n
        assert raw[off] == 0  # watch = false
        off += 1
        decoded.append((t, path))
    assert off == len(raw)
    assert decoded == ops


_result = st.one_of(
    st.tuples(st.binary(max_size=64), st.just(STAT)),
    st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=10), max_size=5),
    st.builds(OpError, st.sampled_from([-101, -102, -4])),
)


@given(st.lists(_result, max_size=20))
def test_response_parser_inverts_the_jute_writer(results: list[object]) -> None:
    body = b""
    for r in results:
        if isinstance(r, tuple):
            body += multi_header(4, False, 0) + jute_buffer(r[0]) + jute_stat(r[1])
        elif isinstance(r, list):
            body += multi_header(8, False, 0) + jute_int(len(r)) + b"".join(jute_ustring(c) for c in r)
        else:
            assert isinstance(r, OpError)
            body += multi_header(-1, False, r.code) + jute_int(r.code)
    body += multi_header(-1, True, -1)
    assert parse_multi_response(body, 0) == results
