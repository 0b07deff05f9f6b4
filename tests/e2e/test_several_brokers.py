"""Several brokers, one answering its topic listing with an empty body: seed -> two test brokers owning bundles
-> scrape -> audit. No topic of the silent broker's bundles is called unloaded; the answering broker's and the
unowned bundles are judged as before (the field report: one empty answer turned 75 loaded topics into
expired-retention-unloaded findings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import run_audit
from tests.zk.several_brokers import scrape_brokers, two_brokers

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]


def test_a_broker_without_an_answer_hides_none_of_its_topics_as_unloaded(
    spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    with two_brokers(zk, zk_hosts) as env:
        env.b.fail(endpoint="broker-stats", times=None, status=200, empty=True)
        manifest = scrape_brokers(zk_hosts, tmp_path / "snap", env.a.url)
        a_id, b_id = env.a.broker_id, env.b.broker_id
    assert not manifest.admin_scraped
    result = run_audit(tmp_path / "snap", tmp_path / "audit", AuditParams(now_ms=env.now), spark=spark)
    found = {f.topic: f for f in result.findings if f.detection == "expired-retention-unloaded"}
    assert env.b_topics and env.a_topics and env.free_topics
    assert not set(env.b_topics) & set(found)  # b's bundles: unknown, never "unloaded"
    for t in env.a_topics:  # a answered and has none of them loaded: judged, owned, named
        assert found[t].evidence["owned"] is True and found[t].evidence["owner_broker"] == a_id, t
    for t in env.free_topics:
        assert found[t].evidence["owned"] is False, t
    incomplete = {f.path: f for f in result.findings if f.detection == "scrape-incomplete"}
    assert "broker-stats-not-ready" in incomplete[f"broker-stats/topics/{b_id}"].evidence["error_code"]
    assert b_id in incomplete[f"broker-stats/topics/{b_id}"].reason
