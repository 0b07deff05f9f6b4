"""plan -> apply (mark, delete) -> restore against a real ZooKeeper (embedded), through the CLI."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.formats.ledger_path import ledger_path
from tests.unit.repair.encoders import ledger_md, ml_info
from tests.zk.repair_cluster import (
    LEAK_BUNDLE,
    LEAK_ML,
    ML_A_PATH,
    WATERMARK,
    Scenario,
    build_cluster,
    custom_ml,
    dump,
    findings_for,
    write_audit,
    write_snapshot,
)

pytestmark = pytest.mark.zk


@dataclass
class Env:
    zk: KazooClient
    hosts: str
    scenario: Scenario
    plan: Path
    tmp: Path

    @property
    def journal(self) -> Path:
        return self.plan.with_name(self.plan.name + ".journal.jsonl")

    @property
    def backup(self) -> Path:
        return self.plan.with_name(self.plan.name + ".backup")

    def journal_records(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.journal.read_text().splitlines()]


def cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


def make_env(zk: KazooClient, hosts: str, tmp: Path, *, extra_orphans: int = 0, plan_args: tuple[str, ...] = ()) -> Env:
    s = build_cluster(zk, extra_orphans=extra_orphans)
    snap = write_snapshot(zk, tmp / "snap")
    audit = write_audit(tmp / "audit", snap, findings_for(s))
    plan = tmp / "plan.json"
    code, _out, err = cli("plan", str(audit), "--out", str(plan), "--json", *plan_args)
    assert code == 0, err
    return Env(zk, hosts, s, plan, tmp)


def apply(env: Env, phase: str, *extra: str) -> tuple[int, dict[str, Any] | None, str]:
    code, out, err = cli("apply", str(env.plan), "--zookeeper", env.hosts, "--phase", phase, "--json", *extra)
    return code, (json.loads(out) if out.strip() else None), err


@pytest.fixture
def env(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> Env:
    return make_env(zk, zk_hosts, tmp_path)


def test_plan_contents_and_plan_never_writes(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    s = build_cluster(zk)
    snap = write_snapshot(zk, tmp_path / "snap")
    audit = write_audit(tmp_path / "audit", snap, findings_for(s))
    before_plan = dump(zk)
    code, out, err = cli("plan", str(audit), "--out", str(tmp_path / "p.json"), "--json")
    assert code == 0, err
    assert dump(zk) == before_plan
    doc = json.loads((tmp_path / "p.json").read_text())
    ledger_ids = sorted(a["ledger_id"] for a in doc["actions"] if a["kind"] == "delete-ledger-metadata")
    assert ledger_ids == sorted(s.orphans)
    assert sorted(a["path"] for a in doc["actions"] if a["kind"] == "delete-subtree") == sorted(s.leaks)
    by_id = {a["ledger_id"]: a for a in doc["actions"] if "ledger_id" in a}
    refs20 = [(r["role"], r["path"]) for r in by_id[20]["preconditions"]["references"]]
    assert refs20 == [
        ("managed-ledger", ML_A_PATH),
        ("cursor", ML_A_PATH + "/__compaction"),
        ("cursor", ML_A_PATH + "/sub"),
    ]
    assert by_id[20]["preconditions"]["references"][0]["sha256"]  # scraped bytes hash recorded
    assert [r["path"] for r in by_id[23]["preconditions"]["references"]] == ["/schemas/t/ns/topic-a"]
    assert [r["path"] for r in by_id[24]["preconditions"]["references"]] == [ML_A_PATH + "/__compaction"]
    assert [(r["path"], r["exists"]) for r in by_id[25]["preconditions"]["references"]] == [
        ("/managed-ledgers/t/ns/persistent/gone", False)
    ]
    assert all(a["loads_topics"] is False for a in doc["actions"])
    assert doc["summary"]["not_planned"]["by_reason"] == {"no-repair-action": 1, "not-plannable": 1}
    assert "Not planned: 2" in err and "not planned: not-plannable: 1" in err
    summary = json.loads(out)
    assert summary["checksum"] == doc["checksum"]
    assert summary["impact"]["available"] is True  # the reference model is wired in
    assert by_id[20]["impact"]["metadata_ops"] == 1


def test_dry_run_changes_nothing(env: Env) -> None:
    before = dump(env.zk)
    for phase in ("mark", "delete"):
        code, doc, err = apply(env, phase)
        assert code == 0, err
        assert doc is not None and doc["applied"] is False
        assert "DRY RUN" in err
    assert dump(env.zk) == before
    assert not env.journal.exists() and not env.backup.exists()


def test_no_tty_and_no_yes_refuses(env: Env) -> None:
    before = dump(env.zk)
    code, _out, err = cli("apply", str(env.plan), "--zookeeper", env.hosts, "--phase", "mark", "--apply")
    assert code == 3 and "aborted" in err and "needs confirmation" in err
    assert dump(env.zk) == before
    assert not env.journal.exists() and not env.backup.exists()


def test_edited_plan_is_refused(env: Env) -> None:
    doc = json.loads(env.plan.read_text())
    doc["actions"][0]["preconditions"]["znodes"][0]["version"] += 1
    env.plan.write_text(json.dumps(doc))
    code, _, err = apply(env, "mark", "--apply", "--yes")
    assert code == 3 and "plan-checksum-mismatch" in err
    assert not env.journal.exists()


def test_mark_changes_nothing_but_writes_backups_and_journal(env: Env) -> None:
    before = dump(env.zk)
    code, doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"marked": 8}
    assert dump(env.zk) == before  # bytes, versions, mzxids and ACLs unchanged
    manifest = json.loads((env.backup / "manifest.json").read_text())
    entries = {e["path"]: e for e in manifest["entries"]}
    for lid in env.scenario.orphans:
        e = entries[ledger_path(lid)]
        data, version, _, acl = before[ledger_path(lid)]
        assert (env.backup / "objects" / e["sha256"]).read_bytes() == data
        assert e["stat"]["version"] == version and len(e["acl"]) == len(acl)
    for root in env.scenario.leaks:
        assert all(p in entries for p in before if p == root or p.startswith(root + "/"))
    states = [r["state"] for r in env.journal_records() if r["type"] == "action"]
    assert states == ["marked"] * 8
    # marking again is idempotent
    code, doc, _ = apply(env, "mark", "--apply", "--yes")
    assert code == 0 and doc is not None and doc["counts"] == {"marked": 8}
    assert [r["state"] for r in env.journal_records() if r["type"] == "action"] == ["marked"] * 8


def test_delete_before_quarantine_is_refused(env: Env) -> None:
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    before = dump(env.zk)
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "1h")
    assert code == 3 and "quarantine-not-elapsed" in err
    assert doc is not None and doc["error"]["code"] == "quarantine-not-elapsed"
    assert dump(env.zk) == before
    assert [r["state"] for r in env.journal_records() if r["type"] == "action"] == ["marked"] * 8


def test_delete_without_mark_deletes_nothing(env: Env) -> None:
    before = dump(env.zk)
    code, _doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 3 and "apply-failed" in err and "no backup manifest" in err
    assert dump(env.zk) == before


def test_changed_or_re_referenced_actions_are_skipped_others_deleted(env: Env) -> None:
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    zk = env.zk
    # ledger 20 becomes referenced again: the owner's ledger list gains it (version changes too)
    zk.set(ML_A_PATH, ml_info([10, 11, 20, WATERMARK]))  # WATERMARK stays: 21-24 stay below it
    # ledger 25's znode changes (e.g. recovered and closed again)
    zk.set(ledger_path(25), ledger_md(custom_ml("t/ns/persistent/gone"), length=5))
    # a new child appears inside a leaked subtree
    zk.create(LEAK_BUNDLE + "/0x00000000_0x80000000", b"{}")
    # the owner's other cursor rolls over (version change only): re-check, not skip
    zk.set(ML_A_PATH + "/sub", zk.get(ML_A_PATH + "/sub")[0])
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 1, err  # some skipped
    assert doc is not None
    out = {a["target"]: a for a in doc["actions"]}
    assert out["20"]["outcome"] == "skipped" and "referenced again" in out["20"]["reason"]
    assert out["25"]["outcome"] == "skipped" and "changed" in out["25"]["reason"]
    assert out[LEAK_BUNDLE]["outcome"] == "skipped" and "appeared" in out[LEAK_BUNDLE]["reason"]
    for lid in (21, 22, 23, 24):
        assert out[str(lid)]["outcome"] == "committed"
        assert zk.exists(ledger_path(lid)) is None
    assert out[LEAK_ML]["outcome"] == "committed" and zk.exists(LEAK_ML) is None
    assert zk.exists(ledger_path(20)) and zk.exists(ledger_path(25)) and zk.exists(LEAK_BUNDLE)
    for p in env.scenario.keep:
        assert zk.exists(p), p
    assert "skipped" in err and "referenced again" in err
    assert doc["backup_dir"] == str(env.backup.resolve())
    # re-running finishes nothing more and deletes nothing twice
    code, doc2, _ = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert doc2 is not None and doc2["counts"] == doc["counts"]
    commits = [r["action"] for r in env.journal_records() if r.get("state") == "committed"]
    assert len(commits) == len(set(commits)) == 5


def test_restore_brings_back_byte_identical_znodes_with_acls(env: Env) -> None:
    before = dump(env.zk)
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"committed": 8}
    deleted = [p for p in before if env.zk.exists(p) is None]
    assert ledger_path(21) in deleted and LEAK_ML + "/persistent/t1" in deleted
    # dry run first: nothing written, the warning is printed
    code, out, err = cli("restore", str(env.backup), "--zookeeper", env.hosts, "--json")
    assert code == 0 and "WARNING" in err and "gcWaitTime" in err
    assert all(env.zk.exists(p) is None for p in deleted)
    assert json.loads(out)["counts"] == {"would-create": len(deleted)}
    code, out, err = cli("restore", str(env.backup), "--zookeeper", env.hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["counts"] == {"restored": len(deleted)}
    after = dump(env.zk)
    for p in deleted:
        assert after[p][0] == before[p][0], p  # bytes
        assert after[p][3] == before[p][3], p  # ACLs (ledger 21 has a non-default ACL)
    assert [a.id.scheme for a in after[ledger_path(21)][3]] == ["world", "ip"]
    # second restore: already present; a changed znode is a conflict and is not overwritten
    env.zk.set(ledger_path(22), b"changed")
    code, out, _ = cli("restore", str(env.backup), "--zookeeper", env.hosts, "--apply", "--yes", "--json")
    assert code == 1
    res = {z["path"]: z["outcome"] for z in json.loads(out)["znodes"]}
    assert res[ledger_path(22)] == "conflict" and res[ledger_path(23)] == "already-present"
    assert env.zk.get(ledger_path(22))[0] == b"changed"


def test_restore_only_one_path_and_missing_parents(env: Env) -> None:
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    assert apply(env, "delete", "--apply", "--yes", "--quarantine", "0")[0] == 0
    env.zk.delete("/ledgers/00/0000", recursive=True)  # BookKeeper removes empty ledger directories
    target = ledger_path(23)
    code, out, err = cli(
        "restore", str(env.backup), "--zookeeper", env.hosts, "--only", target, "--apply", "--yes", "--json"
    )
    assert code == 0, err
    (z,) = json.loads(out)["znodes"]
    assert z["outcome"] == "restored" and z["created_parents"] == ["/ledgers/00/0000"]
    assert env.zk.exists(target) and env.zk.exists(ledger_path(22)) is None


def test_another_plan_over_unfinished_journal_is_refused(env: Env) -> None:
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    other = env.tmp / "other.json"
    code, _, err = cli("plan", str(env.tmp / "audit"), "--out", str(other), "--max-actions", "2")
    assert code == 0, err
    code, _out, err = cli(
        "apply",
        str(other),
        "--zookeeper",
        env.hosts,
        "--phase",
        "mark",
        "--apply",
        "--yes",
        "--journal",
        str(env.journal),
    )
    assert code == 3 and "journal-conflict" in err and "holds unfinished plan" in err


def test_caps_limit_the_plan(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = make_env(zk, zk_hosts, tmp_path, plan_args=("--max-actions", "3", "--max-bytes", "10GB"))
    doc = json.loads(env.plan.read_text())
    assert len(doc["actions"]) == 3
    assert doc["summary"]["cut"]["actions"] == 5
    assert doc["caps"]["max_bytes"] == 10 * 10**9
