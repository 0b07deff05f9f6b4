"""ZooKeeper's jute binary encoding: the primitives and the records a data directory holds. Pure, no I/O.

Upstream ``zookeeper-jute/src/main/java/org/apache/jute/BinaryInputArchive.java`` (and ``BinaryOutputArchive``):
big-endian ``int`` (4 bytes), ``long`` (8), ``boolean`` (1 byte, non-zero = true), ``buffer`` and ``ustring``
(an int length, -1 = null, then that many bytes; ustrings are UTF-8), ``vector`` (an int count, -1 = null, then
the elements). Records are their fields in declaration order, no framing (``startRecord``/``endRecord`` write
nothing). The record definitions are ``zookeeper-jute/src/main/resources/zookeeper.jute`` (modules
``org.apache.zookeeper.data``, ``.server.persistence`` and ``.txn``), the same from 3.4.14 to 3.9.5 except the
txn records 3.5/3.6 added (``CreateTTLTxn``, ``CreateContainerTxn``, ``CloseSessionTxn``, ``TxnDigest``).

The writer (``JuteWriter``) exists for the property tests and for fixtures; pulsar-ops never writes a data
directory.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_QI = struct.Struct(">qi")

# StatPersisted {long czxid, mzxid, ctime, mtime; int version, cversion, aversion; long ephemeralOwner, pzxid}
# (zookeeper.jute, module org.apache.zookeeper.data): 60 bytes.
STAT_PERSISTED = struct.Struct(">qqqqiiiqq")

# TxnHeader {long clientId; int cxid; long zxid; long time; int type} (module org.apache.zookeeper.txn): 32 bytes.
TXN_HEADER = struct.Struct(">qiqqi")


class JuteError(ValueError):
    """The bytes are not the record they should be (short, a negative length where none may be, ...)."""


@dataclass(frozen=True)
class Acl:
    perms: int
    scheme: str
    id: str


class JuteReader:
    """Reads jute primitives from a bytes-like buffer, from ``pos``. Raises JuteError past the end."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise JuteError(f"needs {n} bytes at offset {p}, {self.end - p} left")
        self.pos = p + n
        return p

    def i32(self) -> int:
        v: int = _I.unpack_from(self.buf, self._need(4))[0]
        return v

    def i64(self) -> int:
        v: int = _Q.unpack_from(self.buf, self._need(8))[0]
        return v

    def boolean(self) -> bool:
        return bool(self.buf[self._need(1)])

    def u8(self) -> int:
        return int(self.buf[self._need(1)])

    def buffer(self) -> bytes | None:
        n = self.i32()
        if n == -1:
            return None
        if n < -1:
            raise JuteError(f"negative buffer length {n} at offset {self.pos - 4}")
        p = self._need(n)
        return bytes(self.buf[p : p + n])

    def ustring(self) -> str | None:
        b = self.buffer()
        return None if b is None else b.decode("utf-8", "surrogateescape")

    def string(self) -> str:
        """A ustring that must not be null."""
        s = self.ustring()
        if s is None:
            raise JuteError(f"null string at offset {self.pos - 4}")
        return s

    def vector_count(self) -> int:
        n = self.i32()
        if n < -1:
            raise JuteError(f"negative vector length {n} at offset {self.pos - 4}")
        return max(n, 0)

    def acl_vector(self) -> tuple[Acl, ...]:
        """``vector<ACL>``: ACL {int perms; Id {ustring scheme; ustring id}}."""
        return tuple(Acl(self.i32(), self.ustring() or "", self.ustring() or "") for _ in range(self.vector_count()))

    def stat_persisted(self) -> tuple[int, ...]:
        return STAT_PERSISTED.unpack_from(self.buf, self._need(STAT_PERSISTED.size))


class JuteWriter:
    """The inverse of JuteReader (tests and fixtures only)."""

    def __init__(self) -> None:
        self.out = bytearray()

    def i32(self, v: int) -> JuteWriter:
        self.out += _I.pack(v)
        return self

    def i64(self, v: int) -> JuteWriter:
        self.out += _Q.pack(v)
        return self

    def boolean(self, v: bool) -> JuteWriter:
        self.out.append(1 if v else 0)
        return self

    def u8(self, v: int) -> JuteWriter:
        self.out.append(v & 0xFF)
        return self

    def buffer(self, v: bytes | None) -> JuteWriter:
        if v is None:
            return self.i32(-1)
        self.i32(len(v))
        self.out += v
        return self

    def ustring(self, v: str | None) -> JuteWriter:
        return self.buffer(None if v is None else v.encode("utf-8", "surrogateescape"))

    def acl_vector(self, acls: tuple[Acl, ...]) -> JuteWriter:
        self.i32(len(acls))
        for a in acls:
            self.i32(a.perms).ustring(a.scheme).ustring(a.id)
        return self

    def stat_persisted(self, stat: tuple[int, ...]) -> JuteWriter:
        self.out += STAT_PERSISTED.pack(*stat)
        return self

    def getvalue(self) -> bytes:
        return bytes(self.out)


__all__ = ["STAT_PERSISTED", "TXN_HEADER", "Acl", "JuteError", "JuteReader", "JuteWriter"]
