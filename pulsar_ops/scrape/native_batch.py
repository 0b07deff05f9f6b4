"""The scrape's batch hot path: a chunk of znode reads through ``native.bk_batch`` and ``native.ml_batch``
straight into Arrow arrays.

The hierarchical BookKeeper ledger znodes (about half of a Pulsar cluster's metadata store) are classified,
hashed, decoded and laid out as the ``znodes`` and ``bk_ledgers`` columns in one native call per chunk, with no
Python object per row; the topic (managed-ledger) and cursor znodes (about 40 %) likewise as the ``znodes``,
``managed_ledgers``, ``ledger_list``, ``cursors``, ``ack_ranges`` and ``cursor_properties`` columns. Every other
read (and any the native code does not take: names that do not URL-decode, legacy text values, anything
malformed) is left to the per-znode path (``SnapshotSink.node``), which gives the same rows. ``columns_to_arrays``
turns the native buffers into Arrow arrays without copying them. Equivalence with the per-znode path is
property-tested (tests/unit/scrape/test_native_batch.py).
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from pulsar_ops import native, pulsar_names
from pulsar_ops.formats import compression
from pulsar_ops.formats.compression import unwrap
from pulsar_ops.formats.cursor import BUCKET_PROPERTY_PREFIX, COMPACTED_TOPIC_LEDGER
from pulsar_ops.formats.proto import COMPRESSION_TYPES
from pulsar_ops.scrape.classify import MANAGED_LEDGERS
from pulsar_ops.snapshot.arrow_schema import arrow_schema

_LETTERS = {pa.int64(): "q", pa.int32(): "i", pa.string(): "s", pa.list_(pa.string()): "l", pa.bool_(): "b"}


@functools.cache
def spec(table: str) -> str:
    """One letter per column for the native builder: q int64, i int32, b bool, s string, l list<string>; upper
    case when nullable."""
    out = []
    for f in arrow_schema(table):
        letter = _LETTERS[f.type]
        out.append(letter.upper() if f.nullable else letter)
    return "".join(out)


def _array(col: tuple[Any, ...], n: int, field: pa.Field) -> pa.Array:
    nulls, valid = col[0], col[1]
    vb = pa.py_buffer(valid) if valid is not None else None
    t = field.type
    if t == pa.string():
        return pa.Array.from_buffers(t, n, [vb, pa.py_buffer(col[2]), pa.py_buffer(col[3])], null_count=nulls)
    if t == pa.bool_():
        return pa.Array.from_buffers(t, n, [vb, pa.py_buffer(col[2])], null_count=nulls)
    if t == pa.list_(pa.string()):
        child = pa.Array.from_buffers(pa.string(), col[3], [None, pa.py_buffer(col[4]), pa.py_buffer(col[5])])
        return pa.Array.from_buffers(t, n, [vb, pa.py_buffer(col[2])], null_count=nulls, children=[child])
    return pa.Array.from_buffers(t, n, [vb, pa.py_buffer(col[2])], null_count=nulls)


def columns_to_arrays(table: str, cols: list[tuple[Any, ...]], n: int) -> list[pa.Array]:
    return [_array(c, n, f) for c, f in zip(cols, arrow_schema(table), strict=True)]


BkBatch = tuple[int, list[int], list[pa.Array], list[pa.Array], int | None, int | None]


def usable(ledgers_root: str) -> bool:
    """The native batch runs when built, and when no ledger path could also be a managed-ledger path (classify
    looks under /managed-ledgers first)."""
    return (
        native.bk_batch is not None
        and native.ml_batch is not None
        and native.schema_batch is not None
        and native.misc_batch is not None
        and not (ledgers_root + "/").startswith(MANAGED_LEDGERS + "/")
    )


def bk_batch(
    store: str, reads: list[Any] | bytes, ledgers_root: str, max_bytes: int, idx: list[int] | None = None
) -> BkBatch:
    """(rows taken, indexes of the reads left to the per-znode path, znodes arrays, bk_ledgers arrays, the taken
    rows' min and max mzxid). ``reads``: a list of (path, data, stat) or a packed chunk (``scrape.packed``'s layout, no
    Python object per read); ``idx``: the indexes of the reads to look at (default: all); the indexes returned are
    into ``reads`` either way."""
    assert native.bk_batch is not None
    n, rest, zcols, bcols, lo, hi = native.bk_batch(
        store, reads, ledgers_root, max_bytes, spec("znodes"), spec("bk_ledgers"), idx
    )
    if not n:
        return 0, rest, [], [], None, None
    return n, rest, columns_to_arrays("znodes", zcols, n), columns_to_arrays("bk_ledgers", bcols, n), lo, hi


ML_TABLES = ("znodes", "managed_ledgers", "ledger_list", "cursors", "ack_ranges", "cursor_properties")


@functools.cache
def _ml_args() -> tuple[tuple[str, ...], tuple[Any, ...]]:
    from pulsar_ops.scrape.extract_fast import _props_json  # the one definition of the properties JSON

    helpers = (
        unwrap,  # the compression header (formats.compression), errors left to the per-znode path
        _props_json,
        tuple(pulsar_names.SYSTEM_CURSOR_NAMES),
        tuple(pulsar_names.SYSTEM_CURSOR_PREFIXES),
        BUCKET_PROPERTY_PREFIX,
        COMPACTED_TOPIC_LEDGER,
        # a canonical compression header is read natively; its payload goes through unwrap's own decompressors
        tuple(compression.DECOMPRESS[COMPRESSION_TYPES[i]] if i else None for i in range(len(COMPRESSION_TYPES))),
        tuple(COMPRESSION_TYPES[i] for i in range(len(COMPRESSION_TYPES))),
    )
    return tuple(spec(t) for t in ML_TABLES), helpers


MlBatch = tuple[int, list[int], dict[str, list[pa.Array]], int | None, int | None, dict[str, int]]


def ml_batch(store: str, reads: list[Any] | bytes, max_bytes: int, idx: list[int] | None = None) -> MlBatch:
    """(znodes taken, indexes of the reads left to the per-znode path, arrays per table with rows, the taken
    rows' min and max mzxid, znodes taken per /managed-ledgers scope); ``reads`` and ``idx`` as for bk_batch."""
    assert native.ml_batch is not None
    specs, helpers = _ml_args()
    n, rest, tables, counts, lo, hi, scopes = native.ml_batch(store, reads, max_bytes, specs, helpers, idx)
    arrays = {
        t: columns_to_arrays(t, cols, rows) for t, cols, rows in zip(ML_TABLES, tables, counts, strict=True) if rows
    }
    return n, rest, arrays, lo, hi, scopes


SchemaBatch = tuple[int, list[int], list[pa.Array], list[pa.Array], int | None, int | None, dict[str, int]]


def schema_batch(
    store: str, reads: list[Any] | bytes, ledgers_root: str, max_bytes: int, idx: list[int] | None = None
) -> SchemaBatch:
    """(znodes taken, indexes of the reads left to the per-znode path, znodes arrays, schema_index arrays, the
    taken rows' min and max mzxid, znodes taken per /schemas scope); ``reads`` and ``idx`` as for bk_batch."""
    assert native.schema_batch is not None
    n, rest, zcols, scols, rows, lo, hi, scopes = native.schema_batch(
        store, reads, ledgers_root, max_bytes, spec("znodes"), spec("schema_index"), idx
    )
    if not n:
        return 0, rest, [], [], None, None, scopes
    zarrays = columns_to_arrays("znodes", zcols, n)
    return n, rest, zarrays, columns_to_arrays("schema_index", scols, rows) if rows else [], lo, hi, scopes


MISC_TABLES = ("znodes", "partitioned_topics", "bundle_owners", "bundle_data")


def misc_batch(
    store: str, reads: list[Any] | bytes, ledgers_root: str, max_bytes: int, idx: list[int] | None = None
) -> MlBatch:
    """(znodes taken, indexes of the reads left to the per-znode path, arrays per table with rows, the taken rows'
    min and max mzxid, znodes taken per scope): the directories, partitioned-topic metadata, bundle owners and
    bundle load data; ``reads`` and ``idx`` as for bk_batch."""
    assert native.misc_batch is not None
    specs = tuple(spec(t) for t in MISC_TABLES)
    n, rest, tables, counts, lo, hi, scopes = native.misc_batch(store, reads, ledgers_root, max_bytes, specs, idx)
    arrays = {
        t: columns_to_arrays(t, cols, rows) for t, cols, rows in zip(MISC_TABLES, tables, counts, strict=True) if rows
    }
    return n, rest, arrays, lo, hi, scopes


__all__ = ["bk_batch", "columns_to_arrays", "misc_batch", "ml_batch", "schema_batch", "spec", "usable"]
