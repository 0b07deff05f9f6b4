"""A ZooKeeper snapshot file (``snapshot.<zxid>[.gz|.snappy]``) decoded from its bytes. Pure, no I/O.

Layout, from upstream ``zookeeper-server/src/main/java/org/apache/zookeeper/server/``:

* ``persistence/SnapStream.java`` (3.6+): the stream is compressed by the file name's extension -- ``.gz``
  (``GZIPOutputStream``), ``.snappy`` (xerial ``SnappyOutputStream``: the 8-byte magic ``\\x82SNAPPY\\x00``, int
  version, int compatible version, then blocks of an int length and a raw snappy block), anything else plain
  (``zookeeper.snapshot.compression.method``). The Adler32 checksum is of the *uncompressed* bytes
  (``CheckedInputStream`` over the decompressing stream). 3.4 (``persistence/FileSnap.java``) writes plain only.
* ``persistence/FileSnap.java`` ``serialize``: ``FileHeader {int magic = "ZKSN"; int version = 2; long dbid}``,
  then ``util/SerializeUtils.serializeSnapshot``: ``int count`` sessions of ``{long id; int timeout}``, then
  ``DataTree.serialize``: the ACL cache (``ReferenceCountedACLCache.serialize``: ``int map`` entries of
  ``{long id; vector<ACL>}``) and the nodes in pre-order (``DataTree.serializeNode``): ``ustring path`` (the
  root is ``""``) and ``DataNode {buffer data; long acl; StatPersisted stat}``, ended by the path ``"/"``.
  Then the seal (``SnapStream.sealStream``): ``long`` Adler32 of every byte so far and the string ``"/"``.
* 3.6+ (``DataTree.serializeZxidDigest``, when ``zookeeper.digest.enabled``, the default): ``ZxidDigest {long
  zxid; int digestVersion; long digest}`` (a hex ``ustring`` digest when digestVersion < 2) and a second seal;
  3.9 (``DataTree.serializeLastProcessedZxid``, when ``zookeeper.snapshot.serializeLastProcessedZxid`` is on)
  ``long lastZxid`` and a third seal. Each later seal's checksum covers every byte before it, earlier seals
  included (one ``CheckedOutputStream``). Upstream's reader (``FileSnap.deserialize``) treats an EOF where the
  digest or the last zxid would be as "an older snapshot"; so does this one.

The snapshot is *fuzzy*: written while transactions are applied, so it holds every transaction up to the zxid
in its name and possibly some after it (see ``tree.py`` for the replay that makes it exact).
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import cramjam

from pulsar_ops import native
from pulsar_ops.zkdata.jute import STAT_PERSISTED, Acl, JuteError, JuteReader

_adler32 = native.adler32 or zlib.adler32  # the seals' and records' checksum (zlib's, vectorised)

SNAP_MAGIC = 0x5A4B534E  # "ZKSN" (FileSnap.SNAP_MAGIC)
SNAP_VERSION = 2  # FileSnap.VERSION
SNAPPY_MAGIC = b"\x82SNAPPY\x00"  # xerial SnappyCodec.MAGIC_HEADER
_SNAPPY_HEADER = len(SNAPPY_MAGIC) + 8
_SEAL_TAIL = b"\x00\x00\x00\x01/"  # the sealing string "/" as a ustring
_I = struct.Struct(">i")
_STAT = STAT_PERSISTED.size


class SnapshotCorrupt(ValueError):
    """Not a valid snapshot: the reason says which check failed (upstream would skip the file too)."""


def compression_of(name: str) -> str:
    """``SnapStream.getStreamMode``: the last dot-separated part of the name, ``gz`` or ``snappy`` (case
    insensitive), else plain (``""``)."""
    parts = name.split(".")
    if len(parts) > 1 and parts[-1].lower() in ("gz", "snappy"):
        return parts[-1].lower()
    return ""


def zxid_from_name(name: str, prefix: str) -> int:
    """``persistence/Util.getZxidFromName``: ``prefix.<hex>[.anything]``; -1 when it does not parse."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[0] == prefix:
        try:
            return int(parts[1], 16)
        except ValueError:
            return -1
    return -1


def _unsnappy(raw: bytes) -> bytes:
    if raw[: len(SNAPPY_MAGIC)] != SNAPPY_MAGIC:
        raise SnapshotCorrupt("no snappy stream magic")
    out: list[bytes] = []
    pos, n = 0, len(raw)
    while pos < n:
        if raw[pos : pos + len(SNAPPY_MAGIC)] == SNAPPY_MAGIC:  # a (concatenated) stream header
            pos += _SNAPPY_HEADER
            continue
        if pos + 4 > n:
            raise SnapshotCorrupt(f"snappy block length cut at byte {pos}")
        size = _I.unpack_from(raw, pos)[0]
        pos += 4
        if size < 0 or pos + size > n:
            raise SnapshotCorrupt(f"snappy block of {size} bytes at byte {pos - 4} runs past the end")
        try:
            out.append(bytes(cramjam.snappy.decompress_raw(raw[pos : pos + size])))
        except Exception as e:  # cramjam raises its own DecompressionError
            raise SnapshotCorrupt(f"snappy block at byte {pos - 4} does not decompress: {e}") from None
        pos += size
    return b"".join(out)


def decompress(raw: bytes, compression: str) -> bytes:
    """The uncompressed snapshot stream (``SnapStream.getInputStream``)."""
    if compression == "gz":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise SnapshotCorrupt(f"gzip stream does not decompress: {e}") from None
    if compression == "snappy":
        return _unsnappy(raw)
    return raw


def looks_valid(raw: bytes, compression: str) -> bool:
    """``SnapStream.isValidSnapshot`` (the cheap pre-check upstream's ``findNValidSnapshots`` applies): a gzip or
    snappy magic, or a plain file of at least 10 bytes ending with the sealing ``"/"``. 3.4's
    ``Util.isValidSnapshot`` is the plain check."""
    if compression == "gz":
        return raw[:2] == b"\x1f\x8b"
    if compression == "snappy":
        return raw[: len(SNAPPY_MAGIC)] == SNAPPY_MAGIC
    return len(raw) >= 10 and raw[-5:] == _SEAL_TAIL


@dataclass(frozen=True)
class ZxidDigest:
    zxid: int
    version: int
    digest: int


@dataclass
class SnapshotHeader:
    magic: int
    version: int
    dbid: int
    sessions: dict[int, int] = field(default_factory=dict)
    acls: dict[int, tuple[Acl, ...]] = field(default_factory=dict)


@dataclass
class SnapshotTrailer:
    digest: ZxidDigest | None = None
    last_processed_zxid: int | None = None


class SnapshotStream:
    """Decode an uncompressed snapshot stream: ``header()``, then ``nodes()`` (pre-order ``(path, data,
    acl_id, stat_persisted_bytes)``; the root's path is ``""``), then ``trailer()`` which verifies the seals.

    Raises SnapshotCorrupt on anything upstream would refuse (bad magic, short record, checksum mismatch)."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0
        self._nodes_done = False

    def header(self) -> SnapshotHeader:
        r = JuteReader(self.buf)
        try:
            magic, version, dbid = r.i32(), r.i32(), r.i64()
            if magic != SNAP_MAGIC:
                raise SnapshotCorrupt(f"magic {magic:#x} is not ZKSN ({SNAP_MAGIC:#x})")
            h = SnapshotHeader(magic, version, dbid)
            for _ in range(r.i32()):
                sid = r.i64()
                h.sessions[sid] = r.i32()
            for _ in range(r.i32()):
                key = r.i64()
                h.acls[key] = r.acl_vector()
        except JuteError as e:
            raise SnapshotCorrupt(f"header: {e}") from None
        self.pos = r.pos
        return h

    def nodes(self) -> Iterator[tuple[str, bytes, int, bytes]]:
        buf, pos, end = self.buf, self.pos, len(self.buf)
        unpack_i = _I.unpack_from
        unpack_q = struct.Struct(">q").unpack_from
        try:
            while True:
                n = unpack_i(buf, pos)[0]
                pos += 4
                if n < 0 or pos + n > end:
                    raise SnapshotCorrupt(f"path length {n} at byte {pos - 4} runs past the end")
                path = buf[pos : pos + n].decode("utf-8", "surrogateescape")
                pos += n
                if path == "/":
                    break
                dn = unpack_i(buf, pos)[0]
                pos += 4
                if dn < 0:  # a null buffer (-1): upstream DataNode.data == null; reads as empty
                    if dn != -1:
                        raise SnapshotCorrupt(f"data length {dn} at byte {pos - 4}")
                    data = b""
                else:
                    data = buf[pos : pos + dn]
                    pos += dn
                acl = unpack_q(buf, pos)[0]
                stat = buf[pos + 8 : pos + 8 + _STAT]
                pos += 8 + _STAT
                if pos > end:
                    raise SnapshotCorrupt(f"node {path!r} runs past the end of the stream")
                yield path, data, acl, stat
        except struct.error:
            raise SnapshotCorrupt(f"stream ends inside a node record (byte {pos})") from None
        self.pos = pos
        self._nodes_done = True

    def _seal(self, what: str) -> None:
        r = JuteReader(self.buf, self.pos)
        expected = _adler32(memoryview(self.buf)[: self.pos]) & 0xFFFFFFFF
        try:
            val = r.i64()
            r.string()
        except JuteError:
            raise SnapshotCorrupt(f"{what}: the stream ends before its checksum") from None
        if val != expected:
            raise SnapshotCorrupt(f"{what}: CRC corruption (stored {val:#x}, computed {expected:#x})")
        self.pos = r.pos

    def trailer(self) -> SnapshotTrailer:
        if not self._nodes_done:
            for _ in self.nodes():
                pass
        self._seal("the tree")
        t = SnapshotTrailer()
        rest = len(self.buf) - self.pos
        if rest == 0:  # 3.4/3.5, or the digest off: "likely due to reading an older snapshot"
            return t
        r = JuteReader(self.buf, self.pos)
        try:
            if rest != 8 + 13:  # not just a lastZxid and its seal: a ZxidDigest comes first
                zxid, version = r.i64(), r.i32()
                digest = int(r.string(), 16) if version < 2 else r.i64()
                t.digest = ZxidDigest(zxid, version, digest)
                self.pos = r.pos
                self._seal("the digest")
                r = JuteReader(self.buf, self.pos)
            if r.remaining():
                t.last_processed_zxid = r.i64()
                self.pos = r.pos
                self._seal("the last processed zxid")
        except (JuteError, ValueError) as e:
            if isinstance(e, SnapshotCorrupt):
                raise
            raise SnapshotCorrupt(f"after the tree: {e}") from None
        if self.pos != len(self.buf):
            raise SnapshotCorrupt(f"{len(self.buf) - self.pos} unexpected bytes after the last seal")
        return t


__all__ = [
    "SNAP_MAGIC",
    "SnapshotCorrupt",
    "SnapshotHeader",
    "SnapshotStream",
    "SnapshotTrailer",
    "ZxidDigest",
    "compression_of",
    "decompress",
    "looks_valid",
    "zxid_from_name",
]
