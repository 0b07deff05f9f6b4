"""Pulsar admin REST scraper: which topics are loaded on which broker, without loading any.

Only side-effect-free calls (see reference `pulsar-http-apis.md` §3): `GET /admin/v2/brokers/{cluster}` and,
on each broker, `GET /admin/v2/broker-stats/topics`. Never `stats`/`internalStats` (they load topics).

Each broker's answer is its own scope (:func:`broker_scope`): complete when it answered a JSON document,
incomplete when it answered an empty body, an error, or nothing in time. The audit judges a topic "not loaded"
only from the listing of the broker that owns its bundle (docs/detections.md, "expired-retention-unloaded"), so
one broker's missing answer never turns the topics it has loaded into "unloaded" ones.

Upstream (apache/pulsar, pulsar-broker): `broker-stats/topics` (admin/v2 BrokerStats, `BrokerStatsBase.getTopics2`)
writes the dump `PulsarStats` keeps (`BrokerService.getDimensionMetrics`); the dump starts as an empty buffer
(`PulsarStats` constructor) and is filled by `BrokerService.updateRates`, which `startStatsUpdater` schedules
after `statsUpdateInitialDelayInSecs` and then every `statsUpdateFrequencyInSecs` (60 s each by default; newer
brokers also run it once when the updater starts). So a broker whose first update has not run answers 200 with
an empty body: :func:`scrape_admin` asks it again within a bounded window and then reports
`broker-stats-not-ready` naming it. `{}` is a written dump with nothing loaded, a complete answer. The dump lags:
a topic loaded since the last update is not in it yet (docs/detections.md).

Broker URLs: a broker is listed by its id, `host:port` of its web service (`lookupServiceAddress`, the name of
its registration `/loadbalance/brokers/<id>`, whose LocalBrokerData / BrokerLookupData JSON carries
`webServiceUrl` and `webServiceUrlTls`). For an `https` admin URL each broker is asked at its registered
`webServiceUrlTls`, not at the plain port of its id (:func:`broker_url`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from pulsar_ops.errors import HttpError, PulsarOpsError
from pulsar_ops.scrape.http import get_json

TOPICS_PATH = "/admin/v2/broker-stats/topics"
BROKERS_SCOPE_PREFIX = "brokers/"  # + cluster: the broker listing itself
BROKER_SCOPE_PREFIX = "broker-stats/topics/"  # + broker id: one broker's loaded-topic listing
NOT_READY = "broker-stats-not-ready"
DEFAULT_NOT_READY_WAIT_S = 65.0  # one statsUpdateFrequencyInSecs (60 s) and a margin
DEFAULT_NOT_READY_POLL_S = 5.0

# broker ids -> the data of /loadbalance/brokers/<id> (None: no such znode); may raise PulsarOpsError
RegistrationReader = Callable[[Sequence[str]], Mapping[str, bytes | None]]


def broker_scope(broker: str) -> str:
    """The scope name of one broker's loaded-topic listing (the audit's SQL reads the id back from it)."""
    return BROKER_SCOPE_PREFIX + broker


@dataclass(frozen=True)
class LoadedTopic:
    broker: str
    topic: str
    bundle: str | None


@dataclass(frozen=True)
class BrokerRegistration:
    """What pulsar-ops uses of `/loadbalance/brokers/<id>`."""

    web_service_url: str | None
    web_service_url_tls: str | None


@dataclass(frozen=True)
class BrokerListing:
    """One broker's answer: ``error`` None when it listed its topics (``topics`` of them)."""

    broker: str
    url: str | None
    topics: int
    error: HttpError | None

    @property
    def complete(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class AdminScrape:
    loaded_topics: tuple[LoadedTopic, ...]
    brokers: tuple[str, ...]
    complete: bool
    errors: tuple[HttpError, ...]
    listings: tuple[BrokerListing, ...] = ()


def iter_loaded_topics(broker: str, doc: Any) -> Iterator[LoadedTopic]:
    """Walk the nested broker-stats/topics document: namespace -> bundle -> domain -> topic -> stats."""
    if not isinstance(doc, dict):
        raise HttpError(f"broker-stats/topics of {broker} is not a JSON object", code="http-bad-shape")
    for _namespace, bundles in doc.items():
        if not isinstance(bundles, dict):
            continue
        for bundle, domains in bundles.items():
            if not isinstance(domains, dict):
                continue
            for domain, topics in domains.items():
                if domain != "persistent" or not isinstance(topics, dict):
                    continue
                for topic in topics:
                    yield LoadedTopic(broker=broker, topic=str(topic), bundle=str(bundle))


def parse_registration(broker: str, data: bytes) -> BrokerRegistration:
    """The web service URLs of a broker's registration JSON (LocalBrokerData for the modular load manager,
    BrokerLookupData for the extensible one: both name them `webServiceUrl` / `webServiceUrlTls`)."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise HttpError(
            f"/loadbalance/brokers/{broker} is not JSON: {e}",
            code="broker-registration-invalid",
            hint="inspect the znode with `zkCli.sh get /loadbalance/brokers/<id>`; then re-run `pulsar-ops scrape`",
        ) from None
    if not isinstance(doc, dict):
        raise HttpError(f"/loadbalance/brokers/{broker} is not a JSON object", code="broker-registration-invalid")

    def url(key: str) -> str | None:
        v = doc.get(key)
        return v.rstrip("/") if isinstance(v, str) and v.strip() else None

    return BrokerRegistration(url("webServiceUrl"), url("webServiceUrlTls"))


def broker_url(broker: str, scheme: str, registration: BrokerRegistration | None) -> str:
    """Where to ask ``broker``: over https its registered ``webServiceUrlTls`` (its id names the plain port
    when it has one: `PulsarService.getLookupServiceAddress` takes webServicePort before webServicePortTls);
    over http its registered ``webServiceUrl``. Without a registration, ``scheme://id``."""
    if "://" in broker:
        return broker
    if registration is None:
        return f"{scheme}://{broker}"
    if scheme == "https":
        if registration.web_service_url_tls is None:
            raise HttpError(
                f"broker {broker} registers no webServiceUrlTls (/loadbalance/brokers/{broker}): it has no TLS web "
                "service to ask over https",
                code="broker-no-tls-address",
                hint="pass an http --admin-url or enable the broker's webServicePortTls; re-run `pulsar-ops scrape`",
            )
        return registration.web_service_url_tls
    return registration.web_service_url or f"{scheme}://{broker}"


def _stats(client: httpx.Client, retries: int) -> Any | None:
    """The broker's broker-stats/topics document, or None for an empty body (its first dump is not written yet).
    ``get_json`` chains the JSON decoding error, whose ``doc`` is the body."""
    try:
        return get_json(client, TOPICS_PATH, retries=retries)
    except HttpError as e:
        cause = e.__cause__
        if e.code == "http-bad-json" and isinstance(cause, json.JSONDecodeError) and not cause.doc.strip():
            return None
        raise


def _registrations(
    brokers: Sequence[str], reader: RegistrationReader | None
) -> dict[str, BrokerRegistration | HttpError]:
    if reader is None:
        return {}
    try:
        raw = reader(brokers)
    except PulsarOpsError:
        return {}  # only the URL choice depends on it: scheme://id then, and a wrong port fails loudly
    out: dict[str, BrokerRegistration | HttpError] = {}
    for b, data in raw.items():
        if data is None:
            continue
        try:
            out[b] = parse_registration(b, data)
        except HttpError as e:
            out[b] = e
    return out


def scrape_admin(
    admin_url: str,
    cluster: str,
    client_for: Callable[[str], httpx.Client],
    *,
    registrations: RegistrationReader | None = None,
    not_ready_wait_s: float = DEFAULT_NOT_READY_WAIT_S,
    not_ready_poll_s: float = DEFAULT_NOT_READY_POLL_S,
    retries: int = 3,
    sleep: Callable[[float], None] = time.sleep,
) -> AdminScrape:
    """List the cluster's brokers through `admin_url`, then ask each broker what it has loaded.

    A broker answering an empty body is asked again every ``not_ready_poll_s`` until ``not_ready_wait_s`` have
    passed since the first pass ended (one window for all of them), then reported ``broker-stats-not-ready``."""
    scheme = urlsplit(admin_url).scheme or "http"
    with client_for(admin_url) as c:
        brokers_doc = get_json(c, f"/admin/v2/brokers/{cluster}", retries=retries)
    if not isinstance(brokers_doc, list) or not all(isinstance(b, str) for b in brokers_doc):
        raise HttpError(f"/admin/v2/brokers/{cluster} did not return a list of brokers", code="http-bad-shape")
    brokers = tuple(sorted(set(brokers_doc)))
    regs = _registrations(brokers, registrations)
    rows: list[LoadedTopic] = []
    done: dict[str, BrokerListing] = {}
    pending: dict[str, str] = {}  # broker -> URL, answered an empty body so far

    def ask(broker: str, url: str) -> None:
        try:
            with client_for(url) as bc:
                doc = _stats(bc, retries)
            if doc is None:
                pending[broker] = url
                return
            topics = list(iter_loaded_topics(broker, doc))
        except HttpError as e:
            done[broker] = BrokerListing(broker, url, 0, e)
            return
        pending.pop(broker, None)
        rows.extend(topics)
        done[broker] = BrokerListing(broker, url, len(topics), None)

    for broker in brokers:
        reg = regs.get(broker)
        if isinstance(reg, HttpError):
            done[broker] = BrokerListing(broker, None, 0, reg)
            continue
        try:
            url = broker_url(broker, scheme, reg)
        except HttpError as e:
            done[broker] = BrokerListing(broker, None, 0, e)
            continue
        ask(broker, url)
    deadline = time.monotonic() + max(0.0, not_ready_wait_s)
    while pending and time.monotonic() < deadline:
        sleep(max(0.0, min(not_ready_poll_s, deadline - time.monotonic())))
        for broker, url in sorted(pending.items()):
            ask(broker, url)
    for broker, url in sorted(pending.items()):
        done[broker] = BrokerListing(
            broker,
            url,
            0,
            HttpError(
                f"broker {broker} answered GET {url}{TOPICS_PATH} with an empty body for {not_ready_wait_s:g}s: its "
                "topic stats are not written yet (a broker fills them statsUpdateInitialDelayInSecs after it "
                "starts, then every statsUpdateFrequencyInSecs)",
                code=NOT_READY,
                hint="re-run `pulsar-ops scrape` in a minute, or raise --broker-stats-wait",
            ),
        )
    listings = tuple(done[b] for b in brokers)
    errors = tuple(x.error for x in listings if x.error is not None)
    return AdminScrape(
        loaded_topics=tuple(sorted(rows, key=lambda r: (r.topic, r.broker))),
        brokers=brokers,
        complete=not errors and bool(brokers),
        errors=errors,
        listings=listings,
    )
