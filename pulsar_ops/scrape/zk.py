"""Read-only ZooKeeper walker: pipelined multiRead batches (ZooKeeper >= 3.6) or pipelined async reads.

multiRead is decided per *connection*: kazoo may connect to any host of the connect string and reconnect to
another mid-walk, and an ensemble being upgraded mixes servers with and without opcode 22. Each batch is sent
the way the server currently answering can read it (its ``srvr`` version, asked once per server; multiRead when
unknown). A server without multiRead answers the whole request with ZUNIMPLEMENTED (-6) and then closes the
connection -- upstream ZooKeeper 3.4/3.5 ``ZooKeeperServer.submitRequest`` hands a packet whose type
``Request.isValid`` does not know to ``UnimplementedRequestProcessor.processRequest``, which sends a
``ReplyHeader`` with ``Code.UNIMPLEMENTED`` and no body, then ``cnxn.sendCloseSession()`` (the connection, not
the session). That reply is never a per-path read error: the server is remembered as one without multiRead, the
refused batch is re-issued as single reads and so is every later batch while connected to that server; after a
reconnect the server that answers decides again. ``--multiread`` (forced) against such a server is the error
``zookeeper-multiread-unsupported``, never an empty snapshot.

The walk reads every znode below the given roots: ``getData`` gives the bytes and the full Stat, and nodes with
``numChildren > 0`` are listed with ``getChildren``. Several batches stay in flight (pipelining). Per-op errors do
not stop the walk: NoNode (deleted meanwhile) is skipped, anything else (NoAuth on an ACL-protected subtree, ...)
is handed to the sink, which marks the scope incomplete. Connection loss re-issues every unfinished batch once
the client is connected again (tenacity); if the ensemble stays away, the unfinished paths are reported to the
sink as ``zookeeper-unavailable`` so the snapshot names what is missing.

This module only reads. Writes live in ``repair/zk_writer.py``.
"""

from __future__ import annotations

import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionDropped,
    ConnectionLoss,
    KazooException,
    NoNodeError,
    OperationTimeoutError,
    SessionClosedRequireSaslError,
    SessionExpiredError,
    UnimplementedError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.paths import _prefix_root
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from pulsar_ops import zkconn
from pulsar_ops.errors import ConfigError, ZooKeeperAuthError, ZooKeeperError
from pulsar_ops.identity import instance_id_from_bytes, layout_from_bytes
from pulsar_ops.scrape.multiread import (
    OP_GET_CHILDREN,
    OP_GET_DATA,
    ZNOAUTH,
    ZNONODE,
    ZUNIMPLEMENTED,
    DataResult,
    MultiRead,
    OpError,
    OpResult,
    ReadOp,
    Stat,
)
from pulsar_ops.zkconn import NO_SECURITY, ZkSecurity

log = logging.getLogger(__name__)

RETRYABLE: tuple[type[BaseException], ...] = (
    ConnectionLoss,
    ConnectionDropped,
    ConnectionClosedError,
    SessionExpiredError,
    OperationTimeoutError,
    KazooTimeoutError,
)

DEFAULT_BATCH = 1000
DEFAULT_WINDOW = 8
FALLBACK_BATCH = 200
FALLBACK_WINDOW = 8
DEFAULT_RETRY_SECONDS = 90.0
REQUEST_TIMEOUT = 60.0

CODE_NO_AUTH = "zookeeper-no-auth"
CODE_READ_FAILED = "zookeeper-read-failed"
CODE_UNAVAILABLE = "zookeeper-unavailable"
CODE_MULTIREAD_UNSUPPORTED = "zookeeper-multiread-unsupported"


# --------------------------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class ZkTarget:
    """``HOSTS[/chroot]`` split into the ensemble and the chroot ('' = none)."""

    hosts: str
    chroot: str = ""

    @classmethod
    def parse(cls, spec: str, *, flag: str = "--zookeeper") -> ZkTarget:
        spec = spec.strip()
        if not spec:
            raise ConfigError(f"{flag} is empty", hint=f"pass {flag} HOST:PORT[,HOST:PORT...][/chroot]")
        hosts, sep, chroot = spec.partition("/")
        chroot = ("/" + chroot.rstrip("/")) if sep and chroot.strip("/") else ""
        if not hosts or "@" in hosts:
            raise ConfigError(
                f"{flag} {spec!r} is not HOST:PORT[,HOST:PORT...][/chroot]",
                hint=f"pass {flag} 127.0.0.1:2181/pulsar (credentials go in --zk-auth, never in the hosts)",
            )
        for hp in hosts.split(","):
            host, _, port = hp.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(
                    f"{flag}: {hp!r} is not HOST:PORT", hint=f"pass {flag} HOST:PORT[,HOST:PORT...][/chroot]"
                )
        return cls(hosts=hosts, chroot=chroot)

    @property
    def connect_string(self) -> str:
        return f"{self.hosts}{self.chroot}"

    def host_ports(self) -> list[tuple[str, int]]:
        out = []
        for hp in self.hosts.split(","):
            host, _, port = hp.strip().rpartition(":")
            out.append((host.strip("[]"), int(port)))
        return out

    def describe(self) -> dict[str, str]:
        return {"hosts": self.hosts, "chroot": self.chroot}


def connect(target: ZkTarget, security: ZkSecurity = NO_SECURITY, *, timeout: float = 30.0) -> KazooClient:
    """A started read client (built by :mod:`pulsar_ops.zkconn`). Raises ZooKeeperError / ZooKeeperAuthError."""
    client = zkconn.new_client(
        target.connect_string,
        security,
        connection_retry={"max_tries": -1, "delay": 0.2, "backoff": 2, "max_delay": 3.0},
    )
    zkconn.start(client, target.hosts, security, timeout=timeout)
    try:  # one request proves the session is usable (a SASL-only server closes unauthenticated sessions here)
        exists = client.exists("/") is not None
    except SessionClosedRequireSaslError:
        _close(client)
        raise ZooKeeperAuthError(
            f"ZooKeeper {target.hosts} requires SASL authentication (using {security.describe()})",
            hint=zkconn.AUTH_HINT,
        ) from None
    except KazooException as e:
        _close(client)
        raise ZooKeeperError(f"cannot read {target.chroot or '/'} on {target.hosts}: {e!r}") from e
    if target.chroot and not exists:
        _close(client)
        raise ZooKeeperError(
            f"the chroot {target.chroot} does not exist on {target.hosts}",
            hint="check the /chroot part of --zookeeper / --config-zookeeper (e.g. HOST:2181/pulsar)",
        )
    return client


def _close(client: KazooClient) -> None:
    zkconn.close(client)


def close(client: KazooClient) -> None:
    _close(client)


def read_instance_id(client: KazooClient, ledgers_root: str, *, timeout: float = 10.0) -> str | None:
    """The BookKeeper cluster's INSTANCEID (None when absent or unreadable: the identity is then unknown).
    Bounded: a lost ensemble must not hang the end of a scrape."""
    try:
        data, _ = client.get_async(f"{ledgers_root.rstrip('/')}/INSTANCEID").get(timeout=timeout)
    except (KazooException, KazooTimeoutError):
        return None
    return instance_id_from_bytes(bytes(data or b""))


def read_ledger_layout(client: KazooClient, ledgers_root: str, *, timeout: float = 10.0) -> str | None:
    """The ledgers root's LAYOUT text ("" when the znode does not exist; None when it could not be read: then
    the identity records no layout and apply/restore do not compare it). Bounded like read_instance_id."""
    try:
        data, _ = client.get_async(f"{ledgers_root.rstrip('/')}/LAYOUT").get(timeout=timeout)
    except NoNodeError:
        return ""
    except (KazooException, KazooTimeoutError):
        return None
    return layout_from_bytes(bytes(data or b""))


def cluster_names(client: KazooClient, *, timeout: float = 10.0) -> list[str]:
    """Names under ``/admin/clusters`` (empty when absent or unreadable)."""
    try:
        return sorted(client.get_children_async("/admin/clusters").get(timeout=timeout))
    except (KazooException, KazooTimeoutError):
        return []


def read_load_manager(client: KazooClient, *, timeout: float = 10.0) -> dict[str, Any]:
    """The manifest's ``load_manager`` (pulsar_ops.snapshot.manifest): which load manager keeps bundle ownership,
    from the registrations under ``/loadbalance/brokers`` (their ``loadManagerClassName``), whether
    ``/loadbalance/extension/leader`` and ``/service_unit_state`` exist (pulsar_ops.pulsar_names). A read that
    fails makes the kind ``unknown`` (never ``none``: an error is not evidence of no broker)."""
    from pulsar_ops import pulsar_names as pn

    out: dict[str, Any] = {
        "kind": "unknown",
        "registrations": {},
        "extension_leader": False,
        "service_unit_state": False,
        "error": None,
    }
    try:
        try:
            ids = sorted(client.get_children_async("/loadbalance/brokers").get(timeout=timeout))
        except NoNodeError:
            ids = []
        regs: dict[str, str | None] = {}
        for b in ids:
            try:
                data, _ = client.get_async(f"/loadbalance/brokers/{b}").get(timeout=timeout)
            except NoNodeError:
                continue  # deregistered since the listing (an ephemeral znode)
            regs[b] = pn.registration_class(bytes(data or b""))
        leader = client.exists_async(pn.ELM_LEADER_PATH).get(timeout=timeout) is not None
        sus = client.exists_async(pn.SERVICE_UNIT_STATE_ROOT).get(timeout=timeout) is not None
    except (KazooException, KazooTimeoutError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    out.update(
        kind=pn.load_manager_kind(regs, leader or sus),
        registrations=regs,
        extension_leader=leader,
        service_unit_state=sus,
    )
    return out


# --------------------------------------------------------------------------------------------- versions


def parse_server_version(srvr_output: str) -> str | None:
    for line in srvr_output.splitlines():
        if line.startswith("Zookeeper version:"):
            return line.split(":", 1)[1].strip().split("-")[0].split(",")[0].strip()
    return None


def version_supports_multiread(version: str) -> bool | None:
    """True for >= 3.6 (upstream ``OpCode.multiRead = 22`` arrived in 3.6.0), False for older, None when the
    string is not a version."""
    try:
        parts = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        return None
    if len(parts) < 2:
        return None
    return parts >= (3, 6)


def host_version(host: str, port: int, *, timeout: float = 3.0) -> str | None:
    """The version one server reports to the ``srvr`` four-letter word (None: no answer, TLS port, 4lw off)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"srvr")
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
    except OSError:
        return None
    return parse_server_version(b"".join(chunks).decode("utf-8", "replace"))


def server_version(target: ZkTarget, *, timeout: float = 3.0) -> str | None:
    """Ask the ``srvr`` four-letter word of each host until one answers with a version."""
    for host, port in target.host_ports():
        v = host_version(host, port, timeout=timeout)
        if v:
            return v
    return None


def probe_multiread(client: KazooClient, *, timeout: float = 10.0) -> bool:
    """Send one multiRead of ``/``; an unimplemented / marshalling error or a dropped connection means no."""
    ar = client.handler.async_result()
    client._call(MultiRead([ReadOp(OP_GET_DATA, _prefix_root(client.chroot, "/"))]), ar)
    try:
        res = ar.get(timeout=timeout)
    except Exception as e:  # any failure: the server does not speak multiRead
        log.info("multiRead probe failed (%r); falling back to pipelined async reads", e)
        return False
    return isinstance(res, list) and len(res) == 1


def connected_server(client: KazooClient) -> str | None:
    """``host:port`` of the server the client is connected to right now (None while it is not connected)."""
    conn = getattr(client, "_connection", None)
    sock = getattr(conn, "_socket", None)
    if sock is None:
        return None
    try:
        peer = sock.getpeername()
    except (OSError, AttributeError):
        return None
    host, port = str(peer[0]), int(peer[1])
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _split_server(server: str) -> tuple[str, int]:
    host, _, port = server.rpartition(":")
    return host.strip("[]"), int(port)


# --------------------------------------------------------------------------------------------- walker


class WalkSink(Protocol):
    def node(self, path: str, data: bytes, stat: Stat) -> None: ...

    def error(self, path: str, code: str, reason: str) -> None: ...


@dataclass
class ServerInfo:
    """One server the walk talked to: its ``srvr`` version and whether batches to it use multiRead."""

    version: str = "unknown"
    multiread: bool = True
    refused: bool = False  # answered a multiRead with ZUNIMPLEMENTED

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "multiread": self.multiread, "refused_multiread": self.refused}


@dataclass
class WalkStats:
    znodes: int = 0
    batches: int = 0
    reconnects: int = 0
    aborted: bool = False
    seconds: float = 0.0
    multiread_batches: int = 0
    single_batches: int = 0
    multiread_refusals: int = 0


def join_path(parent: str, child: str) -> str:
    return f"{parent}/{child}" if parent != "/" else f"/{child}"


def _error_code_name(code: int) -> str:
    if code == ZNOAUTH:
        return CODE_NO_AUTH
    return CODE_READ_FAILED


class _MultiReadRefused(Exception):
    """The server answered a whole multiRead request with ZUNIMPLEMENTED: it has no opcode 22."""


@dataclass
class _Batch:
    ops: list[ReadOp]
    handle: Any
    multiread: bool
    server: str | None  # the server connected when the batch was issued


VersionProbe = Callable[[str, int], "str | None"]


class ZkWalker:
    """Walk subtrees of one store with pipelined batches.

    ``multiread``: None decides per connected server (its ``srvr`` version; a ZUNIMPLEMENTED reply turns it
    off for that server), True forces multiRead (a server without it is ``zookeeper-multiread-unsupported``),
    False always uses kazoo's async reads. ``on_batch`` is called after each processed batch with the number
    of batches so far (tests use it to act inside the walk: restart a server after the Nth batch).
    """

    def __init__(
        self,
        client: KazooClient,
        *,
        multiread: bool | None,
        batch: int | None = None,
        window: int | None = None,
        retry_seconds: float = DEFAULT_RETRY_SECONDS,
        progress: Callable[[int], None] | None = None,
        version_probe: VersionProbe | None = None,
        on_batch: Callable[[int], None] | None = None,
        known: dict[str, ServerInfo] | None = None,
    ) -> None:
        self.client = client
        self.multiread = multiread
        self.mr_batch = max(1, batch or DEFAULT_BATCH)
        self.single_batch = max(1, batch or FALLBACK_BATCH)
        self.window = max(1, window or (FALLBACK_WINDOW if multiread is False else DEFAULT_WINDOW))
        self.retry_seconds = retry_seconds
        self.progress = progress
        self.on_batch = on_batch
        self.version_probe: VersionProbe = version_probe if version_probe is not None else host_version
        self.stats = WalkStats()
        # what is known of each server, shared by the walks of one client (pass the same dict): a server that
        # refused multiRead in one store's walk is not asked again in the next
        self.known: dict[str, ServerInfo] = known if known is not None else {}
        # the servers this walk was connected to
        self.servers: dict[str, ServerInfo] = {}
        self._last_choice = multiread is not False

    # -- which way to read, per connected server

    def _server_info(self, server: str) -> ServerInfo:
        info = self.servers.get(server)
        if info is None:
            info = self.servers[server] = self._learn(server)
        return info

    def _learn(self, server: str) -> ServerInfo:
        info = self.known.get(server)
        if info is None:
            host, port = _split_server(server)
            version = self.version_probe(host, port)
            supports = version_supports_multiread(version) if version else None
            # unknown version: try multiRead; a server without it answers ZUNIMPLEMENTED and is remembered
            info = ServerInfo(version=version or "unknown", multiread=supports is not False)
            if self.multiread is not None:
                info.multiread = self.multiread
            self.known[server] = info
            log.info("ZooKeeper server %s: version %s, multiRead %s", server, info.version, info.multiread)
        return info

    def _choose(self) -> tuple[bool, str | None]:
        """(use multiRead for the next batch?, the server connected now or None)."""
        server = connected_server(self.client)
        if server is None:  # between connections: the request waits in kazoo's queue for the next one
            return self._last_choice, None
        use = self._server_info(server).multiread
        self._last_choice = use
        return use, server

    def _refused(self, server: str | None) -> None:
        """A server answered multiRead with ZUNIMPLEMENTED (and closes the connection, upstream 3.4/3.5)."""
        self.stats.multiread_refusals += 1
        info = self.servers.get(server) if server is not None else None
        if self.multiread is True:
            who = f"ZooKeeper server {server}" if server else "a ZooKeeper server of the ensemble"
            version = f" (version {info.version})" if info is not None and info.version != "unknown" else ""
            raise ZooKeeperError(
                f"{who}{version} has no multiRead (opcode 22, ZooKeeper >= 3.6): it answered ZUNIMPLEMENTED "
                "while --multiread was forced; the snapshot directory has no manifest",
                hint="scrape again without --multiread (the default decides per server and falls back to single "
                "reads) or with --no-multiread, into a new --out directory",
                code=CODE_MULTIREAD_UNSUPPORTED,
            )
        if info is not None:
            info.multiread = False
            info.refused = True
        self._last_choice = False
        log.warning(
            "ZooKeeper server %s has no multiRead (ZUNIMPLEMENTED); reading from it with single reads",
            server or "(unknown)",
        )

    # -- issuing and collecting one batch

    def _issue(self, ops: list[ReadOp], multiread: bool) -> Any:
        client = self.client
        if multiread:
            chroot = client.chroot or ""
            ar = client.handler.async_result()
            if chroot:
                ops = [ReadOp(op.type, chroot + op.path if op.path != "/" else chroot) for op in ops]
            client._call(MultiRead(ops), ar)
            return ar
        return [
            client.get_async(op.path) if op.type == OP_GET_DATA else client.get_children_async(op.path) for op in ops
        ]

    def _collect(self, b: _Batch) -> list[OpResult]:
        """Results per op. Raises a RETRYABLE exception when the connection failed under the batch, and
        _MultiReadRefused when the server has no multiRead."""
        ops, handle = b.ops, b.handle
        if b.multiread:
            try:
                res = handle.get(timeout=REQUEST_TIMEOUT)
            except RETRYABLE:
                raise
            except UnimplementedError:
                raise _MultiReadRefused() from None
            except ZookeeperError as e:  # the whole request was refused: every op failed the same way
                code = int(getattr(e, "code", -1) or -1)
                if code == ZUNIMPLEMENTED:
                    raise _MultiReadRefused() from None
                return [OpError(code) for _ in ops]
            except (ValueError, IndexError) as e:  # unparsable response: report, do not loop
                log.warning("multiRead response could not be parsed: %r", e)
                return [OpError(-5) for _ in ops]
            if not isinstance(res, list) or len(res) != len(ops):
                return [OpError(-5) for _ in ops]
            return res
        out: list[OpResult] = []
        for op, ar in zip(ops, handle, strict=True):
            try:
                value = ar.get(timeout=REQUEST_TIMEOUT)
            except RETRYABLE:
                raise
            except ZookeeperError as e:
                out.append(OpError(int(getattr(e, "code", -1) or -1)))
                continue
            if op.type == OP_GET_DATA:
                data, stat = value
                out.append((data or b"", tuple(stat)))
            else:
                out.append(list(value))
        return out

    # -- the walk

    def walk(self, roots: Sequence[str], sink: WalkSink) -> WalkStats:
        started = time.monotonic()
        pending: list[ReadOp] = [ReadOp(OP_GET_DATA, r) for r in reversed(roots)]
        inflight: deque[_Batch] = deque()
        shrink = 1
        failures = 0
        while pending or inflight:
            if not inflight and not self.client.connected and not self._await_connection():
                # the ensemble went away before this walk (or between batches) and did not come back
                self._abandon(pending, sink, f"not connected, and no connection within {self.retry_seconds}s")
                self.stats.aborted = True
                break
            while pending and len(inflight) < self.window:
                use_mr, server = self._choose()
                size = max(1, (self.mr_batch if use_mr else self.single_batch) // shrink)
                n = min(size, len(pending))
                ops = pending[-n:]
                del pending[-n:]
                inflight.append(_Batch(ops, self._issue(ops, use_mr), use_mr, server))
            b = inflight.popleft()
            try:
                results = self._collect(b)
            except _MultiReadRefused:
                # Not a read error: the same reads go again, as single reads while this server answers.
                self._refused(b.server)
                pending.extend(b.ops)
                continue
            except RETRYABLE as e:
                # Every batch still in flight failed with the connection: re-issue all of them.
                pending.extend(b.ops)
                while inflight:
                    pending.extend(inflight.popleft().ops)
                failures += 1
                self.stats.reconnects += 1
                if failures > 2:
                    shrink = min(shrink * 2, self.mr_batch)  # a response the link cannot carry: smaller batches
                log.warning("connection lost during the walk (%r); re-issuing %d reads", e, len(pending))
                if not self._await_connection():
                    self._abandon(pending, sink, f"connection lost and not restored within {self.retry_seconds}s")
                    self.stats.aborted = True
                    break
                continue
            failures = 0
            self.stats.batches += 1
            if b.multiread:
                self.stats.multiread_batches += 1
            else:
                self.stats.single_batches += 1
            self._process(b.ops, results, pending, sink)
            if self.progress is not None:
                self.progress(self.stats.znodes)
            if self.on_batch is not None:
                self.on_batch(self.stats.batches)
        self.stats.seconds = time.monotonic() - started
        return self.stats

    def _process(self, ops: list[ReadOp], results: list[OpResult], pending: list[ReadOp], sink: WalkSink) -> None:
        node = sink.node
        push = pending.append
        done = 0
        for op, res in zip(ops, results, strict=True):
            if isinstance(res, OpError):
                if res.code == ZNONODE:
                    continue  # deleted while we walked: not an error, not evidence of anything
                what = "read" if op.type == OP_GET_DATA else "list children of"
                sink.error(op.path, _error_code_name(res.code), f"cannot {what} the znode: ZooKeeper error {res.code}")
                continue
            if isinstance(res, tuple):
                data, stat = res
                node(op.path, data, stat)
                done += 1
                if stat[9] > 0:
                    push(ReadOp(OP_GET_CHILDREN, op.path))
            else:
                parent = op.path
                prefix = parent + "/" if parent != "/" else "/"
                for child in sorted(res, reverse=True):
                    push(ReadOp(OP_GET_DATA, prefix + child))
        self.stats.znodes += done

    def _await_connection(self) -> bool:
        """Wait (tenacity, exponential backoff) until a read succeeds again; False after retry_seconds.

        While kazoo is not connected an attempt fails at once (a request queued meanwhile would only time out),
        so giving up takes ``retry_seconds``, not that plus a request timeout."""
        client = self.client
        try:
            for attempt in Retrying(
                stop=stop_after_delay(self.retry_seconds),
                wait=wait_exponential(multiplier=0.2, max=3.0),
                retry=retry_if_exception_type(RETRYABLE),
                reraise=False,
            ):
                with attempt:
                    if not client.connected:
                        raise ConnectionLoss("not connected")
                    client.exists_async("/").get(timeout=10.0)
        except RetryError:
            return False
        return True

    def _abandon(self, pending: list[ReadOp], sink: WalkSink, reason: str) -> None:
        for op in pending:
            sink.error(op.path, CODE_UNAVAILABLE, reason)
        pending.clear()


__all__ = [
    "CODE_MULTIREAD_UNSUPPORTED",
    "CODE_NO_AUTH",
    "CODE_READ_FAILED",
    "CODE_UNAVAILABLE",
    "DataResult",
    "ServerInfo",
    "WalkSink",
    "WalkStats",
    "ZkTarget",
    "ZkWalker",
    "close",
    "connect",
    "connected_server",
    "host_version",
    "join_path",
    "probe_multiread",
    "server_version",
]
