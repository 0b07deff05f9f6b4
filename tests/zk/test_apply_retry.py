"""Skips that can pass are retried (issue 29, deliverable 3), against the embedded real ZooKeeper.

A transient skip (a read error: here an ACL that denies reading one znode, which the test then lifts) is
journaled with ``"final": false``; the next run of the same phase re-evaluates the action and says the old
reason is a previous run's. A final skip (the cluster changed under the action) stays final and says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.security import ACL, OPEN_ACL_UNSAFE, Id

from pulsar_ops.errors import ZooKeeperError
from pulsar_ops.repair.apply_run import ApplyRequest, run_apply
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkconn import connected
from tests.zk.repair_cluster import LEAK_ML, dump
from tests.zk.test_apply import Env, apply, make_env

pytestmark = pytest.mark.zk


@pytest.fixture
def env(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> Env:
    return make_env(zk, zk_hosts, tmp_path)


NO_READ = [ACL(31 & ~1, Id("world", "anyone"))]  # every permission but READ
HIDDEN = LEAK_ML + "/persistent/t1"  # a znode inside a planned leak subtree


def _by_target(doc: dict[str, object]) -> dict[str, dict[str, str]]:
    actions = doc["actions"]
    assert isinstance(actions, list)
    return {str(o["target"]): o for o in actions}


def test_a_read_error_is_a_transient_skip_and_the_retry_commits(env: Env) -> None:
    zk: KazooClient = env.zk
    # mark: the leak's znode cannot be read -> a transient skip; the other actions are marked
    zk.set_acls(HIDDEN, NO_READ)
    code, doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 1 and doc is not None, err
    out = _by_target(doc)[LEAK_ML]
    assert out["outcome"] == "skipped" and "not authorised" in out["reason"], out
    assert "transient: the next run re-evaluates it" in out["reason"], out
    skipped = [r for r in env.journal_records() if r.get("state") == "skipped"]
    assert skipped and all(r["final"] is False for r in skipped), skipped
    # the ledger actions' rule cannot prove "referenced by nothing" while a part of /managed-ledgers is unreadable
    # (apply's rules read the live references at mark too): transient skips as well, nothing else skipped
    assert {o["kind"] for o in doc["actions"] if o["outcome"] == "skipped"} == {
        "delete-subtree",
        "delete-ledger-metadata",
    }
    assert all("transient" in o["reason"] for o in doc["actions"] if o["outcome"] == "skipped")
    # the ACL is lifted: the same command marks it and says the old reason is a previous run's
    zk.set_acls(HIDDEN, OPEN_ACL_UNSAFE)
    code, doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 0 and doc is not None, err
    out = _by_target(doc)[LEAK_ML]
    assert out["outcome"] == "marked" and "a previous run skipped it (transient): cannot re-read" in out["reason"]
    # delete: the znode is unreadable again -> transient skip, nothing of that action deleted
    zk.set_acls(HIDDEN, NO_READ)
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 1 and doc is not None, err
    out = _by_target(doc)[LEAK_ML]
    assert out["outcome"] == "skipped" and "transient" in out["reason"], out
    assert zk.get_children(LEAK_ML + "/persistent") == ["t1"]  # (exists needs READ on it)
    # the ledger actions cannot prove "referenced by nothing" while a part of /managed-ledgers is unreadable:
    # transient skips too; every other action committed
    for o in doc["actions"]:
        assert o["outcome"] == "committed" or "transient" in o["reason"], o
    assert {o["kind"] for o in doc["actions"] if o["outcome"] == "skipped"} == {
        "delete-subtree",
        "delete-ledger-metadata",
    }
    # lifted: the retry commits, and says why it was skipped before
    zk.set_acls(HIDDEN, OPEN_ACL_UNSAFE)
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0 and doc is not None and set(doc["counts"]) == {"committed"}, err
    out = _by_target(doc)[LEAK_ML]
    assert out["outcome"] == "committed" and "a previous run skipped it (transient)" in out["reason"], out
    assert zk.exists(LEAK_ML) is None
    states = [r["state"] for r in env.journal_records() if r.get("type") == "action" and r["action"] == out["id"]]
    assert states == ["skipped", "marked", "skipped", "deleting", "committed"]
    # a further run reports it committed, once
    code, doc, _err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0 and doc is not None and set(doc["counts"]) == {"committed"}


def test_a_changed_target_is_a_final_skip_and_stays_final(env: Env) -> None:
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    env.zk.set(HIDDEN, b"written during the quarantine")
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 1 and doc is not None, err
    out = _by_target(doc)[LEAK_ML]
    assert out["outcome"] == "skipped" and out["reason"].endswith("(final)"), out
    (rec,) = [r for r in env.journal_records() if r.get("state") == "skipped"]
    assert rec["final"] is True
    before = dump(env.zk)
    for phase in ("mark", "delete"):
        code, doc, err = apply(env, phase, "--apply", "--yes", "--quarantine", "0")
        assert doc is not None, err
        again = _by_target(doc)[LEAK_ML]
        assert again["outcome"] == "skipped" and again["reason"].startswith("final, from a previous run: "), again
    assert dump(env.zk) == before
    assert len([r for r in env.journal_records() if r.get("state") == "skipped"]) == 1


def test_an_old_journal_skip_without_final_stays_final(env: Env) -> None:
    """Journals written before the distinction: a skipped record without ``final`` is final."""
    import json

    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    env.zk.set(HIDDEN, b"changed")
    assert apply(env, "delete", "--apply", "--yes", "--quarantine", "0")[0] == 1
    lines = env.journal.read_text().splitlines()
    old = []
    for line in lines:
        rec = json.loads(line)
        rec.pop("final", None)
        old.append(json.dumps(rec, sort_keys=True, separators=(",", ":")))
    env.journal.write_text("\n".join(old) + "\n")
    env.zk.set(HIDDEN, b"")  # even if the cause went away, an old skip is not retried
    _code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert doc is not None, err
    assert _by_target(doc)[LEAK_ML]["reason"].startswith("final, from a previous run")
    assert env.zk.exists(HIDDEN) is not None


def test_mark_reports_a_leak_already_disproved_as_would_skip(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    from tests.zk.test_apply_safety import _leak_env

    env = _leak_env(zk, zk_hosts, tmp_path, {"/managed-ledgers/gone/ns/persistent/t1": b""}, ["/managed-ledgers/gone"])
    zk.create("/admin/policies/gone", b"{}", makepath=True)  # the tenant exists again: not a leak any more
    before = dump(zk)
    code, doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 1 and doc is not None, err
    (out,) = doc["actions"]
    assert out["outcome"] == "would-skip" and "tenant /admin/policies/gone exists again" in out["reason"], out
    assert dump(zk) == before
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 1 and doc is not None, err
    (out,) = doc["actions"]
    assert out["outcome"] == "skipped" and out["reason"].endswith("(final)"), out
    assert dump(zk) == before


@pytest.mark.slow
def test_zookeeper_stopped_mid_delete_then_restarted(tmp_path: Path) -> None:
    """ZooKeeper goes away after the first committed transaction: the next action's reads fail, its skip is
    journaled transient and the run stops (instead of skipping every remaining action); once ZooKeeper is back
    the same command finishes the plan and says why that action was skipped before."""
    server = EmbeddedZooKeeper(data_dir=tmp_path / "zk", heap_mb=256).start()
    try:
        with connected(server.hosts) as root:
            root.ensure_path("/c")
        hosts = server.hosts + "/c"
        with connected(hosts) as zk:
            env = make_env(zk, hosts, tmp_path / "w")
            assert apply(env, "mark", "--apply", "--yes")[0] == 0
        stopped: list[bool] = []

        def stop_after_first_commit() -> None:
            if not stopped:
                stopped.append(True)
                server.stop()

        # the stopped server is noticed after one request timeout for the read and one for the ping that
        # follows it (apply's 30 s default twice): 10 s each here
        req = ApplyRequest(
            plan_path=env.plan,
            zookeeper=hosts,
            config_zookeeper=None,
            phase="delete",
            quarantine_ms=0,
            apply=True,
            zk_timeout_s=10.0,
        )
        with pytest.raises(ZooKeeperError, match="does not answer"):
            run_apply(req, confirm=lambda _q: None, say=lambda _l: None, after_commit=stop_after_first_commit)
        states = [(r["action"], r["state"], r.get("final")) for r in env.journal_records() if r["type"] == "action"]
        skipped = [s for s in states if s[1] == "skipped"]
        assert len(skipped) == 1 and skipped[0][2] is False, states
        server.start()  # same port, same data
        code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
        assert code == 0 and doc is not None and set(doc["counts"]) == {"committed"}, err
        retried = next(o for o in doc["actions"] if o["id"] == skipped[0][0])
        assert "a previous run skipped it (transient): cannot re-read it now" in retried["reason"], retried
    finally:
        server.cleanup()
