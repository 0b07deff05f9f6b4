"""Decode znode reads in worker processes, so the walk (one core) and decoding (the others) run in parallel.

The walker hands raw reads ``(path, bytes, Stat)`` in chunks to ``PoolSink``; each worker process runs the same
``SnapshotSink`` (extract + streaming Parquet writer) over its chunks, writing its own numbered part files
(``part_offset``), and returns a summary (scope counts and first errors, zxid ranges, bookies, clusters, row
counts) that the parent merges. Queues are bounded, so memory stays bounded when decoding is slower than the
walk. A worker that dies fails the scrape (no silent loss). Read errors (NoAuth, connection) are recorded by
the parent's own sink. No kazoo here.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import PulsarOpsError
from pulsar_ops.scrape.extract import ExtractConfig
from pulsar_ops.scrape.multiread import Stat
from pulsar_ops.scrape.sink import ScopeState, SnapshotSink
from pulsar_ops.snapshot.writer import SnapshotWriter

CHUNK = 2000
QUEUE_CHUNKS = 3
PART_STRIDE = 10_000

Read = tuple[str, bytes, Stat]


class DecodeWorkerError(PulsarOpsError):
    code = "decode-worker-failed"
    default_hint = "re-run `pulsar-ops scrape` with --workers 0 (decode in-process) and --debug"


@dataclass
class WorkerSummary:
    scopes: dict[tuple[str, str], tuple[int, str | None, str | None]] = field(default_factory=dict)
    zxid: dict[str, list[int]] = field(default_factory=dict)
    bookies: dict[str, dict[str, Any]] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)
    znodes: int = 0
    errors: int = 0
    row_counts: dict[str, int] = field(default_factory=dict)


def _worker_main(
    index: int,
    out_dir: str,
    cfg: ExtractConfig,
    batch_rows: int,
    inq: Any,
    outq: Any,
) -> None:
    try:
        writer = SnapshotWriter(
            Path(out_dir), batch_rows=batch_rows, part_offset=(index + 1) * PART_STRIDE, empty_parts=False
        )
        sink = SnapshotSink(writer, cfg)
        while True:
            item = inq.get()
            if item is None:
                break
            store, reads = item
            sink.store = store
            node = sink.node
            for path, data, stat in reads:
                node(path, data, stat)
        counts = writer.close()
        summary = WorkerSummary(
            scopes={k: (v.znodes, v.error_code, v.error) for k, v in sink.scopes.items()},
            zxid=sink.zxid,
            bookies=sink.bookies,
            clusters=sink.clusters,
            znodes=sink.counters.znodes,
            errors=sink.counters.errors,
            row_counts=counts,
        )
        outq.put(("ok", index, summary))
    except BaseException:  # report everything to the parent; it fails the scrape
        outq.put(("error", index, traceback.format_exc()))


class PoolSink:
    """A WalkSink that ships reads to decode workers; read errors go to the parent's ``SnapshotSink``."""

    def __init__(self, parent: SnapshotSink, out_dir: Path, workers: int, *, batch_rows: int) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.parent = parent
        ctx = mp.get_context("spawn")  # never fork a process that runs kazoo's threads
        self._outq: Any = ctx.Queue()
        self._inqs: list[Any] = [ctx.Queue(maxsize=QUEUE_CHUNKS) for _ in range(workers)]
        self._procs = [
            ctx.Process(
                target=_worker_main,
                args=(i, str(out_dir), parent.cfg, batch_rows, self._inqs[i], self._outq),
                name=f"pulsar-ops-decode-{i}",
                daemon=True,
            )
            for i in range(workers)
        ]
        for p in self._procs:
            p.start()
        self._buf: list[Read] = []
        self._next = 0
        self.dispatched = 0
        self._closed = False

    @property
    def store(self) -> str:
        return self.parent.store

    @store.setter
    def store(self, value: str) -> None:
        self.flush()
        self.parent.store = value

    def node(self, path: str, data: bytes, stat: Stat) -> None:
        self._buf.append((path, data, stat))
        if len(self._buf) >= CHUNK:
            self.flush()

    def error(self, path: str, code: str, reason: str) -> None:
        self.parent.error(path, code, reason)

    def flush(self) -> None:
        if not self._buf:
            return
        item = (self.parent.store, self._buf)
        self._buf = []
        self.dispatched += len(item[1])
        n = len(self._inqs)
        while True:  # round robin; a full queue means that worker is busy: try the next; never wait forever
            for k in range(n):
                i = (self._next + k) % n
                try:
                    self._inqs[i].put(item, timeout=0.05 if k < n - 1 else 1.0)
                except queue.Full:
                    continue
                self._next = (i + 1) % n
                return
            self._check_alive()

    def _check_alive(self) -> None:
        for p in self._procs:
            if not p.is_alive():
                self._drain_errors()
                raise DecodeWorkerError(f"decode worker {p.name} exited with code {p.exitcode}")

    def _drain_errors(self) -> None:
        try:
            while True:
                status, index, payload = self._outq.get_nowait()
                if status == "error":
                    raise DecodeWorkerError(f"decode worker {index} failed:\n{payload}")
        except queue.Empty:
            return

    def close(self) -> list[WorkerSummary]:
        """Send the last chunk, stop the workers and return their summaries (raises if any failed)."""
        self.flush()
        self._closed = True
        for q in self._inqs:
            q.put(None)
        results: dict[int, WorkerSummary] = {}
        try:
            while len(results) < len(self._procs):
                try:
                    status, index, payload = self._outq.get(timeout=1.0)
                except queue.Empty:
                    for i, p in enumerate(self._procs):
                        if i not in results and not p.is_alive() and p.exitcode not in (0, None):
                            raise DecodeWorkerError(
                                f"decode worker {p.name} exited with code {p.exitcode}"
                            ) from None
                    continue
                if status == "error":
                    raise DecodeWorkerError(f"decode worker {index} failed:\n{payload}")
                results[index] = payload
        finally:
            self.terminate()
        return [results[i] for i in sorted(results)]

    def terminate(self) -> None:
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)


def merge_summaries(parent: SnapshotSink, summaries: list[WorkerSummary]) -> None:
    """Fold worker results into the parent sink (scope counts, first errors, zxid ranges, bookies)."""
    for s in summaries:
        for key, (znodes, code, error) in s.scopes.items():
            st = parent.scopes.get(key)
            if st is None:
                st = parent.scopes[key] = ScopeState()
            st.znodes += znodes
            if st.error_code is None and code is not None:
                st.error_code, st.error = code, error
        for store, (lo, hi) in s.zxid.items():
            rng = parent.zxid.get(store)
            parent.zxid[store] = [lo, hi] if rng is None else [min(rng[0], lo), max(rng[1], hi)]
        for bid, row in s.bookies.items():
            parent.bookies.setdefault(bid, row)
        parent.clusters.extend(s.clusters)
        parent.counters.znodes += s.znodes
        parent.counters.errors += s.errors
