"""Forged plans against what Pulsar writes for itself (issue 33), refused by ``apply`` with the tree unchanged, and
by ``plan`` from a hand-made finding: the transaction coordinator assign metadata that initialize-cluster-metadata
writes, a trim where topic-level retention lives in ``__change_events``, a trim under the extensible load manager,
a subscription of a system topic. Each forged plan is self-consistent (checksum recomputed, every znode reference
matching the live tree); the control is test_apply_rules.py's trim that is applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.policies import encode_namespace_policies
from tests.unit.repair.encoders import ledger_md, ml_info
from tests.zk.forged_plans import (
    DAY,
    ML_PATH,
    _env,
    _forge,
    _ledger_action,
    _now,
    _policies,
    _refused,
    _subscription_action,
    _subtree_action,
    _topic,
    _trim_action,
)
from tests.zk.repair_cluster import TEST_AUDIT_PARAMS, custom_ml, dump, write_audit, write_snapshot
from tests.zk.test_apply import apply, cli

pytestmark = pytest.mark.zk

ASSIGN = "/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign"
ELM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
CHANGE_EVENTS = "/managed-ledgers/t/ns/persistent/__change_events"


def _cluster_setup() -> dict[str, bytes]:
    """What PulsarClusterMetadataSetup writes for the system namespace (16 coordinators by default)."""
    return {
        "/admin/policies/pulsar": b'{"allowed_clusters": ["test"]}',
        "/admin/policies/pulsar/system": encode_namespace_policies(boundaries=["0x00000000", "0xffffffff"]),
        ASSIGN: b'{"partitions":16}',
    }


def _refused_both_phases(env: object, words: str) -> None:
    """Mark skips (or forecasts the skip of) the action naming ``words``; delete refuses it; the tree is the same."""
    before = dump(env.zk)  # type: ignore[attr-defined]
    code, doc, err = apply(env, "mark", "--apply", "--yes")  # type: ignore[arg-type]
    assert code == 1, err
    assert doc is not None
    (out,) = doc["actions"]
    assert out["outcome"] in ("skipped", "would-skip") and words in out["reason"], out
    assert dump(env.zk) == before  # type: ignore[attr-defined]
    _refused(env, words, phase="delete")  # type: ignore[arg-type]


def test_deleting_the_coordinator_assign_metadata_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """Its partitions never get a managed ledger, so prove_leak alone would call it a leak; it is Pulsar's own."""
    env = _env(zk, zk_hosts, tmp_path, _cluster_setup())
    a = _subtree_action(zk, ASSIGN, "partitioned-topic", id="assign-forged", store="config")
    _forge(env, [a])
    _refused_both_phases(env, "Pulsar's own metadata (Pulsar system namespace pulsar/system")
    assert zk.exists(ASSIGN) is not None


def test_the_planner_refuses_a_leak_finding_on_the_coordinator_assign_metadata(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """A hand-made findings.json that calls it a plannable znode-leak (what the audit did before) is not planned."""
    from pulsar_ops.findings import Finding

    for path, data in {"/admin/clusters/test": b"{}", **_cluster_setup()}.items():
        zk.create(path, data, makepath=True)
    snap = write_snapshot(zk, tmp_path / "snap")
    finding = Finding(
        detection="znode-leak", severity="warning", path=ASSIGN, namespace="pulsar/system", plannable=True,
        evidence={"leak": "partitioned-topic"},
    )  # fmt: skip
    audit = write_audit(tmp_path / "audit", snap, [finding], TEST_AUDIT_PARAMS)
    out = tmp_path / "plan.json"
    code, _o, err = cli("plan", str(audit), "--out", str(out), "--json")
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["actions"] == []
    assert [n["reason_code"] for n in doc["not_planned"]] == ["refused-by-rule"]
    assert "Pulsar's own metadata" in doc["not_planned"][0]["reason"]


def test_a_trim_where_topic_policies_live_in_change_events_is_refused(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """The same trim test_apply_rules.py applies (retention 1 hour at namespace level), but the namespace has
    __change_events: a topic-level retention we cannot read may keep the ledgers."""
    env = _env(zk, zk_hosts, tmp_path, {**_topic(_now(), (101, 9), _policies(60, -1)), CHANGE_EVENTS: ml_info([])})
    _forge(env, [_trim_action(zk, [100, 101])])
    _refused(env, "the topic-level retention is unknown")
    _refused(env, "the topic-level retention is unknown", phase="delete")


def test_a_trim_under_the_extensible_load_manager_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """A broker registered by the extensible load manager (BrokerLookupData names loadManagerClassName): no
    /namespace ownership znode exists even for a loaded topic, so its absence proves nothing."""
    reg = json.dumps({"webServiceUrl": "http://b1:8080", "loadManagerClassName": ELM}).encode()
    nodes = {**_topic(_now(), (101, 9), _policies(60, -1)), "/loadbalance/brokers/b1:8080": reg}
    env = _env(zk, zk_hosts, tmp_path, nodes)
    _forge(env, [_trim_action(zk, [100, 101])])
    _refused(env, "bundle ownership is unknown (load manager 'extensible' now")
    _refused(env, "bundle ownership is unknown", phase="delete")


def test_a_trim_mid_migration_to_the_extensible_load_manager_is_refused(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """Modular registrations only, but the extensible load manager's leader election exists: mixed."""
    nodes = {
        **_topic(_now(), (101, 9), _policies(60, -1)),
        "/loadbalance/brokers/b1:8080": b'{"webServiceUrl": "http://b1:8080"}',
        "/loadbalance/extension/leader": b"{}",
    }
    env = _env(zk, zk_hosts, tmp_path, nodes)
    _forge(env, [_trim_action(zk, [100, 101])])
    _refused(env, "bundle ownership is unknown (load manager 'mixed' now")


def test_deleting_a_subscription_of_change_events_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """An idle cursor with a user-looking name, on the topic-policies system topic."""
    now = _now()
    cursor = encode_cursor_info(
        ManagedCursorInfo(cursors_ledger_id=-1, mark_delete=(10, 0), last_active_ms=now - 60 * DAY)
    )
    path = CHANGE_EVENTS + "/reader-1"
    env = _env(zk, zk_hosts, tmp_path, {CHANGE_EVENTS: ml_info([10]), path: cursor})
    a = _subscription_action(zk, CHANGE_EVENTS, "persistent://t/ns/__change_events", "reader-1")
    _forge(env, [a], inactive_after_ms=7 * DAY)
    _refused(env, "is a cursor of Pulsar's own (Pulsar events system topic")


def test_the_control_trim_still_applies_without_change_events_or_elm(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """A modular registration and no __change_events: the same trim goes through (the refusals above are the
    new facts, not a blanket refusal)."""
    nodes = {
        **_topic(_now(), (101, 9), _policies(60, -1)),
        "/loadbalance/brokers/b1:8080": b'{"webServiceUrl": "http://b1:8080"}',
    }
    env = _env(zk, zk_hosts, tmp_path, nodes)
    _forge(env, [_trim_action(zk, [100, 101])])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, _doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert zk.get(ML_PATH)[0]


def test_deleting_a_ledger_of_a_coordinator_log_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """An old, unreferenced ledger whose custom metadata names coordinator 9's log (its managed ledger gone): a
    ledger Pulsar wrote for itself is never an orphan to delete."""
    env = _env(
        zk, zk_hosts, tmp_path, {ledger_path(38): ledger_md(custom_ml("pulsar/system/persistent/__transaction_log_9"))}
    )
    _forge(env, [_ledger_action(zk, 38)])
    _refused(env, "belongs to Pulsar's own managed ledger")
