"""Pass 1's walk in native code (``native.snap_walk``) gives exactly what the pure loop gives: the same nodes
handed over in the same lists (store, order, client stat), the same partial tree, deferred nodes, child counts and
ephemerals, and the same error for a snapshot whose nodes are out of order. The pure loop is the definition; the
native walk leaves the root, every kept node and every error to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops import native
from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata import stream
from pulsar_ops.zkdata.stream import SnapshotFile, load_partial
from tests.unit.zkdata.snapshot_bytes import encode_snapshot
from tests.unit.zkdata.snapshot_bytes import stat as _stat

pytestmark = pytest.mark.skipif(native.snap_walk is None, reason=f"native module: {native.STATUS}")

_SEGMENTS = ["a", "b", "ab", "é", "x\udcff"]  # a non-ASCII name and one read with surrogateescape
_OWNERS = [0, 0, 0, 41, 42, -(1 << 63), -(1 << 63) + (0x7F << 56) + 5, (0xFF << 56) - (1 << 64) + 9, -5]


@st.composite
def snapshots(draw: st.DrawFn) -> list[tuple[str, bytes, bytes]]:
    """Pre-order node records; now and then out of order (an orphan, or a first node that is not the root)."""
    paths = {""}
    for _ in range(draw(st.integers(0, 24))):
        parent = draw(st.sampled_from(sorted(paths)))
        if parent.count("/") < 4:
            paths.add(f"{parent}/{draw(st.sampled_from(_SEGMENTS))}")
    ordered = sorted(paths, key=lambda p: p.split("/")[1:] if p else [])
    out = []
    for i, p in enumerate(ordered):
        out.append((p, draw(st.binary(max_size=3)), _stat(i, owner=draw(st.sampled_from(_OWNERS)), cversion=i % 4)))
    corrupt = draw(st.sampled_from(["", "", "", "", "orphan", "no-root"]))
    if corrupt == "orphan" and len(out) > 2:
        del out[draw(st.integers(1, len(out) - 2))]  # its children lose their parent (if it has any)
    elif corrupt == "no-root" and len(out) > 1:
        del out[0]
    return out


def _run(f: Path, block: int, walk: Any, args: dict[str, Any]) -> dict[str, Any]:
    lists: list[tuple[str, list[Any]]] = []
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
                emit_many=(lambda s, r: lists.append((s, list(r)))) if args["emit"] else None,
                doomed_paths=args["dead"],
                emit_batch=args["batch"],
            )
    except S.SnapshotCorrupt as e:
        return {"error": (type(e).__name__, str(e)), "lists": lists}
    finally:
        stream._WALK[0] = saved
    by_id = {id(n): p for p, n in part.originals.items()}
    return {
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
    tmp_path: Path, nodes: list[tuple[str, bytes, bytes]], data: st.DataObject
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
    }
    f = tmp_path / "snapshot.2"
    f.write_bytes(encode_snapshot(nodes))
    block = data.draw(st.sampled_from([7, 64, 1 << 20]))  # small blocks: the walk resumes across parsed batches
    pure = _run(f, block, None, args)
    assert _run(f, block, native.snap_walk, args) == pure


def test_the_native_walk_takes_the_common_nodes_and_leaves_the_rest() -> None:
    """It takes the nodes under the root frame and stops, untouched, at the first node the pure loop must decide:
    a kept path, a node without its parent on the stack."""
    assert native.snap_walk is not None
    root = ["", b"", _stat(0), 0, [b"", _stat(0), None], None, False, False]
    stack: list[list[Any]] = [root]
    reads: list[Any] = []
    ctx: list[Any] = [stack, {"/k"}, set(), set(), set(), {"/a": "local"}, {}, [], reads, "", 100, None]
    batch = [("/a", b"A", _stat(1)), ("/a/x", b"X", _stat(2)), ("/b", b"", _stat(3)), ("/k", b"", _stat(4))]
    assert native.snap_walk(batch, 0, ctx) == 3  # "/k" is kept: left to the pure loop
    assert [f[0] for f in stack] == ["", "/b"] and root[3] == 2
    assert [p for p, _d, _c in reads] == ["/a/x", "/a"] and ctx[9] == "local"
    assert reads[1][2][9] == 1 and reads[1][2][5] == 0 * 2 - 1  # numChildren and the client cversion of "/a"
    assert native.snap_walk([("/q/r", b"", _stat(5))], 0, ctx) == 0  # no parent: the pure loop raises
    assert [f[0] for f in stack] == ["", "/b"]  # nothing closed
