"""Two test brokers over one seeded ZooKeeper, each owning the bundles of some expired-retention topics."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient

from pulsar_ops.formats import names
from pulsar_ops.scrape.http import HttpSettings
from pulsar_ops.scrape.http_sources import http_sources
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.scrape.zk_brokers import broker_registration_reader
from pulsar_ops.snapshot.manifest import Manifest
from pulsar_ops.testing.admin_server import AdminServer
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

AHEAD_MS = 25 * 3_600_000
CLUSTER = "pulsar-east"  # the seeder's configuration store knows two clusters: name the one scraped


@dataclass
class Brokers:
    now: int
    a: AdminServer  # answers
    b: AdminServer  # the one a test makes fail
    a_topics: list[str]  # expired-retention topics (seeder's truth) in bundles broker a owns, none loaded
    b_topics: list[str]  # the same for broker b
    free_topics: list[str]  # in bundles nobody owns


@contextmanager
def two_brokers(zk: KazooClient, zk_hosts: str) -> Iterator[Brokers]:
    """Seed, start brokers a and b (registered under /loadbalance/brokers), and let each take the bundles of
    the seeder's expired-retention topics in turn (one bundle in three stays unowned). a loads one topic."""
    now = int(time.time() * 1000) + AHEAD_MS
    res = seed_cluster(zk, None, SeedOptions(topics=40, seed=3, now_ms=now))
    truth = [t["topic"] for t in res.ground_truth["expected"]["expired-retention-unloaded"]]
    if zk.exists("/loadbalance/brokers"):  # the seeder's brokers are not running: only the test brokers register
        for child in zk.get_children("/loadbalance/brokers"):
            zk.delete(f"/loadbalance/brokers/{child}")
    with (
        AdminServer(zk_hosts, now_ms=lambda: now, register=True) as a,
        AdminServer(zk_hosts, now_ms=lambda: now, register=True) as b,
    ):
        by_bundle: dict[tuple[str, str], list[str]] = {}
        for t in truth:
            ml = names.parse_topic(t)
            by_bundle.setdefault((ml.namespace, a.broker.bundle_of(ml)), []).append(t)
        assert len(by_bundle) >= 3, "the seeder plants expired-retention topics in at least three bundles"
        out = Brokers(now, a, b, [], [], [])
        for i, (_key, topics) in enumerate(sorted(by_bundle.items())):
            owner, into = ((a, out.a_topics), (b, out.b_topics), (None, out.free_topics))[i % 3]
            if owner is not None:
                with owner.broker.lock:
                    _bundle, other = owner.broker.acquire(names.parse_topic(topics[0]))
                assert other is None
            into.extend(topics)
        yield out


def scrape_brokers(
    zk_hosts: str, out: Path, admin_url: str, *, timeout_s: float = 2.0, wait_s: float = 0.3
) -> Manifest:
    extra = http_sources(
        admin_url=admin_url,
        bookie_url=None,
        cluster=CLUSTER,
        settings=HttpSettings(timeout_s=timeout_s, connect_timeout_s=timeout_s, retries=1),
        broker_registrations=broker_registration_reader(zk_hosts),
        broker_stats_wait_s=wait_s,
        broker_stats_poll_s=0.05,
    )
    return scrape(ScrapeConfig(zookeeper=zk_hosts, out=out, extra=extra))
