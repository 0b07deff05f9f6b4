"""Per-ledger byte sums of one entry log in bounded memory (``EntryLogMetadata.addLedgerSize``'s map, off-heap).

A ledgers map or a record scan can name tens of millions of ledgers (a 1 GiB map holds 67M pairs; a 1 GiB log of
16-byte records 67M entries). ``LedgerSums`` keeps at most ``limit`` pairs in memory: input is buffered, summed
per ledger when the buffer fills, and once the sums themselves pass half the limit they are spilled to
hash-partitioned files in a private scratch directory (under ``--out``, never under the bookie's directories).
``finish()`` sums each partition (re-partitioning one still over the limit), ``chunks()`` streams the result.
Peak memory is a small multiple of ``limit * 16`` bytes whatever the input.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
_EMPTY = np.zeros(0, dtype=np.int64)
DEFAULT_LIMIT = 2_000_000  # pairs held in memory (32 MB of int64 pairs; ~4x that at the peak of a sum)
CHUNK_ROWS = 1_000_000  # pairs per streamed chunk
PARTITION_BITS = 6  # 64 spill files per level
# Buffered pieces merged into one past this many: a ledgers map of one-pair batches hands over one tiny array per
# batch, and 2M of them (the limit) cost ~300 bytes of object overhead each (863 MB RSS for a 64 MiB map).
MAX_PIECES = 1024
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class SpillError(OSError):
    """Writing or reading the spill files (under ``--out``) failed: the output's problem, not the log's."""


def aggregate(ids: IntArray, sizes: IntArray) -> tuple[IntArray, IntArray]:
    """Sum sizes per ledger id, sorted by ledger id."""
    if ids.shape[0] == 0:
        return _EMPTY, _EMPTY
    order = np.argsort(ids, kind="stable")
    sid = ids[order]
    ssz = sizes[order]
    del order
    if sid.shape[0] == 1 or bool(np.all(sid[1:] != sid[:-1])):
        return sid, ssz
    starts = np.flatnonzero(np.concatenate(([True], sid[1:] != sid[:-1])))
    return sid[starts], np.add.reduceat(ssz, starts)


def _partition_of(ids: IntArray, level: int) -> npt.NDArray[np.uint8]:
    h = ids.view(np.uint64) * _GOLDEN  # wraps modulo 2^64 (Fibonacci hashing)
    shift = np.uint64(64 - PARTITION_BITS * (level + 1))
    return ((h >> shift) & np.uint64((1 << PARTITION_BITS) - 1)).astype(np.uint8)


class LedgerSums:
    """Accumulate (ledger id, bytes) pairs; ``pairs_in`` counts the input, ``ledgers``/``total`` the result."""

    def __init__(self, spill_root: Path | None = None, limit: int = DEFAULT_LIMIT) -> None:
        self.spill_root = spill_root
        self.limit = max(limit, 1024)
        self.pairs_in = 0
        self._buf: list[tuple[IntArray, IntArray]] = []
        self._buffered = 0
        self._merged = 0  # pieces of _buf[:_merged] are merged groups; those after it came one per add()
        self._dir: Path | None = None
        self._parts: list[Path] = []
        self._final: list[Path] | None = None
        self._mem: tuple[IntArray, IntArray] = (_EMPTY, _EMPTY)
        self.ledgers = 0
        self.total = 0

    # -- input
    def add(self, ids: IntArray, sizes: IntArray) -> None:
        n = int(ids.shape[0])
        if n == 0:
            return
        self.pairs_in += n
        self._buf.append((np.ascontiguousarray(ids, dtype=np.int64), np.ascontiguousarray(sizes, dtype=np.int64)))
        self._buffered += n
        if self._buffered >= self.limit:
            self._compact()
        elif len(self._buf) - self._merged >= MAX_PIECES:
            tail = self._buf[self._merged :]
            self._buf[self._merged :] = [(np.concatenate([b[0] for b in tail]), np.concatenate([b[1] for b in tail]))]
            self._merged = len(self._buf)

    def _compact(self) -> None:
        ids = np.concatenate([b[0] for b in self._buf])
        sizes = np.concatenate([b[1] for b in self._buf])
        self._buf = []
        ids, sizes = aggregate(ids, sizes)
        if self._dir is None and ids.shape[0] <= self.limit // 2:
            self._buf, self._buffered, self._merged = [(ids, sizes)], int(ids.shape[0]), 1
            return
        self._spill(ids, sizes)
        self._buffered = self._merged = 0

    def _spill(self, ids: IntArray, sizes: IntArray, level: int = 0, into: Path | None = None) -> list[Path]:
        try:
            return self._spill_files(ids, sizes, level, into)
        except SpillError:
            raise
        except OSError as e:
            raise SpillError(e.errno, f"spill files: {e.strerror or e}", e.filename) from e

    def _spill_files(self, ids: IntArray, sizes: IntArray, level: int, into: Path | None) -> list[Path]:
        if self._dir is None:
            root = self.spill_root if self.spill_root is not None else None
            if root is not None:
                root.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix=".ledger-sums-", dir=root))
        target = into if into is not None else self._dir
        paths = [target / f"p{level}-{i}" for i in range(1 << PARTITION_BITS)]
        if into is None and not self._parts:
            self._parts = paths
        part = _partition_of(ids, level)
        order = np.argsort(part, kind="stable")  # uint8 keys: numpy's stable sort is a radix sort here
        part_sorted = part[order]
        bounds = np.searchsorted(part_sorted, np.arange((1 << PARTITION_BITS) + 1, dtype=np.int64))
        pairs = np.empty((ids.shape[0], 2), dtype=np.int64)
        pairs[:, 0] = ids[order]
        pairs[:, 1] = sizes[order]
        for i in range(1 << PARTITION_BITS):
            lo, hi = int(bounds[i]), int(bounds[i + 1])
            if hi > lo:
                with open(paths[i], "ab") as fh:
                    pairs[lo:hi].tofile(fh)
        return paths

    # -- result
    def finish(self) -> None:
        """Sum everything; afterwards ``ledgers`` and ``total`` are set and ``chunks()`` may be called."""
        if self._final is not None:
            return
        if self._dir is None:
            if self._buf:
                ids = np.concatenate([b[0] for b in self._buf])
                sizes = np.concatenate([b[1] for b in self._buf])
                self._mem = aggregate(ids, sizes)
            self._buf, self._merged = [], 0
            self._final = []
            self.ledgers = int(self._mem[0].shape[0])
            self.total = int(self._mem[1].sum()) if self.ledgers else 0
            return
        if self._buf:
            self._compact_into_spill()
        final: list[Path] = []
        for p in self._parts:
            final.extend(self._sum_partition(p, 1))
        self._final = final

    def _compact_into_spill(self) -> None:
        ids = np.concatenate([b[0] for b in self._buf])
        sizes = np.concatenate([b[1] for b in self._buf])
        self._buf, self._merged = [], 0
        self._spill(*aggregate(ids, sizes))

    def _sum_partition(self, path: Path, level: int) -> list[Path]:
        try:
            return self._sum_partition_files(path, level)
        except SpillError:
            raise
        except OSError as e:
            raise SpillError(e.errno, f"spill files: {e.strerror or e}", e.filename) from e

    def _sum_partition_files(self, path: Path, level: int) -> list[Path]:
        if not path.exists():
            return []
        n = path.stat().st_size // 16
        if n > self.limit and level * PARTITION_BITS < 60:
            sub = path.with_name(path.name + "-sub")
            sub.mkdir()
            with open(path, "rb") as fh:
                while True:
                    raw = fh.read(self.limit * 16)
                    if not raw:
                        break
                    arr = np.frombuffer(raw, dtype=np.int64).reshape(-1, 2)
                    self._spill(arr[:, 0].copy(), arr[:, 1].copy(), level, into=sub)
                    del arr, raw
            path.unlink()
            out: list[Path] = []
            for i in range(1 << PARTITION_BITS):
                out.extend(self._sum_partition(sub / f"p{level}-{i}", level + 1))
            return out
        arr = np.fromfile(path, dtype=np.int64).reshape(-1, 2)
        ids, sizes = aggregate(arr[:, 0].copy(), arr[:, 1].copy())
        del arr
        pairs = np.empty((ids.shape[0], 2), dtype=np.int64)
        pairs[:, 0] = ids
        pairs[:, 1] = sizes
        pairs.tofile(path)
        self.ledgers += int(ids.shape[0])
        self.total += int(sizes.sum()) if ids.shape[0] else 0
        return [path]

    def chunks(self, rows: int = CHUNK_ROWS) -> Iterator[tuple[IntArray, IntArray]]:
        """The per-ledger sums in chunks of at most ``rows`` (sorted within a partition, not across them)."""
        self.finish()
        assert self._final is not None
        if self._dir is None:
            ids, sizes = self._mem
            for lo in range(0, int(ids.shape[0]), rows):
                yield ids[lo : lo + rows], sizes[lo : lo + rows]
            return
        for p in self._final:
            with open(p, "rb") as fh:
                while True:
                    raw = fh.read(rows * 16)
                    if not raw:
                        break
                    arr = np.frombuffer(raw, dtype=np.int64).reshape(-1, 2)
                    yield arr[:, 0].copy(), arr[:, 1].copy()

    def arrays(self) -> tuple[IntArray, IntArray]:
        """Everything in memory, sorted by ledger id (tests and small logs only)."""
        parts = list(self.chunks())
        if not parts:
            return _EMPTY, _EMPTY
        ids = np.concatenate([p[0] for p in parts])
        sizes = np.concatenate([p[1] for p in parts])
        order = np.argsort(ids, kind="stable")
        return ids[order], sizes[order]

    @property
    def spilled(self) -> bool:
        return self._dir is not None

    def close(self) -> None:
        self._buf, self._merged = [], 0
        self._mem = (_EMPTY, _EMPTY)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
