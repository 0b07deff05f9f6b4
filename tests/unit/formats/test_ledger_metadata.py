from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given

from pulsar_ops import native
from pulsar_ops.errors import DecodeError, TruncatedInputError, UnknownFormatVersionError
from pulsar_ops.formats.ledger_metadata import (
    LedgerMetadata,
    decode_ledger_metadata,
    encode_ledger_metadata,
    ledger_metadata_fields,
)

from .strategies import ledger_metadatas
from .wire import ld, varint, vint

# Test vectors from apache/bookkeeper bookkeeper-server/src/test/java/org/apache/bookkeeper/meta/
# TestLedgerMetadataSerDe.java (base64 znode values written by BookKeeper 4.0/4.1, 4.2/4.3, 4.4-4.8, 4.9+).
V1 = (
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTEKMgozCjAKMAkxOTIuMC4yLjE6MTIzNAkxOTIu"
    "MC4yLjI6MTIzNAkxOTIuMC4yLjM6MTIzNAotMTAyCUNMT1NFRA=="
)
V2 = (
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTIKcXVvcnVtU2l6ZTogMgplbnNlbWJsZVNpemU6I"
    "DMKbGVuZ3RoOiAwCmxhc3RFbnRyeUlkOiAtMQpzdGF0ZTogSU5fUkVDT1ZFUlkKc2VnbWVudCB7"
    "CiAgZW5zZW1ibGVNZW1iZXI6ICIxOTIuMC4yLjE6MTIzNCIKICBlbnNlbWJsZU1lbWJlcjogIjE"
    "5Mi4wLjIuMjoxMjM0IgogIGVuc2VtYmxlTWVtYmVyOiAiMTkyLjAuMi4zOjEyMzQiCiAgZmlyc3"
    "RFbnRyeUlkOiAwCn0KZGlnZXN0VHlwZTogQ1JDMzIKcGFzc3dvcmQ6ICJwYXNzd2QiCmFja1F1b"
    "3J1bVNpemU6IDIK"
)
V2_CTIME = (
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTIKcXVvcnVtU2l6ZTogMgplbnNlbWJsZVNpemU6I"
    "DMKbGVuZ3RoOiAwCmxhc3RFbnRyeUlkOiAtMQpzdGF0ZTogSU5fUkVDT1ZFUlkKc2VnbWVudCB7"
    "CiAgZW5zZW1ibGVNZW1iZXI6ICIxOTIuMC4yLjE6MTIzNCIKICBlbnNlbWJsZU1lbWJlcjogIjE"
    "5Mi4wLjIuMjoxMjM0IgogIGVuc2VtYmxlTWVtYmVyOiAiMTkyLjAuMi4zOjEyMzQiCiAgZmlyc3"
    "RFbnRyeUlkOiAwCn0KZGlnZXN0VHlwZTogQ1JDMzIKcGFzc3dvcmQ6ICJwYXNzd2QiCmFja1F1b"
    "3J1bVNpemU6IDIKY3RpbWU6IDE1NDQwMDIzODMwNzUK"
)
V3 = (
    "Qm9va2llTWV0YWRhdGFGb3JtYXRWZXJzaW9uCTMKYAgCEAMYACD///////////8BKAEyMgoOMTkyL"
    "jAuMi4xOjMxODEKDjE5Mi4wLjIuMjozMTgxCg4xOTIuMC4yLjM6MzE4MRAAOANCBmZvb2JhckgB"
    "UP///////////wFgAA=="
)
PATH = "/ledgers/00/0000/L0059"
OLD_BOOKIES = ("192.0.2.1:1234", "192.0.2.2:1234", "192.0.2.3:1234")


@pytest.mark.parametrize(("sample", "version"), [(V1, 1), (V2, 2), (V2_CTIME, 2), (V3, 3)])
def test_upstream_samples_round_trip_byte_exact(sample: str, version: int) -> None:
    raw = base64.b64decode(sample)
    md = decode_ledger_metadata(raw, PATH)
    assert md.format_version == version
    assert md.ledger_id == 59
    assert encode_ledger_metadata(md, version) == raw


def test_v1_sample_fields() -> None:
    md = decode_ledger_metadata(base64.b64decode(V1), PATH)
    assert (md.write_quorum, md.ensemble_size, md.ack_quorum, md.length) == (2, 3, 2, 0)
    assert md.state == "IN_RECOVERY"
    assert md.ensembles == ((0, OLD_BOOKIES),)
    assert (md.digest_type, md.password, md.ctime_ms, md.custom_metadata, md.ctoken) == (None, b"", None, (), None)


def test_v2_sample_fields() -> None:
    md = decode_ledger_metadata(base64.b64decode(V2), PATH)
    assert md.state == "IN_RECOVERY"
    assert (md.digest_type, md.password) == ("CRC32", b"passwd")
    assert md.ctime_ms is None
    assert md.last_entry_id == -1
    assert md.bookies == OLD_BOOKIES
    assert decode_ledger_metadata(base64.b64decode(V2_CTIME), PATH).ctime_ms == 1544002383075


def test_v3_sample_fields() -> None:
    md = decode_ledger_metadata(base64.b64decode(V3), PATH)
    assert md == LedgerMetadata(
        ledger_id=59,
        format_version=3,
        ensemble_size=3,
        write_quorum=2,
        ack_quorum=1,
        state="OPEN",
        length=0,
        last_entry_id=-1,
        ensembles=((0, ("192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181")),),
        digest_type="CRC32C",
        password=b"foobar",
        ctime_ms=-1,
        custom_metadata=(),
        ctoken=0,
    )
    assert base64.b64decode(V3)[len("BookieMetadataFormatVersion\t3\n")] == 0x60
    assert md.pulsar_kind == "unowned"
    assert not md.is_pulsar


def _pulsar(*custom: tuple[str, bytes]) -> LedgerMetadata:
    md = decode_ledger_metadata(base64.b64decode(V3), PATH)
    return LedgerMetadata(**{**{f: getattr(md, f) for f in md.__dataclass_fields__}, "custom_metadata": custom})


@pytest.mark.parametrize(
    ("custom", "kind"),
    [
        ((("application", b"pulsar"), ("component", b"managed-ledger"), ("pulsar/managed-ledger", b"t/n/persistent/x")),
         "data"),
        ((("application", b"pulsar"), ("component", b"managed-ledger"), ("pulsar/cursor", b"sub")), "cursor"),
        ((("application", b"pulsar"), ("component", b"schema"), ("pulsar/schemaId", b"t/n/x")), "schema"),
        ((("application", b"pulsar"), ("component", b"compacted-ledger"), ("pulsar/compactedTo", b"\x08\x01")),
         "compacted"),
        ((("application", b"pulsar"), ("component", b"delayed-index-bucket")), "bucket"),
        ((("application", b"pulsar"), ("component", b"functions")), "pulsar-unknown"),
        ((("application", b"pulsar"),), "pulsar-unknown"),
        ((("component", b"managed-ledger"),), "unowned"),
        ((), "unowned"),
    ],
)  # fmt: skip
def test_pulsar_kind(custom: tuple[tuple[str, bytes], ...], kind: str) -> None:
    md = _pulsar(*custom)
    assert md.pulsar_kind == kind
    assert md.is_pulsar == (kind != "unowned")
    again = decode_ledger_metadata(encode_ledger_metadata(md, 3), PATH)
    assert again.pulsar_kind == kind


def test_custom_helpers() -> None:
    md = _pulsar(("pulsar/managed-ledger", b"public/default/persistent/t"), ("bin", b"\xff\x00"))
    assert md.custom("pulsar/managed-ledger") == "public/default/persistent/t"
    assert md.managed_ledger_name == "public/default/persistent/t"
    assert md.custom("bin") == "\ufffd\x00"
    assert md.custom_bytes("bin") == b"\xff\x00"
    assert md.custom("absent") is None


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", TruncatedInputError),
        (b"BookieMeta", TruncatedInputError),
        (b"BookieMetadataFormatVersion\t3", TruncatedInputError),
        (b"BookieMetadataFormatVersion\t9\nxx", UnknownFormatVersionError),
        (b"BookieMetadataFormatVersion\t0\n", UnknownFormatVersionError),
        (b"BookieMetadataFormatVersion\tfoobar\nblahblah", DecodeError),
        (b"BookieMetadataFormatVersion\t123456789123456789\nblahblah", DecodeError),
        (b"garbage", DecodeError),
        (b"BookieMetadataFormatVersion\t3\n", TruncatedInputError),
        (b"BookieMetadataFormatVersion\t3\n\x80", TruncatedInputError),
        (b"BookieMetadataFormatVersion\t3\n\x60\x08\x02", TruncatedInputError),
        (b"BookieMetadataFormatVersion\t3\n\x02\x08\x02", DecodeError),  # required fields missing
        (b"BookieMetadataFormatVersion\t3\n\xff\xff\xff\xff\xff\xff", DecodeError),
        (b"BookieMetadataFormatVersion\t2\nquorumSize: 2\n", DecodeError),
        (b"BookieMetadataFormatVersion\t2\nnot text proto", DecodeError),
        (b"BookieMetadataFormatVersion\t1\n2\n3", TruncatedInputError),
        (b"BookieMetadataFormatVersion\t1\n2\nx\n0", DecodeError),
        (b"BookieMetadataFormatVersion\t1\n2\n3\n0\nnotab", DecodeError),
        (b"BookieMetadataFormatVersion\t1\n\xff\n3\n0", DecodeError),
    ],
)
def test_decode_errors(data: bytes, error: type[DecodeError]) -> None:
    with pytest.raises(error) as info:
        decode_ledger_metadata(data, PATH)
    assert type(info.value) is error
    assert info.value.path == PATH


def test_truncated_v3_sample_is_truncated_error() -> None:
    raw = base64.b64decode(V3)
    with pytest.raises(TruncatedInputError) as info:
        decode_ledger_metadata(raw[:-10], PATH)
    assert info.value.code == "input-truncated"


def test_v1_drops_what_it_cannot_carry() -> None:
    md = _pulsar(("application", b"pulsar"))
    v1 = decode_ledger_metadata(encode_ledger_metadata(md, 1), PATH)
    assert v1.custom_metadata == ()
    assert (v1.digest_type, v1.password, v1.ctime_ms, v1.ctoken) == (None, b"", None, None)
    assert v1.ack_quorum == v1.write_quorum
    assert v1.ensembles == md.ensembles


def test_unsupported_encode_version() -> None:
    with pytest.raises(ValueError):
        encode_ledger_metadata(_pulsar(), 4)


def test_ledger_id_from_non_ledger_path_is_none() -> None:
    assert decode_ledger_metadata(base64.b64decode(V3), "/somewhere/else").ledger_id is None


@given(ledger_metadatas(3))
def test_v3_round_trip(md: LedgerMetadata) -> None:
    assert decode_ledger_metadata(encode_ledger_metadata(md, 3), "/x") == md


@given(ledger_metadatas(2))
def test_v2_round_trip(md: LedgerMetadata) -> None:
    assert decode_ledger_metadata(encode_ledger_metadata(md, 2), "/x") == md


# ---- v1 read as LedgerMetadataSerDe.parseVersion1Config reads it (BufferedReader.readLine + parseInt/parseLong)

_V1 = b"BookieMetadataFormatVersion\t1\n"
_V1_PATH = "/ledgers/00/0000/L0007"


@pytest.mark.parametrize(
    ("body", "state", "ensembles"),
    [
        (b"2\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181\n", "OPEN", 1),  # BK >= 4.9 OPEN: trailing newline
        (b"2\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181", "OPEN", 1),  # BK 4.8: none
        (b"2\n3\n0\r\n0\tb1:3181\tb2:3181\tb3:3181\r\n", "OPEN", 1),  # \r\n terminators
        (b"2\r3\r0\r0\tb1:3181\tb2:3181\tb3:3181\r", "OPEN", 1),  # bare \r terminators
        (b"2\n3\n100\n0\tb1:3181\tb2:3181\tb3:3181\n7\tb1:3181\tb4:3181\tb3:3181\n9\tCLOSED", "CLOSED", 2),
        (b"2\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181\n-102\tCLOSED", "IN_RECOVERY", 1),
        (b"+2\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181\t\n", "OPEN", 1),  # parseInt's sign; split drops trailing ""
        (b"2\n3\n9\n0\tb1:3181\tb2:3181\tb3:3181\n5\tCLOSED\ngarbage after the CLOSED line is never read", "CLOSED", 1),
    ],
)
def test_v1_accepts_what_upstream_accepts(body: bytes, state: str, ensembles: int) -> None:
    md = decode_ledger_metadata(_V1 + body, _V1_PATH)
    assert md.state == state and len(md.ensembles) == ensembles
    assert all(len(members) == 3 for _, members in md.ensembles)


@pytest.mark.parametrize(
    "body",
    [
        b"2\n3\n0\n\n0\tb1:3181\n",  # an empty line in the middle: parts[1] does not exist
        b"2\n3\n",  # fewer than three number lines: parseInt(null)
        b" 2\n3\n0\n",  # parseInt takes no spaces
        b"2_0\n3\n0\n",  # nor underscores
        b"2147483648\n3\n0\n",  # quorumSize is an int
        b"2\n3\n9223372036854775808\n",  # length is a long
        b"2\n3\n0\n0\n",  # an ensemble line without members
        b"2\n3\n0\nx\tb1:3181\n",  # a first entry id that is not a number
        b"2\n3\n0\n",  # no ensemble: LedgerMetadataImpl refuses it
        b"2\n3\n9\n5\tCLOSED\n",  # the same, closed
        b"2\n3\n0\n0\tb1:3181\tb2:3181\n",  # 2 members, ensembleSize 3 (LedgerMetadataBuilder.newEnsembleEntry)
        b"4\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181\n",  # write quorum 4 > ensemble 3 (build)
    ],
)
def test_v1_rejects_what_upstream_rejects(body: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_ledger_metadata(_V1 + body, _V1_PATH)


def test_v1_open_is_written_with_the_trailing_newline_upstream_writes() -> None:
    md = decode_ledger_metadata(_V1 + b"2\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181\n", _V1_PATH)
    assert encode_ledger_metadata(md, 1) == _V1 + b"2\n3\n0\n0\tb1:3181\tb2:3181\tb3:3181\n"
    closed = decode_ledger_metadata(_V1 + b"2\n3\n100\n0\tb1:3181\tb2:3181\tb3:3181\n9\tCLOSED", _V1_PATH)
    assert encode_ledger_metadata(closed, 1).endswith(b"\n9\tCLOSED")


# ---- what BookKeeper refuses after parsing any version (LedgerMetadataBuilder, LedgerMetadataImpl, BookieId)

_V2 = b"BookieMetadataFormatVersion\t2\n"
_V2_OK = (
    'quorumSize: 2\nensembleSize: 3\nlength: 10\nlastEntryId: 4\nstate: CLOSED\nsegment {\n  ensembleMember: "a:1"\n'
    '  ensembleMember: "b:1"\n  ensembleMember: "c:1"\n  firstEntryId: 0\n}\ndigestType: CRC32C\npassword: ""\n'
    "ackQuorumSize: 2\nctime: 5\n"
)
_SECOND_SEGMENT = (
    'segment {\n ensembleMember: "a:1"\n ensembleMember: "b:1"\n ensembleMember: "c:1"\n firstEntryId: 0\n}\n'
)


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda t: t.replace('  ensembleMember: "c:1"\n', ""), r"2 member\(s\), ensembleSize is 3"),
        (lambda t: t + _SECOND_SEGMENT, "do not increase"),
        (lambda t: t.replace("quorumSize: 2\nens", "quorumSize: 4\nens"), "quorums out of order"),
        (lambda t: t.replace("ackQuorumSize: 2", "ackQuorumSize: 3"), "quorums out of order"),
        (lambda t: t.split("segment")[0] + "digestType: CRC32C\n", "without an ensemble"),
        (lambda t: t.replace('"a:1"', '"readonly"'), "invalid bookie id"),
        (lambda t: t.replace('"a:1"', '"a b:1"'), "invalid bookie id"),
        (lambda t: t.replace('"a:1"', '"caf\u00e9:1"'), "invalid bookie id"),
    ],
)
def test_every_version_refuses_what_the_builder_refuses(edit: Any, why: str) -> None:
    for data in (_V2 + edit(_V2_OK).encode(), _as_v3(edit(_V2_OK))):
        with pytest.raises(DecodeError, match=why):
            decode_ledger_metadata(data, _V1_PATH)
        with pytest.raises(DecodeError, match=why):
            ledger_metadata_fields(data, _V1_PATH)
        if native.bk_ledger is not None:
            assert native.bk_ledger(data) is None  # the native path leaves it to Python's error


def _as_v3(text: str) -> bytes:
    from google.protobuf import text_format

    from pulsar_ops.formats import proto

    msg = proto.LedgerMetadataFormat()
    text_format.Merge(text, msg)
    body = msg.SerializePartialToString()
    return b"BookieMetadataFormatVersion\t3\n" + varint(len(body)) + body


def test_bookie_ids_upstream_accepts() -> None:
    # [a-zA-Z0-9:-_.\-]+ : ':'..'_' is a range, so '@', '[', ']' and '_' are in it
    text = _V2_OK.replace('"a:1"', '"Bookie_1@rack[2]:3181"').replace('"b:1"', '"10.0.0.1:3181"')
    md = decode_ledger_metadata(_V2 + text.encode(), _V1_PATH)
    assert md.ensembles[0][1][:2] == ("Bookie_1@rack[2]:3181", "10.0.0.1:3181")


def test_v2_repeated_singular_field_keeps_the_last_value_as_textformat_merge_does() -> None:
    md = decode_ledger_metadata(_V2 + (_V2_OK + "length: 11\n").encode(), _V1_PATH)
    assert md.length == 11
    assert ledger_metadata_fields(_V2 + (_V2_OK + "length: 11\n").encode(), _V1_PATH)[2] == 11


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.rstrip("\n"),  # no final newline
        lambda t: "state: CLOSED\n" + t.replace("state: CLOSED\n", ""),  # another field order
        lambda t: "# a comment\n" + t,
        lambda t: t.replace("segment {", "segment <").replace("\n}\n", "\n>\n"),
        lambda t: t.replace("quorumSize: 2\nens", "quorumSize: 2;\nens").replace("length: 10\n", "length: 10,\n"),
        lambda t: t.replace("segment {", "segment: {"),
        lambda t: t.replace('"a:1"', "'a:1'").replace('"b:1"', '"b:" "1"'),
        lambda t: t.replace("length: 10", "length: 0xa").replace("ctime: 5", "ctime: 05"),
    ],
)
def test_v2_accepts_what_both_upstream_readers_accept(edit: Any) -> None:
    md = decode_ledger_metadata(_V2 + edit(_V2_OK).encode(), _V1_PATH)
    assert (md.length, md.write_quorum, md.state) == (10, 2, "CLOSED")
    assert md.ensembles == ((0, ("a:1", "b:1", "c:1")),)
    assert ledger_metadata_fields(_V2 + edit(_V2_OK).encode(), _V1_PATH)[2] == 10


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t + "futureField: 7\n",  # 4.18 skips it; 4.17 refuses: ours follows 4.17 (docs/formats.md)
        lambda t: t.replace("length: 10\n", ""),  # a required field missing
        lambda t: t.replace("quorumSize: 2\nens", "quorumSize: 4294967298\nens"),  # outside int32
        lambda t: "{\n" + t + "}\n",  # the body in braces
    ],
)
def test_v2_rows_where_ours_follows_bookkeeper_4_17(edit: Any) -> None:
    with pytest.raises(DecodeError):
        decode_ledger_metadata(_V2 + edit(_V2_OK).encode(), _V1_PATH)


# v3 (binary, varint length prefix): BookKeeper 4.17 reads it with protobuf-java's ``mergeDelimitedFrom`` +
# ``build()``, 4.18 with its own ``readRawVarint32`` + LightProto ``parseFrom`` (required fields checked). Where
# the two differ, ours refuses (docs/formats.md, "Ledger metadata v3").
_V3_OK_BODY = _as_v3(_V2_OK)[len(b"BookieMetadataFormatVersion\t3\n") + 1 :]  # the message, without its prefix


def _v3(body: bytes, prefix: bytes | None = None, header: bytes = b"3") -> bytes:
    return b"BookieMetadataFormatVersion\t" + header + b"\n" + (varint(len(body)) if prefix is None else prefix) + body


def _v3_reads_as_ok(data: bytes) -> LedgerMetadata:
    md = decode_ledger_metadata(data, _V1_PATH)
    assert (md.length, md.write_quorum, md.ensemble_size, md.state, md.ctime_ms) == (10, 2, 3, "CLOSED", 5)
    assert md.ensembles == ((0, ("a:1", "b:1", "c:1")),)
    fields = ledger_metadata_fields(data, _V1_PATH)
    assert fields[:7] == (3, "CLOSED", 10, 4, 3, 2, 2)
    if native.bk_ledger is not None:
        parts = native.bk_ledger(data)
        assert parts is None or parts[:7] == fields[:7]  # the native path takes it identically or leaves it
    return md


def _seg_with(extra: bytes) -> bytes:
    """The canonical body with ``extra`` appended inside its segment (field 6)."""
    seg = ld(1, "a:1") + ld(1, "b:1") + ld(1, "c:1") + vint(2, 0) + extra
    return _V3_OK_BODY.replace(_V3_OK_BODY[_V3_OK_BODY.index(b"\x32") : _V3_OK_BODY.index(b"\x38")], ld(6, seg))


@pytest.mark.parametrize(
    "data",
    [
        _v3(_V3_OK_BODY) + b"\x00garbage",  # bytes after the delimited message are never read
        _v3(_V3_OK_BODY + vint(99, 7)),  # unknown fields of each skippable wire type (a newer writer's)
        _v3(_V3_OK_BODY + ld(99, b"future")),
        _v3(_V3_OK_BODY + varint(99 << 3 | 5) + b"\x01\x02\x03\x04"),
        _v3(_V3_OK_BODY + varint(99 << 3 | 1) + bytes(8)),
        _v3(_seg_with(vint(9, 1))),  # ... inside a segment
        _v3(_V3_OK_BODY + ld(11, vint(7, 1) + ld(1, "k") + ld(2, b"v"))),  # ... inside a custom-metadata entry
        _v3(_V3_OK_BODY + ld(1, b"xx")),  # a known number with another wire type is an unknown field
        _v3(vint(3, 99) + _V3_OK_BODY),  # a singular field twice: the last wins (length 99, then 10)
        _v3(vint(5, 3) + _V3_OK_BODY[::1].replace(vint(5, 3), b"")),  # another field order
        _v3(_V3_OK_BODY + vint(7, 42)),  # an unknown digest type: the field keeps its value
        _v3(_V3_OK_BODY, prefix=bytes([len(_V3_OK_BODY) | 0x80, 0x00])),  # a non-minimal 2-byte prefix
        _v3(_V3_OK_BODY, prefix=bytes([len(_V3_OK_BODY) | 0x80, 0x80, 0x80, 0x80, 0x70])),  # bits past 32 dropped
        _v3(_V3_OK_BODY, header=b"03"),  # Integer.parseInt of the version digits
        _v3(_V3_OK_BODY, header=b"+3"),
        _v3(_V3_OK_BODY, header="\u0663".encode()),  # ARABIC-INDIC DIGIT THREE: Character.digit reads 3
    ],
)
def test_v3_accepts_what_both_upstream_readers_accept(data: bytes) -> None:
    _v3_reads_as_ok(data)


def test_v3_unknown_enum_value_leaves_the_field_as_it_was_and_the_last_singular_value_wins() -> None:
    # protobuf-java and LightProto alike: an enum number the schema lacks does not set the field
    assert decode_ledger_metadata(_v3(_V3_OK_BODY + vint(7, 42)), _V1_PATH).digest_type == "CRC32C"
    assert decode_ledger_metadata(_v3(_V3_OK_BODY.replace(vint(7, 3), vint(7, 42))), _V1_PATH).digest_type is None
    assert decode_ledger_metadata(_v3(_V3_OK_BODY + vint(3, 12)), _V1_PATH).length == 12


@pytest.mark.parametrize(
    ("data", "error", "why"),
    [
        # 4.17 accepts, 4.18 refuses: ours refuses
        (_v3(_V3_OK_BODY, prefix=bytes([len(_V3_OK_BODY) | 0x80, 0x80, 0x80, 0x80, 0x80, 0x00])), DecodeError,
         "longer than 5 bytes"),
        (_v3(_V3_OK_BODY, prefix=varint(len(_V3_OK_BODY) + 4)), TruncatedInputError, "truncated"),
        (_v3(_V3_OK_BODY + varint(99 << 3 | 3) + vint(1, 1) + varint(99 << 3 | 4)), DecodeError, "group"),
        (_v3(_seg_with(varint(9 << 3 | 3) + varint(9 << 3 | 4))), DecodeError, "group"),
        # both refuse
        (_v3(_V3_OK_BODY, prefix=bytes([len(_V3_OK_BODY) | 0x80, 0x80, 0x80, 0x80, 0x08])), DecodeError,
         "negative"),
        (_v3(_V3_OK_BODY.replace(vint(5, 3), vint(5, 9))), DecodeError, "required"),  # unknown state
        (_v3(_V3_OK_BODY.replace(vint(3, 10), b"")), DecodeError, "required"),  # length missing
        (_v3(_seg_with(b"").replace(vint(2, 0), b"")), DecodeError, "required"),  # segment.firstEntryId missing
        (_v3(_V3_OK_BODY + varint(99 << 3 | 6)), DecodeError, "protobuf"),  # wire types 6 and 7 do not exist
        (_v3(b""), DecodeError, "required"),  # a zero length prefix: an empty message
        (_v3(_V3_OK_BODY, header=b"-3"), UnknownFormatVersionError, "version -3"),
        (_v3(_V3_OK_BODY, header=b"3 "), DecodeError, "malformed format version"),
        (_v3(_V3_OK_BODY, header="\U0001d7d1".encode()), DecodeError, "malformed format version"),  # a surrogate pair
        # upstream reads a custom-metadata key that is not UTF-8 with U+FFFD; ours refuses (docs/formats.md)
        (_v3(_V3_OK_BODY + ld(11, ld(1, b"\xff\xfe") + ld(2, b"v"))), DecodeError, "UTF-8"),
    ],
)  # fmt: skip
def test_v3_refuses_what_upstream_refuses_and_where_the_readers_differ(
    data: bytes, error: type[DecodeError], why: str
) -> None:
    for read in (decode_ledger_metadata, ledger_metadata_fields):
        with pytest.raises(error, match=why) as info:
            read(data, _V1_PATH)
        assert type(info.value) is error
    if native.bk_ledger is not None:
        assert native.bk_ledger(data) is None
