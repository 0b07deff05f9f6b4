"""Bookie HTTP admin API scraper: bookie ids, read-only state and disk space (for the GC model).

Calls: `GET /api/v1/bookie/list_bookies?type=rw|ro` on one bookie (cluster view), then
`GET /api/v1/bookie/info` on each bookie's HTTP endpoint (`{"freeSpace", "totalSpace"}`) and
`GET /api/v1/config/server_config` (its ledgerDirectories / indexDirectories, for the audit's check of a bookie
scan's directories; optional: a bookie that does not answer it only leaves that check undone). A bookie that does not
answer keeps its row with unknown space and makes the scrape incomplete.

Each bookie's HTTP endpoint is the one it publishes in its registration znode (``httpserver`` in its
BookieServiceInfo, see :mod:`pulsar_ops.formats.bookie_service_info`); only when it publishes none (an empty
value: a bookie older than BookieServiceInfo, or no ``httpserver`` endpoint) is it the bookie's host with the port of
``--bookie-url`` (or ``--bookie-http-port``). The scheme is always that of ``--bookie-url``: upstream publishes the
protocol ``http`` even for a TLS HTTP server. A custom BookieId (``bookie-0``, not ``host:port``) is not a host:
without a published endpoint (or a published RPC host) that bookie cannot be reached, and its scope is partial.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from pulsar_ops.bookiescan.bookie_conf import from_server_config, scraped_dirs, server_config_gc
from pulsar_ops.errors import ConfigError, DecodeError, HttpError
from pulsar_ops.formats.bookie_service_info import (
    HTTP_ENDPOINT_ID,
    RPC_ENDPOINT_ID,
    WILDCARD_HOSTS,
    ServiceInfo,
    decode_service_info,
    http_address,
    id_host,
)
from pulsar_ops.scrape.http import get_json
from pulsar_ops.scrape.zk_bookies import Registrations

PUBLISHED = "published"  # the bookie's published httpserver endpoint
FALLBACK = "bookie-url-port"  # nothing published: the bookie's host with --bookie-url's port
NO_ENDPOINT = "none"  # cannot be reached: see the bookie's incomplete scope

CODE_UNREACHABLE = "bookie-endpoint-unknown"


@dataclass(frozen=True)
class BookieRow:
    bookie_id: str
    readonly: bool
    free_bytes: int | None
    total_bytes: int | None
    http_url: str | None = None
    endpoint_source: str = FALLBACK
    # its ledgerDirectories / indexDirectories from GET /api/v1/config/server_config (bookie_conf.scraped_dirs);
    # None when that call failed or was not made: the audit then cannot check a scan's directories against it
    dirs: dict[str, list[str] | None] | None = None
    # the GC keys set in that server_config (bookie_conf.gc_keys: BookKeeper names, string values); None when the
    # call failed: the plan's bookie-gc rule then uses the audit's settings and says so
    gc: dict[str, str] | None = None


@dataclass(frozen=True)
class BookieProblem:
    """One part of the bookie scope that could not be read: ``scope`` is ``bookie/info`` (the HTTP call),
    ``bookie-endpoint`` (no address) or ``registrations`` (ZooKeeper)."""

    scope: str
    code: str
    message: str


@dataclass(frozen=True)
class BookieScrape:
    bookies: tuple[BookieRow, ...]
    complete: bool
    errors: tuple[BookieProblem, ...]


def _ids(doc: Any, what: str) -> list[str]:
    if not isinstance(doc, dict):
        raise HttpError(f"list_bookies ({what}) did not return a JSON object", code="http-bad-shape")
    return sorted(str(k) for k in doc)


def _url(scheme: str, host: str, port: int) -> str:
    return f"{scheme}://[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{scheme}://{host}:{port}"


def bookie_http_url(bookie_id: str, scheme: str, http_port: int) -> str | None:
    """The fallback URL: the host of a ``host:port`` BookieId with the given port; None for a custom BookieId."""
    host = id_host(bookie_id)
    return _url(scheme, host, http_port) if host is not None else None


@dataclass(frozen=True)
class Resolved:
    url: str | None
    source: str
    problem: BookieProblem | None = None


def resolve_endpoint(
    bookie_id: str, data: bytes | None, *, scheme: str, fallback_port: int, path: str = "", known: bool = True
) -> Resolved:
    """Where to reach one bookie's HTTP API. ``data``: its registration's bytes (None: no registration);
    ``known``: False when its registration could not be read (what it publishes is unknown)."""
    info: ServiceInfo | None = None
    if data:
        try:
            info = decode_service_info(data, path or bookie_id)
        except DecodeError as e:
            return Resolved(
                None,
                NO_ENDPOINT,
                BookieProblem(
                    "bookie-endpoint", e.code, f"bookie {bookie_id}: its registration cannot be decoded: {e.reason}"
                ),
            )
    if info is not None and info.endpoint(HTTP_ENDPOINT_ID) is not None:
        addr = http_address(info, bookie_id)
        if addr is not None:
            return Resolved(_url(scheme, addr[0], addr[1]), PUBLISHED)
        ep = info.endpoint(HTTP_ENDPOINT_ID)
        assert ep is not None
        return Resolved(
            None,
            NO_ENDPOINT,
            BookieProblem(
                "bookie-endpoint",
                CODE_UNREACHABLE,
                f"bookie {bookie_id} publishes httpserver {ep.host or '<no host>'}:{ep.port}, which names no host "
                "or port to connect to, and its BookieId is not host:port",
            ),
        )
    rpc = info.endpoint(RPC_ENDPOINT_ID) if info is not None else None
    host = rpc.host.strip() if rpc is not None and rpc.host.strip() not in WILDCARD_HOSTS else id_host(bookie_id)
    if host is None:
        return Resolved(
            None,
            NO_ENDPOINT,
            BookieProblem(
                "bookie-endpoint",
                CODE_UNREACHABLE,
                f"bookie {bookie_id} has a custom BookieId (not host:port) and "
                + (
                    "publishes no httpserver endpoint in its registration"
                    if known
                    else "its registration was not read, so its published endpoint is unknown"
                )
                + ": it cannot be reached by its id, so its disk space is unknown",
            ),
        )
    return Resolved(_url(scheme, host, fallback_port), FALLBACK)


def parse_info(doc: Any, bookie_id: str) -> tuple[int, int]:
    if not isinstance(doc, dict) or "freeSpace" not in doc or "totalSpace" not in doc:
        raise HttpError(f"/api/v1/bookie/info of {bookie_id} lacks freeSpace/totalSpace", code="http-bad-shape")
    return int(doc["freeSpace"]), int(doc["totalSpace"])


CONFIG_PATH = "/api/v1/config/server_config"


ServerConfig = tuple[dict[str, list[str] | None] | None, dict[str, str] | None]


def _server_config(client: httpx.Client, url: str) -> ServerConfig:
    """The bookie's configured directories and GC keys (``ConfigurationService``); (None, None) when it does not
    answer with a JSON object: optional knowledge, never an error of the scrape (the audit then does not check the
    scans' dirs, and the plan's bookie-gc rule uses the audit's settings)."""
    try:
        doc = get_json(client, CONFIG_PATH)
    except HttpError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    conf = from_server_config(doc, url + CONFIG_PATH)
    try:
        dirs = scraped_dirs(conf)
    except ConfigError:
        dirs = None
    return dirs, server_config_gc(doc, url + CONFIG_PATH)  # the keys apply reads the same way


def scrape_bookies(
    bookie_url: str,
    client_for: Callable[[str], httpx.Client],
    *,
    http_port: int | None = None,
    registrations: Registrations | None = None,
    ledgers_root: str = "/ledgers",
) -> BookieScrape:
    """``registrations``: the bookies' registration znodes (None: not read; every bookie then uses the fallback)."""
    parts = urlsplit(bookie_url)
    scheme = parts.scheme or "http"
    port = http_port or parts.port or 8000
    with client_for(bookie_url) as c:
        rw = _ids(get_json(c, "/api/v1/bookie/list_bookies", params={"type": "rw"}), "rw")
        ro = _ids(get_json(c, "/api/v1/bookie/list_bookies", params={"type": "ro"}), "ro")
    problems: list[BookieProblem] = []
    regs = registrations.by_id() if registrations is not None else {}
    if registrations is not None:
        problems += [BookieProblem("registrations", code, msg) for _path, code, msg in registrations.errors]
    readonly_of = {b: False for b in rw}
    for b in ro:
        readonly_of.setdefault(b, True)
    for r in regs.values():
        readonly_of.setdefault(r.bookie_id, r.readonly)
    base = ledgers_root.rstrip("/") + "/available"
    rows: list[BookieRow] = []
    for bookie_id, readonly in sorted(readonly_of.items(), key=lambda kv: (kv[1], kv[0])):
        reg = regs.get(bookie_id)
        path = f"{base}/readonly/{bookie_id}" if reg is not None and reg.readonly else f"{base}/{bookie_id}"
        known = (
            reg is not None
            and registrations is not None
            and registrations.listed
            and bookie_id not in registrations.unreadable
        )
        res = resolve_endpoint(
            bookie_id, reg.data if reg is not None else None, scheme=scheme, fallback_port=port, path=path, known=known
        )
        if res.problem is not None:
            problems.append(res.problem)
        free: int | None = None
        total: int | None = None
        dirs: dict[str, list[str] | None] | None = None
        gc: dict[str, str] | None = None
        if res.url is not None:
            try:
                with client_for(res.url) as bc:
                    free, total = parse_info(get_json(bc, "/api/v1/bookie/info"), bookie_id)
                    dirs, gc = _server_config(bc, res.url)
            except HttpError as e:
                problems.append(BookieProblem("bookie/info", e.code, e.message))
        rows.append(BookieRow(bookie_id, readonly, free, total, res.url, res.source, dirs, gc))
    return BookieScrape(tuple(rows), complete=not problems, errors=tuple(problems))
