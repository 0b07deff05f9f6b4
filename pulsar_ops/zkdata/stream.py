"""A snapshot read as a stream, twice, so the whole tree is never held in memory. Pure: file reads only.

A 600,000-topic cluster's snapshot holds about 4M znodes (over a GB on disk); ``DataTree.load`` holds all of
them (~1 KB each in Python). Here the snapshot file is decompressed and parsed in blocks
(``SnapshotFile.nodes``) and read in two passes:

1. **load** (:func:`load_partial`): the checksum seals and the 3.6+ digest are verified over every node, and only
   the nodes the transaction logs after the snapshot touch (op paths and their parents, the ephemerals of the
   sessions the logs close) and the nodes the caller asks for (``want``: e.g. the chroot, the bookie layout
   znodes, the children of ``/admin/clusters``) are kept -- with their ancestors -- in a *partial*
   ``DataTree``. The replay (``DataTree.apply``, unchanged: the same fuzzy-snapshot idempotence, failed multis,
   digest check) then runs on that partial tree: every node it reads or changes is in it.
2. **emit** (:func:`emit_final`): the snapshot is streamed again and every node under the walked roots is
   handed to the sink as the replayed tree would give it: an untouched node as the snapshot has it, a kept node
   as the replay left it (or not at all when the replay deleted it or one of its ancestors: the subtree of a
   deleted node goes with it, as in ``DataTree._delete``), then the nodes the replay created. Nodes are emitted
   in post-order (a node once its subtree is read, so its child count is known: the client-visible
   ``numChildren`` and ``cversion``); the tables do not depend on the order.

The result equals ``DataTree.load`` + replay + ``iter_subtree`` node for node (tests/unit/zkdata/test_stream.py).

**One pass** (what the offline scrape uses first): pass 1 given ``roots`` and ``emit`` emits, as it reads them,
the nodes whose final state the replay cannot change: a node not kept (the replay neither reads nor changes
it, nor its child count: a child created or deleted keeps its parent) and under no node the replay may delete
(:func:`doomed`: the delete targets and the closed sessions' ephemerals; ``DataTree._delete`` takes the
subtree). Those under such a node wait in ``Partial.deferred``; after the replay, :func:`emit_replayed` emits
the kept nodes still in the replayed tree, the created ones and the deferred ones whose nearest kept ancestor
survived. The decoding then starts with the first node read instead of after a whole verifying pass, and the
snapshot is read once. A snapshot found corrupt after some nodes were emitted raises :class:`PartlyEmitted`:
the caller discards what it wrote and reads again in two passes (the fallback to an older snapshot).
"""

from __future__ import annotations

import gzip
import mmap
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import cramjam

from pulsar_ops import native
from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata import txnlog as T
from pulsar_ops.zkdata.tree import DataTree, Node, _s64, client_owner, node_digest

_adler32 = native.adler32 or zlib.adler32  # the seals' and records' checksum (zlib's, vectorised)

BLOCK = 8 << 20  # uncompressed bytes read at a time
NODE_BATCH = 4096  # node records parsed per call
MAP_WINDOW = 16 << 20  # bytes of a plain snapshot file mapped at a time by the native walk
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_STAT_SIZE = 60
_NO_OWNER = bytes(8)
_STAT_UNPACK = struct.Struct(">qqqqiiiqq").unpack
_EXCLUDED = "/zookeeper/"

Emit = Callable[[str, str, bytes, tuple[int, ...]], None]  # (store, path, data, client stat)
Read = tuple[str, bytes, tuple[int, ...]]  # (path, data, client stat)
EmitMany = Callable[[str, list[Read]], None]  # (store, reads of that store)
EmitPacked = Callable[[str, bytes, int, int], None]  # (store, packed chunk, its reads, their newest mtime)
EMIT_BATCH = 2000  # nodes handed to ``emit_many`` at a time (the decode pool's chunk)
# the pure loop's state slots (ctx: see ``_load_partial``); _WALK[0]: the native walk's maker, None for the pure loop
_W_OUT, _W_OUT_STORE, _W_HAND_OVER = 8, 9, 11
_WALK: list[Callable[..., Any] | None] = [native.snap_walker]
_NO_ROOTS: dict[str, str] = {}


class _Snappy:
    """xerial ``SnappyInputStream`` as a ``read(n)`` stream (the layout is described in ``snapshot.py``)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.pending = b""
        head = f.read(len(S.SNAPPY_MAGIC))
        if head != S.SNAPPY_MAGIC:
            raise S.SnapshotCorrupt("no snappy stream magic")
        f.read(8)
        self.offset = len(S.SNAPPY_MAGIC) + 8

    def _block(self) -> bytes | None:
        while True:
            head = self.f.read(4)
            if not head:
                return None
            if head == S.SNAPPY_MAGIC[:4]:  # a (concatenated) stream header
                rest = self.f.read(len(S.SNAPPY_MAGIC) - 4 + 8)
                if head + rest[:4] == S.SNAPPY_MAGIC:
                    self.offset += len(S.SNAPPY_MAGIC) + 8
                    continue
                raise S.SnapshotCorrupt(f"snappy block length cut at byte {self.offset}")
            if len(head) < 4:
                raise S.SnapshotCorrupt(f"snappy block length cut at byte {self.offset}")
            size = _I.unpack(head)[0]
            raw = self.f.read(size) if size >= 0 else b""
            if size < 0 or len(raw) < size:
                raise S.SnapshotCorrupt(f"snappy block of {size} bytes at byte {self.offset} runs past the end")
            try:
                out = bytes(cramjam.snappy.decompress_raw(raw))
            except Exception as e:  # cramjam raises its own DecompressionError
                raise S.SnapshotCorrupt(f"snappy block at byte {self.offset} does not decompress: {e}") from None
            self.offset += 4 + size
            return out

    def read(self, n: int) -> bytes:
        parts, have = [self.pending], len(self.pending)
        while have < n:
            b = self._block()
            if b is None:
                break
            parts.append(b)
            have += len(b)
        data = b"".join(parts)
        self.pending = data[n:]
        return data[:n]


def snap_nodes_py(
    buf: bytes, pos: int, limit: int, digest: bool
) -> tuple[list[tuple[str, bytes, bytes]], int, bool, int] | None:
    """Whole node records (``DataTree.serializeNode``: ustring path; ``DataNode {buffer data; long acl;
    StatPersisted stat}``) from ``buf[pos:]``, at most ``limit``: (nodes, the position after the last whole one,
    whether the terminating path ``"/"`` was read, and with ``digest`` the sum of the nodes' ``node_digest``
    CRCs, unmasked). A record cut by the end of ``buf`` ends the batch; a negative
    path length or a data length below -1 gives None (the record-by-record reader decides). The pure twin of
    ``native.snap_nodes`` (tests/unit/test_native.py)."""
    if pos < 0 or pos > len(buf):
        return None
    out: list[tuple[str, bytes, bytes]] = []
    end = len(buf)
    unpack_i = _I.unpack_from
    crc32 = zlib.crc32
    total = 0
    while len(out) < limit:
        if end - pos < 4:
            break
        n = unpack_i(buf, pos)[0]
        if n < 0:
            return None
        if end - pos - 4 < n:
            break
        if n == 1 and buf[pos + 4] == 0x2F:  # "/"
            return out, pos + 5, True, total
        if end - pos - 4 - n < 4:
            break
        dn = unpack_i(buf, pos + 4 + n)[0]
        if dn < -1:
            return None
        d = dn if dn > 0 else 0
        size = 4 + n + 4 + d + 8 + _STAT_SIZE
        if end - pos < size:
            break
        p = pos + 4 + n + 4
        raw_path = buf[pos + 4 : pos + 4 + n]
        data, stat = buf[p : p + d], buf[p + d + 8 : p + d + 68]
        if digest and not raw_path.startswith(b"/zookeeper/"):
            total += crc32(stat[0:16] + stat[52:60] + stat[16:52], crc32(data, crc32(raw_path)))
        out.append((raw_path.decode("utf-8", "surrogateescape"), data, stat))
        pos += size
    return out, pos, False, total


class SnapshotFile:
    """One snapshot file read block by block: ``header()``, ``nodes()`` (pre-order ``(path, data, stat)``, the
    root's path ``""``), then ``trailer()`` (the seals, as ``SnapshotStream`` checks them). Raises
    SnapshotCorrupt on anything upstream would refuse. A context manager (closes the file)."""

    def __init__(self, path: Path, block: int = BLOCK) -> None:
        self.path = Path(path)
        self.compression = S.compression_of(self.path.name)
        self.block = block
        self._f: IO[bytes] = open(self.path, "rb")  # noqa: SIM115 - closed by close()
        self._src: Any = self._f
        self.buf = b""
        self.pos = 0
        self.adler = 1  # Adler32 of the bytes consumed before self.buf
        self.eof = False
        self.with_digest = False  # sum the nodes' digests in ``digest`` (pass 1)
        self.digest = 0

    def __enter__(self) -> SnapshotFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._f.close()

    def _open_stream(self) -> None:
        f = self._f
        if self.compression == "gz":
            if f.read(2) != b"\x1f\x8b":
                raise S.SnapshotCorrupt("fails upstream's isValidSnapshot (no compression magic or no trailing '/')")
            f.seek(0)
            self._src = gzip.GzipFile(fileobj=f, mode="rb")
        elif self.compression == "snappy":
            if f.read(len(S.SNAPPY_MAGIC)) != S.SNAPPY_MAGIC:
                raise S.SnapshotCorrupt("fails upstream's isValidSnapshot (no compression magic or no trailing '/')")
            f.seek(0)
            self._src = _Snappy(f)
        else:  # SnapStream.isValidSnapshot for a plain file: >= 10 bytes ending with the sealing "/"
            f.seek(0, 2)
            size = f.tell()
            tail = b""
            if size >= 5:
                f.seek(size - 5)
                tail = f.read(5)
            if size < 10 or tail != b"\x00\x00\x00\x01/":
                raise S.SnapshotCorrupt("fails upstream's isValidSnapshot (no compression magic or no trailing '/')")
            f.seek(0)

    def _fill(self, need: int) -> bool:
        """At least ``need`` bytes from ``pos`` in ``buf`` (False at the end of the stream)."""
        while len(self.buf) - self.pos < need and not self.eof:
            try:
                chunk = self._src.read(max(self.block, need))
            except (OSError, EOFError, zlib.error) as e:
                raise S.SnapshotCorrupt(f"gzip stream does not decompress: {e}") from None
            if not chunk:
                self.eof = True
                break
            self.adler = _adler32(memoryview(self.buf)[: self.pos], self.adler)
            self.buf = self.buf[self.pos :] + chunk
            self.pos = 0
        return len(self.buf) - self.pos >= need

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or not self._fill(n):
            raise S.SnapshotCorrupt(f"{what}: the stream ends early")
        p = self.pos
        self.pos = p + n
        return self.buf[p : p + n]

    def _i32(self, what: str) -> int:
        v: int = _I.unpack(self._take(4, what))[0]
        return v

    def _i64(self, what: str) -> int:
        v: int = _Q.unpack(self._take(8, what))[0]
        return v

    def _skip_string(self, what: str) -> None:
        n = self._i32(what)
        if n > 0:
            self._take(n, what)

    def header(self) -> S.SnapshotHeader:
        self._open_stream()
        magic, version, dbid = self._i32("header"), self._i32("header"), self._i64("header")
        if magic != S.SNAP_MAGIC:
            raise S.SnapshotCorrupt(f"magic {magic:#x} is not ZKSN ({S.SNAP_MAGIC:#x})")
        h = S.SnapshotHeader(magic, version, dbid)
        for _ in range(max(self._i32("sessions"), 0)):
            sid = self._i64("sessions")
            h.sessions[sid] = self._i32("sessions")
        for _ in range(max(self._i32("acl cache"), 0)):
            self._i64("acl cache")
            for _ in range(max(self._i32("acl cache"), 0)):
                self._i32("acl cache")
                self._skip_string("acl cache")
                self._skip_string("acl cache")
        return h

    def nodes(self) -> Iterator[tuple[str, bytes, bytes]]:
        """Pre-order ``(path, data, stat)``, parsed a batch at a time (``native.snap_nodes`` or its pure twin);
        anything a batch cannot take (a negative length, a record cut by the end of the stream) goes to the
        record-by-record reader, which raises the precise SnapshotCorrupt. With ``with_digest`` set, ``digest``
        sums the nodes' ``tree.node_digest`` (unmasked)."""
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[tuple[str, bytes, bytes]]]:
        """:meth:`nodes` a parsed batch at a time (a list; the record-by-record reader's nodes one per list)."""
        batch_fn = native.snap_nodes or snap_nodes_py
        with_digest = self.with_digest
        while True:
            r = batch_fn(self.buf, self.pos, NODE_BATCH, with_digest)
            if r is None:
                for one in self._nodes_one_by_one():
                    yield [one]
                return
            batch, self.pos, done, digest = r
            self.digest += digest
            if batch:
                yield batch
            if done:
                return
            if not batch and not self._fill(len(self.buf) - self.pos + 1):
                for one in self._nodes_one_by_one():  # cut short: says where and why
                    yield [one]
                return

    def walk(
        self,
        feed: Callable[..., tuple[int, int, bool, int, bool, int | None]],
        step: Callable[[str, bytes, bytes], Any],
    ) -> int:
        """:meth:`batches` for ``native.snap_walker``: ``feed(buf, pos, digest)`` parses and walks the whole records
        from ``pos`` (the walked count, the new position, whether the terminating ``"/"`` was read, their digests'
        sum, whether it stopped at a record it cannot take, and given a running Adler-32, that of the bytes walked);
        what it cannot take goes to the record-by-record reader, its nodes to ``step``. Returns the nodes walked."""
        count = 0
        with_digest = self.with_digest
        if not self.compression and not self.eof:
            count, stop = self._walk_mapped(feed)
            if stop:
                return count
        while True:
            n, self.pos, done, digest, bad, _ = feed(self.buf, self.pos, with_digest)
            count += n
            self.digest += digest
            if done:
                return count
            if bad or (not n and not self._fill(len(self.buf) - self.pos + 1)):
                for path, data, stat in self._nodes_one_by_one():  # says where and why, or ends the stream
                    step(path, data, stat)
                    count += 1
                return count

    def _walk_mapped(self, feed: Callable[..., tuple[int, int, bool, int, bool, int | None]]) -> tuple[int, bool]:
        """:meth:`walk` over a plain snapshot file mapped a window at a time (``MAP_WINDOW``): ``feed`` reads the page
        cache in place, with no read into a fresh buffer, no joining of blocks, no page faults on new memory (a
        quarter of pass 1 with ``_fill``'s blocks). Then the stream goes on from where the walk stopped, as
        ``_fill`` reads it: (nodes walked, whether the terminating ``"/"`` was read)."""
        f = self._f
        size = os.fstat(f.fileno()).st_size
        at = f.tell() - len(self.buf) + self.pos  # the file offset of the walk
        self.adler = _adler32(memoryview(self.buf)[: self.pos], self.adler)
        gran = mmap.ALLOCATIONGRANULARITY
        count, window, done = 0, MAP_WINDOW, False
        while at < size:
            base = at - at % gran
            length = min(size - base, window)
            try:
                mm = mmap.mmap(f.fileno(), length, access=mmap.ACCESS_READ, offset=base)
            except (OSError, ValueError):  # a file (system) that cannot be mapped: read on in blocks from here
                break
            with mm:
                n, q, done, digest, bad, adler = feed(mm, at - base, self.with_digest, self.adler)
                if adler is None:  # bad: stopped before a record it cannot take; the bytes before it count
                    with memoryview(mm) as mv:
                        adler = _adler32(mv[at - base : q], self.adler)
                self.adler = adler
            count += n
            self.digest += digest
            at = base + q
            if done or bad or (not n and base + length >= size):  # the end, or the reader below says why
                break
            window = window * 2 if not n else MAP_WINDOW  # no whole record in the window: a longer one
        f.seek(at)
        self.buf, self.pos = b"", 0
        return count, done

    def _nodes_one_by_one(self) -> Iterator[tuple[str, bytes, bytes]]:
        unpack_i = _I.unpack_from
        fill = self._fill
        while True:
            buf, pos = self.buf, self.pos
            end = len(buf)
            if pos + 8 > end:
                fill(8)
                buf, pos, end = self.buf, self.pos, len(self.buf)
                if pos + 4 > end:
                    raise S.SnapshotCorrupt("stream ends inside a node record")
            n = unpack_i(buf, pos)[0]
            if n < 0:
                raise S.SnapshotCorrupt(f"path length {n} runs past the end")
            if pos + 4 + n + 4 > end:
                if not fill(4 + n + 4):
                    raise S.SnapshotCorrupt(f"path length {n} runs past the end")
                continue
            path = buf[pos + 4 : pos + 4 + n].decode("utf-8", "surrogateescape")
            if path == "/":
                self.pos = pos + 4 + n
                return
            p = pos + 4 + n
            dn = unpack_i(buf, p)[0]
            if dn < 0:  # a null buffer (-1): upstream DataNode.data == null; reads as empty
                if dn != -1:
                    raise S.SnapshotCorrupt(f"data length {dn}")
                dn = 0
                size = 4 + n + 4 + 8 + _STAT_SIZE
            else:
                size = 4 + n + 4 + dn + 8 + _STAT_SIZE
            if pos + size > end:
                if not fill(size):
                    raise S.SnapshotCorrupt(f"node {path!r} runs past the end of the stream")
                continue
            p += 4
            data = buf[p : p + dn]
            p += dn + 8
            self.pos = p + _STAT_SIZE
            stat = buf[p : p + _STAT_SIZE]
            if self.with_digest:
                self.digest += node_digest(path, data, stat)
            yield path, data, stat

    def _seal(self, what: str) -> None:
        expected = _adler32(memoryview(self.buf)[: self.pos], self.adler) & 0xFFFFFFFF
        try:
            val = self._i64(what)
            n = self._i32(what)
            if n < 0:
                raise S.SnapshotCorrupt(f"{what}: null seal string")
            self._take(n, what)
        except S.SnapshotCorrupt:
            raise S.SnapshotCorrupt(f"{what}: the stream ends before its checksum") from None
        if val != expected:
            raise S.SnapshotCorrupt(f"{what}: CRC corruption (stored {val:#x}, computed {expected:#x})")

    def trailer(self) -> S.SnapshotTrailer:
        """The seals, the 3.6+ ZxidDigest and the 3.9 last processed zxid (as ``SnapshotStream.trailer``)."""
        self._seal("the tree")
        while self._fill(len(self.buf) - self.pos + 1):  # the rest of the stream (a few dozen bytes)
            pass
        t = S.SnapshotTrailer()
        rest = len(self.buf) - self.pos
        if rest == 0:
            return t
        try:
            if rest != 8 + 13:  # not just a lastZxid and its seal: a ZxidDigest comes first
                zxid, version = self._i64("digest"), self._i32("digest")
                if version < 2:
                    n = self._i32("digest")
                    digest = int(self._take(n, "digest").decode("ascii"), 16)
                else:
                    digest = self._i64("digest")
                t.digest = S.ZxidDigest(zxid, version, digest)
                self._seal("the digest")
            if len(self.buf) - self.pos:
                t.last_processed_zxid = self._i64("last zxid")
                self._seal("the last processed zxid")
        except (ValueError, UnicodeDecodeError) as e:
            if isinstance(e, S.SnapshotCorrupt):
                raise
            raise S.SnapshotCorrupt(f"after the tree: {e}") from None
        if len(self.buf) != self.pos:
            raise S.SnapshotCorrupt(f"{len(self.buf) - self.pos} unexpected bytes after the last seal")
        return t


def _parent(path: str) -> str:
    return path[: path.rfind("/")]


class PartlyEmitted(S.SnapshotCorrupt):
    """The snapshot is corrupt and some of its nodes were already emitted (one-pass mode)."""


def doomed(txns: list[T.Txn]) -> set[str]:
    """The paths the replay of ``txns`` may delete (``DataTree._delete``: the subtree goes with the node): the
    delete targets and the paths a 3.6+ closeSession names. (A closed session's ephemerals, which pre-3.6 logs
    do not name, are found by owner in :func:`load_partial`.) Failed multis apply nothing, as in :func:`touched`."""
    out: set[str] = set()
    for txn in txns:
        ops = txn.ops
        if txn.type == T.MULTI and any(op.type == T.ERROR for op in ops):
            continue
        for op in ops:
            if op.type in (T.DELETE, T.DELETE_CONTAINER):
                out.add(op.path)
            elif op.type == T.CLOSE_SESSION:
                out.update(op.paths or ())
    return out


def touched(txns: list[T.Txn]) -> tuple[set[str], set[int]]:
    """The paths the replay of ``txns`` reads or changes (snapshot form: the root is ``""``) and the sessions it
    closes (their ephemerals are deleted without being named in pre-3.6 logs)."""
    paths: set[str] = set()
    sessions: set[int] = set()
    for txn in txns:
        ops = txn.ops
        if txn.type == T.MULTI and any(op.type == T.ERROR for op in ops):
            continue  # a failed multi: none of its ops is applied
        for op in ops:
            if op.type == T.CLOSE_SESSION:
                sessions.add(txn.client_id)
                for p in op.paths or ():
                    paths.add(p)
                    paths.add(_parent(p))
            elif op.path:
                paths.add(op.path)
                paths.add(_parent(op.path))
    return paths, sessions


@dataclass
class Partial:
    """The kept part of a snapshot's tree (then replayed in place) and what pass 2 needs to finish it."""

    tree: DataTree
    unloaded: dict[int, int] = field(default_factory=dict)  # id(kept snapshot node) -> its children not kept
    originals: dict[str, Node] = field(default_factory=dict)  # path -> the kept snapshot node (by identity)
    nodes: int = 0  # nodes in the snapshot
    # one-pass mode: nodes not kept under a node the replay may delete, (store, path, data, stat, children)
    deferred: list[tuple[str, str, bytes, bytes, int]] = field(default_factory=list)
    emitted: int = 0  # nodes emitted by pass 1 (one-pass mode)


def load_partial(
    snap: SnapshotFile,
    keep: set[str],
    keep_children: set[str],
    sessions: set[int],
    *,
    with_digest: bool = True,
    roots: dict[str, str] | None = None,
    emit: Emit | None = None,
    doomed_paths: set[str] | None = None,
    emit_many: EmitMany | None = None,
    emit_batch: int = EMIT_BATCH,
    emit_packed: EmitPacked | None = None,
    cut: int = 0,
) -> tuple[Partial, S.SnapshotHeader, S.SnapshotTrailer]:
    """Pass 1 over a snapshot file: verify it (seals, digest computed over every node) and keep the nodes whose
    path is in ``keep``, whose parent is in ``keep_children`` or whose ephemeral owner is in ``sessions``, with
    their ancestors, in a partial tree (``DataTree`` node layout). With ``roots`` and ``emit`` or ``emit_many``
    (one-pass mode, ``doomed_paths`` from :func:`doomed`): also emit every node under ``roots`` the replay cannot
    change (see the module's docstring); finish with :func:`emit_replayed` after the replay. ``emit_many`` takes
    them a list at a time (at most ``emit_batch``, one store each: no call per node); ``emit`` one by one. With
    ``emit_packed`` too, the native walk (``native.snap_walker``) hands its lists over packed instead
    (``scrape.packed``'s layout, each path without its first ``cut`` characters; a path that is not UTF-8 still
    goes to ``emit_many``, uncut, in a list of its own)."""
    if emit_many is None and emit is not None:
        emit_many = _one_by_one(emit)
    part = Partial(DataTree())
    try:
        return _load_partial(
            snap,
            part,
            keep,
            keep_children,
            sessions,
            with_digest,
            roots,
            emit_many,
            doomed_paths,
            emit_batch,
            emit_packed,
            cut,
        )
    except S.SnapshotCorrupt as e:
        if part.emitted:
            raise PartlyEmitted(str(e)) from e
        raise


def _one_by_one(emit: Emit) -> EmitMany:
    def many(store: str, reads: list[Read]) -> None:
        for path, data, stat in reads:
            emit(store, path, data, stat)

    return many


def _load_partial(
    snap: SnapshotFile,
    part: Partial,
    keep: set[str],
    keep_children: set[str],
    sessions: set[int],
    with_digest: bool,
    roots: dict[str, str] | None,
    emit_many: EmitMany | None,
    doomed_paths: set[str] | None,
    emit_batch: int,
    emit_packed: EmitPacked | None,
    cut: int,
) -> tuple[Partial, S.SnapshotHeader, S.SnapshotTrailer]:
    header = snap.header()
    snap.with_digest, snap.digest = with_digest, 0
    tree = part.tree
    unloaded, originals, deferred = part.unloaded, part.originals, part.deferred
    ephem = tree.ephemerals
    unpack_owner = _Q.unpack_from
    unpack_stat = _STAT_UNPACK
    roots_map = roots if emit_many is not None and roots else _NO_ROOTS  # no store: nothing emitted
    roots_get = roots_map.get
    dead = doomed_paths or set()
    batch_size = max(1, emit_batch)
    # frame: [path, data, stat, children seen, kept node or None, store or None, under a doomed node,
    #         its children kept]
    stack: list[list[Any]] = []
    count = 0
    emitted = 0
    # the pure loop's state (its _W_* slots): the stack, the sets it tests, the emitted nodes not handed over yet
    # (all of one store) and that store
    ctx: list[Any] = [
        stack,
        keep,
        keep_children,
        sessions,
        dead,
        roots_map,
        unloaded,
        deferred,
        [],
        "",
        batch_size,
        None,
    ]

    def hand_over() -> None:
        nonlocal emitted
        reads = ctx[_W_OUT]
        ctx[_W_OUT] = []
        emitted += len(reads)
        part.emitted = emitted  # from here on a corrupt snapshot is PartlyEmitted
        assert emit_many is not None
        emit_many(ctx[_W_OUT_STORE], reads)

    ctx[_W_HAND_OVER] = hand_over

    def close(frame: list[Any]) -> None:
        node = frame[4]
        if node is not None:
            unloaded[id(node)] = frame[3] - (len(node[2]) if node[2] else 0)
            return
        store = frame[5]
        if store is None:
            return
        if frame[6]:
            deferred.append((store, frame[0], frame[1], frame[2], frame[3]))
            return
        if store != ctx[_W_OUT_STORE]:
            if ctx[_W_OUT]:
                hand_over()
            ctx[_W_OUT_STORE] = store
        # the client stat, as _client builds it (inlined: once per emitted node)
        data, n = frame[1], frame[3]
        czxid, mzxid, ctime, mtime, version, cversion, aversion, owner, pzxid = unpack_stat(frame[2])
        if owner:
            owner = client_owner(owner)
        out = ctx[_W_OUT]
        out.append(
            (
                frame[0],
                data,
                (czxid, mzxid, ctime, mtime, version, cversion * 2 - n, aversion, owner, len(data), n, pzxid),
            )
        )
        if len(out) >= batch_size:
            hand_over()

    def step(path: str, data: bytes, stat: bytes) -> None:
        """One node record (the definition; ``native.snap_walker`` walks them the same way)."""
        if not stack:
            if path != "":
                raise S.SnapshotCorrupt(f"the first node is {path!r}, not the root")
            node: Node = [data, stat, None]
            tree.root = node
            originals[""] = node
            stack.append(["", data, stat, 0, node, roots_get(""), False, "" in keep_children])
            return
        cut = path.rfind("/")
        parent = stack[-1]
        while len(parent[0]) != cut or not path.startswith(parent[0]):  # not the parent: its subtree is read
            close(stack.pop())
            if not stack:
                raise S.SnapshotCorrupt(f"Invalid Datatree, unable to find parent {path[:cut]} of path {path}")
            parent = stack[-1]
        parent[3] += 1
        store = parent[5]
        if store is None:
            store = roots_get(path)
        frame = [path, data, stat, 0, None, store, parent[6] or path in dead, path in keep_children]
        stack.append(frame)
        owner_kept = False
        if not stat.startswith(_NO_OWNER, 44):
            owner = unpack_owner(stat, 44)[0]
            if owner in sessions:
                ephem.setdefault(owner, set()).add(path)
                owner_kept = True
                frame[6] = True  # the replay deletes it when it closes the session
        if owner_kept or parent[7] or path in keep:
            # materialise the chain of ancestors not kept yet, then this node
            i = len(stack) - 1
            while stack[i - 1][4] is None:
                i -= 1
            for j in range(i, len(stack)):
                f = stack[j]
                pnode = stack[j - 1][4]
                n: Node = [f[1], f[2], None]
                f[4] = n
                originals[f[0]] = n
                if pnode[2] is None:
                    pnode[2] = {}
                pnode[2][f[0][f[0].rfind("/") + 1 :]] = n

    make = _WALK[0]
    if make is not None and _walkable(keep, keep_children, sessions, dead, roots_map):
        count = _walk_native(
            make, snap, part, keep, keep_children, sessions, dead, roots_map, emit_many, batch_size, emit_packed, cut
        )
        emitted = part.emitted
    else:
        for batch in snap.batches():
            count += len(batch)
            for path, data, stat in batch:
                step(path, data, stat)
        while stack:
            close(stack.pop())
        if ctx[_W_OUT]:
            hand_over()
    if count == 0:
        raise S.SnapshotCorrupt("the snapshot holds no nodes (not even the root)")
    trailer = snap.trailer()
    if with_digest:
        tree.digest = _s64(snap.digest)
    part.nodes = count
    part.emitted = emitted
    return part, header, trailer


def _walkable(keep: Any, keep_children: Any, sessions: Any, dead: Any, roots: Any) -> bool:
    """Whether the native walk takes these arguments: sets of str paths, a dict of str roots to str stores."""
    sets = (keep, keep_children, dead)
    if not all(isinstance(x, (set, frozenset)) for x in (*sets, sessions)) or type(roots) is not dict:
        return False
    return all(type(p) is str for s in sets for p in s) and all(
        type(k) is str and type(v) is str for k, v in roots.items()
    )


def _walk_native(
    make: Callable[..., Any],
    snap: SnapshotFile,
    part: Partial,
    keep: set[str],
    keep_children: set[str],
    sessions: set[int],
    dead: set[str],
    roots: dict[str, str],
    emit_many: EmitMany | None,
    batch: int,
    emit_packed: EmitPacked | None,
    cut: int,
) -> int:
    """Pass 1 by ``native.snap_walker`` (the pure loop of :func:`_load_partial` is its definition): the nodes walked.
    Without ``emit_packed`` its packed chunks are unpacked for ``emit_many`` (paths uncut)."""
    packed_out = emit_packed
    if packed_out is None:
        cut = 0
        unpack = native.unpack_reads
        assert unpack is not None  # built with snap_walker

        def unpacked(store: str, raw: bytes, n: int, mtime: int) -> None:
            assert emit_many is not None
            emit_many(store, unpack(raw)[1])

        packed_out = unpacked

    def on_packed(store: str, raw: bytes, n: int, mtime: int) -> None:
        part.emitted += n  # from here on a corrupt snapshot is PartlyEmitted
        packed_out(store, raw, n, mtime)

    def on_reads(store: str, reads: list[Read]) -> None:
        part.emitted += len(reads)
        assert emit_many is not None
        emit_many(store, reads)

    walker = make(
        part.tree,
        keep,
        keep_children,
        sessions,
        dead,
        roots,
        part.unloaded,
        part.deferred,
        part.originals,
        batch,
        cut,
        on_packed,
        on_reads,
        S.SnapshotCorrupt,
    )
    count = snap.walk(walker.feed, walker.step)
    walker.finish()
    return count


def emit_replayed(part: Partial, roots: dict[str, str], emit: Emit) -> int:
    """One-pass mode, after the replay: emit what pass 1 held back under ``roots``: the kept snapshot nodes still
    in the replayed tree (their final data and client stat), the created nodes, and the deferred nodes whose
    nearest kept ancestor is still in the tree. Returns the number emitted (with pass 1's: every node once)."""
    unloaded, originals = part.unloaded, part.originals
    alive: set[int] = set()
    emitted = 0
    walk: list[tuple[str, Node, str | None]] = [("", part.tree.root, roots.get(""))]
    while walk:
        p, node, store = walk.pop()
        kids = node[2]
        n = len(kids) if kids else 0
        kept = unloaded.get(id(node))
        if kept is not None and originals.get(p) is node:
            alive.add(id(node))
            if store is not None:
                emit(store, p, node[0], _client(node[0], node[1], n + kept))
                emitted += 1
        elif store is not None:
            emit(store, p or "/", node[0], _client(node[0], node[1], n))
            emitted += 1
        if kids:
            for name, child in kids.items():
                cp = f"{p}/{name}"
                walk.append((cp, child, store if store is not None else roots.get(cp)))
    for store, path, data, stat, n in part.deferred:
        q = path
        while q not in originals:
            q = q[: q.rfind("/")]
        if id(originals[q]) in alive:
            emit(store, path, data, _client(data, stat, n))
            emitted += 1
    part.deferred = []
    return part.emitted + emitted


def _client(data: bytes, stat: bytes, n: int) -> tuple[int, ...]:
    czxid, mzxid, ctime, mtime, version, cversion, aversion, owner, pzxid = _STAT_UNPACK(stat)
    if owner:
        owner = client_owner(owner)
    return (czxid, mzxid, ctime, mtime, version, cversion * 2 - n, aversion, owner, len(data), n, pzxid)


def emit_final(
    snap: SnapshotFile,
    part: Partial,
    roots: dict[str, str],
    emit: Emit,
    *,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Pass 2: stream the snapshot again and emit (store, path, data, client stat) for every node of the replayed
    tree under one of ``roots`` (snapshot path -> store): the snapshot's nodes in post-order, then the created
    ones. Returns the number emitted."""
    snap.header()
    unloaded, originals = part.unloaded, part.originals
    # frame: [path, data, stat, children seen, store or None, state]; state: None untouched, a node (kept, alive)
    # or False (dead: deleted by the replay, or under a deleted node)
    stack: list[list[Any]] = []
    emitted = 0
    kept_alive: set[int] = set()

    def close(frame: list[Any]) -> None:
        nonlocal emitted
        store, state = frame[4], frame[5]
        if store is None or state is False:
            return
        if state is None:
            emit(store, frame[0], frame[1], _client(frame[1], frame[2], frame[3]))
        else:
            kids = state[2]
            n = (len(kids) if kids else 0) + unloaded[id(state)]
            emit(store, frame[0], state[0], _client(state[0], state[1], n))
        emitted += 1
        if progress is not None and emitted % 50_000 == 0:
            progress(emitted)

    for path, data, stat in snap.nodes():
        if not stack:
            stack.append(["", data, stat, 0, roots.get(""), part.tree.root])
            kept_alive.add(id(part.tree.root))
            continue
        cut = path.rfind("/")
        parent_path = path[:cut]
        while stack[-1][0] != parent_path:
            close(stack.pop())
            if not stack:
                raise S.SnapshotCorrupt(f"Invalid Datatree, unable to find parent {parent_path} of path {path}")
        parent = stack[-1]
        parent[3] += 1
        pstate = parent[5]
        state: Any = None
        if pstate is False:
            state = False
        elif pstate is not None:
            orig = originals.get(path)
            if orig is not None:  # kept: what the replay left there
                kids = pstate[2]
                final = kids.get(path[cut + 1 :]) if kids else None
                if final is orig:
                    state = orig
                    kept_alive.add(id(orig))
                else:
                    state = False  # deleted (a node created again at this path is emitted with the created ones)
        store = parent[4]
        if store is None:
            store = roots.get(path)
        stack.append([path, data, stat, 0, store, state])
    while stack:
        close(stack.pop())

    # the created nodes: in the replayed partial tree, not kept snapshot nodes
    walk: list[tuple[str, Node, str | None]] = [("", part.tree.root, roots.get(""))]
    while walk:
        p, node, store = walk.pop()
        kids = node[2]
        if store is not None and id(node) not in kept_alive:
            emit(store, p or "/", node[0], _client(node[0], node[1], len(kids) if kids else 0))
            emitted += 1
        if kids:
            for name, child in kids.items():
                cp = f"{p}/{name}"
                walk.append((cp, child, store if store is not None else roots.get(cp)))
    return emitted


__all__ = [
    "BLOCK",
    "Partial",
    "PartlyEmitted",
    "SnapshotFile",
    "doomed",
    "emit_final",
    "emit_replayed",
    "load_partial",
    "snap_nodes_py",
    "touched",
]
