"""Decode worker processes: results merge like the in-process sink; a dead worker fails loudly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops import native
from pulsar_ops.errors import DecodeWorkerError
from pulsar_ops.scrape import decode_pool as d
from pulsar_ops.scrape import packed
from pulsar_ops.scrape.decode_pool import PoolSink, merge_summaries
from pulsar_ops.scrape.extract import ExtractConfig
from pulsar_ops.scrape.sink import SnapshotSink
from pulsar_ops.snapshot.writer import SnapshotWriter


def _reads(n: int) -> list[tuple[str, bytes, tuple[int, ...]]]:
    out = []
    for i in range(n):
        data = b'{"nativeUrl":"pulsar://b:6650"}' if i % 2 else b"not json"
        path = f"/namespace/t/ns{i}/0x00000000_0xffffffff"
        out.append((path, data, (1, 10 + i, 3, 4, 0, 0, 0, 99, len(data), 0, 5)))
    return out


def test_worker_results_match_in_process_decoding(tmp_path: Path) -> None:
    reads = _reads(25)
    local = SnapshotSink(SnapshotWriter(tmp_path / "a"), ExtractConfig())
    for r in reads:
        local.node(*r)
    counts_a = local.writer.close()

    parent = SnapshotSink(SnapshotWriter(tmp_path / "b"), ExtractConfig())
    pool = PoolSink(parent, tmp_path / "b", 2, batch_rows=100, chunk=4)
    for r in reads:
        pool.node(*r)
    summaries = pool.close()
    assert len(summaries) == 2
    merge_summaries(parent, summaries)
    counts_b = parent.writer.close()
    for s in summaries:
        for t, n in s.row_counts.items():
            counts_b[t] += n
    assert counts_b == counts_a
    assert parent.scope_rows() == local.scope_rows()
    assert parent.zxid == local.zxid and parent.counters == local.counters


def test_a_dead_worker_fails_the_scrape(tmp_path: Path) -> None:
    parent = SnapshotSink(SnapshotWriter(tmp_path), ExtractConfig())
    pool = PoolSink(parent, tmp_path, 1, batch_rows=100, chunk=2)
    try:
        for r in _reads(2):
            pool.node(*r)  # the first full chunk starts the worker
        proc = pool._procs[0]
        proc.kill()
        proc.wait(timeout=10)
        with pytest.raises(DecodeWorkerError):
            for r in _reads(400):
                pool.node(*r)
            pool.close()
    finally:
        pool.terminate()


class _FakeProc:
    def __init__(self, stdin: object) -> None:
        self.stdin = stdin


def test_a_chunk_goes_to_a_worker_with_room_not_round_robin(tmp_path: Path) -> None:
    """A worker whose pipe is full is skipped even when it was sent fewer reads; with room everywhere, the worker
    sent the fewest reads gets the chunk."""
    import os

    pool = PoolSink(SnapshotSink(SnapshotWriter(tmp_path), ExtractConfig()), tmp_path, 2, batch_rows=10)
    (ra, wa), (rb, wb) = os.pipe(), os.pipe()
    fa, fb = os.fdopen(wa, "wb", buffering=0), os.fdopen(wb, "wb", buffering=0)
    try:
        os.set_blocking(wa, False)
        try:
            while True:
                os.write(wa, b"x" * 65536)
        except BlockingIOError:
            pass  # pipe A is full
        pool._procs = [_FakeProc(fa), _FakeProc(fb)]  # type: ignore[list-item]
        pool._sent = [0, 100]
        assert pool._pick() == 1
        while os.read(ra, 1 << 20):  # drain A: now both have room
            if not select_readable(ra):
                break
        assert pool._pick() == 0
    finally:
        pool._procs = []
        for f in (fa, fb):
            f.close()
        for fd in (ra, rb):
            os.close(fd)


def select_readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])


def test_a_worker_decodes_and_writes_without_numpy_or_pandas(tmp_path: Path) -> None:
    """The worker's entry point refuses numpy and pandas before pyarrow comes in (each cost a worker CPU and
    RSS for nothing): a chunk is still decoded and written, and neither package is loaded."""
    script = f"""
import io, sys
from pulsar_ops.scrape import decode_worker
sys.meta_path.insert(0, decode_worker.Refused)
from pulsar_ops.scrape import decode_pool as d
from pulsar_ops.scrape.extract import ExtractConfig
inp, out = io.BytesIO(), io.BytesIO()
d._write_msg(inp, (0, {str(tmp_path)!r}, ExtractConfig(), 100))
d._write_chunk(inp, ("local", {_reads(25)!r}))
d._write_chunk(inp, None)
inp.seek(0)
rc = d.worker_main(inp, out)
out.seek(0)
status, summary = d._read_msg(out)
print(rc, status, summary.znodes, sorted({{m.split(".")[0] for m in sys.modules}} & {{"numpy", "pandas"}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "ok", "25", "[]"], done.stderr


_stat = st.tuples(*[st.integers(-(2**63), 2**63 - 1)] * 11)
_read = st.tuples(st.text(max_size=40), st.binary(max_size=64), _stat)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=8), st.lists(_read, max_size=12))
def test_packed_chunks_round_trip_and_the_native_twin_writes_the_same_bytes(
    store: str, reads: list[tuple[str, bytes, tuple[int, ...]]]
) -> None:
    """A chunk of reads crosses the pipe packed: the pure and the native packer give the same bytes (or both None:
    a lone surrogate from surrogateescape goes as marshal), and both unpackers give the chunk back."""
    raw = packed.pack_reads_py(store, reads)
    try:
        (store + "".join(p for p, _, _ in reads)).encode("utf-8")
        assert raw is not None and raw[0] == packed.PACKED
    except UnicodeEncodeError:
        assert raw is None
    if native.pack_reads is not None:
        assert native.pack_reads(store, reads) == raw
    if raw is None:
        return
    assert packed.unpack_reads_py(raw) == (store, reads)
    if native.unpack_reads is not None:
        assert native.unpack_reads(raw) == (store, reads)
        for cut in (len(raw) - 1, len(raw) // 2):
            with pytest.raises(ValueError):
                native.unpack_reads(raw[:cut])
    for cut in (len(raw) - 1, len(raw) // 2):
        with pytest.raises(ValueError):
            packed.unpack_reads_py(raw[:cut])


@pytest.mark.parametrize(
    "reads",
    [
        [("/a", b"x", (1,) * 10)],  # a stat of 10
        [("/a", b"x", (2**63,) + (0,) * 10)],  # past int64
        [("/a", bytearray(b"x"), (0,) * 11)],  # not bytes
        [("/a", b"x", (True,) + (0,) * 10)],  # not an int
        [("/a\udcff", b"x", (0,) * 11)],  # a lone surrogate (a path that is not UTF-8, surrogateescape'd)
        [["/a", b"x", (0,) * 11]],  # not a tuple
    ],
)
def test_a_chunk_that_does_not_pack_goes_as_marshal(reads: list[Any]) -> None:
    import io

    assert packed.pack_reads_py("local", reads) is None
    if native.pack_reads is not None:
        assert native.pack_reads("local", reads) is None
    buf = io.BytesIO()
    d._write_chunk(buf, ("local", reads))
    d._write_chunk(buf, ("local", _reads(3)))
    d._write_chunk(buf, None)
    buf.seek(0)
    assert d._read_chunk(buf) == ("local", reads)
    assert d._read_chunk(buf) == ("local", _reads(3))  # packed
    assert d._read_chunk(buf) is None


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=8), st.lists(st.lists(_read, max_size=5), min_size=1, max_size=4))
def test_packed_chunks_of_one_store_concatenate_into_the_chunk_of_all_their_reads(
    store: str, groups: list[list[tuple[str, bytes, tuple[int, ...]]]]
) -> None:
    raws = [packed.pack_reads_py(store, g) for g in groups]
    if any(r is None for r in raws):
        return
    chunks = [r for r in raws if r is not None]
    whole = packed.concat(chunks)
    assert whole == packed.pack_reads_py(store, [r for g in groups for r in g])
    assert packed.concat(chunks[:1]) is chunks[0]
    other = packed.pack_reads_py(store + "x", groups[0])
    assert other is not None
    with pytest.raises(ValueError):
        packed.concat([*chunks, other])


@pytest.mark.parametrize("coalesce", [1, 7, 10_000])
def test_a_worker_decoding_chunks_in_groups_writes_what_one_sink_writes(tmp_path: Path, coalesce: int) -> None:
    """The worker decodes the packed chunks of one store in groups (a store switch or a marshalled chunk ends a
    group): the tables, scopes, zxid ranges and counts are those of one sink fed the same chunks in turn."""
    import io
    from unittest import mock

    import pyarrow.parquet as pq

    def reads(n: int, root: str, base: int) -> list[tuple[str, bytes, tuple[int, ...]]]:
        return [(f"{root}/t/ns{base + i}", b"", (1, base + i, 3, 4, 0, 0, 0, 0, 0, 0, 5)) for i in range(n)]

    # a value the packed layout does not take (not bytes): the chunk goes as marshal
    unpackable: list[Any] = [("/namespace/t/x", bytearray(b"{}"), (1, 2, 3, 4, 0, 0, 0, 0, 2, 0, 5))]
    chunks = [
        ("local", reads(4, "/namespace", 0)),
        ("local", _reads(5)),
        ("local", reads(3, "/loadbalance/bundle-data", 10)),
        ("config", reads(2, "/admin/partitioned-topics", 20)),
        ("config", unpackable),
        ("config", reads(3, "/admin/partitioned-topics", 30)),
        ("local", reads(6, "/managed-ledgers", 40)),
    ]
    cfg = ExtractConfig()
    inp, out = io.BytesIO(), io.BytesIO()
    d._write_msg(inp, (0, str(tmp_path / "worker"), cfg, 100))
    for c in chunks:
        d._write_chunk(inp, c)
    d._write_chunk(inp, None)
    inp.seek(0)
    real_concat, groups = packed.concat, []  # the chunks per group

    def concat(raws: list[bytes]) -> bytes:
        groups.append(len(raws))
        return real_concat(raws)

    with mock.patch.object(d, "COALESCE", coalesce), mock.patch.object(d.packed_chunk, "concat", concat):
        assert d.worker_main(inp, out) == 0
    out.seek(0)
    status, summary = d._read_msg(out)
    assert status == "ok", summary
    assert groups == {1: [1, 1, 1, 1, 1, 1], 7: [2, 1, 1, 1, 1], 10_000: [3, 1, 1, 1]}[coalesce]
    writer = SnapshotWriter(tmp_path / "one", batch_rows=100)
    sink = SnapshotSink(writer, cfg)
    for store, rs in chunks:
        sink.store = store
        sink.nodes(rs)
    writer.close()
    assert summary.znodes == sink.counters.znodes == 24
    assert summary.zxid == sink.zxid
    assert {k: v[0] for k, v in summary.scopes.items()} == {k: v.znodes for k, v in sink.scopes.items()}

    def rows(d: Path, t: str) -> list[str]:  # a worker leaves a table without rows to the writer that closes last
        return sorted(map(repr, pq.read_table(d / "tables" / t).to_pylist())) if (d / "tables" / t).exists() else []

    assert len(rows(tmp_path / "one", "znodes")) == 24 and rows(tmp_path / "one", "bundle_owners")
    for t in ("znodes", "bundle_data", "bundle_owners", "scrape_errors"):
        assert rows(tmp_path / "worker", t) == rows(tmp_path / "one", t), t


def test_a_full_worker_holds_at_most_queued_chunks_and_the_others_get_the_rest(tmp_path: Path) -> None:
    """Non-blocking writes: a worker that reads nothing is queued ``QUEUED`` chunks and no more, the walk goes on
    sending to the worker that reads (a blocking write to the full pipe stalled it), and every frame arrives whole
    and in order through partial writes, the full worker's too once it reads."""
    import collections
    import os
    import threading

    pool = PoolSink(SnapshotSink(SnapshotWriter(tmp_path), ExtractConfig()), tmp_path, 2, batch_rows=10)
    (ra, wa), (rb, wb) = os.pipe(), os.pipe()
    fa, fb = os.fdopen(wa, "wb", buffering=0), os.fdopen(wb, "wb", buffering=0)
    got: dict[int, list[bytes]] = {ra: [], rb: []}

    def reader(fd: int) -> None:
        with os.fdopen(fd, "rb") as f:
            while True:
                try:
                    got[fd].append(d._read_frame(f))
                except EOFError:
                    return

    frames = [bytes([i]) * (200_000 + i) for i in range(3 * d.QUEUED)]  # each larger than a default pipe
    tb = threading.Thread(target=reader, args=(rb,), daemon=True)
    tb.start()
    try:
        for w in (wa, wb):
            os.set_blocking(w, False)
        pool._procs = [_FakeProc(fa), _FakeProc(fb)]  # type: ignore[list-item]
        pool._sent = [0, 0]
        pool._queue = [collections.deque(), collections.deque()]
        pool._frames = [0, 0]
        sender = threading.Thread(target=lambda: [pool._send(f, 1) for f in frames], daemon=True)
        sender.start()
        sender.join(timeout=30)
        assert not sender.is_alive(), "the walk blocked on the worker that reads nothing"
        assert pool._sent == [d.QUEUED, len(frames) - d.QUEUED]
        assert pool._frames[0] == d.QUEUED
        ta = threading.Thread(target=reader, args=(ra,), daemon=True)
        ta.start()
        pool._drain()
        assert pool._queue is None and os.get_blocking(wa) and os.get_blocking(wb)
    finally:
        pool._procs = []
        for f in (fa, fb):
            f.close()
    tb.join(timeout=30)
    ta.join(timeout=30)
    assert sorted(got[ra] + got[rb]) == sorted(frames)
    assert got[ra] == [f for f in frames if f in got[ra]] and got[rb] == [f for f in frames if f in got[rb]]
    assert len(got[ra]) == d.QUEUED


@pytest.mark.parametrize("worker_rows", [None, 4])
def test_a_worker_writes_parts_of_worker_batch_rows_when_given(tmp_path: Path, worker_rows: int | None) -> None:
    """``worker_batch_rows`` (the offline scrape passes its ``batch_rows``) sets the rows a worker buffers per table
    before it writes a part; without it a worker buffers half of ``batch_rows``, at least 5,000."""
    parent = SnapshotSink(SnapshotWriter(tmp_path), ExtractConfig())
    pool = PoolSink(parent, tmp_path, 1, batch_rows=100, chunk=5, worker_batch_rows=worker_rows)
    for r in _reads(25):
        pool.node(*r)
    (summary,) = pool.close()
    assert summary.row_counts["znodes"] == 25
    parts = sorted((tmp_path / "tables" / "znodes").glob("*.parquet"))
    if worker_rows is None:
        assert len(parts) == 1
    else:  # a part whenever 4 rows are buffered: 25 rows make at least 6
        assert len(parts) >= 25 // worker_rows
