"""Plug the admin REST and bookie HTTP scrapers into a ZooKeeper scrape (``ScrapeConfig.extra``).

A source that fails entirely or partly never reads as "nothing loaded": the manifest flag stays false
(``admin_scraped`` / ``bookie_scraped``), so the audit does not use that source to call topics unloaded, and an
incomplete scope row names what failed. The admin source writes one scope row per broker (store ``admin``,
scope ``broker-stats/topics/<broker id>``, complete or not) and one for the broker listing
(``brokers/<cluster>``) when that fails: the audit judges each bundle by the listing of the broker that owns it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from pulsar_ops.errors import ConfigError, HttpError
from pulsar_ops.scrape.admin import (
    BROKERS_SCOPE_PREFIX,
    DEFAULT_NOT_READY_POLL_S,
    DEFAULT_NOT_READY_WAIT_S,
    RegistrationReader,
    broker_scope,
    scrape_admin,
)
from pulsar_ops.scrape.bookie import scrape_bookies
from pulsar_ops.scrape.http import HttpSettings, get_json, make_client
from pulsar_ops.scrape.run import ExtraTables
from pulsar_ops.scrape.zk_bookies import Registrations

Incomplete = tuple[str, str, str, str]


def _cluster(admin_url: str, client_for: Callable[[str], httpx.Client]) -> str:
    with client_for(admin_url) as c:
        clusters = get_json(c, "/admin/v2/clusters")
    names = [str(x) for x in clusters] if isinstance(clusters, list) else []
    if len(names) != 1:
        raise ConfigError(
            f"{admin_url} knows clusters {names}; cannot pick the one to scrape", hint="pass --cluster NAME"
        )
    return names[0]


def http_sources(
    *,
    admin_url: str | None,
    bookie_url: str | None,
    cluster: str | None,
    settings: HttpSettings,
    bookie_http_port: int | None = None,
    bookie_settings: HttpSettings | None = None,
    transport: httpx.BaseTransport | None = None,
    bookie_registrations: Callable[[], Registrations] | None = None,
    ledgers_root: str = "/ledgers",
    broker_registrations: RegistrationReader | None = None,
    broker_stats_wait_s: float = DEFAULT_NOT_READY_WAIT_S,
    broker_stats_poll_s: float = DEFAULT_NOT_READY_POLL_S,
) -> Callable[[], ExtraTables]:
    """A callable for ``ScrapeConfig.extra`` that scrapes the given HTTP sources when the walk is done.

    ``bookie_registrations`` reads the bookies' registration znodes (their published endpoints); without it every
    bookie is reached at its id's host with the port of ``bookie_url`` (``bookie_http_port``).
    ``broker_registrations`` reads the brokers' ``/loadbalance/brokers/<id>`` (their TLS web service address);
    ``broker_stats_wait_s``: how long a broker answering an empty topic listing is asked again."""

    def client_for(base: str) -> httpx.Client:
        return make_client(base, settings, transport=transport)

    def bookie_client_for(base: str) -> httpx.Client:
        return make_client(base, bookie_settings or settings, transport=transport)

    def collect() -> ExtraTables:
        loaded: list[dict[str, Any]] = []
        bookies: list[dict[str, Any]] = []
        endpoints: dict[str, dict[str, str | None]] = {}
        bookie_dirs: dict[str, dict[str, list[str] | None]] = {}
        bookie_gc: dict[str, dict[str, str]] = {}
        incomplete: list[Incomplete] = []
        complete: list[tuple[str, str, int]] = []
        admin_ok = bookie_ok = False
        if admin_url:
            name = cluster
            try:
                name = cluster or _cluster(admin_url, client_for)
                res = scrape_admin(
                    admin_url,
                    name,
                    client_for,
                    registrations=broker_registrations,
                    not_ready_wait_s=broker_stats_wait_s,
                    not_ready_poll_s=broker_stats_poll_s,
                    retries=settings.retries,
                )
                loaded = [{"broker": t.broker, "topic": t.topic, "bundle": t.bundle} for t in res.loaded_topics]
                admin_ok = res.complete
                for b in res.listings:
                    if b.error is None:
                        complete.append(("admin", broker_scope(b.broker), b.topics))
                    else:
                        why = f"{b.error.message}; the topics of the bundles it owns are not called unloaded"
                        incomplete.append(("admin", broker_scope(b.broker), b.error.code, why))
                if not res.brokers:
                    incomplete.append(
                        ("admin", BROKERS_SCOPE_PREFIX + name, "http-no-brokers", f"no active brokers in {name}")
                    )
            except HttpError as e:
                incomplete.append(("admin", BROKERS_SCOPE_PREFIX + name if name else "brokers", e.code, e.message))
        if bookie_url:
            try:
                regs = bookie_registrations() if bookie_registrations is not None else None
                bres = scrape_bookies(
                    bookie_url,
                    bookie_client_for,
                    http_port=bookie_http_port,
                    registrations=regs,
                    ledgers_root=ledgers_root,
                )
                bookies = [
                    {
                        "bookie_id": b.bookie_id,
                        "readonly": b.readonly,
                        "free_bytes": b.free_bytes,
                        "total_bytes": b.total_bytes,
                    }
                    for b in bres.bookies
                ]
                endpoints = {b.bookie_id: {"url": b.http_url, "source": b.endpoint_source} for b in bres.bookies}
                bookie_dirs = {b.bookie_id: b.dirs for b in bres.bookies if b.dirs is not None}
                bookie_gc = {b.bookie_id: b.gc for b in bres.bookies if b.gc is not None}
                bookie_ok = bres.complete
                incomplete += [("bookie", e.scope, e.code, e.message) for e in bres.errors]
            except HttpError as e:
                incomplete.append(("bookie", "list_bookies", e.code, e.message))
        return ExtraTables(
            loaded_topics=loaded,
            bookies=bookies,
            admin_scraped=admin_ok,
            bookie_scraped=bookie_ok,
            incomplete=incomplete,
            bookie_endpoints=endpoints,
            complete=complete,
            bookie_dirs=bookie_dirs,
            bookie_gc=bookie_gc,
        )

    return collect
