"""Streaming snapshot writer: rows are buffered per table and flushed to numbered Parquet part files.

Memory stays bounded by ``batch_rows`` rows per table. Every table in ``schema.TABLES`` ends up with at least one
part file (an empty table gets one empty part with the right schema), so readers never guess a schema.
``manifest.json`` is NOT written here: ``snapshot.manifest.write_manifest`` does that last.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.arrow_schema import arrow_schema, check_nulls, checked_arrays

DEFAULT_BATCH_ROWS = 50_000
TABLES_DIR = "tables"

# Dictionary encoding only where values repeat a lot; trying it on unique values (paths, hashes, JSON) costs
# time and bytes (measured on a 30K-topic scrape: 12% less write time, 9% smaller files than "every column").
# ``ensembles_json`` repeats too (a handful of bookies make few ensembles): on a 50K-topic tree its column writes in
# 61 instead of 152 ns a row and takes 286 KB instead of 900 KB; the tables' write time 3% less.
DICTIONARY_COLUMNS = frozenset(
    {
        "store", "kind", "decode_error", "layout", "state", "digest_type", "application", "component", "tenant",
        "namespace", "cluster", "compression", "format", "subscription", "scope", "code", "ensembles_json",
    }
)  # fmt: skip


@functools.cache
def _dictionary_columns(table: str) -> list[str]:
    return [c for c in schema.table(table).column_names if c in DICTIONARY_COLUMNS]


# The other columns' encodings (the codec, its level and the statistics stay Parquet's defaults with zstd): int64
# columns (zxids, times, ids, sizes: mostly close to their neighbours) DELTA_BINARY_PACKED, and the SHA-256 hex
# (64 bytes a value, never repeated) DELTA_LENGTH_BYTE_ARRAY, whose lengths and bytes zstd takes in one run instead
# of value by value. Measured on the tables of a 50K-topic scrape (888K rows): 0.535 -> 0.472 CPU-s of Parquet
# writing, 34.2 -> 33.5 MB; pyarrow and DuckDB read them no slower. Every other column stays PLAIN.
DELTA_STRING_COLUMNS = frozenset({"data_sha256"})


@functools.cache
def _column_encoding(table: str) -> dict[str, str] | None:
    out = {}
    for f in arrow_schema(table):
        if f.name in DICTIONARY_COLUMNS:
            continue
        if f.type == pa.int64():
            out[f.name] = "DELTA_BINARY_PACKED"
        elif f.name in DELTA_STRING_COLUMNS and f.type == pa.string():
            out[f.name] = "DELTA_LENGTH_BYTE_ARRAY"
    return out or None


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


class _TableBuffer:
    __slots__ = ("batches", "columns", "getter", "name", "parts", "pending", "rows", "total", "width")

    def __init__(self, name: str) -> None:
        self.name = name
        self.columns = schema.table(name).column_names
        self.width = len(self.columns)
        self.getter = operator.itemgetter(*self.columns)
        self.rows: list[tuple[Any, ...]] = []
        self.batches: list[pa.RecordBatch] = []  # column batches built natively (``add_arrays``)
        self.pending = 0  # their rows
        self.parts = 0
        self.total = 0


class SnapshotWriter:
    """Write snapshot tables under ``out_dir/tables/<table>/part-NNNNN.parquet``.

    ``add(table, row)`` takes a mapping keyed by column name (missing keys are null); ``add_tuple`` takes a tuple
    in schema column order (the hot path for ``znodes``). Call ``close()`` once; it returns the row counts.
    """

    def __init__(
        self,
        out_dir: Path,
        *,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        part_offset: int = 0,
        empty_parts: bool = True,
    ) -> None:
        """``part_offset`` lets several writers (decode worker processes) share one snapshot directory: writer
        k numbers its parts from ``k * 10000``; ``empty_parts=False`` leaves tables without rows to the writer
        that closes last."""
        if batch_rows < 1:
            raise ValueError("batch_rows must be >= 1")
        self.out_dir = Path(out_dir)
        self.batch_rows = batch_rows
        self.part_offset = part_offset
        self.empty_parts = empty_parts
        self._buffers = {t.name: _TableBuffer(t.name) for t in schema.TABLES}
        self._znodes = self._buffers["znodes"]
        self._closed = False
        self.out_dir.mkdir(parents=True, exist_ok=True)
        (self.out_dir / TABLES_DIR).mkdir(exist_ok=True)

    def table_dir(self, name: str) -> Path:
        return self.out_dir / TABLES_DIR / name

    def add(self, table: str, row: Mapping[str, Any]) -> None:
        buf = self._buffers[table]
        try:
            values = buf.getter(row)  # fast path: every column present
        except KeyError:
            values = tuple(row.get(c) for c in buf.columns)
        buf.rows.append(values if len(buf.columns) > 1 else (values,))
        if len(buf.rows) >= self.batch_rows:
            self._flush(buf)

    def add_many(self, table: str, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.add(table, row)

    def add_tuple(self, table: str, row: Sequence[Any]) -> None:
        self._append(self._buffers[table], row)

    def add_znode(self, zrow: tuple[Any, ...], rows: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        """One znode's ``znodes`` row and entity rows, tuples in column order (the scrape's hot path: one call
        per znode; rows of the wrong width are a ValueError, like ``add_tuple``)."""
        self._append(self._znodes, zrow)
        for table, row in rows:
            self._append(self._buffers[table], row)

    def _append(self, buf: _TableBuffer, row: Sequence[Any]) -> None:
        if len(row) != buf.width:
            raise ValueError(f"{buf.name}: expected {buf.width} values, got {len(row)}")
        out = buf.rows
        out.append(row if type(row) is tuple else tuple(row))
        if len(out) >= self.batch_rows:
            self._flush(buf)

    def add_arrays(self, table: str, arrays: list[pa.Array]) -> None:
        """A batch of rows as Arrow arrays in schema column order (the native scrape path builds them without a
        Python object per row). They join the table's tuple rows in the next part file; a null in a
        non-nullable column is the same ``SnapshotError`` as for tuple rows."""
        buf = self._buffers[table]
        sch = arrow_schema(table)
        check_nulls(table, arrays, sch)
        batch = pa.RecordBatch.from_arrays(arrays, schema=sch)
        buf.batches.append(batch)
        buf.pending += batch.num_rows
        if len(buf.rows) + buf.pending >= self.batch_rows:
            self._flush(buf)

    def row_counts(self) -> dict[str, int]:
        return {name: b.total + len(b.rows) + b.pending for name, b in self._buffers.items()}

    def _flush(self, buf: _TableBuffer) -> None:
        rows, buf.rows = buf.rows, []
        batches, buf.batches, pending, buf.pending = buf.batches, [], buf.pending, 0
        sch = arrow_schema(buf.name)
        if rows or not batches:
            batches.append(pa.RecordBatch.from_arrays(checked_arrays(buf.name, rows, sch), schema=sch))
        tbl = pa.Table.from_batches(batches, schema=sch)
        d = self.table_dir(buf.name)
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            tbl,
            d / part_name(self.part_offset + buf.parts),
            compression="zstd",
            use_dictionary=_dictionary_columns(buf.name),
            column_encoding=_column_encoding(buf.name),
        )
        buf.parts += 1
        buf.total += len(rows) + pending

    def _has_parts(self, name: str) -> bool:
        return any(self.table_dir(name).glob("part-*.parquet"))

    def close(self) -> dict[str, int]:
        """Flush everything; every table gets at least one part file. Returns row counts per table."""
        if self._closed:
            return self.row_counts()
        for buf in self._buffers.values():
            needs_empty = buf.parts == 0 and self.empty_parts and not self._has_parts(buf.name)
            if buf.rows or buf.batches or needs_empty:
                self._flush(buf)
        self._closed = True
        return self.row_counts()
