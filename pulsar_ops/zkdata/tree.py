"""The ZooKeeper data tree rebuilt from a snapshot and replayed forward with the transaction log. Pure, no I/O.

Semantics follow upstream ``zookeeper-server/src/main/java/org/apache/zookeeper/server/DataTree.java``
(3.9.5; differences from 3.4.14 noted):

* ``deserialize``: nodes arrive in pre-order; a node whose parent is missing is "Invalid Datatree".
* ``processTxn``: create / create2 / createTTL / createContainer -> ``createNode``; delete / deleteContainer ->
  ``deleteNode``; setData / reconfig -> ``setData``; setACL -> ``setACL`` (aversion); closeSession ->
  ``killSession`` (the ``CloseSessionTxn`` paths, then the session's remaining ephemerals); error and check
  change nothing. A failure (NoNode, NodeExists) is ignored -- that is what makes replaying a *fuzzy* snapshot
  idempotent -- except that a ``create`` finding its node already there still raises the parent's cversion and
  pzxid to the txn's (``setCversionPzxid``).
* ``multi``: when any op is an ``error`` txn the multi failed and *none* of its ops is applied (they all become
  ErrorTxns) -- the log still carries the failed multi's ops, so replaying them naively would invent nodes. An op
  type a multi cannot hold ends the multi there (an IOException upstream).
* ``createNode`` (3.6+): the parent's cversion and pzxid move only forward (``parentCVersion >
  parent.cversion``); -1 means "parent's + 1" (a CreateTxnV0). 3.4.14 set them unconditionally; both agree on
  every log that is not replayed over a fuzzy snapshot. ``deleteNode`` (3.6+): the parent's pzxid moves to the
  txn's zxid when larger, even when the child is already gone.
* The stat a client sees (``DataNode.copyStat``) is not the stored one: ``cversion`` is ``stored * 2 -
  numChildren`` (the stored field counts creates), ``numChildren`` and ``dataLength`` are computed, and the
  ephemeral owner of a container (or TTL) node reads as 0 (``getClientEphemeralOwner``).
* The 3.6+ tree digest (``DigestCalculator.calculateDigest``, ``util/AdHash``): the 64-bit sum over every node
  not under ``/zookeeper/`` of the CRC32 of path (the root as ``""``), data and ``czxid, mzxid, pzxid, ctime,
  mtime, version, cversion, aversion, ephemeralOwner``. The snapshot's digest holds at its zxid
  (``compareSnapshotDigests``); a mismatch is reported, as upstream reports it, not fatal.

Node layout (compact: a 4M-znode tree must fit in memory): ``[data, stat, children]`` with ``stat`` the 60
bytes of ``StatPersisted`` as stored and ``children`` a dict name -> node (None for a leaf).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pulsar_ops.zkdata import txnlog as T
from pulsar_ops.zkdata.jute import STAT_PERSISTED
from pulsar_ops.zkdata.snapshot import SnapshotCorrupt

Node = list[Any]  # [data: bytes, stat: bytes (60), children: dict[str, Node] | None]
ClientStat = tuple[int, int, int, int, int, int, int, int, int, int, int]

_MASK64 = (1 << 64) - 1
_DIGEST_EXCLUDED = "/zookeeper/"  # ZooDefs.ZOOKEEPER_NODE_SUBTREE
DIGEST_VERSION = 2  # DigestCalculator.DIGEST_VERSION
_EXTENDED_TOP = 0xFF << 56


def _s64(v: int) -> int:
    v &= _MASK64
    return v - (1 << 64) if v >> 63 else v


def node_digest(path: str, data: bytes, stat: bytes) -> int:
    """``DigestCalculator.calculateDigest``: 0 under /zookeeper/; "/" counts as ""."""
    if path.startswith(_DIGEST_EXCLUDED):
        return 0
    if path == "/":
        path = ""
    crc = zlib.crc32(path.encode("utf-8", "surrogateescape"))  # (DataTree.load inlines this)
    crc = zlib.crc32(data, crc)
    # StatPersisted order czxid mzxid ctime mtime | version cversion aversion | owner | pzxid -> digest order
    # czxid mzxid pzxid ctime mtime version cversion aversion owner
    crc = zlib.crc32(stat[0:16], crc)
    crc = zlib.crc32(stat[52:60], crc)
    crc = zlib.crc32(stat[16:52], crc)
    return crc


def client_owner(owner: int) -> int:
    """``DataNode.getClientEphemeralOwner``: containers (Long.MIN_VALUE) and extended (TTL) owners read as 0."""
    if owner == T.CONTAINER_OWNER or (owner < 0 and (owner & _MASK64) >> 56 == 0xFF):
        return 0
    return owner


def client_stat(data: bytes, stat: bytes, children: dict[str, Node] | None) -> ClientStat:
    czxid, mzxid, ctime, mtime, version, cversion, aversion, owner, pzxid = STAT_PERSISTED.unpack(stat)
    n = len(children) if children else 0
    return (czxid, mzxid, ctime, mtime, version, cversion * 2 - n, aversion, client_owner(owner), len(data), n, pzxid)


@dataclass
class ReplayStats:
    applied: int = 0  # transactions replayed
    ignored_errors: int = 0  # ops that failed as upstream's replay lets them fail (NoNode, NodeExists)
    failed_multis: int = 0  # multis logged as failed (error ops): none of their ops applied
    first_zxid: int | None = None
    last_zxid: int | None = None
    last_time_ms: int | None = None


@dataclass
class DigestCheck:
    zxid: int
    expected: int
    computed: int | None = None  # None: the log ended before reaching the digest's zxid

    @property
    def matched(self) -> bool | None:
        return None if self.computed is None else self.computed == self.expected


class _NoNode(Exception):
    pass


class _NodeExists(Exception):
    pass


@dataclass
class DataTree:
    root: Node = field(default_factory=lambda: [b"", bytes(60), None])
    ephemerals: dict[int, set[str]] = field(default_factory=dict)
    zxid: int = 0
    digest: int | None = None  # running tree digest while a digest check is pending, else None
    pending_digest: DigestCheck | None = None
    stats: ReplayStats = field(default_factory=ReplayStats)

    # ------------------------------------------------------------------ load

    @classmethod
    def load(
        cls,
        nodes: Iterator[tuple[str, bytes, int, bytes]],
        *,
        with_digest: bool = False,
        keep: Callable[[str], bool] | None = None,
    ) -> DataTree:
        """Build from a snapshot's pre-order node stream. ``with_digest`` computes the tree digest on the way.
        ``keep(path)`` False drops a node's data (it stays in the tree, with empty data, for its children and
        for the replay); the digest is computed before."""
        if with_digest:
            keep = None  # the running digest needs every node's data
        tree = cls()
        stack: list[tuple[str, Node]] = []
        digest = 0
        ephem = tree.ephemerals
        unpack_owner = struct.Struct(">q").unpack_from
        crc32 = zlib.crc32
        no_owner = bytes(8)
        for path, data, _acl, stat in nodes:
            if with_digest and not path.startswith(_DIGEST_EXCLUDED):  # node_digest, inlined (per znode)
                digest += crc32(
                    stat[0:16] + stat[52:60] + stat[16:52], crc32(data, crc32(path.encode("utf-8", "surrogateescape")))
                )
            if stat[44:52] != no_owner:
                owner = unpack_owner(stat, 44)[0]
                if owner != T.CONTAINER_OWNER:
                    ephem.setdefault(owner, set()).add(path)
            if keep is not None and data and not keep(path):
                data = b""
            node: Node = [data, stat, None]
            if not stack:
                if path != "":
                    raise SnapshotCorrupt(f"the first node is {path!r}, not the root")
                tree.root = node
                stack.append(("", node))
                continue
            cut = path.rfind("/")
            parent_path = path[:cut]
            while stack and stack[-1][0] != parent_path:
                stack.pop()
            if not stack:
                raise SnapshotCorrupt(f"Invalid Datatree, unable to find parent {parent_path} of path {path}")
            parent = stack[-1][1]
            kids = parent[2]
            if kids is None:
                kids = parent[2] = {}
            kids[path[cut + 1 :]] = node
            stack.append((path, node))
        if not stack:
            raise SnapshotCorrupt("the snapshot holds no nodes (not even the root)")
        if with_digest:
            tree.digest = _s64(digest)
        return tree

    # ------------------------------------------------------------------ lookup

    def get(self, path: str) -> Node | None:
        node = self.root
        if path in ("", "/"):
            return node
        for name in path[1:].split("/"):
            kids = node[2]
            if not kids:
                return None
            nxt = kids.get(name)
            if nxt is None:
                return None
            node = nxt
        return node

    def iter_subtree(self, path: str) -> Iterator[tuple[str, bytes, ClientStat]]:
        """Pre-order ``(path, data, client stat)`` below and including ``path`` (children in name order)."""
        node = self.get(path)
        if node is None:
            return
        stack: list[tuple[str, Node]] = [(path, node)]
        while stack:
            p, n = stack.pop()
            data, stat, kids = n
            yield p, data, client_stat(data, stat, kids)
            if kids:
                prefix = p + "/" if p != "/" else "/"
                for name in sorted(kids, reverse=True):
                    stack.append((prefix + name, kids[name]))

    def count(self) -> int:
        n, stack = 0, [self.root]
        while stack:
            node = stack.pop()
            n += 1
            if node[2]:
                stack.extend(node[2].values())
        return n

    # ------------------------------------------------------------------ digest bookkeeping

    def _pre(self, path: str, node: Node) -> None:
        if self.digest is not None:
            self.digest -= node_digest(path, node[0], node[1])

    def _post(self, path: str, node: Node) -> None:
        if self.digest is not None:
            self.digest = _s64(self.digest + node_digest(path, node[0], node[1]))

    def expect_digest(self, zxid: int, digest: int) -> None:
        """The snapshot's ZxidDigest: compare the tree digest once the replay is at ``zxid``."""
        self.pending_digest = DigestCheck(zxid, digest)
        if self.zxid >= zxid:
            self._check_digest()

    def _check_digest(self) -> None:
        chk = self.pending_digest
        if chk is not None and chk.computed is None and self.digest is not None:
            chk.computed = _s64(self.digest)
            self.digest = None  # no need to maintain it any further

    # ------------------------------------------------------------------ replay

    def _split(self, path: str) -> tuple[Node, str]:
        cut = path.rfind("/")
        parent = self.get(path[:cut] or "")
        if parent is None or cut < 0:
            raise _NoNode(path)
        return parent, path[cut + 1 :]

    @staticmethod
    def _stat(node: Node) -> list[int]:
        return list(STAT_PERSISTED.unpack(node[1]))

    def _set_stat(self, path: str, node: Node, stat: list[int]) -> None:
        self._pre(path, node)
        node[1] = STAT_PERSISTED.pack(*stat)
        self._post(path, node)

    def _set_cversion_pzxid(self, path: str, cversion: int, zxid: int) -> None:
        node = self.get(path or "")
        if node is None:
            raise _NoNode(path)
        st = self._stat(node)
        if cversion == -1:
            cversion = st[5] + 1
        if cversion > st[5]:
            st[5], st[8] = cversion, zxid
            self._set_stat(path or "/", node, st)

    def _create(self, op: T.Op, zxid: int, time: int) -> None:
        parent, name = self._split(op.path)
        kids = parent[2]
        if kids is not None and name in kids:
            raise _NodeExists(op.path)
        parent_path = op.path[: op.path.rfind("/")]
        st = self._stat(parent)
        pcv = op.parent_cversion if op.parent_cversion != -1 else st[5] + 1
        if pcv > st[5]:
            st[5], st[8] = pcv, zxid
            self._set_stat(parent_path or "/", parent, st)
        node: Node = [op.data, STAT_PERSISTED.pack(zxid, zxid, time, time, 0, 0, 0, op.owner, zxid), None]
        if parent[2] is None:
            parent[2] = {}
        parent[2][name] = node
        self._post(op.path, node)
        if op.owner != 0 and op.owner != T.CONTAINER_OWNER:
            self.ephemerals.setdefault(op.owner, set()).add(op.path)

    def _delete(self, path: str, zxid: int) -> None:
        parent, name = self._split(path)
        parent_path = path[: path.rfind("/")] or "/"
        st = self._stat(parent)
        kids = parent[2]
        node = kids.pop(name, None) if kids else None
        if kids is not None and not kids:
            parent[2] = None
        if zxid > st[8]:
            st[8] = zxid
            self._set_stat(parent_path, parent, st)
        if node is None:
            raise _NoNode(path)
        self._pre(path, node)
        owner = STAT_PERSISTED.unpack(node[1])[7]
        if owner != 0:
            s = self.ephemerals.get(owner)
            if s is not None:
                s.discard(path)
        # the subtree of a deleted node: upstream refuses to delete a node with children (NotEmpty), so none

    def _set_data(self, op: T.Op, zxid: int, time: int) -> None:
        node = self.get(op.path)
        if node is None:
            raise _NoNode(op.path)
        st = self._stat(node)
        st[3], st[1], st[4] = time, zxid, op.version
        self._pre(op.path, node)
        node[0] = op.data
        node[1] = STAT_PERSISTED.pack(*st)
        self._post(op.path, node)

    def _set_acl(self, op: T.Op) -> None:
        node = self.get(op.path)
        if node is None:
            raise _NoNode(op.path)
        st = self._stat(node)
        st[6] = op.version
        self._set_stat(op.path, node, st)

    def _kill_session(self, session: int, zxid: int, paths: tuple[str, ...] | None) -> None:
        local = self.ephemerals.pop(session, set())
        todo: list[str] = list(paths) if paths is not None else []
        if paths is not None:
            local.difference_update(paths)
        todo.extend(sorted(local))
        for p in todo:
            try:
                self._delete(p, zxid)
            except _NoNode:
                self.stats.ignored_errors += 1

    def _apply_op(self, op: T.Op, txn: T.Txn) -> bool:
        """One op as ``DataTree.processTxn`` applies it; False when it raised (an ignored failure)."""
        t = op.type
        try:
            if t in T.CREATES:
                try:
                    self._create(op, txn.zxid, txn.time)
                except _NodeExists:
                    if t == T.CREATE:  # processTxn: only OpCode.create adjusts the parent on NODEEXISTS
                        self._set_cversion_pzxid(op.path[: op.path.rfind("/")], op.parent_cversion, txn.zxid)
                    raise
            elif t in (T.DELETE, T.DELETE_CONTAINER):
                self._delete(op.path, txn.zxid)
            elif t in (T.SET_DATA, T.RECONFIG):
                self._set_data(op, txn.zxid, txn.time)
            elif t == T.SET_ACL:
                self._set_acl(op)
            elif t == T.CLOSE_SESSION:
                self._kill_session(txn.client_id, txn.zxid, op.paths)
        except (_NoNode, _NodeExists):
            self.stats.ignored_errors += 1
            return False
        return True

    def apply(self, txn: T.Txn) -> None:
        """Replay one transaction (idempotent over a fuzzy snapshot, as upstream's restore is)."""
        if txn.type == T.MULTI:
            if any(op.type == T.ERROR for op in txn.ops):
                self.stats.failed_multis += 1
            else:
                for op in txn.ops:
                    if op.type not in (*T.CREATES, T.DELETE, T.DELETE_CONTAINER, T.SET_DATA, T.CHECK):
                        break  # "Invalid type of op": the rest of the multi is not applied
                    self._apply_op(op, txn)
        elif txn.type != T.CREATE_SESSION:
            self._apply_op(txn.ops[0], txn)
        s = self.stats
        s.applied += 1
        if s.first_zxid is None:
            s.first_zxid = txn.zxid
        s.last_zxid, s.last_time_ms = txn.zxid, txn.time
        if txn.zxid > self.zxid:
            self.zxid = txn.zxid
        chk = self.pending_digest
        if chk is not None and chk.computed is None and self.zxid >= chk.zxid:
            self._check_digest()


__all__ = ["DIGEST_VERSION", "DataTree", "DigestCheck", "ReplayStats", "client_stat", "node_digest"]
