"""BookieServiceInfo: what a bookie publishes in its registration znode, and where its HTTP admin API is.

The data of ``<ledgers_root>/available/<id>`` and ``<ledgers_root>/available/readonly/<id>`` is a binary
``BookieServiceInfoFormat`` (bookkeeper-proto ``DataFormats.proto``: ``endpoints = 6`` of ``Endpoint {id = 1,
port = 2, host = 3, protocol = 4, auth = 5, extensions = 6}``, ``properties = 7``), written by upstream
``ZKRegistrationManager.serializeBookieServiceInfo`` and read back by ``ZKRegistrationClient
.deserializeBookieServiceInfo``. An empty value is what bookies older than BookieServiceInfo write: upstream then
builds a "legacy" info from the BookieId alone (``BookieServiceInfoUtils.buildLegacyBookieServiceInfo``), which
names no HTTP endpoint; :func:`decode_service_info` returns ``None`` for it.

The HTTP admin endpoint has the id ``httpserver`` (upstream ``HttpService.publishInfo``: ``httpServerPort``,
``httpServerHost``, protocol ``"http"`` whether or not the server uses TLS). ``httpServerHost`` defaults to
``0.0.0.0`` (``ServerConfiguration.getHttpServerHost``), a listen address, not one to connect to: the host is
then the one the bookie publishes for its RPC endpoint (id ``bookie``, upstream ``BookieService.publishInfo``),
else the host of a ``host:port`` BookieId (:func:`http_address`).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pulsar_ops.formats import proto
from pulsar_ops.formats._pb import parse_binary

HTTP_ENDPOINT_ID = "httpserver"
RPC_ENDPOINT_ID = "bookie"
WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"})


@dataclass(frozen=True, slots=True)
class Endpoint:
    id: str
    port: int
    host: str
    protocol: str
    auth: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    endpoints: tuple[Endpoint, ...]
    properties: Mapping[str, str] = field(default_factory=dict)

    def endpoint(self, endpoint_id: str) -> Endpoint | None:
        """The first endpoint with this id (upstream publishes each id once)."""
        return next((e for e in self.endpoints if e.id == endpoint_id), None)


def decode_service_info(data: bytes, path: str) -> ServiceInfo | None:
    """The published info, or None for an empty value (a bookie that publishes nothing). DecodeError when the
    bytes are not a ``BookieServiceInfoFormat`` with every required endpoint field."""
    if not data:
        return None
    msg = parse_binary(proto.BookieServiceInfoFormat, bytes(data), path, "BookieServiceInfoFormat")
    endpoints = tuple(
        Endpoint(e.id, int(e.port), e.host, e.protocol, tuple(e.auth), tuple(e.extensions)) for e in msg.endpoints
    )
    props: dict[str, str] = {}
    for entry in msg.properties:
        props[entry.key] = entry.value  # a map: the last entry of a key wins, as in protobuf
    return ServiceInfo(endpoints, props)


def encode_service_info(info: ServiceInfo) -> bytes:
    """The bytes upstream's ``serializeBookieServiceInfo`` writes for ``info`` (used by tests and test clusters)."""
    msg = proto.BookieServiceInfoFormat()
    for e in info.endpoints:
        m = msg.endpoints.add()
        m.id, m.port, m.host, m.protocol = e.id, e.port, e.host, e.protocol
        m.auth.extend(e.auth)
        m.extensions.extend(e.extensions)
    for k, v in info.properties.items():
        p = msg.properties.add()
        p.key, p.value = k, v
    return bytes(msg.SerializeToString())


def id_host(bookie_id: str) -> str | None:
    """The host of a ``host:port`` BookieId, None for a custom BookieId (``bookie-0``: not an address).

    Upstream ``BookieId`` accepts any id; only a ``host:port`` one is also a ``BookieSocketAddress``."""
    host, sep, port = bookie_id.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host


def http_address(info: ServiceInfo | None, bookie_id: str) -> tuple[str, int] | None:
    """(host, port) of the published ``httpserver`` endpoint; None when none is published or no host to connect
    to can be named (a wildcard listen host, no ``bookie`` endpoint host and a custom BookieId)."""
    if info is None:
        return None
    http = info.endpoint(HTTP_ENDPOINT_ID)
    if http is None or not 0 < http.port < 65536:
        return None
    host = http.host.strip()
    if host in WILDCARD_HOSTS:
        rpc = info.endpoint(RPC_ENDPOINT_ID)
        rpc_host = rpc.host.strip() if rpc is not None else ""
        host = rpc_host if rpc_host not in WILDCARD_HOSTS else (id_host(bookie_id) or "")
    if not host:
        return None
    return host, http.port
