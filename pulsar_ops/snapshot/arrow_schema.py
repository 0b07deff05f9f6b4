"""Arrow schemas for the snapshot tables, derived from the column types in ``snapshot.schema``."""

from __future__ import annotations

import functools
import sys
from array import array
from collections.abc import Sequence
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
    if not rows:
        arrays = [pa.nulls(0, f.type) for f in sch]
    elif len(rows) <= SMALL_ROWS and "numpy" in sys.modules and "pandas" not in sys.modules:
        arrays = [small_array(col, f.type) for col, f in zip(zip(*rows, strict=True), sch, strict=True)]
    else:
        arrays = list(pa.RecordBatch.from_struct_array(pa.array(rows, type=pa.struct(list(sch)))).columns)
    check_nulls(table, arrays, sch)
    return arrays


# pa.array over Python objects asks pyarrow's pandas shim whether they are pandas objects, and its first question
# imports pandas when numpy is loaded: 0.2-0.4 CPU-s, once per process. A decode worker refuses numpy (it never
# pays); the scrape's own process wrote its few rows (scopes, bookies) last, so it paid at the very end, alone on
# the critical path. Such small tables are built here from their buffers instead (the same arrays; the test holds
# them equal to pa.array's).
SMALL_ROWS = 20_000
_INT_CODES = {pa.int64(): "q", pa.int32(): "i", pa.float64(): "d"}


def _bits(flags: Sequence[bool]) -> pa.Buffer:
    out = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            out[i >> 3] |= 1 << (i & 7)
    return pa.py_buffer(bytes(out))


def small_array(values: Sequence[Any], t: pa.DataType) -> pa.Array:
    """``pa.array(values, type=t)`` for the snapshot's column types, built from buffers (no pandas shim)."""
    n = len(values)
    valid = [v is not None for v in values]
    nulls = n - sum(valid)
    bitmap = _bits(valid) if nulls else None
    code = _INT_CODES.get(t)
    if code is not None:
        if code != "d" and any(type(v) is not int for v in values if v is not None):
            raise TypeError(f"{t} column: a value that is not an int")
        data = array(code, [0 if v is None else v for v in values])
        return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(data.tobytes())], null_count=nulls)
    if t == pa.bool_():
        if any(type(v) is not bool for v in values if v is not None):
            raise TypeError("bool column: a value that is not a bool")
        return pa.Array.from_buffers(t, n, [bitmap, _bits([bool(v) for v in values])], null_count=nulls)
    if t == pa.string():
        if any(type(v) is not str for v in values if v is not None):
            raise TypeError("string column: a value that is not a str")
        encoded = [b"" if v is None else v.encode("utf-8") for v in values]
        offsets = array("i", [0])
        total = 0
        for b in encoded:
            total += len(b)
            offsets.append(total)
        buffers = [bitmap, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(encoded))]
        return pa.Array.from_buffers(t, n, buffers, null_count=nulls)
    if pa.types.is_list(t):
        items: list[Any] = []
        offsets = array("i", [0])
        for v in values:
            if v is not None:
                items.extend(v)
            offsets.append(len(items))
        child = small_array(items, t.value_type)
        return pa.Array.from_buffers(
            t, n, [bitmap, pa.py_buffer(offsets.tobytes())], null_count=nulls, children=[child]
        )
    return pa.array(values, type=t)


def check_nulls(table: str, arrays: list[pa.Array], sch: pa.Schema) -> None:
    """``SnapshotError`` when a non-nullable column holds a null."""
    for arr, fld in zip(arrays, sch, strict=True):
        if not fld.nullable and arr.null_count:
            raise SnapshotError(
                f"internal: {table}.{fld.name} is not nullable but {arr.null_count} row(s) are null",
                hint="this is a pulsar-ops bug; re-run with --debug and report it",
            )
