"""Seeded clusters written the way Pulsar writes them (initialize-cluster-metadata, topic policies in
``__change_events``, transaction stores, geo-replication cursors), under the modular and the extensible load
manager, scraped with and without ``--admin-url``: ``plan`` (default, and ``--include expired-retention-unloaded
--offline-trim --include inactive-subscription``) proposes nothing that touches Pulsar's own metadata, never
trims a topic whose topic-level retention is unknown, and no topic a broker has open is an unloaded finding; a
namespace without ``__change_events`` still gets exactly the broker's first trim (modular load manager; under the
extensible one no offline trim is planned at all: ownership is not in ZooKeeper for apply to re-check).

One seeded cluster per load manager (module fixture), scraped and audited once without and once with a broker
answering the admin API: four audits for the whole module.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import run_audit
from pulsar_ops.cli.main import app
from pulsar_ops.errors import DecodeError
from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing import model_upstream as up
from pulsar_ops.testing.admin_server import AdminServer
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkconn import close, connect, connected
from tests.zk.several_brokers import scrape_brokers

# the module fixtures audit four snapshots before the first test runs: its budget covers them on a busy machine
pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1800)]

AHEAD_MS = 25 * 3_600_000
FULL = ["--include", "expired-retention-unloaded", "--offline-trim", "--include", "inactive-subscription"]
SYSTEM_CURSORS = ("pulsar.dedup", "__compaction", "__pending_ack_state", "transaction.subscription")


@dataclass
class Audited:
    load_manager: str
    admin: bool
    audit: Path
    findings: list[Finding]
    truth: dict[str, Any]
    loaded: list[str]  # topics the test broker had open when scraped
    sus: str = "system-topic"  # where the extensible load manager keeps ownership (SeedOptions.service_unit_state)


def _seed(
    zk_server: EmbeddedZooKeeper, load_manager: str, now: int, sus: str = "system-topic"
) -> tuple[str, KazooClient, dict[str, Any]]:
    chroot = f"/real-{load_manager}-{uuid.uuid4().hex[:8]}"
    with connected(zk_server.hosts) as c:
        c.ensure_path(chroot)
    hosts = zk_server.hosts + chroot
    client = connect(hosts)  # stays open: the registrations and ownership znodes are ephemeral, as on a live cluster
    opts = SeedOptions(topics=30, seed=11, now_ms=now, load_manager=load_manager, service_unit_state=sus)
    res = seed_cluster(client, None, opts)
    return hosts, client, res.ground_truth


def _audit(spark: Any, snap: Path, out: Path, now: int) -> list[Finding]:
    return list(run_audit(snap, out, AuditParams(now_ms=now), spark=spark).findings)


def _audited(
    spark: Any, zk_server: EmbeddedZooKeeper, tmp: Path, load_manager: str, sus: str = "system-topic"
) -> Iterator[list[Audited]]:
    now = int(time.time() * 1000) + AHEAD_MS
    hosts, client, truth = _seed(zk_server, load_manager, now, sus)
    try:
        scrape(ScrapeConfig(zookeeper=hosts, out=tmp / "snap"))
        findings = _audit(spark, tmp / "snap", tmp / "audit", now)
        out = [Audited(load_manager, False, tmp / "audit", findings, truth, [], sus)]
        # the seeded brokers are not running: only the test broker registers, and it opens one expired topic
        for child in client.get_children("/loadbalance/brokers"):
            client.delete(f"/loadbalance/brokers/{child}")
        with AdminServer(hosts, now_ms=lambda: now, register=True, load_manager=load_manager) as broker:
            pool = truth["expected"]["expired-retention-unloaded"] or truth["ownership_unknown"]
            opened = next(r["topic"] for r in pool if not r.get("retention_unknown"))
            with broker.broker.lock:
                broker.broker.load(names.parse_topic(opened), "/")
            loaded = broker.loaded_topics
            scrape_brokers(hosts, tmp / "snap-admin", broker.url)
        audit = tmp / "audit-admin"
        findings = _audit(spark, tmp / "snap-admin", audit, now)
        out.append(Audited(load_manager, True, audit, findings, truth, loaded, sus))
        yield out
    finally:
        close(client)


@pytest.fixture(scope="module")
def modular(spark: Any, zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from _audited(spark, zk_server, tmp_path_factory.mktemp("modular"), "modular")


@pytest.fixture(scope="module")
def extensible(spark: Any, zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from _audited(spark, zk_server, tmp_path_factory.mktemp("extensible"), "extensible")


@pytest.fixture(scope="module")
def extensible_sus(spark: Any, zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The extensible load manager with its metadata-store table view: ownership in /service_unit_state."""
    yield from _audited(spark, zk_server, tmp_path_factory.mktemp("extensible-sus"), "extensible", "metadata-store")


@pytest.fixture(params=["modular", "extensible", "extensible_sus"])
def clusters(request: pytest.FixtureRequest) -> list[Audited]:
    return list(request.getfixturevalue(request.param))


# ---------------------------------------------------------------------- what Pulsar owns (from the ground truth
# and upstream's names, independently of the code under test)


def _owned_topic(topic: str, truth: dict[str, Any]) -> bool:
    listed = {t for e in truth["pulsar_owned"] for t in e.get("topics", ())}
    ml = names.parse_topic(topic)
    local = ml.local_name
    return (
        topic in listed
        or ml.namespace == up.SYSTEM_NAMESPACE
        or local.startswith("__")  # SystemTopicNames: __change_events, __transaction_buffer_snapshot, ...
        or local.endswith("__transaction_pending_ack")  # MLPendingAckStore
    )


def _owned_path(path: str, truth: dict[str, Any]) -> bool:
    roots = {p for e in truth["pulsar_owned"] for p in e.get("paths", ())}
    roots |= {"/loadbalance/brokers", up.ELM_LEADER_PATH, up.SERVICE_UNIT_STATE_ROOT, "/admin/clusters"}
    if any(path == r or path.startswith(r + "/") for r in roots):
        return True
    if path.startswith("/managed-ledgers/"):
        try:
            ml, _cursor = names.split_ml_path(path)
        except DecodeError:
            return False  # a namespace or tenant directory
        return _owned_topic(ml.topic, truth)
    return False


def _touches_pulsar(action: dict[str, Any], truth: dict[str, Any]) -> list[str]:
    why = [z["path"] for z in action["preconditions"]["znodes"] if _owned_path(z["path"], truth)]
    owner = action.get("owner")
    if owner and "://" in owner and _owned_topic(owner, truth):
        why.append(f"owner {owner}")
    elif owner and action.get("ledger_kind") in ("data", "cursor", "compacted", "bucket"):
        try:  # a ledger names its managed ledger (LedgerMetadataUtils)
            if _owned_topic(names.parse_ml_name(owner, owner).topic, truth):
                why.append(f"ledger of {owner}")
        except DecodeError:
            pass
    sub = (action.get("admin") or {}).get("subscription")
    if sub and (sub in SYSTEM_CURSORS or sub.startswith("pulsar.repl.")):
        why.append(f"subscription {sub}")
    return why


def _plan(audited: Audited, tmp: Path, *extra: str) -> list[dict[str, Any]]:
    out = tmp / f"plan-{audited.load_manager}-{audited.admin}-{len(extra)}.json"
    r = CliRunner().invoke(app, ["plan", str(audited.audit), "--out", str(out), *extra])
    assert r.exit_code == 0, r.output
    actions: list[dict[str, Any]] = json.loads(out.read_text())["actions"]
    return actions


def _ns(topic: str) -> str:
    return names.parse_topic(topic).namespace


def _fixture_namespaces(entries: list[dict[str, Any]]) -> set[str]:
    """The seeder's unowned namespaces. With ``--admin-url`` the test broker is the cluster's only broker: the
    topics of the namespaces the seeded (stopped) brokers owned are unloaded too, and judged so; the ground truth
    (which counts them loaded by their owners) is compared on the unowned namespaces only."""
    return {_ns(e["topic"]) for e in entries}


# ---------------------------------------------------------------------- the checks


@pytest.mark.parametrize("extra", [[], FULL], ids=["default", "full"])
def test_plan_touches_nothing_pulsar_owns_and_never_trims_an_unknown_retention(
    clusters: list[Audited], tmp_path: Path, extra: list[str]
) -> None:
    for audited in clusters:
        actions = _plan(audited, tmp_path, *extra)
        assert actions, (audited.load_manager, audited.admin)  # the planted leaks and orphans are still planned
        bad = {a["id"]: _touches_pulsar(a, audited.truth) for a in actions}
        assert not {k: v for k, v in bad.items() if v}, (audited.load_manager, audited.admin)
        unknown = {u["topic"] for u in audited.truth["retention_unknown"]}
        assert unknown  # the seeded topic-policies namespace
        trimmed = {a["owner"] for a in actions if a["kind"] == "trim-unloaded"}
        assert not trimmed & unknown
        assert not {a["owner"] for a in actions if a["kind"] in ("trim-unloaded", "load-topic")} & set(audited.loaded)


def test_no_unloaded_finding_for_an_open_or_pulsar_owned_topic(clusters: list[Audited]) -> None:
    for audited in clusters:
        unloaded = {f.topic for f in audited.findings if f.detection == "expired-retention-unloaded"}
        assert not unloaded & set(audited.loaded), (audited.load_manager, audited.admin)
        assert not {t for t in unloaded if t and _owned_topic(t, audited.truth)}, (audited.load_manager, audited.admin)
        assert not [
            f.path for f in audited.findings if f.detection in ("znode-leak", "orphan-ledger") and f.path and
            _owned_path(f.path, audited.truth)
        ]  # fmt: skip
        if audited.load_manager == "extensible" and audited.sus == "system-topic" and not audited.admin:
            # ownership lives in the service-unit-state topic: no topic can be called unloaded from ZooKeeper
            assert unloaded == set()
        else:
            want = audited.truth["expected"]["expired-retention-unloaded"] or audited.truth["ownership_unknown"]
            scope = _fixture_namespaces(want)
            assert {t for t in unloaded if _ns(t) in scope} == {r["topic"] for r in want} - set(audited.loaded)


def test_offline_trim_still_trims_namespaces_without_change_events(clusters: list[Audited], tmp_path: Path) -> None:
    """Exactly the broker's first-trim set (past retention, minus the re-stamped last ledger, the current one kept)
    for every expired topic of a namespace without ``__change_events`` that no broker has open."""
    for audited in clusters:
        actions = _plan(audited, tmp_path, *FULL)
        if audited.load_manager == "extensible":
            # ownership outside /namespace: apply could not re-check that no broker took the bundle, so the rule
            # refuses every offline rewrite (repair/rules.py trim_rule, ownership_unknown); loads stay possible
            assert not [a for a in actions if a["kind"] == "trim-unloaded"], audited.admin
            continue
        pool = audited.truth["expected"]["expired-retention-unloaded"] or audited.truth["ownership_unknown"]
        scope = _fixture_namespaces(pool)
        got = {a["owner"]: sorted(r["ledger_id"] for r in a["rewrite"]["removed"]) for a in actions
               if a["kind"] == "trim-unloaded" and _ns(a["owner"]) in scope}  # fmt: skip
        want: dict[str, list[int]] = {}
        # a topic of a bundle the test broker owns is left to that broker (planner: topic-loaded)
        owned = {f.topic for f in audited.findings if f.evidence.get("owned") is True}
        for r in pool:
            if r.get("retention_unknown") or r["topic"] in audited.loaded or r["topic"] in owned:
                continue
            first = [i for i in r["ledger_ids"] if i not in r["after_retention_ledger_ids"]]
            if first:
                want[r["topic"]] = sorted(first)
        assert want and got
        # the rewrite keeps the current ledger when the first trim would take every listed ledger
        assert set(got) <= set(want), (audited.load_manager, audited.admin)
        for topic, ids in got.items():
            assert set(ids) <= set(want[topic]) and len(ids) >= len(want[topic]) - 1, topic
        assert set(want) - set(got) <= {t for t, ids in want.items() if len(ids) == 1}


def test_service_unit_state_is_read_as_ownership_only_when_it_is_the_truth(extensible_sus: list[Audited]) -> None:
    """The metadata-store table view (ServiceUnitStateMetadataStoreTableViewImpl): without ``--admin-url`` the audit
    reads ``/service_unit_state`` as bundle ownership (Owned bundles owned, Free or absent ones unowned), so exactly
    the ground truth's expired topics are unloaded findings, each saying where ownership came from. With the test
    broker answering, it lists a topic loaded in a bundle no value says it owns: the table is contradicted, never
    read as the truth (the listings decide)."""
    offline, online = extensible_sus
    own = json.loads((offline.audit / "findings.json").read_text())["audit"]["ownership"]
    assert own["service_unit_state"]["known"] is True and own["unknown_scope"] is False
    assert own["service_unit_state"]["bundles"]["owned"] > 0 and own["service_unit_state"]["bundles"]["unowned"] > 0
    unloaded = [f for f in offline.findings if f.detection == "expired-retention-unloaded"]
    assert unloaded and {f.evidence["ownership_source"] for f in unloaded} == {"service-unit-state"}
    assert all("bundle not Owned in /service_unit_state" in f.reason for f in unloaded)
    assert {f.topic for f in unloaded} == {r["topic"] for r in offline.truth["expected"]["expired-retention-unloaded"]}
    own = json.loads((online.audit / "findings.json").read_text())["audit"]["ownership"]
    assert own["service_unit_state"]["known"] is False
    assert "does not own" in own["service_unit_state"]["why_not"]
