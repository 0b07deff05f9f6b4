"""A Pulsar admin REST server for tests: stands in for a broker over a REAL ZooKeeper (kazoo), 127.0.0.1 only.

``with AdminServer("127.0.0.1:2181/chroot", now_ms=clock) as server:`` then call ``server.url`` as the admin
client does (topic local names ``Codec.encode``d in the path). Endpoints (apache/pulsar
``pulsar-broker/.../admin/v2/PersistentTopics.java``, ``BrokerStats``, ``TopicLookup``):

* ``GET /admin/v2/persistent/{t}/{ns}/{topic}/stats`` loads the topic, answers TopicStats-shaped JSON (the
  bundle's ownership is taken first, then the topic looked up: a 404 may leave the bundle owned, as upstream);
* ``POST .../{topic}/trim`` loads it and runs one trim (``internalTrimTopic``), 204;
* ``PUT .../{topic}/unload`` loads it (as ``getTopicIfExists`` does) and releases it; the bundle's ownership znode
  goes too when no other topic of the bundle stays loaded (a broker keeps it; tests want it back), 204;
* ``DELETE .../{topic}/subscription/{sub}?force=`` loads it, 412 while the test says consumers are connected and
  ``force`` is not true, 404 for an unknown subscription, else deletes the cursor, its ledger, then trims, 204;
* ``GET /admin/v2/broker-stats/topics`` the loaded topics, namespace -> bundle -> ``persistent`` -> topic;
* ``GET /lookup/v2/topic/persistent/{t}/{ns}/{topic}`` assigns the bundle (ownership znode), LookupData;
* ``GET /admin/v2/clusters`` the children of ``/admin/clusters`` (configuration store) and
  ``GET /admin/v2/brokers/{cluster}`` the ids of the registered brokers, the children of ``/loadbalance/brokers``
  (upstream ``BrokersBase.getActiveBrokers``; the cluster name is not checked here);
* the v1 forms of the topic calls (``/admin/persistent/{property}/{cluster}/{ns}/{topic}/...``) for V1 topics.

What a load, trim and subscription deletion do to ZooKeeper is in ``admin_effects``. Errors carry Pulsar's
ErrorData body ``{"reason": ...}``: 404 unknown topic / subscription / namespace, 412 connected consumers, 307 to
the owner when another session owns the bundle, 500 for metadata failures (a lost compare-and-set included).

Several brokers: ``register=True`` registers the test broker as upstream's modular load manager does
(``ModularLoadManagerImpl.start``): an ephemeral ``/loadbalance/brokers/<id>`` whose LocalBrokerData JSON names its
``webServiceUrl`` (and ``webServiceUrlTls``, ``tls_url=``), the id being ``127.0.0.1:<port>``; start two servers
over one ZooKeeper for two brokers, each owning the bundles it acquires.

``load_manager="extensible"``: the broker runs upstream's extensible load manager (PIP-192): its registration is
``BrokerLookupData`` (naming ``loadManagerClassName``), the bundles it owns are held in memory (the
service-unit-state channel), never as ``/namespace`` znodes, and it loads
``persistent://pulsar/system/loadbalancer-service-unit-state`` at start, so its topic listing shows it.

Test controls: ``fail(method, path, status=..., times=...)`` (or ``endpoint=``; ``hang=`` seconds then close,
``close=True``, ``empty=True`` to answer ``status`` with an empty body (a broker's topic stats before their first
update), ``after=True`` to answer so only after the effect ran), ``calls`` [(method, path, status)]
(status 0 when no response was sent), ``connect_consumer``, ``before_info_write`` (runs before each
compare-and-set of a managed-ledger info), and ``token`` (401 unless ``Authorization: Bearer <token>``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, NamedTuple, cast
from urllib.parse import parse_qs, unquote

from kazoo.client import KazooClient

from pulsar_ops.formats.names import decode
from pulsar_ops.testing.admin_effects import AdminError, Broker, Loaded, topic_of
from pulsar_ops.testing.model_upstream import BROKER_VERSION, EXTENSIBLE_CLASS
from pulsar_ops.zkconn import close, connect

_TOPIC = r"/admin/v2/persistent/([^/]+)/([^/]+)/([^/]+)"
_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(_TOPIC + "/stats"), "stats"),
    ("POST", re.compile(_TOPIC + "/trim"), "trim"),
    ("PUT", re.compile(_TOPIC + "/unload"), "unload"),
    ("DELETE", re.compile(_TOPIC + "/subscription/([^/]+)"), "delete-subscription"),
    ("GET", re.compile("/admin/v2/broker-stats/topics"), "broker-stats"),
    ("GET", re.compile(r"/lookup/v2/topic/persistent/([^/]+)/([^/]+)/([^/]+)"), "lookup"),
    ("GET", re.compile("/admin/v2/clusters"), "clusters"),
    ("GET", re.compile("/admin/v2/brokers/([^/]+)"), "brokers"),
)
_TOPIC_V1 = r"/admin/persistent/([^/]+)/([^/]+)/([^/]+)/([^/]+)"  # property/cluster/namespace/topic (v1 API)
_V1_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(_TOPIC_V1 + "/stats"), "stats"),
    ("POST", re.compile(_TOPIC_V1 + "/trim"), "trim"),
    ("PUT", re.compile(_TOPIC_V1 + "/unload"), "unload"),
    ("DELETE", re.compile(_TOPIC_V1 + "/subscription/([^/]+)"), "delete-subscription"),
)
ENDPOINTS = frozenset(r[2] for r in _ROUTES)
NO_RESPONSE = 0  # the status recorded in ``calls`` when the connection was closed (or hung) without an answer

_TOPIC_ZEROS = (  # noqa: SIM905 (a list literal would take 16 lines)
    "msgRateIn msgThroughputIn msgRateOut msgThroughputOut bytesInCounter msgInCounter bytesOutCounter msgOutCounter "
    "averageMsgSize earliestMsgPublishTimeInBacklogs lastOffloadLedgerId lastOffloadSuccessTimeStamp "
    "lastOffloadFailureTimeStamp waitingPublishers nonContiguousDeletedMessagesRanges "
    "nonContiguousDeletedMessagesRangesSerializedSize"
).split()
_SUB_ZEROS = (  # noqa: SIM905
    "msgRateOut msgThroughputOut bytesOutCounter msgOutCounter msgRateRedeliver msgDelayed unackedMessages "
    "msgRateExpired totalMsgExpired lastExpireTimestamp lastConsumedTimestamp lastAckedTimestamp "
    "lastMarkDeleteAdvancedTimestamp"
).split()


class Call(NamedTuple):
    method: str
    path: str  # as sent, without the query string
    status: int  # NO_RESPONSE when none was sent


@dataclass
class _Failure:
    method: str | None
    path: str | None
    endpoint: str | None
    status: int
    times: int | None  # None = every matching call
    hang: float | None
    close: bool
    after: bool
    reason: str
    empty: bool = False

    def matches(self, method: str, path: str, endpoint: str | None) -> bool:
        return (
            (self.method is None or self.method == method)
            and (self.path is None or self.path in (path, unquote(path)))
            and (self.endpoint is None or self.endpoint == endpoint)
        )


def topic_stats(broker: Broker, lt: Loaded) -> dict[str, Any]:
    """TopicStats-shaped: counters zero (nothing publishes here), sizes and backlogs from the ledger list."""
    rows = lt.rows()
    subs: dict[str, Any] = {}
    for enc, c in sorted(lt.cursors.items()):
        md_ledger, md_entry = c.mark_delete or (-1, -1)
        backlog = sum(max(n - md_entry - 1, 0) if lid == md_ledger else n for lid, n, _, _ in rows if lid >= md_ledger)
        name = decode(enc)
        consumers = broker.consumers.get((lt.ml.topic, name), 0)
        subs[name] = {
            **dict.fromkeys(_SUB_ZEROS, 0),
            "msgBacklog": backlog,
            "msgBacklogNoDelayed": backlog,
            "backlogSize": sum(s for lid, _, s, _ in rows if lid > md_ledger),
            "type": "Exclusive",
            "consumers": [{"consumerName": f"consumer-{i}", "msgRateOut": 0.0} for i in range(consumers)],
            "nonContiguousDeletedMessagesRanges": len(c.individual_deleted),
            "blockedSubscriptionOnUnackedMsgs": False,
            "durable": True,
            "replicated": False,
            "subscriptionProperties": dict(c.cursor_properties),
        }
    return {
        **dict.fromkeys(_TOPIC_ZEROS, 0),
        "storageSize": sum(r[2] for r in rows),
        "backlogSize": max((s["backlogSize"] for s in subs.values()), default=0),
        "offloadedStorageSize": sum(li.size for li in lt.info.ledgerInfo if li.offloadContext.complete),
        "msgChunkPublished": False,
        "publishers": [],
        "subscriptions": subs,
        "replication": {},
        "deduplicationStatus": "Disabled",
        "ownerBroker": broker.url.split("://", 1)[1],
    }


def _lookup_data(owner: dict[str, Any]) -> dict[str, Any]:
    native = owner.get("nativeUrl") or ""
    tls = owner.get("nativeUrlTls") or ""
    return {
        "brokerUrl": native,
        "brokerUrlTls": tls,
        "httpUrl": owner.get("httpUrl") or "",
        "httpUrlTls": owner.get("httpUrlTls") or "",
        "nativeUrl": native,
    }


class AdminServer:
    """The test broker's HTTP face. ``now_ms`` is its clock (retention, re-stamping, ledger ctime)."""

    def __init__(
        self,
        zookeeper: str,
        *,
        now_ms: Callable[[], int] | None = None,
        config_zookeeper: str | None = None,
        token: str | None = None,
        ledgers_root: str = "/ledgers",
        hang_seconds: float = 30.0,
        serves_owned: bool = False,
        register: bool = False,
        tls_url: str | None = None,
        load_manager: str = "modular",
    ) -> None:
        self.zookeeper, self.config_zookeeper, self.token = zookeeper, config_zookeeper, token
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.ledgers_root, self.hang_seconds = ledgers_root, hang_seconds
        self.serves_owned = serves_owned  # answer for bundles another session owns (the demo's single broker)
        self.register, self.tls_url = register, tls_url
        if load_manager not in ("modular", "extensible"):
            raise ValueError(f"unknown load manager {load_manager!r}")
        self.extensible = load_manager == "extensible"
        self.calls: list[Call] = []
        self._failures: list[_Failure] = []
        self._guard = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._clients: list[KazooClient] = []
        self._broker: Broker | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("AdminServer is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def broker(self) -> Broker:
        if self._broker is None:
            raise RuntimeError("AdminServer is not started")
        return self._broker

    def start(self) -> AdminServer:
        local = connect(self.zookeeper)
        self._clients.append(local)
        config = local if self.config_zookeeper is None else connect(self.config_zookeeper)
        if config is not local:
            self._clients.append(config)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.admin = self  # type: ignore[attr-defined]
        self._httpd = httpd
        self._broker = Broker(
            local, config, self.now_ms, self.url, self.ledgers_root, self.serves_owned, extensible=self.extensible
        )
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        if self.register:
            local.create(f"/loadbalance/brokers/{self.broker_id}", self._registration(), ephemeral=True, makepath=True)
        if self.extensible:
            self._load_elm_system_topics()
        return self

    def _load_elm_system_topics(self) -> None:
        """An ELM broker opens the service-unit-state channel's topic (``ServiceUnitStateChannelImpl.TOPIC``,
        ``persistent://pulsar/system/loadbalancer-service-unit-state``) at start: it is listed as loaded, as
        upstream's ``broker-stats/topics`` lists it (when the seeded cluster has it)."""
        ml = topic_of("pulsar", "system", "loadbalancer-service-unit-state")
        if self.broker.zk.exists(f"/managed-ledgers/{ml.ml_name}") is not None:
            with self.broker.lock:
                self.broker.load(ml, "/")

    @property
    def broker_id(self) -> str:
        """The id upstream lists the broker by: host:port of its web service (``lookupServiceAddress``)."""
        return self.url.split("://", 1)[1]

    def _registration(self) -> bytes:
        native = self.broker.owner_data()["nativeUrl"]
        if self.extensible:  # BrokerRegistryImpl: BrokerLookupData (model_upstream.lookup_data)
            lookup = {
                "webServiceUrl": self.url,
                "webServiceUrlTls": self.tls_url,
                "pulsarServiceUrl": native,
                "pulsarServiceUrlTls": None,
                "advertisedListeners": {},
                "protocols": {},
                "persistentTopicsEnabled": True,
                "nonPersistentTopicsEnabled": True,
                "loadManagerClassName": EXTENSIBLE_CLASS,
                "startTimestamp": self.now_ms(),
                "brokerVersion": BROKER_VERSION,
                "properties": {},
            }
            return json.dumps(lookup).encode("utf-8")
        doc = {
            "webServiceUrl": self.url,
            "webServiceUrlTls": self.tls_url,
            "pulsarServiceUrl": native,
            "pulsarServiceUrlTls": None,
            "persistentTopicsEnabled": True,
            "nonPersistentTopicsEnabled": True,
            "advertisedListeners": {},
        }
        return json.dumps(doc).encode("utf-8")

    def stop(self) -> None:
        """Stop serving and close the ZooKeeper session: its ephemeral ownership znodes vanish."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for client in self._clients:
            close(client)
        self._clients.clear()

    def __enter__(self) -> AdminServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ test controls

    def fail(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        endpoint: str | None = None,
        status: int = 500,
        times: int | None = 1,
        hang: float | None = None,
        close: bool = False,
        after: bool = False,
        reason: str = "injected failure",
        empty: bool = False,
    ) -> None:
        """Answer the next ``times`` matching calls (None: all) with ``status`` (``empty``: and no body), or hang
        ``hang`` seconds (then close), or close the connection; ``after``: only once the call's effect has run."""
        if endpoint is not None and endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}; expected one of {sorted(ENDPOINTS)}")
        m = method.upper() if method else None
        with self._guard:
            self._failures.append(_Failure(m, path, endpoint, status, times, hang, close, after, reason, empty))

    def connect_consumer(self, topic: str, subscription: str, count: int = 1) -> None:
        """Say ``count`` consumers are connected to ``subscription`` (delete answers 412 unless forced)."""
        with self.broker.lock:
            self.broker.consumers[(topic, subscription)] = count

    @property
    def loaded_topics(self) -> list[str]:
        with self.broker.lock:
            return sorted(self.broker.loaded)

    @property
    def before_info_write(self) -> Callable[[str], None] | None:
        return self.broker.before_info_write

    @before_info_write.setter
    def before_info_write(self, hook: Callable[[str], None] | None) -> None:
        self.broker.before_info_write = hook

    def _take_failure(self, method: str, path: str, endpoint: str | None) -> _Failure | None:
        with self._guard:
            for f in self._failures:
                if f.matches(method, path, endpoint):
                    if f.times is not None:
                        f.times -= 1
                        if f.times <= 0:
                            self._failures.remove(f)
                    return f
        return None

    def _record(self, method: str, path: str, status: int) -> None:
        with self._guard:
            self.calls.append(Call(method, path, status))

    # ------------------------------------------------------------------ requests

    def dispatch(self, method: str, path: str, query: str) -> tuple[int, Any, str | None]:
        """(status, JSON body or None, Location) for one request, after auth and failure injection."""
        for route_method, pattern, endpoint in (*_ROUTES, *_V1_ROUTES):
            m = pattern.fullmatch(path)
            if m is None:
                continue
            if route_method != method:
                return 405, {"reason": "Method Not Allowed"}, None
            groups = m.groups()
            if path.startswith("/admin/persistent/"):  # v1: the namespace is property/cluster/namespace
                groups = (f"{groups[0]}/{groups[1]}", *groups[2:])
            try:
                return self._run(endpoint, groups, parse_qs(query), path)
            except AdminError as e:
                return e.status, {"reason": e.reason}, e.location
            except Exception as e:  # a broker answers 500 for anything its metadata store throws
                return 500, {"reason": f"{type(e).__name__}: {e}"}, None
        return 404, {"reason": "Not Found"}, None

    def _run(self, endpoint: str, g: tuple[str, ...], q: dict[str, list[str]], path: str) -> tuple[int, Any, None]:
        b = self.broker
        if endpoint == "clusters":
            return (
                200,
                sorted(b.config.get_children("/admin/clusters")) if b.config.exists("/admin/clusters") else [],
                None,
            )
        if endpoint == "brokers":
            root = "/loadbalance/brokers"
            return 200, sorted(b.zk.get_children(root)) if b.zk.exists(root) else [], None
        if endpoint == "broker-stats":
            with b.lock:
                out: dict[str, Any] = {}
                for topic, lt in sorted(b.loaded.items()):
                    bundles = out.setdefault(lt.ml.namespace, {})
                    bundles.setdefault(lt.bundle, {}).setdefault("persistent", {})[topic] = topic_stats(b, lt)
                return 200, out, None
        ml = topic_of(unquote(g[0]), unquote(g[1]), g[2])
        if endpoint == "lookup":
            with b.lock:
                _, other = b.acquire(ml)
                return 200, _lookup_data(other if other is not None else b.owner_data()), None
        if endpoint == "stats":
            with b.lock:
                return 200, topic_stats(b, b.load(ml, path)), None
        if endpoint == "trim":
            with b.lock:
                b.trim(b.load(ml, path))
        elif endpoint == "unload":
            b.unload(ml, path)
        else:
            force = q.get("force", ["false"])[-1].lower() == "true"
            b.delete_subscription(ml, decode(g[3]), force, path)
        return 204, None, None

    def endpoint_of(self, path: str) -> str | None:
        return next((e for _, p, e in (*_ROUTES, *_V1_ROUTES) if p.fullmatch(path)), None)

    def hang(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    server_version = "pulsar-ops-test-broker"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        admin = cast(AdminServer, self.server.admin)  # type: ignore[attr-defined]
        method = self.command
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        failure = admin._take_failure(method, path, admin.endpoint_of(path))
        if failure is not None and not failure.after:
            self._inject(admin, failure, method, path)
            return
        if admin.token is not None and self.headers.get("Authorization") != f"Bearer {admin.token}":
            self._send(admin, method, path, 401, {"reason": "Authentication required"}, None)
            return
        status, body, location = admin.dispatch(method, path, query)
        if failure is not None:
            self._inject(admin, failure, method, path)
            return
        self._send(admin, method, path, status, body, location)

    def _inject(self, admin: AdminServer, failure: _Failure, method: str, path: str) -> None:
        if failure.hang is not None or failure.close:
            admin._record(method, path, NO_RESPONSE)  # recorded when the client starts waiting
            if failure.hang is not None:
                admin.hang(failure.hang)
            self.close_connection = True
            return
        self._send(admin, method, path, failure.status, None if failure.empty else {"reason": failure.reason}, None)

    def _send(self, admin: AdminServer, method: str, path: str, status: int, body: Any, location: str | None) -> None:
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        admin._record(method, path, status)
        self.send_response(status)
        if location is not None:
            self.send_header("Location", location)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve
