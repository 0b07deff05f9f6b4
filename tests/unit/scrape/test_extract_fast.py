"""The scrape's fast path (tuple rows, fields read straight from the protobuf messages) gives exactly what the
reference extraction over the public decode_* dataclasses gives: rows, znode row, error code and reason."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.formats.compression import CODECS
from pulsar_ops.formats.cursor import cursor_fields, decode_cursor_info, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import (
    decode_ledger_metadata,
    encode_ledger_metadata,
    ledger_metadata_fields,
)
from pulsar_ops.formats.ledger_path import ledger_id_from_parts, ledger_id_from_path, ledger_path
from pulsar_ops.formats.managed_ledger import encode_managed_ledger_info
from pulsar_ops.scrape.extract import ExtractConfig, extract_znode
from pulsar_ops.scrape.extract_fast import extract_columns
from pulsar_ops.snapshot import schema
from tests.unit.formats.strategies import cursor_infos, ledger_metadatas, ml_infos

CFG = ExtractConfig()
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

stats = st.tuples(
    *[st.integers(0, 2**40) for _ in range(8)], st.integers(0, 2**20), st.integers(0, 3), st.integers(0, 9)
)
segment = st.text(alphabet="abc%20/+-._L0123456789", min_size=1, max_size=8)


def _stat(s: tuple[int, ...], data: bytes) -> tuple[int, ...]:
    return (*s[:8], len(data), *s[9:])


def assert_same(store: str, path: str, data: bytes, stat: tuple[int, ...], cfg: ExtractConfig = CFG) -> None:
    ref = extract_znode(store, path, data, stat, cfg)
    zrow, info, rows, error = extract_columns(store, path, data, stat, cfg)
    want = [(t, tuple(r.get(c) for c in schema.table(t).column_names)) for t, r in ref.rows]
    assert zrow == ref.znode
    assert info == ref.info
    assert rows == want
    for _t, row in rows:
        assert len(row) == len(schema.table(_t).column_names)
    assert (None if error is None else (error.code, error.reason)) == (
        None if ref.error is None else (ref.error.code, ref.error.reason)
    )


ledger_ids = st.integers(0, 2**31 - 2) | st.integers(2**31 - 1, 2**63 - 1)


@FAST
@given(ledger_metadatas(), st.sampled_from([1, 2, 3]), ledger_ids, st.booleans(), stats)
def test_bk_ledger_rows_equal_the_reference(
    md: Any, version: int, ledger_id: int, flat: bool, s: tuple[int, ...]
) -> None:
    data = encode_ledger_metadata(md, version)
    path = ledger_path(ledger_id, flat=flat and ledger_id < 10**10)
    assert_same("local", path, data, _stat(s, data))


@FAST
@given(
    ml_infos, st.sampled_from(CODECS), st.booleans(), st.booleans(), st.lists(segment, min_size=4, max_size=4), stats
)
def test_managed_ledger_rows_equal_the_reference(
    info: Any, codec: str, text: bool, v1: bool, seg: list[str], s: tuple[int, ...]
) -> None:
    data = encode_managed_ledger_info(info, text=True) if text else encode_managed_ledger_info(info, compression=codec)
    ns = [seg[0], seg[1], seg[2]] if v1 else [seg[0], seg[1]]
    path = "/managed-ledgers/" + "/".join([*ns, "persistent", names.encode(seg[3])])
    assert_same("local", path, data, _stat(s, data))


@FAST
@given(cursor_infos, st.sampled_from(CODECS), st.lists(segment, min_size=4, max_size=4), stats, st.data())
def test_cursor_rows_equal_the_reference(
    info: Any, codec: str, seg: list[str], s: tuple[int, ...], data_st: st.DataObject
) -> None:
    data = encode_cursor_info(info, compression=codec)
    sub = data_st.draw(st.sampled_from(["__compaction", "sub-1", "a%2Fb", "bad%zz", "%E2%82%AC"]))
    path = f"/managed-ledgers/{seg[0]}/{seg[1]}/persistent/{names.encode(seg[2])}/{sub}"
    assert_same("local", path, data, _stat(s, data))


@FAST
@given(st.binary(max_size=64), st.sampled_from(["ledger", "ml", "cursor"]), stats)
def test_garbage_values_give_the_same_error(data: bytes, where: str, s: tuple[int, ...]) -> None:
    path = {
        "ledger": "/ledgers/00/0000/L0042",
        "ml": "/managed-ledgers/t/ns/persistent/x",
        "cursor": "/managed-ledgers/t/ns/persistent/x/sub",
    }[where]
    assert_same("local", path, data, _stat(s, data))


@FAST
@given(st.binary(max_size=80), st.sampled_from([b"1", b"2", b"3", b"4", b"x"]))
def test_ledger_fields_equal_the_decoder_on_any_bytes(body: bytes, version: bytes) -> None:
    data = b"BookieMetadataFormatVersion\t" + version + b"\n" + body
    try:
        md = decode_ledger_metadata(data, "/l")
    except DecodeError as e:
        with pytest.raises(DecodeError) as got:
            ledger_metadata_fields(data, "/l")
        assert (got.value.code, got.value.reason) == (e.code, e.reason)
        return
    fields = ledger_metadata_fields(data, "/l")
    assert fields == (
        md.format_version, md.state, md.length, md.last_entry_id, md.ensemble_size, md.write_quorum,
        md.ack_quorum, md.digest_type, md.ctime_ms, md.custom_metadata, md.ensembles,
    )  # fmt: skip


@FAST
@given(cursor_infos, st.sampled_from(CODECS))
def test_cursor_fields_equal_the_decoder(info: Any, codec: str) -> None:
    data = encode_cursor_info(info, compression=codec)
    ref = decode_cursor_info(data, "/c")
    f = cursor_fields(data, "/c")
    assert f.compression == ref.compression
    assert (f.cursors_ledger_id, f.mark_delete, f.last_active_ms) == (
        ref.info.cursors_ledger_id, ref.info.mark_delete, ref.info.last_active_ms,
    )  # fmt: skip
    assert f.ranges == [(*r.lower, *r.upper) for r in ref.info.individual_deleted]
    assert f.batch_index_count == len(ref.info.batched_deletion)
    assert (f.properties, f.cursor_properties) == (ref.info.properties, ref.info.cursor_properties)


ledger_segments = st.lists(
    st.sampled_from(["00", "01", "000", "0000", "1234", "L0001", "L123", "La234", "L00000000001", "12", "٠١", "x"]),
    min_size=1,
    max_size=6,
)


@FAST
@given(ledger_segments)
def test_ledger_id_from_parts_equals_from_path(parts: list[str]) -> None:
    path = "/ledgers/" + "/".join(parts)
    try:
        want: int | tuple[str, str] | None = ledger_id_from_path(path)
    except DecodeError as e:
        want = (e.code, e.reason)
    try:
        got: int | tuple[str, str] | None = ledger_id_from_parts(parts, path)
    except DecodeError as e:
        got = (e.code, e.reason)
    assert got == want


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/ledgers/00/0000/L0001", b"BookieMetadataFormatVersion\t3\n\x05"),
        ("/ledgers/00/00x0/L0001", b"BookieMetadataFormatVersion\t3\n"),
        ("/ledgers/999/9999/9999/9999/L9999", b"BookieMetadataFormatVersion\t1\n2\n3\n0\n"),
        ("/ledgers/available/bk1:3181", b""),
        ("/ledgers/available/readonly/bk2:3181", b""),
        ("/admin/policies/t/ns", b'{"bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}}'),
        ("/admin/policies/t/ns", b"{not json"),
        ("/namespace/t/ns/0x00000000_0xffffffff", b'{"nativeUrl": "pulsar://b:6650"}'),
        ("/managed-ledgers/t/ns/persistent/x", b""),
        ("/managed-ledgers/t/ns/persistent/x/sub", b""),
        ("/other/thing", b"zz"),
    ],
)
def test_edge_cases_equal_the_reference(path: str, data: bytes) -> None:
    assert_same("local", path, data, (1, 2, 3, 4, 5, 6, 7, 8, len(data), 0, 9))


def test_oversized_and_custom_root_equal_the_reference() -> None:
    data = encode_ledger_metadata(
        decode_ledger_metadata(b"BookieMetadataFormatVersion\t1\n2\n3\n0\n0\tbk:1\tbk:2\tbk:3", "/x"), 3
    )
    assert_same(
        "local",
        "/ledgers/00/0000/L0007",
        data,
        (1, 2, 3, 4, 5, 6, 7, 8, len(data), 0, 9),
        ExtractConfig(max_znode_bytes=4),
    )
    assert_same(
        "local",
        "/bk/ledgers/00/0000/L0007",
        data,
        (1, 2, 3, 4, 5, 6, 7, 8, len(data), 0, 9),
        ExtractConfig(ledgers_root="/bk/ledgers"),
    )


@FAST
@given(ledger_metadatas(version=2), st.data())
def test_v2_text_fields_equal_text_format_on_edited_values(md: Any, data_st: st.DataObject) -> None:
    """Valid v2 values with lines dropped, doubled, re-spaced or rewritten: the fast v2 reader either gives
    text_format's values or hands over to it (same values, same error)."""
    lines = encode_ledger_metadata(md, 2).decode("utf-8").split("\n")
    header, body = lines[0], lines[1:]
    for _ in range(data_st.draw(st.integers(0, 3))):
        if not body:
            break
        i = data_st.draw(st.integers(0, len(body) - 1))
        edit = data_st.draw(st.sampled_from(["drop", "dup", "space", "tab", "state", "int", "empty", "comment"]))
        line = body[i]
        if edit == "drop":
            del body[i]
        elif edit == "dup":
            body.insert(i, line)
        elif edit == "space":
            body[i] = "   " + line + " "
        elif edit == "tab":
            body[i] = "\t" + line
        elif edit == "state":
            body[i] = data_st.draw(st.sampled_from(["state: 3", "state: CLOSED", "state: BOGUS", "digestType: HMAC"]))
        elif edit == "int":
            name = data_st.draw(st.sampled_from(["quorumSize", "length", "ctime", "lastEntryId", "firstEntryId"]))
            value = data_st.draw(st.sampled_from(["0", "-0", "007", "0x10", "2147483648", "-5", "9" * 20, "1e3"]))
            body[i] = f"{name}: {value}"
        elif edit == "empty":
            body[i] = '  key: ""'
        else:
            body[i] = line + " # note"
    data = ("\n".join([header, *body])).encode("utf-8")
    try:
        md2 = decode_ledger_metadata(data, "/l")
    except DecodeError as e:
        with pytest.raises(DecodeError) as got:
            ledger_metadata_fields(data, "/l")
        assert (got.value.code, got.value.reason) == (e.code, e.reason)
        return
    assert ledger_metadata_fields(data, "/l") == (
        md2.format_version, md2.state, md2.length, md2.last_entry_id, md2.ensemble_size, md2.write_quorum,
        md2.ack_quorum, md2.digest_type, md2.ctime_ms, md2.custom_metadata, md2.ensembles,
    )  # fmt: skip


@FAST
@given(st.text(alphabet="0123456789L-IDavilbex٠١²", max_size=21))
def test_classify_child_equals_the_layout_patterns(name: str) -> None:
    import re

    from pulsar_ops.formats.ledger_path import classify_child, is_special

    if re.fullmatch(r"[0-9]{2}", name):
        want = "legacy"
    elif re.fullmatch(r"[0-9]{3}", name):
        want = "long"
    elif is_special(name):
        want = "special"
    elif re.fullmatch(r"L[0-9]{10,19}", name):
        want = "flat-leaf"
    else:
        want = "unknown"
    assert classify_child(name) == want


def test_ledger_sizes_summing_past_int64_are_a_decode_error_not_a_crash() -> None:
    """Corrupt sizes must not break the Parquet conversion of the whole batch: the znode gets a DecodeError."""
    from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo

    huge = 2**62
    ledgers = (LedgerInfo(1, 10, huge, 1), LedgerInfo(2, 10, huge, 2), LedgerInfo(3, None, None, 0))
    info = ManagedLedgerInfo(ledgers=ledgers)
    data = encode_managed_ledger_info(info)
    path = "/managed-ledgers/t/ns/persistent/corrupt-sizes"
    stat = (1, 1, 1, 1, 0, 0, 0, 0, len(data), 0, 1)
    ref = extract_znode("local", path, data, stat, CFG)
    assert ref.error is not None and ref.error.code == "decode-failed" and "int64" in ref.error.reason
    assert not [t for t, _ in ref.rows if t == "managed_ledgers"]
    assert_same("local", path, data, stat)
