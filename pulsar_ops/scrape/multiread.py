"""ZooKeeper ``multiRead`` (opcode 22, ZooKeeper >= 3.6) as a request object for kazoo's protocol layer.

kazoo has no multiRead. Its connection thread sends any object with a ``type`` (opcode), ``serialize()`` and
``deserialize(buffer, offset)`` (see ``kazoo/protocol/serialization.py``), so this module supplies one and the
scraper hands it to ``KazooClient._call`` exactly like kazoo's own ``get_async`` does. No fork of kazoo.

Wire format (``MultiOperationRecord`` / ``MultiResponse`` in ZooKeeper, jute big-endian):

* request: for each op a ``MultiHeader{int type; boolean done=false; int err=-1}`` followed by the op's request
  record -- ``GetDataRequest{ustring path; boolean watch}`` (type 4) or ``GetChildrenRequest{ustring path;
  boolean watch}`` (type 8, the plain getChildren: no Stat) -- then ``MultiHeader{-1, true, -1}``;
* response: for each op a ``MultiHeader{type, false, err}`` followed by ``GetDataResponse{buffer data; Stat
  stat}`` (type 4), ``GetChildrenResponse{vector<ustring> children}`` (type 8) or ``ErrorResponse{int err}``
  (type -1, a per-op error such as NoNode -101 or NoAuth -102), then ``MultiHeader{-1, true, -1}``.

``Stat`` is ``{long czxid, mzxid, ctime, mtime; int version, cversion, aversion; long ephemeralOwner;
int dataLength, numChildren; long pzxid}`` -- the field order of kazoo's ``ZnodeStat``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

OP_GET_DATA = 4
OP_GET_CHILDREN = 8
OP_MULTI_READ = 22
OP_ERROR = -1

# ZooKeeper error codes the scraper distinguishes (KeeperException.Code).
ZOK = 0
ZCONNECTIONLOSS = -4
ZMARSHALLINGERROR = -5
ZUNIMPLEMENTED = -6
ZNONODE = -101
ZNOAUTH = -102

_INT = struct.Struct("!i")
_HEADER = struct.Struct("!iBi")
STAT = struct.Struct("!qqqqiiiqiiq")
_END = _HEADER.pack(-1, 1, -1)

# (czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength, numChildren, pzxid)
Stat = tuple[int, int, int, int, int, int, int, int, int, int, int]
STAT_FIELDS = (
    "czxid",
    "mzxid",
    "ctime",
    "mtime",
    "version",
    "cversion",
    "aversion",
    "ephemeral_owner",
    "data_length",
    "num_children",
    "pzxid",
)


class ReadOp(NamedTuple):
    """One read inside a multiRead: ``OP_GET_DATA`` or ``OP_GET_CHILDREN`` of an absolute server path."""

    type: int
    path: str


class OpError:
    """A per-op error inside a multiRead response (the other ops of the batch still succeeded)."""

    __slots__ = ("code",)

    def __init__(self, code: int) -> None:
        self.code = code

    def __repr__(self) -> str:
        return f"OpError({self.code})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpError) and other.code == self.code

    def __hash__(self) -> int:
        return hash(("OpError", self.code))


DataResult = tuple[bytes, Stat]
OpResult = DataResult | list[str] | OpError


class MultiResponseError(ValueError):
    """The server's multiRead response could not be parsed (kazoo then drops and re-opens the connection)."""


def serialize_ops(ops: Sequence[ReadOp]) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    pack_header = _HEADER.pack
    pack_int = _INT.pack
    for op in ops:
        if op.type != OP_GET_DATA and op.type != OP_GET_CHILDREN:
            raise ValueError(f"multiRead only carries getData (4) and getChildren (8), not {op.type}")
        raw = op.path.encode("utf-8")
        append(pack_header(op.type, 0, -1))
        append(pack_int(len(raw)))
        append(raw)
        append(b"\x00")  # watch = false
    append(_END)
    return b"".join(parts)


def parse_multi_response(buf: bytes, offset: int) -> list[OpResult]:
    """Parse a MultiResponse body starting at ``offset`` into one result per op, in request order."""
    results: list[OpResult] = []
    append = results.append
    unpack_header = _HEADER.unpack_from
    unpack_int = _INT.unpack_from
    unpack_stat = STAT.unpack_from
    stat_size = STAT.size
    n_buf = len(buf)
    try:
        while True:
            op_type, done, _err = unpack_header(buf, offset)
            offset += 9
            if done:
                break
            if op_type == OP_GET_DATA:
                (length,) = unpack_int(buf, offset)
                offset += 4
                if length > 0:
                    if offset + length > n_buf:
                        raise MultiResponseError("getData result runs past the end of the response")
                    data = buf[offset : offset + length]
                    offset += length
                else:
                    data = b""
                stat: Stat = unpack_stat(buf, offset)
                offset += stat_size
                append((data, stat))
            elif op_type == OP_GET_CHILDREN:
                (count,) = unpack_int(buf, offset)
                offset += 4
                children: list[str] = []
                for _ in range(max(count, 0)):
                    (length,) = unpack_int(buf, offset)
                    offset += 4
                    children.append(buf[offset : offset + length].decode("utf-8"))
                    offset += length
                if offset > n_buf:
                    raise MultiResponseError("getChildren result runs past the end of the response")
                append(children)
            elif op_type == OP_ERROR:
                (code,) = unpack_int(buf, offset)
                offset += 4
                append(OpError(code))
            else:
                raise MultiResponseError(f"unexpected result type {op_type} in a multiRead response")
    except struct.error as e:
        raise MultiResponseError(f"truncated multiRead response: {e}") from e
    return results


class MultiRead:
    """kazoo-compatible request object for opcode 22. ``deserialize`` returns ``list[OpResult]``."""

    type = OP_MULTI_READ
    __slots__ = ("ops",)

    def __init__(self, ops: Sequence[ReadOp]) -> None:
        self.ops = tuple(ops)

    def serialize(self) -> bytes:
        return serialize_ops(self.ops)

    @staticmethod
    def deserialize(buf: bytes, offset: int) -> list[OpResult]:
        return parse_multi_response(buf, offset)

    def __repr__(self) -> str:  # kazoo logs requests at DEBUG level; keep it short
        return f"MultiRead({len(self.ops)} ops)"
