"""seed -> scrape -> Spark audit -> plan -> apply -> re-audit -> restore, against a real ZooKeeper.

The audit must report exactly the seeder's ground truth (every detection, every attribute the ground truth
pins), on clusters with separate configuration stores, corrupt znodes and unreadable subtrees. The ground-truth
check with the partitioned plan and the separate-configuration-store check read one seeded and audited cluster
(module fixture).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import AuditResult, run_audit
from pulsar_ops.cli.main import app
from pulsar_ops.findings import STORAGE_DETECTIONS, Finding
from pulsar_ops.repair.executor import APPLY_NOW_ENV
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import DEFAULT_DEFECTS, SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from pulsar_ops.testing.truth import compare, summary_lines
from pulsar_ops.testing.zk_acl import lock_subtree
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]

AHEAD_MS = 25 * 3_600_000


def _audit(spark: Any, snap: Path, out: Path, now_ms: int) -> list[Finding]:
    result = run_audit(snap, out, AuditParams(now_ms=now_ms), spark=spark)
    return list(result.findings)


def _assert_matches(findings: list[Finding], truth: dict[str, Any]) -> None:
    diffs = compare(findings, truth)
    bad = {k: d for k, d in diffs.items() if not d.ok}
    assert not bad, (
        "\n".join(summary_lines(diffs))
        + "\n"
        + "\n".join(
            f"{k}: missing={d.missing[:5]} unexpected={d.unexpected[:5]} mismatched={d.mismatched[:3]}"
            for k, d in bad.items()
        )
    )


def _cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def _assert_ground_truth(spark: Any, result: AuditResult, truth: dict[str, Any], one_partition: bool) -> None:
    """Exactly the seeder's ground truth, read as ``one_partition`` says, with the cases the issues name."""
    source = spark.table("src_znodes")._jdf.queryExecution().optimizedPlan().toString()
    assert ("Repartition 1, false" in source) is one_partition  # coalesce(1): no shuffle
    findings = list(result.findings)
    _assert_matches(findings, truth)
    # cursors whose ranges live in cursor ledgers: one coverage count per namespace, not a finding each
    cov = result.audit["coverage"]["ack-ranges-in-cursor-ledgers"]
    want = truth["coverage"]["ack-ranges-in-cursor-ledgers"]
    assert {r["namespace"]: r["cursors"] for r in cov["by_namespace"]} == want
    assert cov["cursors"] > 0 and not any(f.evidence.get("range_count") == "unknown" for f in findings)
    # the cases the issues name explicitly are really in there
    orphans = {f.ledger_id: f for f in findings if f.detection == "orphan-ledger"}
    assert any(i > 2**31 for i in orphans)
    assert any(f.plannable for f in orphans.values())
    assert any("min-age" in f.reason or "young" in f.reason for f in orphans.values() if not f.plannable)
    assert any("watermark" in f.reason for f in orphans.values() if not f.plannable)
    assert any(f.severity == "info" and f.evidence.get("kind") == "unowned" for f in orphans.values())


@dataclass(frozen=True)
class ConfigStoreAudit:
    truth: dict[str, Any]
    manifest: Any
    result: AuditResult


@pytest.fixture(scope="module")
def config_store_audit(
    spark: Any, zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> ConfigStoreAudit:
    """One seeded cluster, scraped and audited once, for the two tests below: 60 topics, seed 7, a separate
    configuration store, the corrupt defect (an undecodable znode) on top of the default ones, and every
    managed-ledger and cursor info as a broker configured with LZ4 writes them (values over 64 bytes compressed, the
    rest plain), some with a field this reader does not know; audited with the partitioned plan a large snapshot
    gets (the one-partition plan every small snapshot gets is checked the same way on
    test_repair_round_trip_through_the_audit's first audit)."""
    tmp = tmp_path_factory.mktemp("config-store")
    local_root, config_root = f"/local-{uuid.uuid4().hex[:8]}", f"/config-{uuid.uuid4().hex[:8]}"
    clients = []
    for root in (local_root, config_root):
        c = KazooClient(hosts=zk_server.hosts)
        c.start(timeout=30)
        c.ensure_path(root)
        c.stop()
        c.close()
        c = KazooClient(hosts=zk_server.hosts + root)
        c.start(timeout=30)
        clients.append(c)
    try:
        now = int(time.time() * 1000) + AHEAD_MS
        defects = frozenset(DEFAULT_DEFECTS | {"corrupt"})
        opts = SeedOptions(
            topics=60, seed=7, now_ms=now, defects=defects, metadata_compression="LZ4", compression_threshold=64
        )
        res = seed_cluster(clients[0], clients[1], opts)
        manifest = scrape(
            ScrapeConfig(
                zookeeper=zk_server.hosts + local_root,
                config_zookeeper=zk_server.hosts + config_root,
                out=tmp / "snap",
            )
        )
    finally:  # the registrations are ephemeral: the clients stay open until the snapshot is taken
        for c in clients:
            c.stop()
            c.close()
    params = AuditParams(now_ms=now)
    result = run_audit(tmp / "snap", tmp / "audit", params, spark=spark, one_partition=False)
    return ConfigStoreAudit(res.ground_truth, manifest, result)


def test_audit_reports_exactly_the_ground_truth(spark: Any, config_store_audit: ConfigStoreAudit) -> None:
    """With the partitioned plan a large snapshot gets, every detection exactly the ground truth, with the cases
    the issues name."""
    _assert_ground_truth(spark, config_store_audit.result, config_store_audit.truth, one_partition=False)


def test_separate_config_store_and_corrupt_znodes(config_store_audit: ConfigStoreAudit) -> None:
    truth, manifest = config_store_audit.truth, config_store_audit.manifest
    assert truth["expected"]["undecodable-znode"], "the corrupt defect plants an undecodable znode"
    assert not truth["expected"]["scrape-incomplete"]
    assert not manifest.incomplete_scopes and manifest.errors_count
    _assert_matches(list(config_store_audit.result.findings), truth)


def test_unreadable_namespace_blocks_planning_of_its_orphans_and_says_why(
    spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    now = int(time.time() * 1000) + AHEAD_MS
    res = seed_cluster(zk, None, SeedOptions(topics=40, seed=2, now_ms=now, persistent_ownership=True))
    target = next(
        o
        for o in res.ground_truth["expected"]["orphan-ledger"]
        if o["plannable"] and o["kind"] == "data" and o["owner_exists"]
    )
    namespace = target["owner"].split("/persistent/")[0]
    scope = f"/managed-ledgers/{namespace}"
    lock_subtree(zk_hosts, scope)
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    findings = _audit(spark, tmp_path / "snap", tmp_path / "audit", now)

    incomplete = [f for f in findings if f.detection == "scrape-incomplete"]
    assert [f.path for f in incomplete] == [scope]
    blocked = next(f for f in findings if f.detection == "orphan-ledger" and f.ledger_id == target["ledger_id"])
    assert not blocked.plannable
    assert scope in blocked.reason and scope in blocked.evidence["blocked_scopes"]
    # blocking is scoped: findings that do not depend on the unreadable subtree are still plannable
    assert any(f.plannable for f in findings if f.detection == "znode-leak")
    assert all(not f.plannable for f in findings if f.detection == "orphan-ledger" and f.namespace == namespace)
    code, _, err = _cli("plan", str(tmp_path / "audit"), "--out", str(tmp_path / "plan.json"))
    assert code == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert target["ledger_id"] not in {a.get("ledger_id") for a in plan["actions"]}


def _dump(zk: KazooClient, path: str = "/") -> dict[str, bytes]:
    out: dict[str, bytes] = {}

    def walk(p: str) -> None:
        data, stat = zk.get(p)
        if not stat.ephemeralOwner:
            out[p] = data
        for child in zk.get_children(p):
            walk(f"{p.rstrip('/')}/{child}")

    walk(path)
    return out


def test_repair_round_trip_through_the_audit(
    spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = int(time.time() * 1000) + AHEAD_MS
    monkeypatch.setenv(APPLY_NOW_ENV, str(now))  # apply's rules age ledgers by the seeded clock, as the audit does
    res = seed_cluster(zk, None, SeedOptions(topics=40, seed=4, now_ms=now))
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    # the first audit as every small snapshot is audited (each table one partition, no shuffle where the plan
    # keeps it): exactly the ground truth
    first = run_audit(tmp_path / "snap", tmp_path / "audit", AuditParams(now_ms=now), spark=spark, one_partition=True)
    _assert_ground_truth(spark, first, res.ground_truth, one_partition=True)
    before = list(first.findings)
    planned = {f.key() for f in before if f.plannable}
    assert {f.detection for f in before if f.plannable} == {"orphan-ledger", "znode-leak"}
    original = _dump(zk)

    plan = tmp_path / "plan.json"
    assert _cli("plan", str(tmp_path / "audit"), "--out", str(plan))[0] == 0
    actions = json.loads(plan.read_text())["actions"]
    assert len(actions) == len(planned)
    base = ["apply", str(plan), "--zookeeper", zk_hosts, "--apply", "--yes"]
    code, _, err = _cli(*base, "--phase", "mark")
    assert code == 0, err
    assert _dump(zk) == original  # mark changes nothing
    code, _, err = _cli(*base, "--phase", "delete", "--quarantine", "0")
    assert code == 0, err

    scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap2"))
    after = _audit(spark, tmp_path / "snap2", tmp_path / "audit2", now)
    after_plannable = {f.key(): f for f in after if f.plannable}
    assert not set(after_plannable) & planned  # everything planned is gone
    # deleting a leaked schema locator releases its schema ledgers: they are the only new plannable findings
    released = {
        int(i) for f in before if f.plannable and f.detection == "znode-leak" for i in f.evidence.get("ledgers") or []
    }
    assert released, "the seeded schema leak references schema ledgers"
    assert {(f.detection, f.ledger_id) for f in after_plannable.values()} == {("orphan-ledger", i) for i in released}
    # what was not planned is still reported, unchanged
    kept = {f.key() for f in before if not f.plannable and f.detection != "orphan-ledger"}
    assert kept <= {f.key() for f in after}

    code, _, err = _cli("restore", f"{plan}.backup", "--zookeeper", zk_hosts, "--apply", "--yes")
    assert code == 0, err
    assert _dump(zk) == original
    assert res.ground_truth["expected"]["orphan-ledger"]


def test_demo_runs_the_whole_story_and_matches_ground_truth(spark: Any, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["demo", "--topics", "30", "--apply", "--out", str(tmp_path / "demo")])
    assert r.exit_code == 0, r.output
    assert "every detection matches" in r.stderr
    assert re.search(r"after apply\s+0 of [1-9]\d* planned findings remain", r.stderr), r.stderr[-2000:]
    for name in ("snapshot/manifest.json", "audit/findings.json", "plan.json", "report.html", "pulsar_ops.prom"):
        assert (tmp_path / "demo" / name).exists(), name
    # the demo scanned every seeded bookie and its audit shows the storage findings (matched above)
    doc = json.loads((tmp_path / "demo" / "audit" / "findings.json").read_text())
    assert {f["detection"] for f in doc["findings"]} >= set(STORAGE_DETECTIONS)
    assert len(doc["audit"]["bookie_scans"]) == 6
    assert "unreclaimed-ledger-data" in (tmp_path / "demo" / "report.md").read_text()
    # the capacity view of every scanned bookie, and the plan's impact on their measured layouts
    storage = doc["audit"]["storage"]
    assert len(storage["bookies"]) == 6 and storage["top_n"] == 10
    for b in storage["bookies"]:
        assert sum(b[f"{c}_bytes"] for c in ("live", "orphan", "unreclaimed", "unattributed")) == b["data_bytes"] > 0
    assert "## Bookie capacity" in (tmp_path / "demo" / "report.md").read_text()
    assert 'pulsar_ops_bookie_data_bytes{bookie="' in (tmp_path / "demo" / "pulsar_ops.prom").read_text()
    plan = json.loads((tmp_path / "demo" / "plan.json").read_text())
    sources = json.dumps(plan["impact"])
    assert '"source": "measured"' in sources, sources[:2000]  # plan --bookie-scan: measured layouts
