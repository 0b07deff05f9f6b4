"""Arrow schemas for the snapshot tables, derived from the column types in ``snapshot.schema``."""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from pulsar_ops.errors import SnapshotError
from pulsar_ops.snapshot import schema

_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "bool": pa.bool_(),
    "double": pa.float64(),
    "list<string>": pa.list_(pa.string()),
    "list<int64>": pa.list_(pa.int64()),
}


def arrow_type(type_name: str) -> pa.DataType:
    return _ARROW_TYPES[type_name]


@functools.cache
def arrow_schema(table_name: str) -> pa.Schema:
    """The Arrow schema of one snapshot table (non-nullable columns are marked so)."""
    t = schema.table(table_name)
    return pa.schema([pa.field(c.name, arrow_type(c.type), nullable=c.nullable) for c in t.columns])


def checked_arrays(table: str, rows: list[tuple[Any, ...]], sch: pa.Schema) -> list[pa.Array]:
    """The columns of ``rows`` (tuples in ``sch``'s order) as Arrow arrays, converted once as a struct array (no
    transposition through Python lists: measured ~30% faster than a pa.array per column on the znodes table).
    A null in a non-nullable column is a pulsar-ops bug: ``SnapshotError``, never a file that lies."""
    if rows:
        arrays = list(pa.RecordBatch.from_struct_array(pa.array(rows, type=pa.struct(list(sch)))).columns)
    else:
        arrays = [pa.array([], type=f.type) for f in sch]
    check_nulls(table, arrays, sch)
    return arrays


def check_nulls(table: str, arrays: list[pa.Array], sch: pa.Schema) -> None:
    """``SnapshotError`` when a non-nullable column holds a null."""
    for arr, fld in zip(arrays, sch, strict=True):
        if not fld.nullable and arr.null_count:
            raise SnapshotError(
                f"internal: {table}.{fld.name} is not nullable but {arr.null_count} row(s) are null",
                hint="this is a pulsar-ops bug; re-run with --debug and report it",
            )
