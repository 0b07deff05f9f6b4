"""The optional native hot paths (``pulsar_ops/_native.c``, compiled at install time by ``hatch_build.py``).

Each decoder takes a znode value (``bk_ledger``: v3 binary, v2 or v1 text ledger metadata) or a plain protobuf
message (``ml_info``, ``cursor_info``: the compression header already stripped) and returns exactly what the
pure-Python path computes, or None when the pure-Python path must decide: another format, anything malformed,
unusual or past a fixed limit. So the native code never decides an error; it only makes the common case fast.
``znode_row`` builds the ``znodes`` row exactly as ``scrape.extract.znode_row_with_sha`` does.

Each is None itself when the module was not built (no C compiler at install time), is stale, or is switched off
with ``PULSAR_OPS_NATIVE=0``; ``STATUS`` says which. Results are identical either way (tests/unit/test_native.py);
only the speed differs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

ABI = 15  # must equal NATIVE_ABI in _native.c: a stale in-tree build is ignored, not trusted
DISABLE_ENV = "PULSAR_OPS_NATIVE"

NativeFn = Callable[[bytes], "tuple[Any, ...] | None"]


def _load() -> tuple[dict[str, Any], str]:
    if os.environ.get(DISABLE_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return {}, f"off ({DISABLE_ENV}=0)"
    try:
        from pulsar_ops import _native  # type: ignore[attr-defined]
    except ImportError:
        return {}, "not built (no C compiler at install time?): pure Python"
    if getattr(_native, "ABI", None) != ABI:
        return {}, "stale build ignored (reinstall: pip install -e .): pure Python"
    names = (
        "bk_ledger",
        "ml_info",
        "cursor_info",
        "znode_row",
        "snap_nodes",
        "snap_walker",
        "bk_batch",
        "ml_batch",
        "schema_batch",
        "misc_batch",
        "sha256_hex",
        "pack_reads",
        "unpack_reads",
        "adler32",
        "crc32",
    )
    return {name: getattr(_native, name) for name in names}, "native"


_FNS, STATUS = _load()
bk_ledger: NativeFn | None = _FNS.get("bk_ledger")
ml_info: NativeFn | None = _FNS.get("ml_info")
cursor_info: NativeFn | None = _FNS.get("cursor_info")
# znode_row(store, path, stat, kind, decode_error, sha): the znodes row, exactly extract.znode_row_with_sha's
znode_row: Callable[..., tuple[Any, ...]] | None = _FNS.get("znode_row")
# snap_nodes(buf, pos, limit, digest): whole node records of a ZooKeeper snapshot stream (and the sum of their
# digests), exactly zkdata.stream.snap_nodes_py's
SnapNodes = Callable[[bytes, int, int, bool], "tuple[list[tuple[str, bytes, bytes]], int, bool, int] | None"]
snap_nodes: SnapNodes | None = _FNS.get("snap_nodes")
# snap_walker(tree, keep, keep_children, sessions, dead, roots, unloaded, deferred, originals, batch, cut, emit_packed,
# emit_reads, corrupt): zkdata.stream's pass-1 walk (load_partial) straight from the snapshot's bytes: feed(buf, pos,
# digest) parses and walks the records as snap_nodes parses them, step(path, data, stat) walks one, finish() ends; the
# emitted nodes go to emit_packed as scrape.packed chunks, no Python object per node (exactly the pure loop's result:
# tests/unit/zkdata/test_stream_native.py)
snap_walker: Callable[..., Any] | None = _FNS.get("snap_walker")
# bk_batch(store, reads, ledgers_root, max_bytes, znodes_spec, bk_spec): the hierarchical ledger znodes of a chunk of
# reads as znodes and bk_ledgers Arrow buffers written straight from the parsed metadata (no Python object per row),
# the rest left to the per-znode path (scrape.native_batch; exactly SnapshotSink.node's rows)
bk_batch: Callable[..., tuple[Any, ...]] | None = _FNS.get("bk_batch")
# ml_batch(store, reads, max_bytes, specs, helpers): the managed-ledger and cursor znodes of a chunk of reads as
# znodes, managed_ledgers, ledger_list, cursors, ack_ranges and cursor_properties Arrow buffers, the rest left to
# the per-znode path (scrape.native_batch; exactly SnapshotSink.node's rows)
ml_batch: Callable[..., tuple[Any, ...]] | None = _FNS.get("ml_batch")
# schema_batch(store, reads, ledgers_root, max_bytes, znodes_spec, schema_spec): the schema locators of a chunk of
# reads as znodes and schema_index Arrow buffers, the rest left to the per-znode path (scrape.native_batch)
schema_batch: Callable[..., tuple[Any, ...]] | None = _FNS.get("schema_batch")
# misc_batch(store, reads, ledgers_root, max_bytes, specs): the directories, partitioned-topic metadata, bundle owners
# and bundle load data of a chunk of reads as znodes, partitioned_topics, bundle_owners and bundle_data Arrow buffers,
# the rest left to the per-znode path (scrape.native_batch; exactly SnapshotSink.node's rows)
misc_batch: Callable[..., tuple[Any, ...]] | None = _FNS.get("misc_batch")
# sha256_hex(data): hashlib.sha256(data).hexdigest(), the data_sha256 the batches compute natively
sha256_hex: Callable[[bytes], str] | None = _FNS.get("sha256_hex")
# pack_reads(store, reads): a chunk of reads for a decode worker's pipe, or None (then marshal goes); unpack_reads(raw,
# idx=None): (store, reads) back (only those at idx); exactly scrape.packed's pack_reads_py / unpack_reads_py. The
# batches (bk_batch, ml_batch, schema_batch) read such a chunk in place too.
pack_reads: Callable[[str, list[Any]], bytes | None] | None = _FNS.get("pack_reads")
unpack_reads: Callable[..., tuple[str, list[Any]]] | None = _FNS.get("unpack_reads")
# adler32(data, value=1): zlib.adler32 (vectorised with AVX2): the snapshot's seals and the transaction logs' records
adler32: Callable[..., int] | None = _FNS.get("adler32")
# crc32(data, value=0): zlib.crc32 (folded with PCLMULQDQ): the snapshot nodes' digest CRC (snap_nodes, snap_walker)
crc32: Callable[..., int] | None = _FNS.get("crc32")
