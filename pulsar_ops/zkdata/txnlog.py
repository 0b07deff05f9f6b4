"""A ZooKeeper transaction log file (``log.<zxid>``) decoded from its bytes. Pure, no I/O.

Upstream ``zookeeper-server/src/main/java/org/apache/zookeeper/server/persistence/FileTxnLog.java``: a
``FileHeader {int magic = "ZKLG"; int version = 2; long dbid}``, then records of ``long crc`` (Adler32 of the
entry bytes -- ``FileTxnLog.append`` checksums the serialized buffer only, whatever the class comment says),
``buffer entry`` and the end-of-record byte ``'B'``; the file is preallocated with zeros, and a zero-length
entry is the end (``persistence/Util.readTxnBytes``). ``FileTxnIterator.next`` stops at EOF; a partial last
record (the server died while appending) is "Last transaction was partial" and ends the log there; a CRC mismatch
is an IOException ("CRC check failed").

The entry (``util/SerializeUtils.deserializeTxn``): ``TxnHeader {long clientId; int cxid; long zxid; long time;
int type}`` then the record of that type (``zookeeper.jute``, module ``org.apache.zookeeper.txn``), then in 3.6+
an optional ``TxnDigest {int version; long treeDigest}``. A ``create`` too short for ``CreateTxn`` is a
``CreateTxnV0`` (no parentCVersion: -1, fixed up on replay); a ``closeSession`` without a body is a pre-3.6
one (no ``CloseSessionTxn`` paths). Op codes: ``ZooDefs.OpCode``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import IO

from pulsar_ops import native
from pulsar_ops.zkdata.jute import TXN_HEADER, Acl, JuteError, JuteReader

_adler32 = native.adler32 or zlib.adler32  # the seals' and records' checksum (zlib's, vectorised)

LOG_MAGIC = 0x5A4B4C47  # "ZKLG" (FileTxnLog.TXNLOG_MAGIC)
LOG_VERSION = 2
_EOR = 0x42  # 'B'
_QI = struct.Struct(">qi")

# ZooDefs.OpCode
CREATE = 1
DELETE = 2
SET_DATA = 5
SET_ACL = 7
CHECK = 13
MULTI = 14
CREATE2 = 15
RECONFIG = 16
CREATE_CONTAINER = 19
DELETE_CONTAINER = 20
CREATE_TTL = 21
CREATE_SESSION = -10
CLOSE_SESSION = -11
ERROR = -1

CREATES = (CREATE, CREATE2, CREATE_TTL, CREATE_CONTAINER)
# types upstream's deserializeTxn knows; anything else is "Unsupported Txn"
KNOWN_TYPES = frozenset(
    (*CREATES, DELETE, DELETE_CONTAINER, SET_DATA, RECONFIG, SET_ACL, ERROR, MULTI, CREATE_SESSION, CLOSE_SESSION)
)


class TxnLogCorrupt(ValueError):
    """The log is not a transaction log (bad header) or one of its entries does not decode."""


@dataclass(frozen=True)
class Op:
    """One change: a top-level transaction or one op of a multi. Fields unused by the type stay at defaults.

    ``parent_cversion`` is -1 for a CreateTxnV0 (upstream then uses the parent's cversion + 1); ``owner`` is the
    ephemeral owner the create implies (the session for ``ephemeral``, ``Long.MIN_VALUE`` for a container, the
    TTL-encoded owner for createTTL), 0 for a persistent node."""

    type: int
    path: str = ""
    data: bytes = b""
    acl: tuple[Acl, ...] = ()
    owner: int = 0
    parent_cversion: int = -1
    version: int = 0
    err: int = 0
    paths: tuple[str, ...] | None = None  # closeSession: CloseSessionTxn.paths2Delete (None: pre-3.6 body)


@dataclass(frozen=True)
class Txn:
    client_id: int
    cxid: int
    zxid: int
    time: int
    type: int
    ops: tuple[Op, ...]  # one op, or a multi's ops in order
    digest: tuple[int, int] | None = None  # (version, treeDigest) in 3.6+ logs


@dataclass(frozen=True)
class LogRecord:
    offset: int  # byte offset of the record in its file
    txn: Txn


@dataclass(frozen=True)
class LogEnd:
    """Why reading stopped: ``eof`` (the zero padding or the file's end after a whole record), ``partial`` (a
    record cut short: the server died while appending), ``crc`` (a record whose checksum does not match),
    ``undecodable`` (a record that passed its checksum but does not decode)."""

    reason: str
    offset: int
    detail: str = ""

    @property
    def clean(self) -> bool:
        return self.reason == "eof"


CONTAINER_OWNER = -(1 << 63)  # EphemeralType.CONTAINER_EPHEMERAL_OWNER = Long.MIN_VALUE


def ttl_owner(ttl: int) -> int:
    """``EphemeralType.TTL.toEphemeralOwner``: 0xFF in the top byte, then the TTL in the low 7 bytes (a
    two's-complement long)."""
    return ((0xFF << 56) | (ttl & 0x00FFFFFFFFFFFFFF)) - (1 << 64)


def _create(r: JuteReader, t: int, client_id: int, *, top: bool) -> Op:
    start = r.pos
    path, data, acl = r.string(), r.buffer() or b"", r.acl_vector()
    if t == CREATE_CONTAINER:
        return Op(t, path, data, acl, CONTAINER_OWNER, r.i32())
    if t == CREATE_TTL:
        pcv = r.i32()
        return Op(t, path, data, acl, ttl_owner(r.i64()), pcv)
    ephemeral = r.boolean()
    try:
        pcv = r.i32()
    except JuteError:
        if t != CREATE or not top:
            raise
        r.pos = start  # CreateTxnV0 (deserializeTxn's EOFException fallback)
        path, data, acl, ephemeral = r.string(), r.buffer() or b"", r.acl_vector(), r.boolean()
        pcv = -1
    return Op(t, path, data, acl, client_id if ephemeral else 0, pcv)


def _op(r: JuteReader, t: int, client_id: int, *, top: bool) -> Op:
    if t in CREATES:
        return _create(r, t, client_id, top=top)
    if t in (DELETE, DELETE_CONTAINER):
        return Op(t, r.string())
    if t in (SET_DATA, RECONFIG):
        return Op(t, r.string(), r.buffer() or b"", version=r.i32())
    if t == SET_ACL:
        return Op(t, r.string(), acl=r.acl_vector(), version=r.i32())
    if t == CHECK:
        return Op(t, r.string(), version=r.i32())
    if t == ERROR:
        return Op(t, err=r.i32())
    raise TxnLogCorrupt(f"unsupported txn type {t}")


def _close_session(r: JuteReader) -> Op:
    """A CloseSessionTxn {vector<ustring> paths2Delete} (3.6+, ``zookeeper.closeSessionTxn.enabled``) or no body
    (older, or disabled: ``deserializeTxn`` then leaves the txn null). What follows may be a 12-byte TxnDigest, so
    a body is taken only when it parses and leaves nothing or exactly a digest."""
    start = r.pos
    try:
        paths = tuple(r.string() for _ in range(r.vector_count()))
    except JuteError:
        paths = None
    # every path of a CloseSessionTxn is absolute (they are the session's ephemerals)
    if paths is None or r.remaining() not in (0, 12) or not all(p.startswith("/") for p in paths):
        r.pos = start
        return Op(CLOSE_SESSION)
    return Op(CLOSE_SESSION, paths=paths)


def decode_entry(entry: bytes) -> Txn:
    """One log entry: TxnHeader, its record, the optional TxnDigest (``SerializeUtils.deserializeTxn``)."""
    r = JuteReader(entry)
    try:
        client_id, cxid, zxid, time, t = TXN_HEADER.unpack_from(entry, 0)
        r.pos = TXN_HEADER.size
        ops: tuple[Op, ...]
        if t == MULTI:
            sub: list[Op] = []
            for _ in range(r.vector_count()):  # MultiTxn {vector<Txn {int type; buffer data}>}
                st = r.i32()
                body = r.buffer() or b""
                sr = JuteReader(body)
                if st not in (*CREATES, DELETE, DELETE_CONTAINER, SET_DATA, ERROR, CHECK):
                    # DataTree.processTxn: "Invalid type of op" (an IOException: the rest of the multi is not
                    # applied); kept as an op of its own type so the replay does the same
                    sub.append(Op(st))
                    continue
                sub.append(_op(sr, st, client_id, top=False))
            ops = tuple(sub)
        elif t == CREATE_SESSION:
            ops = (Op(t, version=r.i32()),)  # CreateSessionTxn {int timeOut}
        elif t == CLOSE_SESSION:
            ops = (_close_session(r),)
        elif t in KNOWN_TYPES:
            ops = (_op(r, t, client_id, top=True),)
        else:
            raise TxnLogCorrupt(f"unsupported txn type {t} (zxid {zxid:#x})")
        digest = None
        if r.remaining() >= 12:
            v, d = struct.unpack_from(">iq", entry, r.pos)  # TxnDigest {int version; long treeDigest}
            digest = (v, d)
    except (JuteError, struct.error) as e:
        raise TxnLogCorrupt(f"entry does not decode: {e}") from None
    return Txn(client_id, cxid, zxid, time, t, ops, digest)


def read_header(buf: bytes) -> tuple[int, int, int]:
    if len(buf) < 16:
        raise TxnLogCorrupt(f"{len(buf)} bytes: shorter than the 16-byte file header")
    magic, version, dbid = struct.unpack_from(">iiq", buf, 0)
    if magic != LOG_MAGIC:
        raise TxnLogCorrupt(f"magic {magic:#x} is not ZKLG ({LOG_MAGIC:#x})")
    return magic, version, dbid


def read_log(buf: bytes, *, start_zxid: int = 0) -> tuple[list[LogRecord], LogEnd]:
    """Every whole record of a log (header checked first), and why reading stopped. Records with a zxid below
    ``start_zxid`` are skipped (``FileTxnIterator.init``) but still checked."""
    read_header(buf)
    pos, end = 16, len(buf)
    out: list[LogRecord] = []
    while True:
        if pos + 12 > end:
            if pos == end or not any(buf[pos:end]):
                return out, LogEnd("eof", pos)
            return out, LogEnd("partial", pos, "the record's checksum and length are cut short")
        crc, n = _QI.unpack_from(buf, pos)
        if n == 0:
            return out, LogEnd("eof", pos)  # preallocated zeros: the end (Util.readTxnBytes)
        if n < 0 or pos + 12 + n + 1 > end:
            return out, LogEnd("partial", pos, f"a {n}-byte record runs past the end of the file")
        entry = buf[pos + 12 : pos + 12 + n]
        if buf[pos + 12 + n] != _EOR:
            return out, LogEnd("partial", pos, "no end-of-record marker ('B'): the last transaction was partial")
        if _adler32(entry) & 0xFFFFFFFF != crc & 0xFFFFFFFF or crc < 0:
            return out, LogEnd("crc", pos, "CRC check failed")
        try:
            txn = decode_entry(entry)
        except TxnLogCorrupt as e:
            return out, LogEnd("undecodable", pos, str(e))
        if txn.zxid >= start_zxid:
            out.append(LogRecord(pos, txn))
        pos += 12 + n + 1


def read_log_file(f: IO[bytes], size: int, *, start_zxid: int = 0) -> tuple[list[LogRecord], LogEnd]:
    """``read_log`` over an open file, one record at a time (a seeded log can be GBs: it is never held whole).
    A record below ``start_zxid`` is checked (length, end-of-record marker, checksum) but not decoded: only its
    zxid is read, from the TxnHeader (its content is never replayed)."""
    head = f.read(16)
    read_header(head)
    pos = 16
    out: list[LogRecord] = []
    unpack_qi = _QI.unpack
    zxid_at = struct.Struct(">q").unpack_from
    while True:
        rh = f.read(12)
        if len(rh) < 12:
            if not rh.strip(b"\x00"):
                return out, LogEnd("eof", pos)
            return out, LogEnd("partial", pos, "the record's checksum and length are cut short")
        crc, n = unpack_qi(rh)
        if n == 0:
            return out, LogEnd("eof", pos)
        if n < 0 or pos + 12 + n + 1 > size:
            return out, LogEnd("partial", pos, f"a {n}-byte record runs past the end of the file")
        body = f.read(n + 1)
        if len(body) < n + 1:
            return out, LogEnd("partial", pos, f"a {n}-byte record runs past the end of the file")
        if body[n] != _EOR:
            return out, LogEnd("partial", pos, "no end-of-record marker ('B'): the last transaction was partial")
        entry = body[:n]
        if _adler32(entry) & 0xFFFFFFFF != crc & 0xFFFFFFFF or crc < 0:
            return out, LogEnd("crc", pos, "CRC check failed")
        if n >= TXN_HEADER.size and zxid_at(entry, 12)[0] < start_zxid:
            pos += 12 + n + 1
            continue
        try:
            txn = decode_entry(entry)
        except TxnLogCorrupt as e:
            return out, LogEnd("undecodable", pos, str(e))
        if txn.zxid >= start_zxid:
            out.append(LogRecord(pos, txn))
        pos += 12 + n + 1


def encode_entry(txn: Txn) -> bytes:
    """The inverse of decode_entry (tests and fixtures only)."""
    from pulsar_ops.zkdata.jute import JuteWriter

    def body(op: Op) -> bytes:
        w = JuteWriter()
        t = op.type
        if t in CREATES:
            w.ustring(op.path).buffer(op.data).acl_vector(op.acl)
            if t == CREATE_CONTAINER:
                w.i32(op.parent_cversion)
            elif t == CREATE_TTL:
                w.i32(op.parent_cversion).i64(op.owner & 0x00FFFFFFFFFFFFFF)
            else:
                w.boolean(op.owner != 0).i32(op.parent_cversion)
        elif t in (DELETE, DELETE_CONTAINER):
            w.ustring(op.path)
        elif t in (SET_DATA, RECONFIG):
            w.ustring(op.path).buffer(op.data).i32(op.version)
        elif t == SET_ACL:
            w.ustring(op.path).acl_vector(op.acl).i32(op.version)
        elif t == CHECK:
            w.ustring(op.path).i32(op.version)
        elif t == ERROR:
            w.i32(op.err)
        elif t == CREATE_SESSION:
            w.i32(op.version)
        elif t == CLOSE_SESSION and op.paths is not None:
            w.i32(len(op.paths))
            for p in op.paths:
                w.ustring(p)
        return w.getvalue()

    out = JuteWriter()
    out.out += TXN_HEADER.pack(txn.client_id, txn.cxid, txn.zxid, txn.time, txn.type)
    if txn.type == MULTI:
        out.i32(len(txn.ops))
        for op in txn.ops:
            out.i32(op.type).buffer(body(op))
    else:
        out.out += body(txn.ops[0])
    if txn.digest is not None:
        out.i32(txn.digest[0]).i64(txn.digest[1])
    return out.getvalue()


def encode_record(entry: bytes) -> bytes:
    """One framed record: crc, length, entry, 'B' (tests and fixtures only)."""
    return _QI.pack(zlib.adler32(entry) & 0xFFFFFFFF, len(entry)) + entry + bytes([_EOR])


def encode_header(dbid: int = 0) -> bytes:
    return struct.pack(">iiq", LOG_MAGIC, LOG_VERSION, dbid)


__all__ = [
    "CONTAINER_OWNER",
    "LOG_MAGIC",
    "LogEnd",
    "LogRecord",
    "Op",
    "Txn",
    "TxnLogCorrupt",
    "decode_entry",
    "encode_entry",
    "encode_header",
    "encode_record",
    "read_header",
    "read_log",
    "read_log_file",
]
