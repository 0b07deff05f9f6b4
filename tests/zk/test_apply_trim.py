"""trim-unloaded on a seeded cluster with the real scraper: seed -> scrape -> plan --offline-trim (findings from
the seeder's ground truth, standing in for the Spark audit) -> mark -> delete -> restore, with full before/after
dumps, and a cursor that moved since the snapshot."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.repair import executor
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from tests.zk.apply_steps import mark_then_delete
from tests.zk.repair_cluster import TEST_AUDIT_PARAMS, dump, write_audit
from tests.zk.test_apply import cli

pytestmark = pytest.mark.zk


def seeded_retention(zk: KazooClient, zk_hosts: str, tmp: Path) -> tuple[Path, list[Finding], int]:
    """A seeded cluster, its snapshot and an audit directory holding its expired-retention-unloaded findings
    (from the seeder's ground truth): (audit dir, findings, the seeded clock)."""
    now = int(time.time() * 1000) + 25 * 3_600_000
    res = seed_cluster(zk, None, SeedOptions(topics=12, seed=3, now_ms=now, persistent_ownership=True))
    truth = res.ground_truth["expected"]["expired-retention-unloaded"]
    manifest = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp / "snap"))
    findings = []
    for t in truth:
        ml = names.parse_topic(t["topic"])
        first = sorted(set(t["ledger_ids"]) - set(t["after_retention_ledger_ids"]))
        findings.append(
            Finding(
                detection="expired-retention-unloaded",
                severity="warning",
                topic=t["topic"],
                path=names.ml_path(ml),
                namespace=ml.namespace,
                reason="topic not loaded (bundle unowned)",
                evidence={
                    "ledger_ids": t["ledger_ids"],
                    "first_trim_ledger_ids": first,
                    "after_retention_ledger_ids": t["after_retention_ledger_ids"],
                    "owned": False,
                    # the seeder's namespace with __change_events: a topic policy may retain these (issue 33)
                    **({"retention_source": "topic-unknown"} if t.get("retention_unknown") else {}),
                },
            )
        )
    snap = {"snapshot_id": manifest.snapshot_id, "path": str(tmp / "snap")}
    params = {**TEST_AUDIT_PARAMS, "now_ms": now}  # the seeder's clock: its ground truth is computed at `now`
    return write_audit(tmp / "audit", snap, findings, params), findings, now


def _planned(
    zk: KazooClient, zk_hosts: str, tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], Path, list[Finding]]:
    audit, findings, now = seeded_retention(zk, zk_hosts, tmp)
    monkeypatch.setattr(executor, "rules_now_ms", lambda: now)  # apply's rules age the ledgers by the seeder's clock
    plan = tmp / "plan.json"
    code, _, err = cli("plan", str(audit), "--out", str(plan), "--offline-trim")
    assert code == 0, err
    doc = json.loads(plan.read_text())
    want = {}
    # the topics whose topic-level retention is unknown (their namespace keeps topic policies in __change_events)
    # are refused by the trim rule from the snapshot's facts, never trimmed offline
    unknown = {f.path for f in findings if f.evidence.get("retention_source") == "topic-unknown"}
    assert unknown, "the seeder plants topics whose topic-level retention a metadata-only audit cannot see"
    for f in findings:  # an offline trim never empties a list: a topic whose every ledger expired keeps its last
        assert f.path is not None
        if f.path in unknown:
            continue
        listed = list(decode_managed_ledger_info(zk.get(f.path)[0], f.path).info.ledger_ids)
        first = list(f.evidence["first_trim_ledger_ids"])
        if set(listed) <= set(first):
            first.remove(listed[-1])
        if first:
            want[f.path] = first
    assert want, "the seeder plants topics the first trim after a load would shrink"
    assert {a["path"]: [r["ledger_id"] for r in a["rewrite"]["removed"]] for a in doc["actions"]} == want
    assert {a["kind"] for a in doc["actions"]} == {"trim-unloaded"}
    codes = {n["path"]: n["reason_code"] for n in doc["not_planned"]}
    assert codes == {
        f.path: "refused-by-rule" if f.path in unknown else "nothing-at-first-trim"
        for f in findings
        if f.path not in want
    }
    return doc, plan, findings


def test_trim_unloaded_round_trip(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, plan, _ = _planned(zk, zk_hosts, tmp_path, monkeypatch)
    assert doc["summary"]["bytes"] > 0  # what the trim frees on the bookies
    before, after = mark_then_delete(zk, plan, zk_hosts)
    trimmed = {ledger_path(r["ledger_id"]) for a in doc["actions"] for r in a["rewrite"]["removed"]}
    assert set(before) - set(after) == trimmed and not set(after) - set(before)
    assert {p for p in after if after[p][0] != before[p][0]} == {a["path"] for a in doc["actions"]}
    for a in doc["actions"]:
        old = decode_managed_ledger_info(before[a["path"]][0], a["path"])
        new = decode_managed_ledger_info(after[a["path"]][0], a["path"])
        gone = {r["ledger_id"] for r in a["rewrite"]["removed"]}
        assert new.info.ledger_ids == tuple(i for i in old.info.ledger_ids if i not in gone)
        assert new.compression == old.compression
    for path, (data, *_rest) in after.items():  # no dangling ledger anywhere: every listed, closed ledger exists
        if path in {a["path"] for a in doc["actions"]}:
            listed = decode_managed_ledger_info(data, path).info.ledgers
            assert all(ledger_path(li.ledger_id) in after for li in listed if li.entries)

    code, _out, err = cli("restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    restored = dump(zk)
    assert set(restored) == set(before)
    assert all(restored[p][0] == before[p][0] and restored[p][3] == before[p][3] for p in before)


def test_a_cursor_that_moved_stops_the_trim(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, plan, _ = _planned(zk, zk_hosts, tmp_path, monkeypatch)
    a = next(x for x in doc["actions"] if x["preconditions"]["references"])
    base = ["apply", str(plan), "--zookeeper", zk_hosts, "--apply", "--yes", "--json"]
    code, _, err = cli(*base, "--phase", "mark")
    assert code == 0, err
    cursor = a["preconditions"]["references"][0]["path"]
    zk.set(cursor, zk.get(cursor)[0])  # a consumer acknowledged: the topic was loaded somewhere
    before = dump(zk)
    code, out, err = cli(*base, "--phase", "delete", "--quarantine", "0")
    assert code == 1, err
    outcome = next(o for o in json.loads(out)["actions"] if o["id"] == a["id"])
    assert outcome["outcome"] == "skipped" and "changed" in outcome["reason"] and cursor in outcome["reason"]
    after = dump(zk)
    for z in a["preconditions"]["znodes"]:
        assert after[z["path"]] == before[z["path"]]
