"""Decode worker processes: results merge like the in-process sink; a dead worker fails loudly."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsar_ops.errors import DecodeWorkerError
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
