"""The ONLY module of pulsar-ops that writes ZooKeeper (and the reads apply and restore re-verify with).

Writes are one compare-and-set kazoo transaction each; kazoo's ``commit()`` does not raise on a failed op, so every
per-op result is inspected, and a connection error while committing leaves the outcome unknown (the caller
re-reads). Reads are pipelined and retried on connection loss only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry
from kazoo.security import ACL, Id

from pulsar_ops import zkconn
from pulsar_ops.errors import ZooKeeperAuthError, ZooKeeperError
from pulsar_ops.identity import ClusterIdentity, instance_id_from_bytes, layout_from_bytes
from pulsar_ops.repair.validate import Observed
from pulsar_ops.zkconn import NO_SECURITY, ZkSecurity

STAT_FIELDS = (
    "czxid",
    "mzxid",
    "ctime",
    "mtime",
    "version",
    "cversion",
    "aversion",
    "ephemeralOwner",
    "dataLength",
    "numChildren",
    "pzxid",
)


def stat_to_json(stat: Any) -> dict[str, int]:
    return {f: int(getattr(stat, f)) for f in STAT_FIELDS}


def acl_to_json(acls: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"perms": int(a.perms), "scheme": str(a.id.scheme), "id": str(a.id.id)} for a in acls]


def acl_from_json(acls: Iterable[Mapping[str, Any]]) -> list[ACL]:
    return [ACL(int(a["perms"]), Id(str(a["scheme"]), str(a["id"]))) for a in acls]


def redact_hosts(hosts: str) -> str:
    """Hosts without any credentials (``user:pw@`` prefixes are dropped)."""
    return ",".join(h.rsplit("@", 1)[-1] for h in hosts.split(","))


@dataclass(frozen=True)
class TxnResult:
    committed: bool
    unknown: bool  # connection lost while committing: outcome must be re-read
    ops: tuple[str, ...]  # per operation: "ok" or the error class name
    error: str = ""


@dataclass(frozen=True)
class NodeWithAcl:
    node: Observed
    stat: Mapping[str, int]
    acl: tuple[Mapping[str, Any], ...]


def _observed(store: str, path: str, data: bytes | None, stat: Any) -> Observed:
    return Observed(
        store, path, True, bytes(data or b""), int(stat.version), int(stat.mzxid), int(stat.ephemeralOwner),
        int(stat.ctime), int(stat.mtime),
    )  # fmt: skip


def _is_stat(result: Any) -> bool:
    """A committed set_data answers with the new ZnodeStat (checks and deletes answer True)."""
    return hasattr(result, "mzxid") and hasattr(result, "version")


def _is_ok(result: Any) -> bool:
    """A committed operation: a check or delete answers True, a set_data its stat, a create its path."""
    return result is True or _is_stat(result) or isinstance(result, str)


_CONNECTION_ERRORS = (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)


class ZkSession:
    """Kazoo clients for the local store and (optionally separate) configuration store."""

    def __init__(
        self,
        zookeeper: str,
        config_zookeeper: str | None = None,
        *,
        timeout_s: float = 30.0,
        security: ZkSecurity = NO_SECURITY,
    ) -> None:
        self._hosts = {"local": zookeeper, "config": config_zookeeper or zookeeper}
        self._security = security
        self._timeout = timeout_s
        self._clients: dict[str, KazooClient] = {}
        self._retry = KazooRetry(max_tries=5, delay=0.2, max_delay=5.0, ignore_expire=False)

    def __enter__(self) -> ZkSession:
        try:
            for store in ("local", "config"):
                hosts = self._hosts[store]
                if store == "config" and hosts == self._hosts["local"]:
                    self._clients["config"] = self._clients["local"]
                    continue
                self._clients[store] = zkconn.connect(
                    hosts, self._security, timeout=self._timeout, where=redact_hosts(hosts)
                )
        except ZooKeeperError:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        seen: set[int] = set()
        for c in self._clients.values():
            if id(c) in seen:
                continue
            seen.add(id(c))
            try:
                c.stop()
                c.close()
            except KazooException:  # closing is best effort
                pass
        self._clients.clear()

    def client(self, store: str) -> KazooClient:
        try:
            return self._clients[store]
        except KeyError:
            raise ZooKeeperError(f"no ZooKeeper client for store {store!r}") from None

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return self._retry(fn, *args)
        except NoAuthError:
            raise ZooKeeperAuthError(
                f"not authorised to read {args[0] if args else ''} (using {self._security.describe()})",
                hint=zkconn.AUTH_HINT,
            ) from None
        except (KazooException, KazooTimeoutError) as e:
            if isinstance(e, NoNodeError):
                raise
            raise ZooKeeperError(f"ZooKeeper read failed: {type(e).__name__}: {e}") from e

    # --- reads ---------------------------------------------------------------------------------------
    def read(self, store: str, paths: Sequence[str]) -> list[Observed]:
        """Read many znodes (pipelined). Missing znodes come back with ``exists=False``."""
        result: list[Observed] = self._call(self._read_once, store, list(paths))
        return result

    def _read_once(self, store: str, paths: list[str]) -> list[Observed]:
        got = self._pipelined(self.client(store).get_async, paths)
        return [
            Observed(store, p, False) if r is None else _observed(store, p, *r) for p, r in zip(paths, got, strict=True)
        ]

    def _pipelined(self, call: Any, paths: list[str]) -> list[Any]:
        """``call(path)`` (an async kazoo read) for every path at once, then each answer (None: no such znode)."""
        out: list[Any] = []
        for p, res in [(p, call(p)) for p in paths]:
            try:
                out.append(res.get(timeout=self._timeout))
            except NoNodeError:
                out.append(None)
            except NoAuthError:
                raise ZooKeeperAuthError(
                    f"not authorised to read {p} (using {self._security.describe()})", hint=zkconn.AUTH_HINT
                ) from None
        return out

    def children(self, store: str, path: str) -> list[str] | None:
        """Child names, or None when the znode does not exist."""
        try:
            return sorted(self._call(self.client(store).get_children, path))
        except NoNodeError:
            return None

    def read_subtree(self, store: str, root: str) -> list[Observed]:
        """Every znode under ``root`` (inclusive) as it is now; empty when ``root`` is gone. Level by level,
        with the reads and the child listings of a level pipelined."""
        out: list[Observed] = []
        level = [root]
        while level:
            nodes = [n for n in self.read(store, level) if n.exists]
            out.extend(nodes)
            paths = [n.path for n in nodes]
            listed = self._call(self._pipelined, self.client(store).get_children_async, paths)
            level = [
                f"{'' if p == '/' else p}/{k}"
                for p, kids in zip(paths, listed, strict=True)
                for k in sorted(kids or ())
            ]
        return out

    def data(self, store: str, path: str) -> bytes | None:
        """The bytes of one znode, or None when it does not exist."""
        node = self.read(store, [path])[0]
        return node.data if node.exists else None

    def chroot_exists(self, store: str) -> bool:
        """False when the chroot of ``--zookeeper`` / ``--config-zookeeper`` does not exist."""
        return bool(self._call(self.client(store).exists, "/"))

    def ping(self, store: str = "local") -> None:
        """One bounded request (``exists /``, no retry): raises ZooKeeperError when ZooKeeper does not answer
        within the session timeout. A sync kazoo call would instead wait for the connection to come back."""
        try:
            self.client(store).exists_async("/").get(timeout=self._timeout)
        except (KazooException, KazooTimeoutError) as e:
            raise ZooKeeperError(
                f"ZooKeeper does not answer ({type(e).__name__}); stopping",
                hint="re-run the same command once ZooKeeper answers: skipped actions are retried",
            ) from e

    def identity(self, ledgers_root: str) -> ClusterIdentity:
        """The live cluster's identity: the ledgers root's INSTANCEID and LAYOUT and the names under
        /admin/clusters."""
        root = ledgers_root.rstrip("/")
        iid = instance_id_from_bytes(self.data("local", f"{root}/INSTANCEID"))
        layout = layout_from_bytes(self.data("local", f"{root}/LAYOUT"))
        clusters = self.children("config", "/admin/clusters") or []
        return ClusterIdentity(iid, tuple(sorted(clusters)), layout)

    def exists(self, store: str, path: str) -> bool:
        """Whether one znode exists (with :meth:`children` and :meth:`data`: the live ``TreeReader``)."""
        return self.read(store, [path])[0].exists

    def read_with_acl(self, store: str, path: str) -> NodeWithAcl | None:
        """Bytes, full stat and ACL of one znode (None when it does not exist)."""
        c = self.client(store)
        for _ in range(5):
            try:
                data, stat = self._call(c.get, path)
                acls, acl_stat = self._call(c.get_acls, path)
            except NoNodeError:
                return None
            if acl_stat.mzxid == stat.mzxid and acl_stat.aversion == stat.aversion:
                break
        else:
            raise ZooKeeperError(f"{path} keeps changing while being read; try again later")
        return NodeWithAcl(_observed(store, path, data, stat), stat_to_json(stat), tuple(acl_to_json(acls)))

    # --- writes --------------------------------------------------------------------------------------
    def commit(
        self,
        store: str,
        checks: Sequence[tuple[str, int]],
        sets: Sequence[tuple[str, bytes, int]],
        deletes: Sequence[tuple[str, int]],
        creates: Sequence[tuple[str, bytes, Sequence[Mapping[str, Any]]]] = (),
    ) -> TxnResult:
        """One atomic transaction: every check, every create (parents first; with its ACL), every set_data
        (compare-and-set on its version), then every delete (children first)."""
        if not deletes and not sets and not creates:
            raise ValueError("a transaction needs at least one create, set or delete")
        c = self.client(store)
        tx = c.transaction()
        for path, version in checks:
            tx.check(path, int(version))
        for path, data, acl in creates:
            tx.create(path, bytes(data), acl=acl_from_json(acl) or None)
        for path, data, version in sets:
            tx.set_data(path, bytes(data), int(version))
        for path, version in deletes:
            tx.delete(path, int(version))
        try:
            results = tx.commit()
        except _CONNECTION_ERRORS as e:
            return TxnResult(committed=False, unknown=True, ops=(), error=f"{type(e).__name__}: {e}")
        except KazooException as e:
            return TxnResult(committed=False, unknown=False, ops=(), error=f"{type(e).__name__}: {e}")
        ops = tuple("ok" if _is_ok(r) else type(r).__name__ for r in results)
        expected = len(checks) + len(creates) + len(sets) + len(deletes)
        ok = len(results) == expected and all(_is_ok(r) for r in results)
        error = ""
        ops_paths = [p[0] for p in checks] + [p[0] for p in creates] + [p[0] for p in sets] + [p[0] for p in deletes]
        if not ok:
            failed = [
                f"{ops_paths[i]}: {type(r).__name__}"
                for i, r in enumerate(results)
                if not _is_ok(r) and type(r).__name__ != "RolledBackError"
            ]
            error = "; ".join(failed) or f"{len(results)}/{expected} results"
        return TxnResult(committed=ok, unknown=False, ops=ops, error=error)

    def create(self, store: str, path: str, data: bytes, acl: Sequence[Mapping[str, Any]]) -> str:
        """Create one znode with its ACL: "created" | "exists". Other errors raise ZooKeeperError."""
        c = self.client(store)
        try:
            c.create(path, data, acl=acl_from_json(acl) or None)
        except NodeExistsError:
            return "exists"
        except NoNodeError as e:
            raise ZooKeeperError(f"cannot create {path}: its parent does not exist") from e
        except (KazooException, KazooTimeoutError) as e:
            raise ZooKeeperError(f"cannot create {path}: {type(e).__name__}: {e}") from e
        return "created"
