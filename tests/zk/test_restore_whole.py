"""Restore is whole or nothing per action (issue 29, deliverable 4), against the embedded real ZooKeeper.

A ``trim-unloaded`` action rewrote a managed-ledger znode and deleted ledger znodes. When that managed-ledger
znode was written since (a broker loading the topic rewrites it), restore puts back none of the action's ledger
metadata (restored alone, those ledgers would be orphans) and reports the conflict with what the operator can
do; once the backed-up list is back in place, the same restore brings the ledgers back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.repair.backup import BackupStore
from pulsar_ops.repair.restore import run_restore
from pulsar_ops.repair.zk_writer import TxnResult, ZkSession
from tests.unit.repair.encoders import ml_info
from tests.zk.apply_steps import mark_then_delete
from tests.zk.repair_cluster import dump
from tests.zk.test_apply import cli
from tests.zk.test_apply_trim import _planned

pytestmark = pytest.mark.zk


def test_a_conflicted_trim_is_restored_as_nothing_with_the_report(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, plan, _ = _planned(zk, zk_hosts, tmp_path, monkeypatch)
    before, _after = mark_then_delete(zk, plan, zk_hosts)
    backup = str(plan) + ".backup"
    a, *rest = doc["actions"]
    ml = a["path"]
    removed = [ledger_path(r["ledger_id"]) for r in a["rewrite"]["removed"]]
    # a broker loads the topic: it writes the managed-ledger znode (a new current ledger at the end)
    listed = list(decode_managed_ledger_info(zk.get(ml)[0], ml).info.ledger_ids)
    zk.set(ml, ml_info([*listed, max(listed, default=0) + 1000]))
    written = dump(zk)

    code, out, err = cli("restore", backup, "--zookeeper", zk_hosts, "--json")  # the dry run says so too
    assert code == 1, err
    dry = json.loads(out)
    assert [c["action_id"] for c in dry["action_conflicts"]] == [a["id"]]
    assert dump(zk) == written

    code, out, err = cli("restore", backup, "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 1, err
    report = json.loads(out)
    by_path = {z["path"]: z for z in report["znodes"]}
    assert by_path[ml]["outcome"] == "conflict"
    for p in removed:
        assert by_path[p]["outcome"] == "skipped" and "orphan" in by_path[p]["reason"], by_path[p]
        assert zk.exists(p) is None  # none of that action's ledger metadata came back
    (conflict,) = report["action_conflicts"]
    assert conflict["action_id"] == a["id"] and conflict["managed_ledger"] == ml
    assert "orphans" in conflict["reason"] and "unload the topic" in conflict["what_to_do"]
    assert f"action {a['id']} not restored" in err and "what you can do" in err
    # the other trims (their managed-ledger znodes untouched since) are restored whole
    for other in rest:
        assert zk.get(other["path"])[0] == before[other["path"]][0]
        for r in other["rewrite"]["removed"]:
            assert zk.get(ledger_path(r["ledger_id"]))[0] == before[ledger_path(r["ledger_id"])][0]
    after_restore = dump(zk)
    assert after_restore[ml] == written[ml]
    assert {p for p in after_restore if p not in written} == {
        ledger_path(r["ledger_id"]) for o in rest for r in o["rewrite"]["removed"]
    }

    # what to do, done: the backed-up list put back by hand (the topic unloaded): the same restore completes it
    zk.set(ml, before[ml][0])
    code, out, err = cli("restore", backup, "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 0, err
    assert json.loads(out)["action_conflicts"] == []
    final = dump(zk)
    assert set(final) == set(before)
    assert all(final[p][0] == before[p][0] and final[p][3] == before[p][3] for p in before)


def test_restore_only_one_ledger_of_a_trim_restores_the_whole_action(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, plan, _ = _planned(zk, zk_hosts, tmp_path, monkeypatch)
    before, _after = mark_then_delete(zk, plan, zk_hosts)
    a = doc["actions"][0]
    one = ledger_path(a["rewrite"]["removed"][0]["ledger_id"])
    code, out, err = cli(
        "restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--only", one, "--apply", "--yes", "--json"
    )
    assert code == 0, err
    restored = {z["path"] for z in json.loads(out)["znodes"] if z["outcome"] == "restored"}
    assert restored == {a["path"], *(ledger_path(r["ledger_id"]) for r in a["rewrite"]["removed"])}
    assert zk.get(a["path"])[0] == before[a["path"]][0]


class _BrokerWritesFirst(ZkSession):
    """A session whose first commit is preceded by a write of ``path`` from another client (a broker loading the
    topic between restore's reads and its transaction). No kazoo call is faked: both writes reach ZooKeeper."""

    def __init__(self, hosts: str, other: KazooClient, path: str) -> None:
        super().__init__(hosts)
        self._other, self._path, self._done = other, path, False

    def commit(self, store: str, *args: Any, **kwargs: Any) -> TxnResult:
        if not self._done:
            self._done = True
            data, _ = self._other.get(self._path)
            self._other.set(self._path, data + b"\n")
        return super().commit(store, *args, **kwargs)


def test_a_write_between_the_reads_and_the_transaction_restores_nothing(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc, plan, _ = _planned(zk, zk_hosts, tmp_path, monkeypatch)
    mark_then_delete(zk, plan, zk_hosts)
    a = doc["actions"][0]
    backups = BackupStore.open(Path(str(plan) + ".backup"), create=False)
    one = ledger_path(a["rewrite"]["removed"][0]["ledger_id"])
    with _BrokerWritesFirst(zk_hosts, zk, a["path"]) as session:
        report = run_restore(backups, session, only=one, apply=True)
    outcomes = {o.path: o.outcome for o in report.outcomes}
    assert outcomes[a["path"]] == "conflict" and "changed while restoring" in report.action_conflicts[0].reason
    for r in a["rewrite"]["removed"]:
        assert outcomes[ledger_path(r["ledger_id"])] == "skipped"
        assert zk.exists(ledger_path(r["ledger_id"])) is None  # the transaction created none of them


def test_a_conflicted_drop_missing_ledger_is_reported_and_not_overwritten(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    from tests.zk.test_apply_rewrite import _planned as planned_drop

    doc, plan = planned_drop(zk, zk_hosts, tmp_path, compression=None)
    mark_then_delete(zk, plan, zk_hosts)
    a, *rest = doc["actions"]
    zk.set(a["path"], zk.get(a["path"])[0] + b"\n")  # written since the action
    written = dump(zk)[a["path"]]
    code, out, err = cli("restore", str(plan) + ".backup", "--zookeeper", zk_hosts, "--apply", "--yes", "--json")
    assert code == 1, err
    report = json.loads(out)
    (conflict,) = report["action_conflicts"]
    assert conflict["managed_ledger"] == a["path"] and "not overwritten" in conflict["reason"]
    assert "re-run this restore" not in conflict["what_to_do"]  # no ledger znode of its own to restore later
    assert dump(zk)[a["path"]] == written
    outcomes = {z["path"]: z["outcome"] for z in report["znodes"]}
    assert outcomes[a["path"]] == "conflict"
    assert all(outcomes[o["path"]] == "restored" for o in rest)
