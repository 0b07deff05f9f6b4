"""Pass 1's walk in native code (``native.snap_walker``) gives exactly what the pure loop gives: the same nodes
handed over in the same order and lists (store, client stat; packed, their paths cut by the chroot), the same
partial tree, deferred nodes, child counts, ephemerals and digest, and the same error for a snapshot whose nodes are
out of order. The pure loop is the definition."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops import native
from pulsar_ops.scrape.packed import pack_reads_py, unpack_reads_py
from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata import stream
from pulsar_ops.zkdata.stream import SnapshotFile, load_partial
from tests.unit.zkdata.snapshot_bytes import encode_snapshot
from tests.unit.zkdata.snapshot_bytes import stat as _stat

pytestmark = pytest.mark.skipif(native.snap_walker is None, reason=f"native module: {native.STATUS}")

_SEGMENTS = ["a", "b", "ab", "é", "x\udcff"]  # a non-ASCII name and one read with surrogateescape
_OWNERS = [0, 0, 0, 41, 42, -(1 << 63), -(1 << 63) + (0x7F << 56) + 5, (0xFF << 56) - (1 << 64) + 9, -5]


@st.composite
def snapshots(draw: st.DrawFn) -> list[tuple[str, bytes, bytes]]:
    """Pre-order node records; now and then out of order (an orphan, or a first node that is not the root), now and
    then a value longer than the mapped window the test sets."""
    paths = {""}
    for _ in range(draw(st.integers(0, 24))):
        parent = draw(st.sampled_from(sorted(paths)))
        if parent.count("/") < 4:
            paths.add(f"{parent}/{draw(st.sampled_from(_SEGMENTS))}")
    ordered = sorted(paths, key=lambda p: p.split("/")[1:] if p else [])
    out = []
    for i, p in enumerate(ordered):
        data = draw(st.one_of(st.binary(max_size=3), st.binary(max_size=3).map(lambda b: b * 2500)))
        out.append((p, data, _stat(i, owner=draw(st.sampled_from(_OWNERS)), cversion=i % 4)))
    corrupt = draw(st.sampled_from(["", "", "", "", "orphan", "no-root"]))
    if corrupt == "orphan" and len(out) > 2:
        del out[draw(st.integers(1, len(out) - 2))]  # its children lose their parent (if it has any)
    elif corrupt == "no-root" and len(out) > 1:
        del out[0]
    return out


def _run(f: Path, block: int, walk: Any, args: dict[str, Any], packed: bool) -> dict[str, Any]:
    """load_partial with the pure loop (``walk`` None) or the native walk; the nodes handed over as (store, reads)
    lists, each path cut by ``args["cut"]`` characters (``emit_packed``'s chunks unpacked by the pure twin)."""
    lists: list[tuple[str, list[Any]]] = []
    cut = args["cut"]

    def many(store: str, reads: list[Any]) -> None:
        lists.append((store, [(p[cut:], d, s) for p, d, s in reads]))

    def packed_chunk(store: str, raw: bytes, n: int, mtime: int) -> None:
        got_store, reads = unpack_reads_py(raw)
        assert got_store == store and len(reads) == n and mtime == max(s[3] for _p, _d, s in reads)
        lists.append((store, reads))

    saved = stream._WALK[0]
    stream._WALK[0] = walk
    try:
        with SnapshotFile(f, block=block) as snap:
            part, _h, _t = load_partial(
                snap,
                args["keep"],
                args["keep_children"],
                args["sessions"],
                roots=args["roots"],
                emit_many=many if args["emit"] else None,
                doomed_paths=args["dead"],
                emit_batch=args["batch"],
                emit_packed=packed_chunk if packed else None,
                cut=cut if packed else 0,
            )
    except S.SnapshotCorrupt as e:
        return {"error": (type(e).__name__, str(e)), "reads": [(s, r) for s, rs in lists for r in rs]}
    finally:
        stream._WALK[0] = saved
    by_id = {id(n): p for p, n in part.originals.items()}
    return {
        "reads": [(s, r) for s, rs in lists for r in rs],
        "lists": lists,
        "nodes": part.nodes,
        "emitted": part.emitted,
        "deferred": part.deferred,
        "originals": {p: (n[0], n[1], sorted(n[2]) if n[2] is not None else None) for p, n in part.originals.items()},
        "unloaded": {by_id[i]: k for i, k in part.unloaded.items()},
        "ephemerals": part.tree.ephemerals,
        "digest": part.tree.digest,
        "root": part.tree.root is part.originals.get(""),
    }


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(snapshots(), st.data())
def test_the_native_walk_equals_the_pure_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: list[tuple[str, bytes, bytes]], data: st.DataObject
) -> None:
    paths = sorted({p for p, _d, _s in nodes} | {"/a", "/zz"})
    subset = st.sets(st.sampled_from(paths), max_size=3)
    args = {
        "keep": data.draw(subset),
        "keep_children": data.draw(subset),
        "sessions": data.draw(st.sets(st.sampled_from([41, 42, 7]), max_size=2)),
        "dead": data.draw(subset),
        "roots": data.draw(st.dictionaries(st.sampled_from(paths), st.sampled_from(["local", "config"]), max_size=4)),
        "batch": data.draw(st.integers(1, 5)),
        "emit": data.draw(st.booleans()),
        "cut": data.draw(st.sampled_from([0, 0, 1, 2, 3])),
    }
    raw = encode_snapshot(nodes)
    gz = data.draw(st.booleans())  # a plain file is mapped a window at a time; a gzip one read in blocks
    f = tmp_path / ("snapshot.2.gz" if gz else "snapshot.2")
    f.write_bytes(gzip.compress(raw) if gz else raw)
    block = data.draw(st.sampled_from([7, 64, 1 << 20]))  # small blocks: the walk resumes across reads
    monkeypatch.setattr(stream, "MAP_WINDOW", data.draw(st.sampled_from([4096 + 64, 1 << 20])))  # 2 KB + records
    pure = _run(f, block, None, args, packed=False)
    native_lists = _run(f, block, native.snap_walker, args, packed=False)
    native_packed = _run(f, block, native.snap_walker, args, packed=True)
    if not any("\udcff" in p for p, _d, _s in nodes):  # a path that is not UTF-8 goes in a list of its own
        assert native_lists == pure and native_packed == pure
    for got in (native_lists, native_packed):
        assert {**got, "lists": None} == {**pure, "lists": None}
        assert all(0 < len(r) <= args["batch"] for _s, r in got.get("lists", []))


def test_the_native_walk_hands_over_packed_chunks(tmp_path: Path) -> None:
    """The chunks are scrape.packed's layout as pack_reads_py writes it (the chroot cut from the paths), one store
    each, at most the batch size; a kept node goes to the partial tree and is not emitted in pass 1."""
    assert native.snap_walker is not None
    nodes = [
        ("", b"", _stat(0)),
        ("/c", b"", _stat(1)),
        ("/c/a", b"A", _stat(2)),
        ("/c/a/x", b"X", _stat(3)),
        ("/c/b", b"B", _stat(4)),
        ("/c/k", b"K", _stat(5)),
    ]
    f = tmp_path / "snapshot.2"
    f.write_bytes(encode_snapshot(nodes))
    chunks: list[tuple[str, bytes, int, int]] = []
    with SnapshotFile(f) as snap:
        part, _h, _t = load_partial(
            snap,
            {"/c/k"},
            set(),
            set(),
            roots={"/c/a": "local", "/c/b": "config", "/c/k": "config"},
            emit_many=lambda s, r: pytest.fail("all UTF-8: nothing goes unpacked"),
            doomed_paths=set(),
            emit_batch=2,
            emit_packed=lambda *c: chunks.append(c),
            cut=2,
        )

    def client(i: int, data: bytes, n: int) -> tuple[int, ...]:
        return (i, i, 1000 + i, 2000 + i, 0, -n, 0, 0, len(data), n, i)  # cversion 0: 0 * 2 - n

    assert chunks == [
        (
            "local",
            pack_reads_py("local", [("/a/x", b"X", client(3, b"X", 0)), ("/a", b"A", client(2, b"A", 1))]),
            2,
            2003,
        ),
        ("config", pack_reads_py("config", [("/b", b"B", client(4, b"B", 0))]), 1, 2004),
    ]
    assert part.emitted == 3 and part.nodes == 6 and sorted(part.originals) == ["", "/c", "/c/k"]


def test_a_file_that_cannot_be_mapped_is_read_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mmap refused (a file system without it): the walk reads on in blocks, with the same result."""
    nodes = [("", b"", _stat(0)), ("/a", b"A" * 3000, _stat(1)), ("/a/b", b"B", _stat(2)), ("/c", b"C", _stat(3))]
    f = tmp_path / "snapshot.2"
    f.write_bytes(encode_snapshot(nodes))
    args = {"keep": {"/c"}, "keep_children": set(), "sessions": set(), "dead": set(), "roots": {"/a": "local"}}
    args |= {"batch": 2, "emit": True, "cut": 0}
    mapped = _run(f, 64, native.snap_walker, args, packed=True)

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise OSError("no mmap here")

    monkeypatch.setattr(stream.mmap, "mmap", refuse)
    assert _run(f, 64, native.snap_walker, args, packed=True) == mapped == _run(f, 64, None, args, packed=False)
    assert [p for _s, (p, _d, _c) in mapped["reads"]] == ["/a/b", "/a"] and mapped["digest"] is not None
