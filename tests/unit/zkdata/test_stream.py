"""The streaming read (two passes over the snapshot file, a partial tree replayed) gives exactly what the
in-memory ``DataTree`` load + replay gives: every node under the walked roots, its data and client stat."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata import txnlog as T
from pulsar_ops.zkdata.jute import STAT_PERSISTED
from pulsar_ops.zkdata.stream import (
    Partial,
    PartlyEmitted,
    SnapshotFile,
    doomed,
    emit_final,
    emit_replayed,
    load_partial,
    touched,
)
from pulsar_ops.zkdata.tree import DataTree, client_stat
from tests.unit.zkdata.snapshot_bytes import encode_snapshot
from tests.unit.zkdata.snapshot_bytes import stat as _stat

_NAMES = ["/a", "/a/x", "/a/x/q", "/a/y", "/b", "/b/z", "/b/z/w", "/c"]
_SESSIONS = [0, 0, 0, 41, 42]


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, bytes, bytes]]:
    present = sorted(set(draw(st.lists(st.sampled_from(_NAMES), max_size=8))))
    keep = [p for p in present if all(p[:i] in present for i in range(1, len(p)) if p[i] == "/")]
    out = [("", b"", _stat(0, cversion=len([p for p in keep if p.count("/") == 1])))]
    for i, p in enumerate(sorted(keep, key=lambda x: x.split("/"))):
        owner = draw(st.sampled_from(_SESSIONS)) if p.count("/") > 1 else 0
        out.append((p, draw(st.binary(max_size=4)), _stat(i + 1, owner=owner, cversion=draw(st.integers(0, 3)))))
    return out


@st.composite
def txn_lists(draw: st.DrawFn) -> list[T.Txn]:
    out: list[T.Txn] = []
    for i in range(draw(st.integers(0, 14))):
        zxid = 3 + i  # from the snapshot's zxid on: the first ones overlap a fuzzy snapshot
        kind = draw(st.sampled_from(["create", "eph", "delete", "set", "multi", "failed", "close", "close3.6"]))
        path = draw(st.sampled_from(_NAMES))
        data = draw(st.binary(max_size=3))
        session = draw(st.sampled_from([41, 42]))
        pcv = draw(st.integers(-1, 6))
        if kind == "create":
            txn = T.Txn(7, 0, zxid, 10_000 + zxid, T.CREATE, (T.Op(T.CREATE, path, data, (), 0, pcv),))
        elif kind == "eph":
            txn = T.Txn(session, 0, zxid, 10_000 + zxid, T.CREATE, (T.Op(T.CREATE, path, data, (), session, pcv),))
        elif kind == "delete":
            txn = T.Txn(7, 0, zxid, 10_000 + zxid, T.DELETE, (T.Op(T.DELETE, path),))
        elif kind == "set":
            txn = T.Txn(7, 0, zxid, 10_000 + zxid, T.SET_DATA, (T.Op(T.SET_DATA, path, data, version=i),))
        elif kind in ("multi", "failed"):
            ops = [T.Op(T.CREATE, path, data, (), 0, pcv), T.Op(T.DELETE, draw(st.sampled_from(_NAMES)))]
            if kind == "failed":
                ops.append(T.Op(T.ERROR, err=-101))
            txn = T.Txn(7, 0, zxid, 10_000 + zxid, T.MULTI, tuple(ops))
        elif kind == "close":
            txn = T.Txn(session, 0, zxid, 10_000 + zxid, T.CLOSE_SESSION, (T.Op(T.CLOSE_SESSION),))
        else:
            txn = T.Txn(session, 0, zxid, 10_000 + zxid, T.CLOSE_SESSION, (T.Op(T.CLOSE_SESSION, paths=(path,)),))
        out.append(txn)
    return out


def _reference(raw: bytes, txns: list[T.Txn], roots: dict[str, str]) -> tuple[set[tuple[object, ...]], DataTree]:
    stream = S.SnapshotStream(raw)
    stream.header()
    tree = DataTree.load(stream.nodes(), with_digest=True)
    trailer = stream.trailer()
    tree.zxid = 2
    if trailer.digest is not None:
        tree.expect_digest(trailer.digest.zxid, trailer.digest.digest)
    for txn in txns:
        tree.apply(txn)
    got: set[tuple[object, ...]] = set()
    for root, store in roots.items():
        for path, data, stat in tree.iter_subtree(root or "/"):
            got.add((store, path, bytes(data), stat))
    return got, tree


def _replay(part: Partial, trailer: S.SnapshotTrailer, txns: list[T.Txn]) -> DataTree:
    """The partial tree ``load_partial`` kept, with the snapshot's digest expected, after the replay of ``txns``."""
    tree = part.tree
    tree.zxid = 2
    if trailer.digest is not None:
        tree.expect_digest(trailer.digest.zxid, trailer.digest.digest)
    for txn in txns:
        tree.apply(txn)
    return tree


def _streamed(
    f: Path, txns: list[T.Txn], roots: dict[str, str], block: int
) -> tuple[set[tuple[object, ...]], DataTree, int]:
    paths, sessions = touched(txns)
    with SnapshotFile(f, block=block) as snap:
        part, _h, trailer = load_partial(snap, paths | {"", "/a", "/b"}, set(), sessions)
    tree = _replay(part, trailer, txns)
    got: set[tuple[object, ...]] = set()
    out: list[tuple[object, ...]] = []
    with SnapshotFile(f, block=block) as snap:
        n = emit_final(snap, part, roots, lambda s, p, d, c: out.append((s, p, bytes(d), c)))
    got = set(out)
    assert len(got) == len(out) == n  # each node once
    return got, tree, part.nodes


def _one_pass(
    f: Path, txns: list[T.Txn], roots: dict[str, str], block: int, batch: int | None = None
) -> tuple[set[tuple[object, ...]], DataTree, int]:
    """One-pass mode: nodes emitted while the snapshot is verified, the rest after the replay. With ``batch``,
    pass 1's nodes come through ``emit_many`` (lists of at most ``batch``, each of one store)."""
    paths, sessions = touched(txns)
    out: list[tuple[object, ...]] = []

    def emit(s: str, p: str, d: bytes, c: tuple[int, ...]) -> None:
        out.append((s, p, bytes(d), c))

    def emit_many(s: str, reads: list[tuple[str, bytes, tuple[int, ...]]]) -> None:
        assert batch is not None and 0 < len(reads) <= batch
        for p, d, c in reads:
            assert roots[p[: p.find("/", 1) if "/" in p[1:] else len(p)]] == s  # the store of the node's root
            emit(s, p, d, c)

    with SnapshotFile(f, block=block) as snap:
        part, _h, trailer = load_partial(
            snap,
            paths | {"", "/a", "/b"},
            set(),
            sessions,
            roots=roots,
            emit=emit,
            doomed_paths=doomed(txns),
            emit_many=None if batch is None else emit_many,
            emit_batch=batch or 1,
        )
    tree = _replay(part, trailer, txns)
    n = emit_replayed(part, roots, emit)
    got = set(out)
    assert len(got) == len(out) == n  # each node once
    return got, tree, part.nodes


def _one_pass_in_lists(
    f: Path, txns: list[T.Txn], roots: dict[str, str], block: int
) -> tuple[set[tuple[object, ...]], DataTree, int]:
    return _one_pass(f, txns, roots, block, batch=3)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    trees(),
    txn_lists(),
    st.sampled_from(["", "gz", "snappy"]),
    st.sampled_from([7, 64, 1 << 20]),
    st.sampled_from([_streamed, _one_pass, _one_pass_in_lists]),
)
def test_streaming_equals_the_in_memory_replay(
    tmp_path: Path,
    nodes: list[tuple[str, bytes, bytes]],
    txns: list[T.Txn],
    comp: str,
    block: int,
    read: Callable[[Path, list[T.Txn], dict[str, str], int], tuple[set[tuple[object, ...]], DataTree, int]],
) -> None:
    ref_tree = DataTree.load(iter([(p, d, 1, s) for p, d, s in nodes]), with_digest=True)
    raw = encode_snapshot(nodes, digest=(5, ref_tree.digest))
    name = "snapshot.2" + (f".{comp}" if comp else "")
    body = raw
    if comp == "gz":
        body = gzip.compress(raw)
    elif comp == "snappy":
        body = S.SNAPPY_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
        for i in range(0, len(raw), 50):
            block_bytes = bytes(cramjam.snappy.compress_raw(raw[i : i + 50]))
            body += len(block_bytes).to_bytes(4, "big") + block_bytes
    f = tmp_path / name
    f.write_bytes(body)
    roots = {"/a": "config", "/b": "local"}
    want, ref = _reference(raw, txns, roots)
    got, tree, count = read(f, txns, roots, block)
    assert got == want
    assert count == len(nodes)
    assert tree.stats == ref.stats
    assert tree.pending_digest == ref.pending_digest  # the digest check comes out the same
    for p in ("", "/a", "/b"):  # whole-tree reads (chroot, identity znodes) from the partial tree
        a, b = tree.get(p), ref.get(p)
        assert (a is None) == (b is None)


def test_a_cut_or_flipped_snapshot_is_corrupt_in_streaming_mode(tmp_path: Path) -> None:
    nodes = [("", b"", _stat(0)), ("/a", b"A", _stat(1)), ("/a/x", b"X" * 40, _stat(2))]
    raw = encode_snapshot(nodes)
    for bad in (raw[:-30], raw[:50] + bytes([raw[50] ^ 1]) + raw[51:]):
        f = tmp_path / "snapshot.2"
        f.write_bytes(bad + (b"" if bad.endswith(b"\x00\x00\x00\x01/") else b"\x00\x00\x00\x01/"))
        with SnapshotFile(f, block=16) as snap, pytest.raises(S.SnapshotCorrupt):
            load_partial(snap, set(), set(), set())


def test_client_stat_of_a_kept_node_counts_its_untouched_children(tmp_path: Path) -> None:
    nodes = [("", b"", _stat(0)), ("/a", b"A", _stat(1, cversion=2)), ("/a/x", b"", _stat(2)), ("/a/y", b"", _stat(3))]
    f = tmp_path / "snapshot.2"
    f.write_bytes(encode_snapshot(nodes))
    txns = [T.Txn(7, 0, 4, 10_004, T.CREATE, (T.Op(T.CREATE, "/a/z", b"", (), 0, 3),))]
    got, _tree, _n = _streamed(f, txns, {"/a": "local"}, 1 << 20)
    a = next(c for _s, p, _d, c in got if p == "/a")
    node = [b"A", STAT_PERSISTED.pack(1, 1, 1001, 2001, 0, 3, 0, 0, 4), {"x": 0, "y": 0, "z": 0}]
    assert a == client_stat(node[0], node[1], node[2])  # type: ignore[arg-type]
    assert a[9] == 3 and a[5] == 3 * 2 - 3


def test_a_snapshot_found_corrupt_after_emitting_says_so(tmp_path: Path) -> None:
    """One-pass mode: a checksum failure found once nodes were handed on is PartlyEmitted (the caller must discard
    them); found before anything was emitted it stays a plain SnapshotCorrupt (the fallback reads the next)."""
    nodes = [("", b"", _stat(0)), ("/a", b"A", _stat(1)), ("/a/x", b"X" * 40, _stat(2))]
    raw = encode_snapshot(nodes)
    bad = raw[:50] + bytes([raw[50] ^ 1]) + raw[51:]  # a flipped data byte: only the seal at the end tells
    f = tmp_path / "snapshot.2"
    f.write_bytes(bad)
    out: list[str] = []
    with SnapshotFile(f, block=16) as snap, pytest.raises(PartlyEmitted):
        load_partial(snap, set(), set(), set(), roots={"/a": "local"}, emit=lambda s, p, d, c: out.append(p))
    assert out
    with SnapshotFile(f, block=16) as snap, pytest.raises(S.SnapshotCorrupt) as e:
        load_partial(snap, set(), set(), set(), roots={"/b": "local"}, emit=lambda s, p, d, c: out.append(p))
    assert not isinstance(e.value, PartlyEmitted)


def test_the_subtree_of_a_node_the_replay_deletes_is_not_emitted(tmp_path: Path) -> None:
    """A fuzzy snapshot can hold children under a node the log deletes; one-pass mode holds them back and drops
    them with it (as DataTree._delete does), and emits those of a node that survives."""
    nodes = [
        ("", b"", _stat(0, cversion=2)),
        ("/a", b"A", _stat(1, cversion=1)),
        ("/a/x", b"", _stat(2, cversion=1)),
        ("/a/x/q", b"Q", _stat(3)),
        ("/b", b"", _stat(4)),
    ]
    f = tmp_path / "snapshot.2"
    f.write_bytes(encode_snapshot(nodes))
    txns = [T.Txn(7, 0, 5, 10_005, T.DELETE, (T.Op(T.DELETE, "/a/x"),))]
    roots = {"/a": "local", "/b": "local"}
    want, _ref = _reference(encode_snapshot(nodes), txns, roots)
    got, _tree, _n = _one_pass(f, txns, roots, 1 << 20)
    assert got == want
    assert {p for _s, p, _d, _c in got} == {"/a", "/b"}


def test_pass_one_hands_nodes_over_in_lists_of_one_store(tmp_path: Path) -> None:
    """``emit_many``: pass 1's nodes (post-order) in lists of at most ``emit_batch``, a list handed over early when
    the next node belongs to the other store; each node with the same client stat the per-node ``emit`` gives."""
    nodes = [
        ("", b"", _stat(0, cversion=3)),
        ("/a", b"A", _stat(1, cversion=2)),
        ("/a/x", b"x", _stat(2)),
        ("/a/y", b"", _stat(3)),
        ("/b", b"", _stat(4, cversion=1)),
        ("/b/z", b"zz", _stat(5)),
        ("/c", b"", _stat(6)),
    ]
    f = tmp_path / "snapshot.2"
    f.write_bytes(encode_snapshot(nodes))
    roots = {"/a": "config", "/b": "local"}
    lists: list[tuple[str, list[tuple[str, bytes, tuple[int, ...]]]]] = []
    one: list[tuple[str, str, bytes, tuple[int, ...]]] = []
    with SnapshotFile(f) as snap:
        load_partial(snap, set(), set(), set(), roots=roots, emit_many=lambda s, r: lists.append((s, r)), emit_batch=2)
    with SnapshotFile(f) as snap:
        load_partial(snap, set(), set(), set(), roots=roots, emit=lambda s, p, d, c: one.append((s, p, d, c)))
    assert [(s, [p for p, _d, _c in r]) for s, r in lists] == [
        ("config", ["/a/x", "/a/y"]),
        ("config", ["/a"]),
        ("local", ["/b/z", "/b"]),
    ]
    assert [(s, p, d, c) for s, r in lists for p, d, c in r] == one
    assert dict((p, c) for _s, p, _d, c in one)["/a"][5] == 2 * 2 - 2  # the client cversion: 2 * stored - children
