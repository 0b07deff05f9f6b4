"""Property tests of the ZooKeeper data-directory codecs (jute, transaction log, snapshot stream) and the replay
rules of DataTree, on synthetic bytes built with the fixture writers. The real-server tests
(tests/zk/test_scrape_zk_data_dir.py) check the same decoders against files ZooKeeper 3.4.14 / 3.6.2 / 3.9 wrote.
"""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata import txnlog as T
from pulsar_ops.zkdata.jute import STAT_PERSISTED, Acl, JuteReader, JuteWriter
from pulsar_ops.zkdata.tree import DataTree, client_stat, node_digest
from tests.unit.zkdata.snapshot_bytes import encode_snapshot
from tests.unit.zkdata.snapshot_bytes import stat as _stat

i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(alphabet="abcxyz-_.0123456789é", min_size=1, max_size=8)
paths = st.lists(names, min_size=1, max_size=4).map(lambda xs: "/" + "/".join(xs))
acls = st.lists(st.builds(Acl, st.integers(0, 31), st.sampled_from(["world", "digest", "ip"]), names), max_size=3)


@given(
    st.lists(
        st.one_of(
            i32.map(lambda v: ("i", v)),
            i64.map(lambda v: ("l", v)),
            st.none().map(lambda v: ("b", v)),
            st.binary(max_size=40).map(lambda v: ("b", v)),
            st.text(max_size=10).map(lambda v: ("s", v)),
            st.booleans().map(lambda v: ("z", v)),
        )
    )
)
def test_jute_primitives_round_trip(items: list[tuple[str, object]]) -> None:
    w = JuteWriter()
    for kind, v in items:
        {"i": w.i32, "l": w.i64, "b": w.buffer, "s": w.ustring, "z": w.boolean}[kind](v)  # type: ignore[operator]
    r = JuteReader(w.getvalue())
    for kind, v in items:
        got = {"i": r.i32, "l": r.i64, "b": r.buffer, "s": r.ustring, "z": r.boolean}[kind]()
        assert got == v
    assert r.remaining() == 0


def _op(t: int) -> st.SearchStrategy[T.Op]:
    if t in (T.CREATE, T.CREATE2):
        return st.builds(
            lambda p, d, a, eph, pcv: T.Op(t, p, d, tuple(a), 0x1234 if eph else 0, pcv),
            paths,
            st.binary(max_size=20),
            acls,
            st.booleans(),
            i32,
        )
    if t == T.CREATE_CONTAINER:
        return st.builds(
            lambda p, d, a, pcv: T.Op(t, p, d, tuple(a), T.CONTAINER_OWNER, pcv),
            paths,
            st.binary(max_size=8),
            acls,
            i32,
        )
    if t == T.CREATE_TTL:
        return st.builds(
            lambda p, a, pcv, ttl: T.Op(t, p, b"", tuple(a), T.ttl_owner(ttl), pcv),
            paths,
            acls,
            i32,
            st.integers(1, 2**40),
        )
    if t in (T.DELETE, T.DELETE_CONTAINER):
        return st.builds(lambda p: T.Op(t, p), paths)
    if t in (T.SET_DATA, T.RECONFIG):
        return st.builds(lambda p, d, v: T.Op(t, p, d, version=v), paths, st.binary(max_size=20), i32)
    if t == T.SET_ACL:
        return st.builds(lambda p, a, v: T.Op(t, p, acl=tuple(a), version=v), paths, acls, i32)
    if t == T.CHECK:
        return st.builds(lambda p, v: T.Op(t, p, version=v), paths, i32)
    return st.builds(lambda e: T.Op(T.ERROR, err=e), i32)


_SUB = [T.CREATE, T.CREATE_CONTAINER, T.CREATE_TTL, T.DELETE, T.SET_DATA, T.CHECK, T.ERROR]
_TOP = [T.CREATE, T.CREATE2, T.CREATE_CONTAINER, T.CREATE_TTL, T.DELETE, T.SET_DATA, T.SET_ACL, T.RECONFIG, T.ERROR]


@st.composite
def txns(draw: st.DrawFn) -> T.Txn:
    kind = draw(st.sampled_from(["top", "multi", "close", "session"]))
    if kind == "multi":
        ops = tuple(draw(st.lists(st.sampled_from(_SUB).flatmap(_op), max_size=4)))
        t = T.MULTI
    elif kind == "close":
        ops = (T.Op(T.CLOSE_SESSION, paths=draw(st.none() | st.lists(paths, max_size=3).map(tuple))),)
        t = T.CLOSE_SESSION
    elif kind == "session":
        ops, t = (T.Op(T.CREATE_SESSION, version=draw(i32)),), T.CREATE_SESSION
    else:
        op = draw(st.sampled_from(_TOP).flatmap(_op))
        ops, t = (op,), op.type
    client = 0x1234 if any(o.owner == 0x1234 for o in ops) else draw(st.sampled_from([0x1234, 7]))
    ops = tuple(T.Op(o.type, o.path, o.data, o.acl, client, o.parent_cversion) if o.owner == 0x1234 else o for o in ops)
    digest = draw(st.none() | i64.map(lambda d: (2, d)))  # TxnDigest: upstream DIGEST_VERSION is 2
    return T.Txn(client, draw(i32), draw(st.integers(1, 2**40)), draw(i64), t, ops, digest)


@settings(max_examples=100, deadline=None)
@given(txns())
def test_txn_entries_round_trip(txn: T.Txn) -> None:
    assert T.decode_entry(T.encode_entry(txn)) == txn


def test_create_txn_v0_reads_with_parent_cversion_minus_one() -> None:
    w = JuteWriter()
    w.out += struct.pack(">qiqqi", 5, 1, 9, 1000, T.CREATE)
    w.ustring("/a").buffer(b"x").acl_vector(()).boolean(True)  # CreateTxnV0: no parentCVersion
    txn = T.decode_entry(w.getvalue())
    assert txn.ops == (T.Op(T.CREATE, "/a", b"x", (), 5, -1),)


@settings(max_examples=30, deadline=None)
@given(st.lists(txns(), min_size=1, max_size=6), st.data())
def test_a_log_cut_anywhere_yields_its_whole_records_and_says_where(records: list[T.Txn], data: st.DataObject) -> None:
    body = [T.encode_record(T.encode_entry(t)) for t in records]
    buf = T.encode_header(42) + b"".join(body) + bytes(64)  # preallocated zero padding
    got, end = T.read_log(buf)
    assert [r.txn for r in got] == records and end.reason == "eof"
    cut = data.draw(st.integers(16, 16 + sum(map(len, body)) - 1))
    got, end = T.read_log(buf[:cut])
    bounds = [16]
    for b in body:
        bounds.append(bounds[-1] + len(b))
    whole = sum(1 for x in bounds[1:] if x <= cut)
    assert [r.txn for r in got] == records[:whole]
    # a cut tail of zeros reads as the preallocated padding (upstream cannot tell them apart either)
    tail = buf[bounds[whole] : cut]
    assert end.offset == bounds[whole] and end.reason == ("eof" if not any(tail) else "partial")


def test_a_flipped_byte_in_a_record_is_a_crc_stop() -> None:
    t = T.Txn(1, 1, 5, 7, T.DELETE, (T.Op(T.DELETE, "/x"),))
    rec = bytearray(T.encode_record(T.encode_entry(t)))
    rec[14] ^= 1
    got, end = T.read_log(T.encode_header() + T.encode_record(T.encode_entry(t)) + bytes(rec))
    assert len(got) == 1 and end.reason == "crc" and end.offset == 16 + len(rec)
    with pytest.raises(T.TxnLogCorrupt):
        T.read_log(b"ZKSN" + bytes(12))


# ---------------------------------------------------------------------------------------------- snapshots


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, bytes, bytes]]:
    """A pre-order node list: the root "", then random children."""
    out: list[tuple[str, bytes, bytes]] = [("", b"", _stat(0))]
    existing = [""]
    for i in range(draw(st.integers(0, 12))):
        parent = draw(st.sampled_from(existing))
        out.append((f"{parent}/n{i}", draw(st.binary(max_size=16)), _stat(i + 1)))
        existing.append(f"{parent}/n{i}")
    # pre-order: sort by path segments (children after their parent)
    return sorted(out, key=lambda n: n[0].split("/"))


def _load(raw: bytes) -> tuple[DataTree, S.SnapshotTrailer]:
    s = S.SnapshotStream(raw)
    s.header()
    tree = DataTree.load(s.nodes(), with_digest=True)
    return tree, s.trailer()


@settings(max_examples=50, deadline=None)
@given(trees(), st.sampled_from(["", "gz", "snappy"]), st.booleans(), st.booleans())
def test_snapshots_round_trip_in_every_compression(
    nodes: list[tuple[str, bytes, bytes]], comp: str, with_digest: bool, with_last: bool
) -> None:
    digest = sum(node_digest(p or "/", d, s) for p, d, s in nodes) & ((1 << 64) - 1)
    digest = digest - (1 << 64) if digest >> 63 else digest
    raw = encode_snapshot(nodes, digest=(9, digest) if with_digest else None, last_zxid=9 if with_last else None)
    if comp == "gz":
        raw = gzip.compress(raw)
    elif comp == "snappy":
        blocks = [raw[i : i + 50] for i in range(0, len(raw), 50)]
        raw = S.SNAPPY_MAGIC + struct.pack(">ii", 1, 1)
        raw += b"".join(struct.pack(">i", len(c)) + c for c in (bytes(cramjam.snappy.compress_raw(b)) for b in blocks))
    assert S.looks_valid(raw, comp)
    tree, trailer = _load(S.decompress(raw, comp))
    for path, data, stat in nodes:
        node = tree.get(path or "/")
        assert node is not None and bytes(node[0]) == data and bytes(node[1]) == stat
    assert tree.count() == len(nodes)
    assert trailer.digest == (S.ZxidDigest(9, 2, digest) if with_digest else None)
    assert trailer.last_processed_zxid == (9 if with_last else None)
    assert tree.digest == digest  # the running digest of the loaded tree is the one serialized


@settings(max_examples=60)
@given(trees(), st.data())
def test_any_flipped_byte_makes_the_snapshot_corrupt(
    nodes: list[tuple[str, bytes, bytes]], data: st.DataObject
) -> None:
    raw = bytearray(encode_snapshot(nodes))
    i = data.draw(st.integers(0, len(raw) - 6))  # not in the final "/" (isValidSnapshot catches those)
    raw[i] ^= data.draw(st.integers(1, 255))
    with pytest.raises(S.SnapshotCorrupt):
        _load(bytes(raw))


def test_name_rules_follow_util_get_zxid_from_name_and_snapstream() -> None:
    assert S.zxid_from_name("snapshot.1a2b", "snapshot") == 0x1A2B
    assert S.zxid_from_name("snapshot.1a2b.snappy", "snapshot") == 0x1A2B
    assert S.zxid_from_name("snapshot.xyz", "snapshot") == -1 and S.zxid_from_name("log.10", "snapshot") == -1
    assert S.compression_of("snapshot.10.GZ") == "gz" and S.compression_of("snapshot.10") == ""
    assert not S.looks_valid(b"\x00" * 20, "") and not S.looks_valid(b"xx", "gz")


# ---------------------------------------------------------------------------------------------- replay


def _tree() -> DataTree:
    nodes = [("", b"", _stat(0)), ("/a", b"A", _stat(1)), ("/a/b", b"B", _stat(2)), ("/e", b"", _stat(3, owner=77))]
    return DataTree.load(iter([(p, d, 1, s) for p, d, s in nodes]))


def _txn(zxid: int, *ops: T.Op, t: int | None = None, client: int = 5) -> T.Txn:
    return T.Txn(client, 0, zxid, 10_000 + zxid, t if t is not None else ops[0].type, tuple(ops))


def test_a_failed_multi_applies_none_of_its_ops() -> None:
    tree = _tree()
    tree.apply(_txn(10, T.Op(T.CREATE, "/a/phantom", b"p", (), 0, -1), T.Op(T.ERROR, err=-101), t=T.MULTI))
    assert tree.get("/a/phantom") is None and tree.stats.failed_multis == 1
    tree.apply(_txn(11, T.Op(T.CREATE, "/a/real", b"r", (), 0, -1), T.Op(T.DELETE, "/a/b"), t=T.MULTI))
    assert tree.get("/a/real") is not None and tree.get("/a/b") is None
    assert tree.zxid == 11 and tree.stats.last_time_ms == 10_011


def test_the_client_sees_cversion_as_stored_times_two_minus_children() -> None:
    tree = _tree()
    for i, name in enumerate(("c1", "c2", "c3")):
        tree.apply(_txn(10 + i, T.Op(T.CREATE, f"/a/{name}", b"", (), 0, -1)))
    tree.apply(_txn(20, T.Op(T.DELETE, "/a/c1")))
    tree.apply(_txn(21, T.Op(T.DELETE, "/a/c2")))
    node = tree.get("/a")
    assert node is not None
    stored = STAT_PERSISTED.unpack(node[1])[5]
    seen = client_stat(node[0], node[1], node[2])
    assert stored == 3  # one per create
    assert seen[5] == 3 * 2 - 2 == 4 and seen[9] == 2  # b and c3 left: 3 creates and 2 deletes after b's create
    assert seen[10] == 21  # pzxid: the last delete


def test_replaying_a_create_over_a_fuzzy_snapshot_only_raises_the_parent_cversion() -> None:
    tree = _tree()
    tree.apply(_txn(30, T.Op(T.CREATE, "/a/b", b"other", (), 0, 5)))  # already there (fuzzy snapshot)
    node, parent = tree.get("/a/b"), tree.get("/a")
    assert node is not None and parent is not None and bytes(node[0]) == b"B"
    assert STAT_PERSISTED.unpack(parent[1])[5] == 5 and STAT_PERSISTED.unpack(parent[1])[8] == 30
    tree.apply(_txn(31, T.Op(T.CREATE, "/a/b", b"", (), 0, 2)))  # an older cversion: no change
    assert STAT_PERSISTED.unpack(parent[1])[5] == 5


def test_close_session_deletes_its_ephemerals_and_containers_read_as_no_owner() -> None:
    tree = _tree()
    tree.apply(_txn(10, T.Op(T.CREATE, "/a/eph", b"", (), 77, -1), client=77))
    tree.apply(_txn(11, T.Op(T.CREATE_CONTAINER, "/c", b"", (), T.CONTAINER_OWNER, -1)))
    tree.apply(_txn(12, T.Op(T.CLOSE_SESSION, paths=None), client=77))
    assert tree.get("/e") is None and tree.get("/a/eph") is None
    c = tree.get("/c")
    assert c is not None and client_stat(c[0], c[1], c[2])[7] == 0


_NAMES = ["/a", "/a/x", "/a/y", "/b", "/b/z"]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["create", "delete", "set", "multi"]), st.sampled_from(_NAMES), st.binary(max_size=3)
        ),
        min_size=1,
        max_size=15,
    )
)
def test_replaying_the_snapshot_zxid_again_changes_nothing(steps: list[tuple[str, str, bytes]]) -> None:
    """The record at the snapshot's zxid is replayed once more (ZOOKEEPER-3127): it must be a no-op."""
    tree = DataTree.load(iter([("", b"", 1, _stat(0))]))
    last = None
    for i, (kind, path, data) in enumerate(steps):
        zxid = 100 + i
        parent = tree.get(path.rpartition("/")[0] or "/")
        # the server logs the parent's cversion after the create (PrepRequestProcessor); -1 is only a V0 create's
        pcv = STAT_PERSISTED.unpack(parent[1])[5] + 1 if parent is not None else 1
        if kind == "create":
            last = _txn(zxid, T.Op(T.CREATE, path, data, (), 0, pcv))
        elif kind == "delete":
            last = _txn(zxid, T.Op(T.DELETE, path))
        elif kind == "set":
            last = _txn(zxid, T.Op(T.SET_DATA, path, data, version=i))
        else:
            last = _txn(
                zxid, T.Op(T.CREATE, path, data, (), 0, pcv), T.Op(T.SET_DATA, path, data, version=i), t=T.MULTI
            )
        tree.apply(last)
    before = list(tree.iter_subtree("/"))
    assert last is not None
    tree.apply(last)
    assert list(tree.iter_subtree("/")) == before
