"""The scrape's per-chunk shortcuts change nothing: ``classify`` (which reuses a parent's classification for
its siblings) equals ``classify_path`` whatever order paths come in, and ``SnapshotSink.nodes`` (the decode
workers' loop) writes the same rows and bookkeeping as ``node`` called per read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.formats.cursor import encode_cursor_info
from pulsar_ops.formats.ledger_metadata import encode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import encode_managed_ledger_info
from pulsar_ops.scrape import classify as cls
from pulsar_ops.scrape.extract import ExtractConfig
from pulsar_ops.scrape.sink import SnapshotSink
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.writer import SnapshotWriter
from tests.unit.formats.strategies import cursor_infos, ledger_metadatas, ml_infos

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ROOTS = ["/managed-ledgers", "/ledgers", "/bk/ledgers", "/schemas", "/admin/policies", "/admin/local-policies",
         "/admin/partitioned-topics", "/admin/clusters", "/namespace", "/loadbalance/bundle-data",
         "/admin/topic-policies", "/other", "/managed-ledgers-x", "/ledgersx"]  # fmt: skip
SEGMENTS = ["persistent", "non-persistent", "00", "0000", "000", "L0001", "L0000000001", "available",
            "readonly", "ID-x", "t", "ns", "c", "0x00000000_0xffffffff", "global", "local", "a%2Fb"]  # fmt: skip

paths = st.builds(
    lambda root, segs: "/".join([root, *segs]),
    st.sampled_from(ROOTS),
    st.lists(st.sampled_from(SEGMENTS), max_size=7),
)


@FAST
@given(st.lists(st.tuples(paths, st.sampled_from(["/ledgers", "/bk/ledgers"]), st.integers(0, 2)), max_size=40))
def test_classify_equals_classify_path_in_any_order(items: list[tuple[str, str, int]]) -> None:
    cls._PARENTS.clear()
    for path, root, nc in items + items[::-1]:  # the second pass meets every parent already cached
        assert cls.classify(path, root, nc) == cls.classify_path(path, root, nc), path


def test_the_parent_cache_is_bounded() -> None:
    cls._PARENTS.clear()
    for i in range(cls._PARENTS_MAX + 10):
        cls.classify(f"/ledgers/00/{i:04d}/L0001", "/ledgers")
    assert 0 < len(cls._PARENTS) <= cls._PARENTS_MAX
    assert cls.classify("/ledgers/00/0005/L0002", "/ledgers").kind == "bk-ledger"


def _stat(i: int, data: bytes, children: int = 0) -> tuple[int, ...]:
    return (1, 100 + (i * 7919) % 1000, 3, 4, 0, 0, 0, 0, len(data), children, 5)


@st.composite
def reads(draw: Any) -> list[tuple[str, bytes, tuple[int, ...]]]:
    out: list[tuple[str, bytes, tuple[int, ...]]] = []
    n = draw(st.integers(1, 30))
    for i in range(n):
        kind = draw(st.sampled_from(["ledger", "ml", "cursor", "bookie", "cluster", "garbage", "dir"]))
        if kind == "ledger":
            data = encode_ledger_metadata(draw(ledger_metadatas()), draw(st.sampled_from([2, 3])))
            path = ledger_path(draw(st.integers(0, 10**6)))
        elif kind == "ml":
            data = encode_managed_ledger_info(draw(ml_infos))
            path = f"/managed-ledgers/t/ns{i % 3}/persistent/topic-{i}"
        elif kind == "cursor":
            data = encode_cursor_info(draw(cursor_infos))
            path = f"/managed-ledgers/t/ns{i % 3}/persistent/topic-{i % 4}/sub-{i}"
        elif kind == "bookie":
            data, path = b"", draw(st.sampled_from(["/ledgers/available/bk1:3181", "/ledgers/available/readonly/bk2:3181"]))
        elif kind == "cluster":
            data, path = b'{"serviceUrl": "http://x:8080"}', f"/admin/clusters/c{i}"
        elif kind == "garbage":
            data, path = draw(st.binary(max_size=20)), f"/ledgers/00/0000/L{i:04d}"
        else:
            data, path = b"", f"/managed-ledgers/t/ns{i % 3}"
        out.append((path, data, _stat(i, data)))
    return out


def _tables(out: Path) -> dict[str, list[dict[str, Any]]]:
    got: dict[str, list[dict[str, Any]]] = {}
    for t in schema.TABLES:
        d = out / "tables" / t.name
        got[t.name] = [r for p in sorted(d.glob("part-*.parquet")) for r in pq.read_table(p).to_pylist()]
    return got


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(reads(), st.integers(1, 7))
def test_nodes_writes_what_node_writes(tmp_path_factory: Any, rs: list[Any], chunk: int) -> None:
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    one = SnapshotSink(SnapshotWriter(a, batch_rows=5), ExtractConfig())
    many = SnapshotSink(SnapshotWriter(b, batch_rows=5), ExtractConfig())
    for r in rs:
        one.node(*r)
    for i in range(0, len(rs), chunk):
        many.nodes(rs[i : i + chunk])
    assert one.writer.close() == many.writer.close()
    assert _tables(a) == _tables(b)
    assert one.scope_rows() == many.scope_rows()
    assert (one.zxid, one.bookies, one.clusters, one.counters) == (
        many.zxid, many.bookies, many.clusters, many.counters
    )
