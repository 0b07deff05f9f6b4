"""The native batch (``SnapshotSink.nodes`` over ``native.bk_batch``, ``ml_batch``, ``schema_batch`` and
``misc_batch``) writes exactly the rows, scope counts, zxid ranges and counters the per-znode path
(``SnapshotSink.node``) writes for the same reads: tables compared row by row (sorted: the batch puts its rows in
their own Arrow batches), whatever mix of ledger znodes (legacy, long, flat, malformed, other formats, oversized,
ids at the int64 edge), topic and cursor znodes (V1, V2, partitions, URL-encoded and system names, compressed,
legacy text, empty, corrupt, properties), schema locators (info in the index or apart, int64 edges, unknown,
repeated, missing and truncated fields), directories, partitioned-topic metadata and bundles (every path shape
classify tells apart, JSON values the restricted reader takes and ones it must leave) and other znodes a chunk
holds. It must also really take the common case: a batch that left every read to Python would pass the equivalence
checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops import native, pulsar_names
from pulsar_ops.formats.cursor import BUCKET_PROPERTY_PREFIX, COMPACTED_TOPIC_LEDGER, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import encode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import encode_managed_ledger_info
from pulsar_ops.formats.schema_locator import SchemaIndexEntry, SchemaLocator, encode_schema_locator
from pulsar_ops.scrape import native_batch
from pulsar_ops.scrape import sink as sink_module
from pulsar_ops.scrape.extract import ExtractConfig
from pulsar_ops.scrape.packed import pack_reads_py
from pulsar_ops.scrape.sink import SnapshotSink
from pulsar_ops.snapshot.writer import SnapshotWriter
from tests.unit.formats.strategies import ledger_metadatas
from tests.unit.test_native import ascii_cursor_infos, ascii_ledgers, ascii_ml_infos

needs_native = pytest.mark.skipif(native.bk_batch is None, reason=f"native path not loaded: {native.STATUS}")
PROPS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
ROOT = "/ledgers"
MAX_BYTES = 600

ids = st.integers(0, 2**31 - 2) | st.integers(2**31 - 1, 2**63 - 1) | st.sampled_from([0, 2**31 - 1, 2**63 - 1])
odd_ledger_paths = st.sampled_from(
    [
        "/ledgers/00/0000/L00x1",  # malformed leaf: DecodeError
        "/ledgers/00/00a0/L0001",
        "/ledgers/000/0000/0000/0000/L000",
        "/ledgers/999/9999/9999/9999/L9999",  # past int64: DecodeError
        "/ledgers/922/3372/0368/5477/L5808",  # 2^63: DecodeError
        "/ledgers/00/0000",
        "/ledgers/00/0000/L0001/child",
        "/ledgers/L0000000001",  # flat
        "/ledgers/available/127.0.0.1:3181",
        "/ledgers/LAYOUT",
        "/ledgersx/00/0000/L0001",
        "/managed-ledgers/t/ns/persistent/x",
        "/admin/clusters/c1",
        "/",
    ]
)
stats = st.tuples(*[st.integers(0, 2**40)] * 4, *[st.integers(0, 2**20)] * 4, st.integers(0, 1000), st.integers(0, 3))
# what the batch takes: v3 (binary), v2 and v1 (text) ledger metadata; the rest is the per-znode path's
v3_values = ascii_ledgers().flatmap(lambda md: st.sampled_from([encode_ledger_metadata(md, v) for v in (3, 2, 1)]))
other_values = ledger_metadatas().map(lambda md: encode_ledger_metadata(md, 2)) | st.binary(max_size=40)
other_values |= ledger_metadatas().map(lambda md: encode_ledger_metadata(md, 1))


@st.composite
def reads(draw: st.DrawFn) -> list[tuple[str, bytes, tuple[int, ...]]]:
    values = draw(st.lists(v3_values, min_size=1, max_size=3)) + draw(st.lists(other_values, max_size=2))
    out = []
    for _ in range(draw(st.integers(1, 24))):
        kind = draw(st.integers(0, 9))
        if kind < 6:
            path = ledger_path(draw(ids), ROOT)
        elif kind < 8:
            path = draw(odd_ledger_paths)
        else:
            path = ledger_path(draw(ids), ROOT, flat=True)
        data = draw(st.sampled_from(values))
        s = draw(stats)
        # the stat's dataLength is the value's (or, rarely, past the decode limit on its own)
        dlen = len(data) if draw(st.integers(0, 9)) else MAX_BYTES + 1
        out.append((path, data, (*s[:8], dlen, s[9], s[8])))
    return out


def _write(tmp: Path, chunk: list[Any], batch: bool, *, packed: bool = False) -> tuple[dict[str, list[Any]], Any]:
    """The tables and the sink's bookkeeping after the per-znode path, the native batches over the list of reads,
    or (``packed``) over the packed chunk a decode worker receives."""
    writer = SnapshotWriter(tmp, batch_rows=50)
    sink = SnapshotSink(writer, ExtractConfig(ledgers_root=ROOT, max_znode_bytes=MAX_BYTES))
    sink.store = "local"
    if batch:
        raw = pack_reads_py("local", chunk) if packed else None
        with mock.patch.object(sink_module, "NATIVE_MIN_BATCH", 1), mock.patch.object(sink_module, "MISC_MIN_BATCH", 1):
            sink.nodes(raw if raw is not None else chunk)
    else:
        for path, data, stat in chunk:
            sink.node(path, data, stat)
    counts = writer.close()
    tables = {}
    for d in (tmp / "tables").iterdir():
        t = pq.read_table(d)
        tables[d.name] = (t.schema, sorted((tuple(r.values()) for r in t.to_pylist()), key=repr))
    return tables, (counts, sink.scope_rows(), sink.zxid, sink.counters, sink.bookies, sink.clusters)


def _assert_batched_as_per_znode(tmp_path_factory: pytest.TempPathFactory, chunk: Any) -> None:
    """The native batches write the per-znode path's rows, from a list of reads and from a packed chunk."""
    slow = _write(tmp_path_factory.mktemp("slow"), chunk, batch=False)
    assert _write(tmp_path_factory.mktemp("fast"), chunk, batch=True) == slow
    assert _write(tmp_path_factory.mktemp("packed"), chunk, batch=True, packed=True) == slow


@needs_native
@PROPS
@given(reads())
def test_the_batch_writes_what_the_per_znode_path_writes(tmp_path_factory: pytest.TempPathFactory, chunk: Any) -> None:
    _assert_batched_as_per_znode(tmp_path_factory, chunk)


@needs_native
def test_the_batch_takes_well_formed_ledgers_and_leaves_the_rest(tmp_path: Path) -> None:
    from hypothesis import find

    md = find(ascii_ledgers(), lambda _m: True)
    v3 = encode_ledger_metadata(md, 3)
    v2 = encode_ledger_metadata(md, 2)
    good = [(ledger_path(i, ROOT), v3, (1, i // 2 + 1, 3, 4, 0, 0, 0, 0, len(v3), 0, 1)) for i in (1, 2**31)]
    good.append((ledger_path(2**63 - 1, ROOT), v2, (1, 2**62, 3, 4, 0, 0, 0, 0, len(v2), 0, 1)))
    good.append((ledger_path(8, ROOT), encode_ledger_metadata(md, 1), (1, 2, 3, 4, 0, 0, 0, 0, 9, 0, 1)))
    left = [
        (ledger_path(7, ROOT, flat=True), v3, (1, 2, 3, 4, 0, 0, 0, 0, len(v3), 0, 1)),
        (ledger_path(9, ROOT), b"BookieMetadataFormatVersion\t1\n2\n", (1, 2, 3, 4, 0, 0, 0, 0, 9, 0, 1)),
        ("/ledgers/00/0000", b"", (1, 2, 3, 4, 0, 0, 0, 0, 0, 1, 1)),
    ]
    n, rest, zarrays, barrays, lo, hi = native_batch.bk_batch("local", good + left, ROOT, 1 << 20)
    assert (n, rest, lo, hi) == (4, [4, 5, 6], 1, 2**62)
    assert zarrays[1].to_pylist() == [p for p, _, _ in good]
    assert barrays[1].to_pylist() == [1, 2**31, 2**63 - 1, 8]
    assert barrays[2].to_pylist() == ["legacy", "long", "long", "legacy"]
    assert barrays[3].to_pylist() == [3, 3, 2, 1]  # format_version


@needs_native
def test_large_columns_are_handed_over_without_a_copy(tmp_path: Path) -> None:
    """A column of 4 KiB or more leaves the native call as a read-only buffer that owns its memory (no copy into
    bytes); the Arrow arrays built on it stay valid after the native result is gone, and the rows are the
    per-znode path's."""
    import gc

    from hypothesis import find

    md = find(ascii_ledgers(), lambda _m: True)
    v3 = encode_ledger_metadata(md, 3)
    chunk = [(ledger_path(i, ROOT), v3, (1, i, 3, 4, 0, 0, 0, 0, len(v3), 0, 1)) for i in range(1, 400)]
    assert native.bk_batch is not None
    raw = native.bk_batch("local", chunk, ROOT, 1 << 20, native_batch.spec("znodes"), native_batch.spec("bk_ledgers"))
    paths = raw[2][1]  # the znodes path column: (nulls, validity, offsets, values)
    assert not isinstance(paths[3], bytes) and memoryview(paths[3]).readonly
    assert bytes(memoryview(paths[3])) == "".join(p for p, _, _ in chunk).encode()
    assert isinstance(raw[2][0][3], bytes)  # the store column ("local" x 399) is below 4 KiB: copied
    arrays = native_batch.columns_to_arrays("znodes", raw[2], raw[0])
    del raw, paths
    gc.collect()
    assert arrays[1].to_pylist() == [p for p, _, _ in chunk]
    slow = _write(tmp_path / "slow", chunk, batch=False)
    fast = _write(tmp_path / "fast", chunk, batch=True)
    assert fast == slow


def test_the_specs_follow_the_schema() -> None:
    assert native_batch.spec("znodes") == "ssssiiiiqqqqqiiqssS"
    assert native_batch.spec("bk_ledgers") == "sqsisqqiiiSqQiqqqisSSSSSSsls"


# ---- topic and cursor znodes (native.ml_batch) -------------------------------------------------------------------

needs_ml_batch = pytest.mark.skipif(native.ml_batch is None, reason=f"native path not loaded: {native.STATUS}")
segment = st.sampled_from(["t", "ns", "c1", "persistent", "a.b-c_*"])
TOPIC_NAMES = [
    "topic", "t-partition-0", "t-partition-7", "t-partition-01", "t-partition-2147483647",
    "t-partition-2147483648", "a-partition-1-partition-2", "-partition-3", "t-partition-", "a+b", "a%2Fb",
    "%zz", "%C3%A9", "%FF", "persistent", "%E2%82%AC-partition-2", "%F0%9F%98%80", "%ED%A0%80", "%C0%80",
    "%F4%90%80%80", "%E0%80", "%00",
]  # fmt: skip
topic_names = st.sampled_from(TOPIC_NAMES)
SUB_NAMES = [
    "sub", "a+b", "%41", "%zz", "pulsar.repl.c2", "pulsar.repl%2Ec2", "%C3%A9", "%ED%B0%80",
    "pulsar.repl.%E2%82%AC",
    *pulsar_names.SYSTEM_CURSOR_NAMES, *pulsar_names.SYSTEM_CURSOR_PREFIXES,
]  # fmt: skip
sub_names = st.sampled_from(SUB_NAMES)
odd_ml_paths = st.sampled_from(
    [
        "/managed-ledgers/t/ns/persistent",
        "/managed-ledgers/t//persistent/x",
        "/managed-ledgers/t/ns/persistent/x/",
        "/managed-ledgers/t/ns/persistent/x/s/y",
        "/managed-ledgers/t/persistent/persistent/persistent/x",
        "/managed-ledgers/t/persistent/persistent/persistent/x/s",
        "/managed-ledgers/t/ns/persistent/\u00e9",
        "/managed-ledgers/t/ns/non-persistent/x",
        "/managed-ledgersx/t/ns/persistent/x",
        "/managed-ledgers",
    ]
)
codecs = st.sampled_from(["NONE", "NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"])
special_props = st.lists(
    st.tuples(st.sampled_from([COMPACTED_TOPIC_LEDGER, "k", BUCKET_PROPERTY_PREFIX + "1"]), st.integers(-5, 2**40)),
    max_size=2,
)


def _header(meta: bytes, payload: bytes) -> bytes:
    return b"\x47\x78" + len(meta).to_bytes(4, "big", signed=True) + meta + payload


# compression headers the batch reads natively only in their canonical form (the rest: formats.compression.unwrap)
ODD_HEADERS = [
    lambda p: _header(b"\x10" + _varint(len(p)) + b"\x08\x00", p),  # the fields the other way round
    lambda p: _header(b"\x08\x00\x08\x00\x10" + _varint(len(p)), p),  # a field twice
    lambda p: _header(b"\x08\x00\x10" + _varint(len(p)) + b"\x18\x01", p),  # an unknown field
    lambda p: _header(b"\x08\x07\x10" + _varint(len(p)), p),  # an unknown codec: plain
    lambda p: _header(b"\x08\x00", p),  # no size: plain
    lambda p: _header(b"\x08\x01\x10" + b"\xff" * 9 + b"\x01", p),  # a negative size: DecodeError
    lambda p: _header(b"\x08\x02\x10" + _varint(len(p) + 1), p),  # zlib, not a zlib stream: DecodeError
    lambda p: _header(b"\x08\x00\x10" + _varint((64 << 20) + 1), p),  # oversized
    lambda p: _header(b"\x08\x00\x10" + _varint(len(p)), p)[:5],  # cut in the length
    lambda p: b"\x47\x78\x00\x00\x01\x00\x08\x00" + p,  # a length past the end: plain
    lambda p: _header(b"\x08\x00\x10" + _varint(len(p) + 3), p),  # NONE: the size is not checked
    lambda p: _header(b"\x08\x01\x10" + _varint(len(p) + 9), p),  # LZ4, a size the payload does not give
]


def _varint(v: int) -> bytes:
    out = b""
    while True:
        b, v = v & 0x7F, v >> 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


ml_values = st.one_of(
    st.builds(lambda i, c: encode_managed_ledger_info(i, compression=c), ascii_ml_infos(), codecs),
    st.builds(lambda i, h: h(encode_managed_ledger_info(i)), ascii_ml_infos(), st.sampled_from(ODD_HEADERS)),
    ascii_ml_infos().map(lambda i: encode_managed_ledger_info(i, text=True)),
    st.sampled_from([b"", b"\x47\x78\x00\x00\x00\x02\x08\x09junk", b"\xff\xff"]),
)
# delayed-delivery bucket values: int(value.strip()) within int64 decides (formats.cursor.bucket_ledger_id); the
# batch takes the plain decimal ones
BUCKET_VALUES = ["12", " 7 ", "x", "-3", "-0", "007", "1_0", "+4", "", "9" * 18, "9" * 19, "-" + "9" * 18, "\u0663"]
BUCKET_VALUES += [str(2**63 - 1), str(2**63), str(-(2**63)), str(-(2**63) - 1)]
bucket_values = st.sampled_from(BUCKET_VALUES)
bucket_names = st.sampled_from([BUCKET_PROPERTY_PREFIX + "9", BUCKET_PROPERTY_PREFIX + "8", "s"])
cursor_values = st.one_of(
    st.builds(
        lambda i, props, sprops, c: encode_cursor_info(
            replace(i, properties=i.properties + tuple(props), cursor_properties=i.cursor_properties + tuple(sprops)),
            compression=c,
        ),
        ascii_cursor_infos(),
        special_props,
        st.lists(st.tuples(bucket_names, bucket_values)),
        codecs,
    ),
    st.sampled_from([b"", b"\x08"]),
)


@st.composite
def ml_reads(draw: st.DrawFn) -> list[tuple[str, bytes, tuple[int, ...]]]:
    out = []
    for _ in range(draw(st.integers(1, 16))):
        kind = draw(st.integers(0, 9))
        ns = draw(st.lists(segment, min_size=2, max_size=3))
        ml = "/managed-ledgers/" + "/".join(ns) + "/persistent/" + draw(topic_names)
        if kind < 4:
            path, data = ml, draw(ml_values)
        elif kind < 8:
            path, data = ml + "/" + draw(sub_names), draw(cursor_values)
        else:
            path, data = draw(odd_ml_paths), draw(ml_values | cursor_values)
        s = draw(stats)
        dlen = len(data) if draw(st.integers(0, 9)) else MAX_BYTES + 1
        out.append((path, data, (*s[:8], dlen, s[9], s[8])))
    return out


@needs_ml_batch
@PROPS
@given(st.tuples(ml_reads(), reads()).flatmap(lambda t: st.permutations(t[0] + t[1])))
def test_the_ml_batch_writes_what_the_per_znode_path_writes(
    tmp_path_factory: pytest.TempPathFactory, chunk: Any
) -> None:
    _assert_batched_as_per_znode(tmp_path_factory, chunk)


def _columns(arrays: dict[str, Any], table: str) -> dict[str, list[Any]]:
    names = [f.name for f in native_batch.arrow_schema(table)]
    return dict(zip(names, [a.to_pylist() for a in arrays[table]], strict=True))


@needs_ml_batch
def test_the_ml_batch_takes_well_formed_topics_and_cursors_and_leaves_the_rest() -> None:
    from pulsar_ops.formats.cursor import ManagedCursorInfo
    from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo

    ml = encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(5, 10, 100, 7), LedgerInfo(6, None, None, None))))
    lz4 = encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(5, 10, 100, 7),)), compression="LZ4")
    cur = encode_cursor_info(ManagedCursorInfo(9, (5, 3), properties=((COMPACTED_TOPIC_LEDGER, 11),)))
    st_ = (1, 2, 3, 4, 0, 0, 0, 0, 10, 0, 1)
    good = [
        ("/managed-ledgers/t/ns/persistent/a-partition-3", ml, st_),
        ("/managed-ledgers/p/c/ns/persistent/b", lz4, st_),
        ("/managed-ledgers/t/ns/persistent/b", b"", st_),
        ("/managed-ledgers/t/ns/persistent/a-partition-3/sub", cur, st_),
        ("/managed-ledgers/p/c/ns/persistent/b/pulsar.dedup", cur, st_),
        ("/managed-ledgers/t/ns/persistent/a%2Fb+%C3%A9/pulsar%2Erepl.c2", cur, st_),  # URL-encoded names
        ("/managed-ledgers/t/ns/persistent/d", b"ledgerInfo {\n  ledgerId: 5\n  entries: 10\n}\n", st_),  # text
    ]
    left = [
        ("/managed-ledgers/t/ns/persistent/%ED%A0%80", ml, st_),  # a surrogate: Python's DecodeError
        ("/managed-ledgers/t/ns/persistent/a/s%zz", cur, st_),  # a malformed escape: Python's DecodeError
        ("/managed-ledgers/t/ns/persistent/c", b"ledgerInfo { ledgerId: 1 }", st_),  # legacy text
        ("/managed-ledgers/t/ns/persistent/c/s", b"", st_),  # an empty cursor: a decode error
        ("/admin/clusters/c1", b"", st_),
    ]
    n, rest, arrays, lo, hi, scopes = native_batch.ml_batch("local", good + left, 1 << 20)
    assert (n, rest, lo, hi) == (7, [7, 8, 9, 10, 11], 2, 2)
    assert scopes == {"/managed-ledgers/t/ns": 5, "/managed-ledgers/p/c/ns": 2}
    mls = _columns(arrays, "managed_ledgers")
    assert mls["partition"] == [3, -1, -1, -1] and mls["is_v1"] == [False, True, False, False]
    assert mls["base_topic"] == [
        "persistent://t/ns/a",
        "persistent://p/c/ns/b",
        "persistent://t/ns/b",
        "persistent://t/ns/d",
    ]
    assert mls["compression"] == ["NONE", "LZ4", "NONE", "NONE"]
    assert mls["format"] == ["binary", "binary", "empty", "text"]
    curs = _columns(arrays, "cursors")
    assert curs["is_system"] == [False, True, True] and curs["compacted_topic_ledger"] == [11, 11, 11]
    assert curs["subscription"][2] == "pulsar.repl.c2" and curs["topic"][2] == "persistent://t/ns/a/b \u00e9"
    assert [a.to_pylist() for a in arrays["ledger_list"]][8] == [False, True, True, True]  # is_last


@needs_ml_batch
def test_the_ml_batch_takes_cursors_with_plain_bucket_properties() -> None:
    from pulsar_ops.formats.cursor import ManagedCursorInfo

    b1, b2 = BUCKET_PROPERTY_PREFIX + "1_2", BUCKET_PROPERTY_PREFIX + "3_4"

    def cur(*sprops: tuple[str, str]) -> bytes:
        return encode_cursor_info(ManagedCursorInfo(9, (5, 3), cursor_properties=sprops))

    st_ = (1, 2, 3, 4, 0, 0, 0, 0, 10, 0, 1)
    base = "/managed-ledgers/t/ns/persistent/a/"
    good = [
        (base + "s1", cur((b1, "17"), ("other", "x"), (b2, "-0")), st_),
        (base + "s2", cur((b1, "9" * 18)), st_),
    ]
    left = [
        (base + "s3", cur((b1, " 7 ")), st_),  # int() strips: Python's
        (base + "s4", cur((b1, "1"), (b1, "2")), st_),  # a repeated name: the dict keeps the last, Python's
        (base + "s5", cur((b1, "9" * 19)), st_),  # past the plain range (and int64): Python's
        (base + "s6", cur((b1, "x")), st_),  # not a number: no bucket id, Python's
    ]
    n, rest, arrays, _lo, _hi, _scopes = native_batch.ml_batch("local", good + left, 1 << 20)
    assert (n, rest) == (2, [2, 3, 4, 5])
    props = _columns(arrays, "cursor_properties")
    assert props["name"] == [b1, "other", b2, b1]
    assert props["bucket_ledger_id"] == [17, None, 0, 10**18 - 1]


@needs_ml_batch
def test_every_name_shape_gives_the_per_znode_rows(tmp_path: Path) -> None:
    """Each topic and subscription name shape at least once, in one chunk (random draws may miss one): names that
    URL-decode to valid UTF-8 are taken natively, malformed escapes and invalid UTF-8 (surrogates, overlongs, past
    U+10FFFF, cut sequences) are Python's DecodeErrors."""
    from pulsar_ops.formats.cursor import ManagedCursorInfo
    from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo

    ml = encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(5, 10, 100, 7),)))
    cur = encode_cursor_info(ManagedCursorInfo(9, (5, 3)))
    chunk: list[Any] = []
    for name in TOPIC_NAMES:
        chunk.append((f"/managed-ledgers/t/ns/persistent/{name}", ml, (1, 2, 3, 4, 0, 0, 0, 0, len(ml), 1, 1)))
    for sub in SUB_NAMES:
        chunk.append((f"/managed-ledgers/t/ns/persistent/%E2%82%AC/{sub}", cur, (1, 2, 3, 4, 0, 0, 0, 0, 9, 0, 1)))
    assert len(chunk) > 30
    n, rest, *_ = native_batch.ml_batch("local", chunk, MAX_BYTES)
    assert n > 20 and rest  # both: taken natively and left to Python
    assert _write(tmp_path / "fast", chunk, batch=True) == _write(tmp_path / "slow", chunk, batch=False)


TEXT_ML = [
    "ledgerInfo {\n  ledgerId: 5\n  entries: 10\n  size: 100\n  timestamp: 7\n}\nledgerInfo {\n  ledgerId: 6\n}\n",
    "ledgerInfo {\n  ledgerId: -9223372036854775808\n  size: 9223372036854775807\n}\n",
    "ledgerInfo {\n  ledgerId: 5\n}",  # no final newline
    "ledgerInfo {\n  ledgerId: 010\n}\n",  # octal for text_format
    "ledgerInfo {\n  ledgerId: 0x10\n}\n",
    "ledgerInfo {\n  ledgerId: 9223372036854775808\n}\n",
    "ledgerInfo {\n  entries: 1\n}\n",  # no ledgerId: required
    "ledgerInfo {\n  ledgerId: 5\n  ledgerId: 6\n}\n",
    "ledgerInfo {\n  ledgerId: 5\n  offloadContext {\n    complete: true\n  }\n}\n",
    'ledgerInfo {\n  ledgerId: 5\n}\nproperties {\n  key: "k"\n  value: "v"\n}\n',
    "ledgerInfo {\n  ledgerId: 5\n}\nterminatedPosition {\n  ledgerId: 5\n  entryId: 1\n}\n",
    "ledgerInfo {\n  ledgerId: 5 # c\n}\n",
    "ledgerInfo {\n\tledgerId: 5\n}\n",
    "ledgerInfo {\n  ledgerId:5\n}\n",
    "ledgerInfo{\n  ledgerId: 5\n}\n",
    "ledgerInfo {\n  ledgerId: 5\n",  # unclosed
    "ledgerInfo {\n  ledgerId: 5\n}\n}\n",
    "ledgerInfo {\n  ledgerId: 5\n}\nledgerInfo {\n  ledgerId: 5\n}\n",  # the same id twice: a list
    "ledgerInfos {\n  ledgerId: 5\n}\n",
    "ledgerInfo {\n  ledgerId: 5\n  size: 9223372036854775807\n}\nledgerInfo {\n  ledgerId: 6\n  size: 1\n}\n",
]  # fmt: skip


@needs_ml_batch
def test_text_managed_ledgers_give_the_per_znode_rows(tmp_path: Path) -> None:
    """The legacy text ManagedLedgerInfo in the shape TextFormat prints it is taken natively; every other spelling
    (octal, hex, comments, tabs, offload contexts, properties, ...) is left to text_format: the same rows."""
    chunk: list[Any] = []
    for i, text in enumerate(TEXT_ML):
        data = text.encode()
        chunk.append((f"/managed-ledgers/t/ns/persistent/x{i}", data, (1, 2, 3, 4, 0, 0, 0, 0, len(data), 0, 1)))
    n, rest, arrays, *_ = native_batch.ml_batch("local", chunk, MAX_BYTES)
    assert n == 4 and rest == [*range(3, 17), 18, 19]  # the last: its total size past int64 (Python decides)
    assert _columns(arrays, "managed_ledgers")["format"] == ["text"] * 4
    assert _write(tmp_path / "fast", chunk, batch=True) == _write(tmp_path / "slow", chunk, batch=False)


# ---- schema locators (native.schema_batch) -------------------------------------------------------------------------

needs_schema_batch = pytest.mark.skipif(native.schema_batch is None, reason=f"native path not loaded: {native.STATUS}")
i64s = st.integers(-(2**63), 2**63 - 1) | st.integers(-2, 40)
schema_entries = st.builds(SchemaIndexEntry, i64s, i64s, i64s, st.binary(max_size=6))
locators = st.builds(SchemaLocator, schema_entries, st.lists(schema_entries, max_size=4).map(tuple))
# an info entry whose version one index entry has (the usual shape: info is not added again) and one it lacks
usual_locators = st.builds(
    lambda entries, i: SchemaLocator(entries[i % len(entries)], tuple(entries)),
    st.lists(schema_entries, min_size=1, max_size=4),
    st.integers(0, 3),
)
SCHEMA_TAILS = [
    b"\x18\x01",  # an unknown field: protobuf keeps it, the per-znode path decides
    b"\x0a\x00",  # info again (protobuf merges a repeated singular message)
    b"\x12\x00",  # an index entry without its required fields
    b"\x12\x02\x08\x01",  # one without position and hash
    b"\x12",  # truncated
]
schema_values = st.one_of(
    (locators | usual_locators).map(encode_schema_locator),
    st.builds(lambda loc, tail: encode_schema_locator(loc) + tail, locators, st.sampled_from(SCHEMA_TAILS)),
    st.builds(lambda v, cut: v[: len(v) - cut], locators.map(encode_schema_locator), st.integers(1, 4)),
    st.sampled_from([b"", b"\x0a\x02\x08\x01"]) | st.binary(max_size=16),
)
odd_schema_paths = st.sampled_from(
    [
        "/schemas",
        "/schemas/t",
        "/schemas/t/ns",
        "/schemas/t/ns/",
        "/schemas/t//x",
        "/schemas//ns/x",
        "/schemas/t/ns/x/y",
        "/schemas/t/ns/\u00e9",
        "/schemasx/t/ns/x",
    ]
)


@st.composite
def schema_reads(draw: st.DrawFn) -> list[tuple[str, bytes, tuple[int, ...]]]:
    out = []
    for _ in range(draw(st.integers(1, 16))):
        if draw(st.integers(0, 9)) < 8:
            path = "/schemas/" + "/".join(draw(st.lists(segment, min_size=2, max_size=2))) + "/" + draw(topic_names)
        else:
            path = draw(odd_schema_paths)
        data = draw(schema_values)
        s = draw(stats)
        dlen = len(data) if draw(st.integers(0, 9)) else MAX_BYTES + 1
        out.append((path, data, (*s[:8], dlen, s[9], s[8])))
    return out


@needs_schema_batch
@PROPS
@given(st.tuples(schema_reads(), ml_reads(), reads()).flatmap(lambda t: st.permutations(t[0] + t[1] + t[2])))
def test_the_schema_batch_writes_what_the_per_znode_path_writes(
    tmp_path_factory: pytest.TempPathFactory, chunk: Any
) -> None:
    _assert_batched_as_per_znode(tmp_path_factory, chunk)


@needs_schema_batch
def test_the_schema_batch_takes_well_formed_locators_and_leaves_the_rest() -> None:
    e = [SchemaIndexEntry(v, 100 + v, v, b"h") for v in (0, 1, 2)]
    usual = encode_schema_locator(SchemaLocator(e[2], tuple(e)))
    info_apart = encode_schema_locator(SchemaLocator(SchemaIndexEntry(5, 7, 8, b""), tuple(e[:1])))
    st_ = (1, 2, 3, 4, 0, 0, 0, 0, 10, 0, 1)
    good = [("/schemas/t/ns/a", usual, st_), ("/schemas/t/ns2/b-partition-1", info_apart, st_)]
    good.append(("/schemas/t/ns/caf%C3%A9+a%2Fb", info_apart, st_))  # URL-decoded as names.decode does
    left = [
        ("/schemas/t/ns/a%zz", usual, st_),  # a malformed escape: Python's DecodeError
        ("/schemas/t/ns/c", usual + b"\x18\x01", st_),
        ("/schemas/t/ns/d", b"", st_),
        ("/schemas/t/ns/e", usual, (*st_[:8], 1 << 30, *st_[9:])),
    ]
    n, rest, _, sarrays, lo, hi, scopes = native_batch.schema_batch("local", good + left, ROOT, 1 << 20)
    assert (n, rest, lo, hi, scopes) == (3, [3, 4, 5, 6], 2, 2, {"/schemas/t/ns": 2, "/schemas/t/ns2": 1})
    rows = _columns({"schema_index": sarrays}, "schema_index")
    assert rows["schema_version"] == [0, 1, 2, 0, 5, 0, 5]
    assert rows["topic"][4] == "persistent://t/ns2/b-partition-1"
    assert rows["topic"][-1] == "persistent://t/ns/caf\u00e9 a/b"
    assert rows["schema_id"][0] == "t/ns/a" and rows["schema_id"][-1] == "t/ns/caf%C3%A9+a%2Fb"
    # under a ledgers root of /schemas they are ledger-root paths: left to the per-znode path
    assert native_batch.schema_batch("local", good, "/schemas", 1 << 20)[:2] == (0, [0, 1, 2])


# ---- directories, partitioned topics and bundles (native.misc_batch) ----------------------------------------------

needs_misc_batch = pytest.mark.skipif(native.misc_batch is None, reason=f"native path not loaded: {native.STATUS}")
RANGES = [
    "0x00000000_0x40000000", "0xC0000000_0xffffffff", "0x40000000_0x40000000", "0x80000000_0x40000000",
    "0x0000000_0x40000000", "0X00000000_0x40000000", "0x0000000g_0x40000000", "0x00000000-0x40000000",
]  # fmt: skip
misc_segment = st.sampled_from(["t", "ns", "c1", "persistent", "non-persistent", "x%2Fy", "", *RANGES])
MISC_ROOTS = [
    "/managed-ledgers", "/schemas", "/admin/partitioned-topics", "/namespace", "/loadbalance/bundle-data",
    "/admin/policies", "/admin/local-policies", "/ledgers", "/namespacex", "/loadbalance",
]  # fmt: skip
PT_DOCS = [
    b'{"partitions":4,"deleted":false}', b'{"partitions":0}', b'{"deleted":true}', b"{}", b' { "partitions" : 12 } ',
    b'{"partitions":null,"deleted":null}', b'{"partitions":999999999}', b'{"partitions":1000000000}',
    b'{"partitions":2147483648}', b'{"partitions":-1}', b'{"partitions":01}', b'{"partitions":1.0}',
    b'{"partitions":1e2}', b'{"partitions":"3"}', b'{"partitions":true}', b'{"partitions":2,"partitions":3}',
    b'{"deleted":"true"}', b'{"deleted":1}', b'{"deleted":false,"deleted":true}', b'{"properties":{"a":"b"}}',
    b'{"partitions":3,"x":[1,{"y":null}],"z":"w"}', b'{"partitions":3} trailing', b'{"partitions":3}\n',
    b'{"partitions":3,}', b'{"a":"\\u0041"}', b'{"a":"\xc3\xa9","partitions":1}', b"\xef\xbb\xbf{}", b"[]",
    b"null", b"", b" ", b"{", b'{"a":NaN}', b'{"a":1e999}', b'{"a":' * 40 + b"1" + b"}" * 40, b'{"a":-0.5e-3}',
    b'{"a":"x\ty"}', b'{"partitions":3 ,"deleted" :true}',
]  # fmt: skip
OWNER_DOCS = [
    b'{"nativeUrl":"pulsar://b:6650","httpUrl":"http://b:8080","disabled":false,"advertisedListeners":{}}',
    b'{"nativeUrl":"a","nativeUrl":"b","disabled":true}', b'{"nativeUrl":5,"httpUrl":null}', b'{"disabled":null}',
    b'{"disabled":"x"}', b'{"disabled":0}', b'{"httpUrl":"h","disabled":false,"disabled":true}',
    b'{"shortTermData":{"maxSamples":10,"msgRateIn":11.0},"longTermData":{"numSamples":1000},"topics":6}',
]  # fmt: skip
misc_values = st.sampled_from(PT_DOCS + OWNER_DOCS) | st.binary(max_size=12)


@st.composite
def misc_reads(draw: st.DrawFn) -> list[tuple[str, bytes, tuple[int, ...]]]:
    out = []
    for _ in range(draw(st.integers(1, 24))):
        root = draw(st.sampled_from(MISC_ROOTS))
        segs = draw(st.lists(misc_segment, max_size=6))
        path = "/".join([root, *segs]) if segs else root
        data = draw(misc_values)
        s = draw(stats)
        dlen = len(data) if draw(st.integers(0, 9)) else MAX_BYTES + 1
        out.append((path, data, (*s[:8], dlen, s[9], s[8])))
    return out


@needs_misc_batch
@PROPS
@given(st.tuples(misc_reads(), ml_reads(), reads()).flatmap(lambda t: st.permutations(t[0] + t[1] + t[2])))
def test_the_misc_batch_writes_what_the_per_znode_path_writes(
    tmp_path_factory: pytest.TempPathFactory, chunk: Any
) -> None:
    _assert_batched_as_per_znode(tmp_path_factory, chunk)


@needs_misc_batch
@pytest.mark.parametrize("data", PT_DOCS + OWNER_DOCS)
def test_every_json_value_gives_the_per_znode_rows(tmp_path: Path, data: bytes) -> None:
    st_ = (1, 2, 3, 4, 0, 0, 0, 7, len(data), 0, 1)
    chunk = [
        ("/admin/partitioned-topics/t/ns/persistent/a%2Fb", data, st_),
        ("/admin/partitioned-topics/p/c/ns/non-persistent/x", data, st_),
        ("/namespace/t/ns/0x00000000_0x40000000", data, st_),
        ("/loadbalance/bundle-data/p/c/ns/0x40000000_0xffffffff", data, st_),
    ]
    assert _write(tmp_path / "fast", chunk, batch=True) == _write(tmp_path / "slow", chunk, batch=False)


@needs_misc_batch
def test_the_misc_batch_takes_directories_topics_and_bundles_and_leaves_the_rest() -> None:
    st_ = (1, 5, 3, 4, 0, 0, 0, 9, 10, 2, 1)
    owner = b'{"nativeUrl":"pulsar://b:6650","httpUrl":"http://b:8080","disabled":false}'
    good = [
        ("/managed-ledgers/t/ns/persistent", b"", st_),
        ("/managed-ledgers/p/c/ns", b"", st_),
        ("/schemas/t", b"", st_),
        ("/admin/partitioned-topics/t/ns/persistent", b"", st_),
        ("/admin/partitioned-topics/t/ns/persistent/caf%C3%A9", b'{"partitions":4,"deleted":true}', st_),
        ("/namespace/t/ns/0x00000000_0x40000000", owner, st_),
        ("/namespace/t/ns", b"", st_),
        ("/loadbalance/bundle-data/t/ns/0x40000000_0xffffffff", b'{"topics":6,"a":[1.5e3,null]}', st_),
        ("/loadbalance/bundle-data", b"", st_),
    ]
    left = [
        ("/managed-ledgers/t/ns/persistent/x", b"", st_),  # a topic: the ml batch's or Python's
        ("/schemas/t/ns/x", b"", st_),  # a schema
        ("/admin/partitioned-topics/t//persistent/x", b"{}", st_),  # an empty segment
        ("/admin/partitioned-topics/t/ns/persistent/x", b'{"partitions":"4"}', st_),  # a coerced value
        ("/admin/partitioned-topics/t/ns/persistent/%zz", b"{}", st_),  # a malformed escape: Python's DecodeError
        ("/namespace/t/ns/0x40000000_0x00000000", b"", st_),  # an empty range: DecodeError
        ("/loadbalance/bundle-data/t/ns/0x00000000_0x40000000", b"{", st_),  # invalid JSON: DecodeError
        ("/loadbalance/bundle-data/t/ns/0x00000000_0x80000000", b"{}", (*st_[:8], 1 << 30, *st_[9:])),  # oversized
        ("/admin/policies/t/ns", b"{}", st_),  # namespace policies: Python's
    ]
    n, rest, arrays, lo, hi, scopes = native_batch.misc_batch("local", good + left, ROOT, 1 << 20)
    assert (n, rest, lo, hi) == (9, list(range(9, 18)), 5, 5)
    assert scopes == {
        "/managed-ledgers/t/ns": 1, "/managed-ledgers/p/c/ns": 1, "/schemas": 1, "/admin/partitioned-topics": 2,
        "/namespace": 2, "/loadbalance/bundle-data": 2,
    }  # fmt: skip
    assert _columns(arrays, "znodes")["kind"] == [
        "ml-dir", "ml-dir", "schema-dir", "partitioned-dir", "partitioned-topic", "bundle-owner", "namespace-dir",
        "bundle-data", "bundle-data-dir",
    ]  # fmt: skip
    pt = _columns(arrays, "partitioned_topics")
    assert (pt["local_name"], pt["topic"], pt["partitions"], pt["deleted"]) == (
        ["caf\u00e9"],
        ["persistent://t/ns/caf\u00e9"],
        [4],
        [True],
    )
    bo = _columns(arrays, "bundle_owners")
    assert (bo["native_url"], bo["http_url"], bo["ephemeral_owner"]) == (["pulsar://b:6650"], ["http://b:8080"], [9])
    assert _columns(arrays, "bundle_data")["upper"] == [0xFFFFFFFF]
    # under a ledgers root of /namespace they are ledger-root paths: left to the per-znode path
    assert native_batch.misc_batch("local", good[5:7], "/namespace", 1 << 20)[:2] == (0, [0, 1])
    assert native_batch.spec("partitioned_topics") == "ssssssibiqqqiS"


@needs_misc_batch
def test_calls_alternating_between_packed_chunks_read_each_chunk_right() -> None:
    """The native side keeps the offsets of the last packed chunk it walked (the batches and unpack_reads take the same
    chunk in turn): alternating chunks, indexes and an equal copy of a chunk give what each list of reads gives."""
    from pulsar_ops.scrape.packed import unpack

    st_ = (1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1)
    a = [("/namespace/t/ns", b"", st_), ("/admin/policies/t/ns", b"{}", st_), ("/schemas/t", b"", st_)]
    b = [("/admin/clusters/c", b"{}", st_), *[(f"/managed-ledgers/t/ns{i}", b"", st_) for i in range(5)]]
    ra, rb = pack_reads_py("local", a), pack_reads_py("config", b)
    assert ra is not None and rb is not None
    for raw, reads in ((ra, a), (rb, b), (ra, a), (bytes(bytearray(rb)), b), (rb, b)):
        for idx in (None, [len(reads) - 1, 0], []):
            got = native_batch.misc_batch("local", raw, ROOT, 1 << 20, idx)
            want = native_batch.misc_batch("local", reads, ROOT, 1 << 20, idx)
            assert got[:2] == want[:2] and got[3:] == want[3:]
            assert unpack(raw, idx)[1] == (reads if idx is None else [reads[i] for i in idx])
    with pytest.raises(IndexError):
        unpack(ra, [len(a)])
