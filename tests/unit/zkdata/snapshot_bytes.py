"""Hand-encoded ZooKeeper snapshot bytes, shared by the codec and streaming tests (test_codecs, test_stream)."""

from __future__ import annotations

import zlib

from pulsar_ops.zkdata import snapshot as S
from pulsar_ops.zkdata.jute import STAT_PERSISTED, Acl, JuteWriter


def stat(zxid: int, owner: int = 0, cversion: int = 0) -> bytes:
    return STAT_PERSISTED.pack(zxid, zxid, 1000 + zxid, 2000 + zxid, 0, cversion, 0, owner, zxid)


def encode_snapshot(
    nodes: list[tuple[str, bytes, bytes]], *, digest: tuple[int, int] | None = None, last_zxid: int | None = None
) -> bytes:
    """FileSnap.serialize: header, sessions, ACL cache, nodes, seal [, ZxidDigest, seal] [, lastZxid, seal]."""
    w = JuteWriter()
    w.i32(S.SNAP_MAGIC).i32(2).i64(0)
    w.i32(1).i64(0x1234).i32(30000)  # one session
    w.i32(1).i64(1).acl_vector((Acl(31, "world", "anyone"),))
    for path, data, stat in nodes:
        w.ustring(path).buffer(data).i64(1)
        w.out += stat
    w.ustring("/")

    def seal() -> None:
        w.i64(zlib.adler32(bytes(w.out)) & 0xFFFFFFFF).ustring("/")

    seal()
    if digest is not None:
        w.i64(digest[0]).i32(2).i64(digest[1])
        seal()
    if last_zxid is not None:
        w.i64(last_zxid)
        seal()
    return w.getvalue()
