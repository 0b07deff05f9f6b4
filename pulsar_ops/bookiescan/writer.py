"""Write a scan directory: one Parquet file per table (``<table>.parquet``) and ``manifest.json`` LAST, every
table streamed (memory bounded whatever the number of logs, pairs, index rows or skipped names).

Conventions from ``snapshot.writer`` / ``snapshot.manifest``: zstd Parquet, non-nullable columns checked, every
table present even when empty, files renamed into place, the manifest written atomically (temporary file, fsync,
rename, directory fsync) so a reader sees either no manifest or the whole one. The ``entry_log_ledgers`` table is
streamed in row groups from numpy arrays (one Python object per log, not per pair).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.parquet as pq

from pulsar_ops.bookiescan import schema
from pulsar_ops.snapshot.arrow_schema import arrow_type, checked_arrays
from pulsar_ops.snapshot.manifest import write_json_atomic

ROW_GROUP = 1_000_000
ROWS_BATCH = 8_192  # rows of a row table (entry_logs, skipped_logs) held before they are written
STRING_BUDGET = 64 * 1024 * 1024  # bytes of repeated text columns (bookie id, directory) built before a write


def _text_bytes(*values: str) -> int:
    return max(1, sum(len(v.encode("utf-8")) for v in values))


def _rows_within_budget(per_row: int) -> int:
    """Rows per piece so that the repeated text of one piece stays within ``STRING_BUDGET`` (and ``ROW_GROUP``)."""
    return max(1, min(ROW_GROUP, STRING_BUDGET // per_row))


@functools.cache
def arrow_schema(name: str) -> pa.Schema:
    t = schema.table(name)
    return pa.schema([pa.field(c.name, arrow_type(c.type), nullable=c.nullable) for c in t.columns])


def _int64(values: npt.NDArray[np.int64]) -> pa.Array:
    """A zero-copy Arrow int64 array (``pa.array`` on numpy would import pandas: a second per CLI run)."""
    arr = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), int(arr.shape[0]), [None, pa.py_buffer(arr)])


def _repeat(value: str, n: int) -> pa.Array:
    """``value`` n times as an Arrow string array (``pa.repeat`` imports pandas too)."""
    raw = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def _bools(mask: npt.NDArray[np.bool_]) -> pa.Array:
    """A boolean Arrow array from a numpy mask (bit-packed, least significant bit first)."""
    bits = np.packbits(np.ascontiguousarray(mask, dtype=np.uint8), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), int(mask.shape[0]), [None, pa.py_buffer(bits)])


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


class _TableFile:
    """One table's Parquet file: written under a temporary name (opened on the first write, so a table never
    written is still an empty file), renamed into place by ``close()``, removed by ``abort()``."""

    def __init__(self, out_dir: Path, name: str) -> None:
        self.schema = arrow_schema(name)
        self.final = out_dir / schema.table_file(name)
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def _open(self) -> pq.ParquetWriter:
        if self._writer is None:
            self._writer = pq.ParquetWriter(_tmp(self.final), self.schema, compression="zstd")
        return self._writer

    def write_table(self, table: pa.Table) -> None:
        self._open().write_table(table, row_group_size=ROW_GROUP)
        self.rows += table.num_rows

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self._open().write_batch(batch, row_group_size=ROW_GROUP)
        self.rows += batch.num_rows

    def close(self) -> int:
        self._open().close()
        os.replace(_tmp(self.final), self.final)
        return self.rows

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):  # best effort on the way out of a failure
                self._writer.close()
        _tmp(self.final).unlink(missing_ok=True)


class _RowSink:
    """One small table streamed from row tuples: buffered up to ``ROWS_BATCH`` rows (or ``STRING_BUDGET`` bytes of
    text) and written as a row group, so its memory stays bounded however many rows there are (200,000 empty logs
    held as rows until the end took 563 MB RSS)."""

    def __init__(self, out_dir: Path, name: str) -> None:
        self.name = name
        self.file = _TableFile(out_dir, name)
        self.width = len(schema.table(name).columns)
        self.rows: list[tuple[Any, ...]] = []
        self.text = 0

    def add(self, row: tuple[Any, ...]) -> None:
        if len(row) != self.width:
            raise ValueError(f"{self.name}: wrong row width")
        self.rows.append(row)
        self.text += sum(len(v) for v in row if isinstance(v, str))
        if len(self.rows) >= ROWS_BATCH or self.text >= STRING_BUDGET:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        sch = self.file.schema
        self.file.write_table(pa.Table.from_arrays(checked_arrays(self.name, self.rows, sch), schema=sch))
        self.rows, self.text = [], 0

    def close(self) -> int:
        self.flush()
        return self.file.close()

    def abort(self) -> None:
        self.rows = []
        self.file.abort()


class ScanWriter:
    """Stream every table: row tables through ``_RowSink``, ``entry_log_ledgers`` and the index from numpy
    columns; ``close()`` returns the row counts."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._sinks = {t.name: _RowSink(self.out_dir, t.name) for t in (schema.ENTRY_LOGS, schema.SKIPPED_LOGS)}
        self._skip_reasons: dict[str, int] = {}
        self._skip_first: list[dict[str, str]] = []
        self._pairs: list[tuple[str, str, npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
        self._pending = 0
        self._index = _TableFile(self.out_dir, schema.LOCAL_INDEX.name)
        self._pairs_file = _TableFile(self.out_dir, schema.ENTRY_LOG_LEDGERS.name)

    def add_entry_log(self, row: tuple[Any, ...]) -> None:
        self._sinks[schema.ENTRY_LOGS.name].add(row)

    def add_skipped(self, bookie_id: str, ledger_dir: str, file: str, reason: str) -> None:
        """A name that looks like a log and was not read: a row of ``skipped_logs``, counted by reason."""
        try:
            row: tuple[str, str, str, str, str | None] = (bookie_id, ledger_dir, file.encode().decode(), reason, None)
        except UnicodeEncodeError:  # a name os.fsdecode gave lone surrogates: shown escaped, kept exactly in hex
            raw = os.fsencode(file)
            row = (bookie_id, ledger_dir, raw.decode("utf-8", "backslashreplace"), reason, raw.hex())
        self._sinks[schema.SKIPPED_LOGS.name].add(row)
        self._skip_reasons[reason] = self._skip_reasons.get(reason, 0) + 1
        if len(self._skip_first) < schema.SKIPPED_FIRST:
            self._skip_first.append({"ledger_dir": ledger_dir, "file": file, "reason": reason})

    def skipped_summary(self) -> dict[str, Any]:
        """The manifest's ``skipped`` (format 2): counts by reason and the first names; the table has them all."""
        return {
            "total": sum(self._skip_reasons.values()),
            "by_reason": dict(sorted(self._skip_reasons.items())),
            "first": list(self._skip_first),
            "table": schema.table_file(schema.SKIPPED_LOGS.name),
        }

    def add_index_rows(
        self, bookie_id: str, index_dir: str, ids: npt.NDArray[np.int64], flags: npt.NDArray[np.uint8]
    ) -> None:
        """One index directory's ledgers as columns (``local_index.IndexRead``: flags 1 exists, 2 fenced, 4 limbo)."""
        self.add_index_chunks(bookie_id, index_dir, [(ids, flags)])

    def add_index_chunks(
        self,
        bookie_id: str,
        index_dir: str,
        chunks: Iterable[tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]],
    ) -> None:
        """Write one index directory's ledgers into ``local_index.parquet`` as they come (``IndexRead.chunks``), a
        row group of at most ``ROW_GROUP`` rows at a time: the repeated bookie id and index directory cost their
        bytes per row in Arrow (8,000,000 ledgers in one piece took 659 MB RSS)."""
        sch = self._index.schema
        step = _rows_within_budget(_text_bytes(bookie_id, index_dir))
        for ids, flags in chunks:
            for lo in range(0, int(ids.shape[0]), step):
                part, bits = ids[lo : lo + step], flags[lo : lo + step]
                n = int(part.shape[0])
                cols = [_repeat(bookie_id, n), _repeat(index_dir, n), _int64(part)]
                cols += [_bools((bits & bit) != 0) for bit in (1, 2, 4)]
                self._index.write_batch(pa.record_batch(cols, schema=sch))

    def add_pairs(
        self, bookie_id: str, ledger_dir: str, log_id: int, ids: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]
    ) -> None:
        if ids.shape[0] == 0:
            return
        logs = np.full(ids.shape[0], log_id, dtype=np.int64)
        self._pairs.append((bookie_id, ledger_dir, logs, ids, sizes))
        self._pending += int(ids.shape[0])
        if self._pending >= ROW_GROUP:
            self._flush_pairs()

    def _flush_pairs(self) -> None:
        """One record batch per (bookie, ledger dir) run of buffered logs: numpy concatenation, no per-row work.
        The bookie id and ledger dir repeat on every row: at most ``STRING_BUDGET`` bytes of them are built before
        they are written (a 3,000-character ledger dir times 2M pairs overflowed Arrow's 32-bit offsets after
        3.2 GB RSS)."""
        if not self._pairs:
            return
        sch = self._pairs_file.schema
        batches: list[pa.RecordBatch] = []
        held = 0
        start = 0
        pending = self._pairs
        for i in range(1, len(pending) + 1):
            if i < len(pending) and pending[i][:2] == pending[start][:2]:
                continue
            group = pending[start:i]
            bookie_id, ledger_dir = group[0][0], group[0][1]
            logs = np.concatenate([g[2] for g in group])
            ids = np.concatenate([g[3] for g in group])
            sizes = np.concatenate([g[4] for g in group])
            per_row = _text_bytes(bookie_id, ledger_dir)
            step = _rows_within_budget(per_row)
            for lo in range(0, int(logs.shape[0]), step):
                part = logs[lo : lo + step]
                n = int(part.shape[0])
                cols = [_repeat(bookie_id, n), _repeat(ledger_dir, n), _int64(part), _int64(ids[lo : lo + n])]
                batches.append(pa.record_batch([*cols, _int64(sizes[lo : lo + n])], schema=sch))
                held += n * per_row
                if held >= STRING_BUDGET:
                    self._pairs_file.write_table(pa.Table.from_batches(batches, schema=sch))
                    batches, held = [], 0
            start = i
        if batches:
            self._pairs_file.write_table(pa.Table.from_batches(batches, schema=sch))
        self._pairs, self._pending = [], 0

    def abort(self) -> None:
        """Drop what was written (a failed scan leaves no temporary file behind)."""
        self._pairs, self._pending = [], 0
        self._pairs_file.abort()
        self._index.abort()
        for sink in self._sinks.values():
            sink.abort()

    def close(self) -> dict[str, int]:
        self._flush_pairs()
        return {
            schema.ENTRY_LOGS.name: self._sinks[schema.ENTRY_LOGS.name].close(),
            schema.ENTRY_LOG_LEDGERS.name: self._pairs_file.close(),
            schema.LOCAL_INDEX.name: self._index.close(),
            schema.SKIPPED_LOGS.name: self._sinks[schema.SKIPPED_LOGS.name].close(),
        }


def write_manifest(out_dir: Path, doc: dict[str, Any]) -> Path:
    """Write ``manifest.json`` atomically (``snapshot.manifest.write_json_atomic``, as the snapshot's)."""
    return write_json_atomic(Path(out_dir) / schema.MANIFEST_NAME, doc)
