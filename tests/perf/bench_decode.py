"""Print where a decode worker's CPU goes, per znode (no assertions: figures only).

Seeds N topics into an embedded ZooKeeper, records one multiRead walk of it, then replays the recorded reads
through the scrape's sink and streaming writer in this process, best of ``--repeat`` runs, with the native
decoders and without them. The breakdown splits off converting rows to Arrow and writing Parquet.

Usage: python tests/perf/bench_decode.py [--topics 30000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
from kazoo.client import KazooClient

from pulsar_ops import native
from pulsar_ops.formats import cursor, managed_ledger
from pulsar_ops.scrape import extract_fast
from pulsar_ops.scrape.classify import CONFIG, LOCAL, roots_for
from pulsar_ops.scrape.extract import ExtractConfig, znode_row_with_sha
from pulsar_ops.scrape.sink import SnapshotSink
from pulsar_ops.scrape.zk import ZkTarget, ZkWalker, close, connect
from pulsar_ops.snapshot import writer as writer_mod
from pulsar_ops.testing.seeder import SeedOptions, seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

Read = tuple[str, bytes, tuple[int, ...]]


class _Recorder:
    def __init__(self) -> None:
        self.reads: list[Read] = []

    def node(self, path: str, data: bytes, stat: tuple[int, ...]) -> None:
        self.reads.append((path, data, stat))

    def error(self, path: str, code: str, reason: str) -> None:
        pass


def record(topics: int) -> list[Read]:
    with tempfile.TemporaryDirectory() as tmp, EmbeddedZooKeeper(data_dir=Path(tmp) / "zk", heap_mb=2048) as zk:
        client = KazooClient(hosts=zk.hosts)
        client.start(timeout=60)
        try:
            seed_cluster(client, None, SeedOptions(topics=topics, seed=1, persistent_ownership=True), progress=None)
        finally:
            client.stop()
            client.close()
        roots = [
            *roots_for(CONFIG, "/ledgers", separate_config=False),
            *roots_for(LOCAL, "/ledgers", separate_config=False),
        ]
        walker_client = connect(ZkTarget.parse(zk.hosts))
        try:
            rec = _Recorder()
            ZkWalker(walker_client, multiread=True).walk(roots, rec)
        finally:
            close(walker_client)
    return rec.reads


def _timed(fn: Callable[..., Any], acc: dict[str, float], key: str) -> Callable[..., Any]:
    def run(*a: Any, **k: Any) -> Any:
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            acc[key] += time.process_time() - t

    return run


def replay(reads: list[Read], repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` CPU microseconds per znode: total, Arrow conversion, Parquet writing."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        acc = {"convert": 0.0, "write": 0.0}
        with (
            tempfile.TemporaryDirectory() as tmp,
            mock.patch.object(writer_mod.pa, "array", _timed(pa.array, acc, "convert")),
            mock.patch.object(writer_mod.pq, "write_table", _timed(pq.write_table, acc, "write")),
        ):
            w = writer_mod.SnapshotWriter(Path(tmp), batch_rows=25_000, empty_parts=False)
            sink = SnapshotSink(w, ExtractConfig())
            node = sink.node
            t = time.process_time()
            for path, data, stat in reads:
                node(path, data, stat)
            w.close()
            total = time.process_time() - t
        run = {"total": total, **acc}
        if not best or run["total"] < best["total"]:
            best = run
    return {k: v * 1e6 / len(reads) for k, v in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reads = record(args.topics)
    pa.array(["warm-up"])  # pyarrow's first conversion imports pandas (~0.25 s): keep it out of the figures
    gc.disable()  # as in a scrape (scrape.run / decode_pool)
    print(f"{len(reads):,} recorded reads ({args.topics:,} topics); µs of CPU per znode, best of {args.repeat}")
    label = "native decoders" if native.STATUS == "native" else f"decoders: {native.STATUS}"
    rows = [(label, replay(reads, args.repeat))]
    with (
        mock.patch.object(managed_ledger, "_native_ml", None),
        mock.patch.object(cursor, "_native_cursor", None),
        mock.patch.object(extract_fast, "_native_bk", None),
        mock.patch.object(extract_fast, "znode_tuple", znode_row_with_sha),
    ):
        rows.append(("pure Python", replay(reads, args.repeat)))
    for label, r in rows:
        rest = r["total"] - r["convert"] - r["write"]
        print(
            f"{label:<18} total {r['total']:6.2f}   decode+rows {rest:6.2f}   to Arrow {r['convert']:5.2f}"
            f"   Parquet {r['write']:5.2f}"
        )


if __name__ == "__main__":
    main()
