"""Decode znode reads in worker processes, so the walk (one core) and decoding (the others) run in parallel.

The walker hands raw reads ``(path, bytes, Stat)`` in chunks to ``PoolSink``; each worker process runs the same
``SnapshotSink`` (extract + streaming Parquet writer) over its chunks, writing its own numbered part files
(``part_offset``), and returns a summary (scope counts and first errors, zxid ranges, bookies, clusters, row
counts) that the parent merges. Queues are bounded, so memory stays bounded when decoding is slower than the
walk. A worker that dies fails the scrape (no silent loss). Read errors (NoAuth, connection) are recorded by
the parent's own sink. No kazoo here.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import pickle
import select
import struct
import subprocess
import sys
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pulsar_ops.errors import DecodeWorkerError
from pulsar_ops.scrape import packed as packed_chunk
from pulsar_ops.scrape.multiread import Stat
from pulsar_ops.scrape.sink import ScopeState, SnapshotSink
from pulsar_ops.snapshot.writer import SnapshotWriter

CHUNK = 2000
PART_STRIDE = 10_000
# A worker decodes the packed chunks of one store it receives in groups of at least this many reads (one packed
# chunk, concatenated): the batches' fixed costs per call (the Arrow arrays, their record batches, the Parquet
# writer's work per batch) shrink with it. Over the chunks of a 50K-topic tree (340K reads), a worker's decoding and
# writing: 1.20-1.25 CPU-s in chunks of 2,000 reads, 1.16 in 8,000, 1.12-1.13 in 16,000. At 600K topics 8,000 is
# the cheaper (16,000 reads' buffers fall out of the cache): the workers' CPU over interleaved runs, 16,000: 13.64,
# 13.25, 13.34; 8,000: 13.18, 13.20, 13.08, 12.86, 13.15; 4,000: 13.15, 13.23.
COALESCE = 8_000

Read = tuple[str, bytes, Stat]


@dataclass
class WorkerSummary:
    scopes: dict[tuple[str, str], tuple[int, str | None, str | None]] = field(default_factory=dict)
    zxid: dict[str, list[int]] = field(default_factory=dict)
    bookies: dict[str, dict[str, Any]] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)
    znodes: int = 0
    errors: int = 0
    row_counts: dict[str, int] = field(default_factory=dict)


PIPE_BYTES = 1 << 20  # ~2 chunks queued per worker (Linux default pipe: 64 KiB, an eighth of one chunk)
# Chunks the parent holds for a worker whose pipe is full, written as the pipe drains (non-blocking writes): the
# walk never waits on one worker's pipe while another worker has room. A worker reads a whole group (COALESCE
# reads, 4-8 chunks) before it decodes; with only the pipe's ~2 chunks ahead of it, it waited for the rest while the
# parent sat in a blocking write to the other worker, busy with its group (600K offline scrape: each worker waited
# 1.2-1.4 s for input, the parent 7.6 s in writes). Memory: QUEUED chunks (~0.5 MB each) per worker.
QUEUED = 8


def _grow_pipe(fd: int) -> None:
    """Enlarge a pipe's buffer where the OS allows it (Linux F_SETPIPE_SZ); elsewhere keep the default."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):
        pass


def _read_frame(stream: IO[bytes]) -> bytes:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError("decode worker input closed")
    (n,) = struct.unpack(">Q", head)
    return stream.read(n)


def _write_frame(stream: IO[bytes], raw: bytes) -> None:
    stream.write(struct.pack(">Q", len(raw)))
    stream.write(raw)
    stream.flush()


def _read_msg(stream: IO[bytes]) -> Any:
    return pickle.loads(_read_frame(stream))


def _write_msg(stream: IO[bytes], obj: Any) -> None:
    _write_frame(stream, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


# A chunk of reads goes packed (``scrape.packed``: lengths, bytes and the stat as 11 int64, a few memcpys each way)
# when every read is a plain (str, bytes, 11 ints) tuple; anything else goes as marshal (same interpreter on both
# ends, the worker being ``sys.executable``); the first byte tells them apart. A worker hands the packed chunk to the
# native batches as it is (``SnapshotSink.nodes``): only the reads they leave become tuples. Header and summary
# stay pickled.


def _read_chunk(stream: IO[bytes], *, packed: bool = False) -> Any:
    """The next chunk, (store, reads), or None at the end; with ``packed``, a packed chunk's reads stay the packed
    bytes (``SnapshotSink.nodes`` reads them in place: no Python object per read the native batches take)."""
    raw = _read_frame(stream)
    if packed_chunk.is_packed(raw):
        return (packed_chunk.store(raw), raw) if packed else packed_chunk.unpack(raw)
    return marshal.loads(raw)


def _write_chunk(stream: IO[bytes], obj: Any) -> None:
    raw = packed_chunk.pack(obj[0], obj[1]) if obj is not None else None
    _write_frame(stream, raw if raw is not None else marshal.dumps(obj))


def worker_main(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Body of a decode worker process: a header message, then chunks, then None; writes one summary."""
    gc.disable()  # a dedicated process creating only acyclic rows (see scrape.run)
    try:
        index, out_dir, cfg, batch_rows = _read_msg(stdin)
        writer = SnapshotWriter(
            Path(out_dir), batch_rows=batch_rows, part_offset=(index + 1) * PART_STRIDE, empty_parts=False
        )
        sink = SnapshotSink(writer, cfg)
        group: list[bytes] = []  # packed chunks of one store not yet decoded
        group_reads = 0

        def decode_group() -> None:
            nonlocal group_reads
            if group:
                sink.nodes(packed_chunk.concat(group))
                group.clear()
                group_reads = 0

        while True:
            item = _read_chunk(stdin, packed=True)
            if item is None:
                break
            store, reads = item
            if store != sink.store or not isinstance(reads, bytes):
                decode_group()
                sink.store = store
            if isinstance(reads, bytes):
                group.append(reads)
                group_reads += packed_chunk.count(reads)
                if group_reads >= COALESCE:
                    decode_group()
            else:
                sink.nodes(reads)
        decode_group()
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
        _write_msg(stdout, ("ok", summary))
        return 0
    except BaseException:  # report everything to the parent; it fails the scrape
        _write_msg(stdout, ("error", traceback.format_exc()))
        return 1


class PoolSink:
    """A WalkSink that ships reads to decode worker processes; read errors go to the parent's sink.

    Workers are plain ``python -m pulsar_ops.scrape.decode_worker`` subprocesses fed marshalled chunks on stdin
    (no multiprocessing: nothing re-imports the caller's main module, nothing forks kazoo's threads). The pipes
    are written non-blocking, up to ``QUEUED`` chunks held per worker beyond its pipe (enlarged to 1 MiB where
    Linux allows, about two chunks); when every worker holds that many the walk waits: memory stays bounded.
    Where a pipe cannot be non-blocking, each chunk goes to a worker with room, written blocking. A worker that
    dies fails the scrape.
    """

    def __init__(
        self,
        parent: SnapshotSink,
        out_dir: Path,
        workers: int,
        *,
        batch_rows: int,
        chunk: int = CHUNK,
        worker_batch_rows: int | None = None,
    ) -> None:
        """``worker_batch_rows``: the rows each worker buffers per table before it writes a part; by default half
        of ``batch_rows`` (N workers stay near one writer's memory: the live scrape's RSS target)."""
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.parent = parent
        self.out_dir = out_dir
        self.workers = workers
        self.batch_rows = batch_rows
        self.worker_batch_rows = worker_batch_rows
        self.chunk = max(1, chunk)
        self._procs: list[subprocess.Popen[bytes]] = []
        self._sent: list[int] = []  # reads sent to each worker
        # per worker: the frames' bytes not yet in its pipe, the count of frames they belong to (non-blocking
        # writes, ``_pump``); None: blocking writes (where a pipe cannot be made non-blocking)
        self._queue: list[deque[tuple[memoryview, bool]]] | None = None
        self._frames: list[int] = []
        self._buf: list[Read] = []
        self.dispatched = 0

    def _start(self) -> None:
        """Workers start with the first full chunk: a small tree is decoded in-process, spawning nothing."""
        try:
            for i in range(self.workers):
                proc = subprocess.Popen(
                    [sys.executable, "-m", "pulsar_ops.scrape.decode_worker"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=None,
                )
                self._procs.append(proc)
                self._sent.append(0)
                assert proc.stdin is not None
                _grow_pipe(proc.stdin.fileno())
                # Each worker buffers its own rows: halve the batch so N workers stay near one writer's memory.
                rows = self.worker_batch_rows or max(5_000, self.batch_rows // 2)
                _write_msg(proc.stdin, (i, str(self.out_dir), self.parent.cfg, rows))
            try:
                for proc in self._procs:
                    assert proc.stdin is not None
                    os.set_blocking(proc.stdin.fileno(), False)
                self._queue = [deque() for _ in self._procs]
                self._frames = [0] * len(self._procs)
            except (AttributeError, OSError):  # no non-blocking pipes here: blocking writes, as chosen by _pick
                self._queue = None
        except BaseException:
            self.terminate()
            raise

    def start(self) -> None:
        """Start the workers now instead of with the first chunk (the offline scrape starts them before it loads
        a large tree, so no worker is forked from a large parent)."""
        if not self._procs:
            self._start()

    @property
    def store(self) -> str:
        return self.parent.store

    @store.setter
    def store(self, value: str) -> None:
        self.flush()
        self.parent.store = value

    def node(self, path: str, data: bytes, stat: Stat) -> None:
        self._buf.append((path, data, stat))
        if len(self._buf) >= self.chunk:
            self.flush()

    def error(self, path: str, code: str, reason: str) -> None:
        self.parent.error(path, code, reason)

    def chunk_of(self, reads: list[Read]) -> None:
        """A chunk the caller built itself (the offline scrape), dispatched as :meth:`flush` dispatches one."""
        self.flush()
        self._buf = reads
        self.flush()

    def packed_chunk(self, raw: bytes, count: int) -> None:
        """A chunk already packed (``scrape.packed``; the offline scrape's native walk), of the current store:
        dispatched as :meth:`flush` dispatches one, its bytes written as they are."""
        self.flush()
        if not self._procs:
            if count < self.chunk:
                self.parent.nodes(raw)
                return
            self._start()
        self._send(raw, count)

    def flush(self) -> None:
        if not self._buf:
            return
        if not self._procs:
            if len(self._buf) < self.chunk:  # a store switch or the end of a small walk: decode here
                reads, self._buf = self._buf, []
                self.parent.nodes(reads)
                return
            self._start()
        store, reads = self.parent.store, self._buf
        self._buf = []
        raw = packed_chunk.pack(store, reads)
        self._send(raw if raw is not None else marshal.dumps((store, reads)), len(reads))

    def _send(self, raw: bytes, count: int) -> None:
        self.dispatched += count
        if self._queue is not None:
            k = self._pick_queued()
            self._sent[k] += count
            self._queue[k].append((memoryview(struct.pack(">Q", len(raw))), False))
            self._queue[k].append((memoryview(raw), True))
            self._frames[k] += 1
            self._pump(block=False)
            return
        k = self._pick()
        proc = self._procs[k]
        self._sent[k] += count
        try:
            assert proc.stdin is not None
            _write_frame(proc.stdin, raw)
        except (BrokenPipeError, OSError) as e:
            raise DecodeWorkerError(f"decode worker {proc.pid} exited ({proc.poll()}): {e}") from e

    def _pick(self) -> int:
        """The worker to send the next chunk to: among those whose pipe has room now, the one sent the fewest
        reads. Round-robin with blocking writes stalled the walk on a busy worker while the other one sat idle
        (a convoy: ~10% of both cores lost on a 100K-topic scrape)."""
        n = len(self._procs)
        if n == 1:
            return 0
        try:
            fds = [p.stdin.fileno() for p in self._procs if p.stdin is not None]
            _, ready, _ = select.select([], fds, [])  # blocks until some pipe has room: memory stays bounded
        except (OSError, ValueError):  # a closed pipe: let the write raise the worker error
            fds = ready = []
        if len(fds) != n or not ready:
            return min(range(n), key=self._sent.__getitem__)
        return min((i for i in range(n) if fds[i] in ready), key=self._sent.__getitem__)

    def _pick_queued(self) -> int:
        """The worker to queue the next chunk for: among those holding fewer than QUEUED chunks not yet in their
        pipe, the one sent the fewest reads; when all hold that many, wait until a pipe takes some (memory stays
        bounded)."""
        assert self._queue is not None
        while True:
            self._pump(block=False)
            room = [i for i in range(len(self._procs)) if self._frames[i] < QUEUED]
            if room:
                return min(room, key=self._sent.__getitem__)
            self._pump(block=True)

    def _pump(self, *, block: bool) -> None:
        """Write the queued bytes each pipe takes now; with ``block``, first wait until some pipe has room."""
        assert self._queue is not None
        waiting = [i for i, q in enumerate(self._queue) if q]
        if not waiting:
            return
        fds = {}
        for i in waiting:
            stdin = self._procs[i].stdin
            assert stdin is not None
            fds[i] = stdin.fileno()
        if block:
            try:
                _, ready, _ = select.select([], list(fds.values()), [])
            except (OSError, ValueError) as e:
                raise DecodeWorkerError(f"decode worker pipe failed: {e}") from e
            waiting = [i for i in waiting if fds[i] in ready]
        for i in waiting:
            q = self._queue[i]
            try:
                while q:
                    part, last = q[0]
                    n = os.write(fds[i], part)
                    if n < len(part):
                        q[0] = (part[n:], last)
                        break
                    q.popleft()
                    if last:  # a frame's body written (its head went first)
                        self._frames[i] -= 1
            except BlockingIOError:
                continue
            except OSError as e:
                proc = self._procs[i]
                raise DecodeWorkerError(f"decode worker {proc.pid} exited ({proc.poll()}): {e}") from e

    def _drain(self) -> None:
        """Every queued chunk into its pipe, then the pipes blocking again (the end marker goes as before)."""
        if self._queue is None:
            return
        while any(self._queue):
            self._pump(block=True)
        for proc in self._procs:
            assert proc.stdin is not None
            with contextlib.suppress(OSError, ValueError):
                os.set_blocking(proc.stdin.fileno(), True)
        self._queue = None

    def close(self) -> list[WorkerSummary]:
        """Send the last chunk, stop the workers and return their summaries (raises if any failed)."""
        self.flush()
        self._drain()
        out: list[WorkerSummary] = []
        try:
            for proc in self._procs:
                assert proc.stdin is not None
                try:
                    _write_chunk(proc.stdin, None)
                    proc.stdin.close()
                except (BrokenPipeError, OSError) as e:
                    raise DecodeWorkerError(f"decode worker {proc.pid} exited ({proc.poll()}): {e}") from e
            for proc in self._procs:
                assert proc.stdout is not None
                try:
                    status, payload = _read_msg(proc.stdout)
                except (EOFError, pickle.UnpicklingError) as e:
                    raise DecodeWorkerError(f"decode worker {proc.pid} died ({proc.wait()})") from e
                if status != "ok":
                    raise DecodeWorkerError(f"decode worker {proc.pid} failed:\n{payload}")
                out.append(payload)
        finally:
            self.terminate()
        return out

    def terminate(self) -> None:
        for proc in self._procs:
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


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
