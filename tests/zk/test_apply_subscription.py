"""delete-subscription through a broker's admin API (the test broker over the real ZooKeeper): seed -> scrape ->
plan --include inactive-subscription -> mark -> delete --admin-url -> restore, and the answers that are not
success: connected consumers (412), a server error (500) retried, a cursor that moved, no admin URL."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.admin_server import AdminServer
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from tests.zk.apply_steps import explain_broker_loads, unown_all
from tests.zk.repair_cluster import dump, write_audit
from tests.zk.test_apply import cli

pytestmark = pytest.mark.zk


def _planned(zk: KazooClient, zk_hosts: str, tmp: Path) -> tuple[dict[str, Any], Path, int]:
    now = int(time.time() * 1000) + 25 * 3_600_000
    res = seed_cluster(zk, None, SeedOptions(topics=12, seed=7, now_ms=now, persistent_ownership=True))
    unown_all(zk)  # no broker holds a bundle: the test broker may take them
    truth = res.ground_truth["expected"]["inactive-subscription"]
    assert truth
    manifest = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp / "snap"))
    findings = []
    for t in truth:
        ml = names.parse_topic(t["topic"])
        findings.append(
            Finding(
                detection="inactive-subscription",
                severity="warning",
                topic=t["topic"],
                subscription=t["subscription"],
                path=f"{names.ml_path(ml)}/{names.encode(t['subscription'])}",
                namespace=ml.namespace,
                evidence={"last_active_ms": now - 30 * 86_400_000, "backlog_bytes": 1000},
            )
        )
    snap = {"snapshot_id": manifest.snapshot_id, "path": str(tmp / "snap")}
    audit = write_audit(tmp / "audit", snap, findings)
    plan = tmp / "plan.json"
    code, _, err = cli("plan", str(audit), "--out", str(plan), "--include", "inactive-subscription")
    assert code == 0, err
    doc = json.loads(plan.read_text())
    assert sorted(a["path"] for a in doc["actions"]) == sorted(str(f.path) for f in findings)
    assert all(a["kind"] == "delete-subscription" and a["loads_topics"] for a in doc["actions"])
    return doc, plan, now


def _base(plan: Path, zk_hosts: str, *extra: str) -> list[str]:
    return ["apply", str(plan), "--zookeeper", zk_hosts, "--apply", "--yes", "--json", *extra]


def test_delete_subscription_round_trip(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    doc, plan, now = _planned(zk, zk_hosts, tmp_path)
    code, _, err = cli(*_base(plan, zk_hosts), "--phase", "mark")
    assert code == 0, err
    code, _, err = cli(*_base(plan, zk_hosts), "--phase", "delete", "--quarantine", "0")
    assert code == 3 and "admin" in err  # an admin-API action without an admin URL: refused, nothing done
    before = dump(zk)
    with AdminServer(zk_hosts, now_ms=lambda: now) as server:
        code, out, err = cli(
            *_base(plan, zk_hosts, "--admin-url", server.url), "--phase", "delete", "--quarantine", "0"
        )
        assert code == 0, err
        assert json.loads(out)["counts"] == {"committed": len(doc["actions"])}
        deletes = [c for c in server.calls if c.method == "DELETE"]
        assert len(deletes) == len(doc["actions"]) and all(c.status == 204 for c in deletes)
    after = dump(zk)
    cursors = frozenset(a["path"] for a in doc["actions"])
    assert cursors <= before.keys() and not cursors & after.keys()
    # full dumps: the cursors are gone, and every other difference is the broker's load of those topics
    mls = {a["path"].rsplit("/", 1)[0] for a in doc["actions"]}
    explain_broker_loads(before, after, mls, removed_cursors=cursors)
    code, out, err = cli("restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    restored = dump(zk)
    # restore puts back exactly the cursors and the cursor ledgers the broker deleted with them, with their
    # pre-delete bytes, and touches nothing else
    ids = {decode_cursor_info(before[c][0], c).info.cursors_ledger_id for c in cursors}
    cursor_ledgers = {ledger_path(i) for i in ids if i >= 0} & before.keys()
    assert restored.keys() - after.keys() == cursors | cursor_ledgers
    assert after.keys() - restored.keys() == set()
    assert {p for p in after if restored[p] != after[p]} == set()
    for p in cursors | cursor_ledgers:
        assert restored[p][0] == before[p][0]


def test_answers_that_are_not_success(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    doc, plan, now = _planned(zk, zk_hosts, tmp_path)
    assert len(doc["actions"]) >= 2
    busy, flaky = doc["actions"][0], doc["actions"][1]
    code, _, err = cli(*_base(plan, zk_hosts), "--phase", "mark")
    assert code == 0, err
    with AdminServer(zk_hosts, now_ms=lambda: now) as server:
        server.connect_consumer(busy["admin"]["topic"], busy["admin"]["subscription"])
        _fail_first(server, flaky)
        args = _base(plan, zk_hosts, "--admin-url", server.url)
        code, out, err = cli(*args, "--phase", "delete", "--quarantine", "0")
        assert code == 2, err  # a failed action (the 500)
        got = {o["id"]: o for o in json.loads(out)["actions"]}
        assert got[busy["id"]]["outcome"] == "skipped" and "412" in got[busy["id"]]["reason"]
        assert got[flaky["id"]]["outcome"] == "failed" and "500" in got[flaky["id"]]["reason"]
        assert zk.exists(busy["path"]) and zk.exists(flaky["path"])  # an error answer is never success
        code, out, err = cli(*args, "--phase", "delete", "--quarantine", "0")  # the failed one is retried
        got = {o["id"]: o for o in json.loads(out)["actions"]}
        assert got[flaky["id"]]["outcome"] == "committed" and not zk.exists(flaky["path"])
        assert got[busy["id"]]["outcome"] == "skipped"


def _fail_first(server: AdminServer, action: dict[str, Any]) -> None:
    from pulsar_ops.repair.admin_writer import topic_path

    path = f"{topic_path(action['admin']['topic'])}/subscription/{names.encode(action['admin']['subscription'])}"
    server.fail("DELETE", path, status=500, times=1)
