"""drop-missing-ledger on a seeded cluster with the real scraper: seed -> scrape -> plan --include dangling-ledger
(findings from the seeder's ground truth, standing in for the Spark audit) -> mark -> delete -> restore, with full
before/after dumps, and the preconditions that make an action skip."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from tests.zk.apply_steps import mark_then_delete, unown_all
from tests.zk.repair_cluster import dump, write_audit
from tests.zk.test_apply import cli

pytestmark = pytest.mark.zk


def _planned(zk: KazooClient, zk_hosts: str, tmp: Path, *, compression: str | None) -> tuple[dict[str, Any], Path]:
    now = int(time.time() * 1000) + 25 * 3_600_000
    opts = SeedOptions(topics=12, seed=5, now_ms=now, persistent_ownership=True, metadata_compression=compression)
    res = seed_cluster(zk, None, opts)
    unown_all(zk)
    dangling = res.ground_truth["expected"]["dangling-ledger"]
    assert {d["ref"] for d in dangling} >= {"data", "cursor", "schema"}
    manifest = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp / "snap"))
    findings = [
        Finding(
            detection="dangling-ledger",
            severity="critical",
            ledger_id=d["ledger_id"],
            topic=d["topic"],
            subscription=d["subscription"],
            path=d["path"],
            plannable=False,
            reason=f"referenced {d['ref']} ledger has no BookKeeper metadata",
            evidence={"ref": d["ref"], "blocked_scopes": []},
        )
        for d in dangling
    ]
    snap = {"snapshot_id": manifest.snapshot_id, "path": str(tmp / "snap")}
    audit = write_audit(tmp / "audit", snap, findings)
    plan = tmp / "plan.json"
    code, _, err = cli("plan", str(audit), "--out", str(plan))
    assert code == 0, err
    doc = json.loads(plan.read_text())
    assert doc["actions"] == []  # opt-in: nothing without --include
    assert {n["reason_code"] for n in doc["not_planned"]} == {"no-repair-action"}
    code, _, err = cli("plan", str(audit), "--out", str(plan), "--include", "dangling-ledger")
    assert code == 0, err
    doc = json.loads(plan.read_text())
    want = sorted(d["ledger_id"] for d in dangling if d["ref"] == "data")
    got = sorted(r["ledger_id"] for a in doc["actions"] for r in a["rewrite"]["removed"])
    assert got == want
    assert {a["kind"] for a in doc["actions"]} == {"drop-missing-ledger"}
    not_planned = {n["ledger_id"]: n["reason_code"] for n in doc["not_planned"]}
    assert not_planned == {d["ledger_id"]: "ref-not-droppable" for d in dangling if d["ref"] != "data"}
    for a in doc["actions"]:
        for r in a["rewrite"]["removed"]:  # the data loss the plan acknowledges
            assert r["entries"] > 0 and r["bytes"] > 0
            assert r["message_ids"] == [f"{r['ledger_id']}:0", f"{r['ledger_id']}:{r['entries'] - 1}"]
        assert a["impact"]["acknowledged_loss"]["ledgers"] == len(a["rewrite"]["removed"])
    return doc, plan


@pytest.mark.parametrize("compression", [None, "LZ4"])
def test_drop_missing_ledger_round_trip(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, compression: str | None
) -> None:
    doc, plan = _planned(zk, zk_hosts, tmp_path, compression=compression)
    before, after = mark_then_delete(zk, plan, zk_hosts)
    changed = {a["path"] for a in doc["actions"]}
    assert set(after) == set(before)  # nothing deleted, nothing created
    assert {p for p in before if after[p][0] != before[p][0]} == changed
    for a in doc["actions"]:
        old = decode_managed_ledger_info(before[a["path"]][0], a["path"])
        new = decode_managed_ledger_info(after[a["path"]][0], a["path"])
        dropped = [r["ledger_id"] for r in a["rewrite"]["removed"]]
        assert new.info.ledger_ids == tuple(i for i in old.info.ledger_ids if i not in dropped)
        assert new.compression == old.compression and new.info.properties == old.info.properties
        assert after[a["path"]][1] == before[a["path"]][1] + 1  # one compare-and-set write
        for lid in new.info.ledger_ids[:-1]:  # no dangling ledger left in the list (the open one may be absent)
            assert ledger_path(lid) in after

    code, out, err = cli("restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    assert {z["outcome"] for z in json.loads(out)["znodes"]} == {"restored"}
    restored = dump(zk)
    assert set(restored) == set(before)
    assert all(restored[p][0] == before[p][0] and restored[p][3] == before[p][3] for p in before)
    code, out, err = cli("restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    assert {z["outcome"] for z in json.loads(out)["znodes"]} == {"already-present"}


def test_changed_preconditions_skip_and_say_why(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    doc, plan = _planned(zk, zk_hosts, tmp_path, compression=None)
    a = doc["actions"][0]
    lid = a["rewrite"]["removed"][0]["ledger_id"]
    ns = a["rewrite"]["topic"].split("://", 1)[1].rsplit("/", 1)[0]
    owner = f"/namespace/{ns}/0x00000000_0xffffffff"

    def back() -> None:  # the ledger's metadata is back: it is not missing
        zk.create(ledger_path(lid), b"BookieMetadataFormatVersion\t3\n", makepath=True)

    def owned() -> None:  # a broker owns the whole namespace: the topic may be loaded
        zk.create(owner, b"{}", makepath=True)

    def bumped() -> None:  # same bytes, new version: a broker wrote the managed-ledger znode
        zk.set(a["path"], zk.get(a["path"])[0])

    cases = [(back, "exists again", ledger_path(lid)), (owned, "is loaded", owner), (bumped, "version", None)]
    for n, (change, why, undo) in enumerate(cases):
        copy = tmp_path / f"plan-{n}.json"
        copy.write_bytes(plan.read_bytes())  # the same reviewed plan, its own journal and backup
        base = ["apply", str(copy), "--zookeeper", zk_hosts, "--apply", "--yes", "--json"]
        code, out, err = cli(*base, "--phase", "mark")
        assert code in (0, 1), err  # the other action of the plan was committed by an earlier copy
        assert next(o for o in json.loads(out)["actions"] if o["id"] == a["id"])["outcome"] == "marked"
        change()
        before = dump(zk)[a["path"]]
        code, out, err = cli(*base, "--phase", "delete", "--quarantine", "0")
        assert code == 1, err
        outcome = next(o for o in json.loads(out)["actions"] if o["id"] == a["id"])
        assert outcome["outcome"] == "skipped" and why in outcome["reason"], outcome
        assert dump(zk)[a["path"]] == before
        if undo is not None:
            zk.delete(undo)
