"""Arrow schemas for the snapshot tables, derived from the column types in ``snapshot.schema``."""

from __future__ import annotations

import functools

import pyarrow as pa

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
