"""The two rules that existed only in the audit's SQL (issue 34), now rules of their kinds: a forged plan for each
is refused by ``apply`` with the tree byte-identical, and the planner refuses the same on the snapshot.

* ``delete-subtree``: a leak subtree modified less than min-age ago (something may still be writing it);
* ``delete-subscription``: a subscription of a topic Pulsar creates for itself (``__change_events``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.findings import Finding
from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.repair.actions import (
    Action,
)
from tests.unit.repair.encoders import ml_info, schema_locator
from tests.zk.forged_plans import (
    DAY,
    HOUR,
    _base,
    _env,
    _forge,
    _now,
    _refused,
    _subscription_action,
    _subtree_action,
)
from tests.zk.repair_cluster import TEST_AUDIT_PARAMS, dump, write_audit, write_snapshot
from tests.zk.test_apply import apply, cli

pytestmark = pytest.mark.zk

LEAK = "/schemas/t/ns/gone"


def _leak_action(zk: KazooClient) -> Action:
    return _subtree_action(zk, LEAK, "schema")


def test_a_leak_modified_within_min_age_is_refused_at_mark_and_at_delete(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """The leak is real (nothing owns the schema) but was written just now: min-age 1 h refuses it."""
    env = _env(zk, zk_hosts, tmp_path, {LEAK: schema_locator([7])})
    _forge(env, [_leak_action(zk)], min_age_ms=HOUR)
    words = "less than the min-age 3600 s"
    before = dump(env.zk)
    code, doc, err = apply(env, "mark", "--apply", "--yes")  # mark forecasts it (backed up, nothing changed)
    assert code == 1, err
    assert doc is not None
    (out,) = doc["actions"]
    assert out["outcome"] == "would-skip" and words in out["reason"], out
    assert dump(env.zk) == before
    _refused(env, words, phase="delete")


def test_the_same_leak_old_enough_is_deleted(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """Control: with min-age 0 the same forged plan deletes the leak (the refusal above is the age rule's)."""
    env = _env(zk, zk_hosts, tmp_path, {LEAK: schema_locator([7])})
    _forge(env, [_leak_action(zk)], min_age_ms=0)
    code, _doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 0, err
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert doc is not None and [o["outcome"] for o in doc["actions"]] == ["committed"]
    assert zk.exists(LEAK) is None


def test_the_planner_refuses_a_leak_the_snapshot_shows_modified_within_min_age(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """A findings file that calls a fresh subtree plannable (hand-edited, or an audit run with another clock) gets
    no action: the planner asks the same rule on the snapshot's mtimes."""
    for path, data in {**_base(), LEAK: schema_locator([7])}.items():
        zk.create(path, data, makepath=True)
    snap = write_snapshot(zk, tmp_path / "snap")
    finding = Finding(detection="znode-leak", severity="warning", path=LEAK, namespace="t/ns", plannable=True)
    audit = write_audit(tmp_path / "audit", snap, [finding], {**TEST_AUDIT_PARAMS, "min_age_ms": DAY})
    out = tmp_path / "plan.json"
    code, _o, err = cli("plan", str(audit), "--out", str(out), "--json")
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["actions"] == []
    (np_,) = doc["not_planned"]
    assert np_["reason_code"] == "refused-by-rule" and "less than the min-age 86400 s" in np_["reason"], np_


def _idle_cursor() -> bytes:
    return encode_cursor_info(
        ManagedCursorInfo(cursors_ledger_id=-1, mark_delete=(10, 0), last_active_ms=_now() - 30 * DAY)
    )


def test_a_user_subscription_idle_long_enough_passes_the_rule(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """Control for the system-topic case: the same idle cursor on a user topic is not refused at mark."""
    ml_path = "/managed-ledgers/t/ns/persistent/user-topic"
    env = _env(zk, zk_hosts, tmp_path, {ml_path: ml_info([10]), f"{ml_path}/idle": _idle_cursor()})
    _forge(env, [_subscription_action(zk, ml_path, "persistent://t/ns/user-topic", "idle")], inactive_after_ms=DAY)
    code, doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 0, err
    assert doc is not None and [o["outcome"] for o in doc["actions"]] == ["marked"]
