"""Pulsar admin REST scraper: which topics are loaded on which broker, without loading any.

Only side-effect-free calls (see reference `pulsar-http-apis.md` §3): `GET /admin/v2/brokers/{cluster}` and,
on each broker, `GET /admin/v2/broker-stats/topics`. Never `stats`/`internalStats` (they load topics).
A broker that does not answer makes the whole listing incomplete: the audit then ignores it rather than
calling that broker's topics unloaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from pulsar_ops.errors import HttpError
from pulsar_ops.scrape.http import get_json


@dataclass(frozen=True)
class LoadedTopic:
    broker: str
    topic: str
    bundle: str | None


@dataclass(frozen=True)
class AdminScrape:
    loaded_topics: tuple[LoadedTopic, ...]
    brokers: tuple[str, ...]
    complete: bool
    errors: tuple[HttpError, ...]


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


def scrape_admin(
    admin_url: str,
    cluster: str,
    client_for: Callable[[str], httpx.Client],
) -> AdminScrape:
    """List the cluster's brokers through `admin_url`, then ask each broker what it has loaded."""
    scheme = urlsplit(admin_url).scheme or "http"
    errors: list[HttpError] = []
    with client_for(admin_url) as c:
        brokers_doc = get_json(c, f"/admin/v2/brokers/{cluster}")
    if not isinstance(brokers_doc, list) or not all(isinstance(b, str) for b in brokers_doc):
        raise HttpError(f"/admin/v2/brokers/{cluster} did not return a list of brokers", code="http-bad-shape")
    brokers = tuple(sorted(brokers_doc))
    rows: list[LoadedTopic] = []
    for broker in brokers:
        url = broker if "://" in broker else f"{scheme}://{broker}"
        try:
            with client_for(url) as bc:
                doc = get_json(bc, "/admin/v2/broker-stats/topics")
            rows.extend(iter_loaded_topics(broker, doc))
        except HttpError as e:
            errors.append(e)
    return AdminScrape(
        loaded_topics=tuple(sorted(rows, key=lambda r: (r.topic, r.broker))),
        brokers=brokers,
        complete=not errors and bool(brokers),
        errors=tuple(errors),
    )
