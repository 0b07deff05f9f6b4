"""kill -9 during `apply --phase delete`, then the same command again: everything finished, nothing twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.repair import journal as J
from pulsar_ops.repair.plan_file import load_plan
from tests.zk.repair_cluster import dump
from tests.zk.test_apply import apply, make_env

pytestmark = pytest.mark.zk


REPO = Path(__file__).resolve().parents[2]


def run_cli(args: list[str], kill_after: int | None = None) -> subprocess.CompletedProcess[str]:
    """`pulsar-ops ARGS` in a child process; with ``kill_after`` it SIGKILLs itself after that many commits."""
    cmd = [sys.executable, "-m", "pulsar_ops.cli.main", *args]
    if kill_after is not None:
        cmd = [sys.executable, "-m", "tests.zk.fault_apply", str(kill_after), *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=False)


@pytest.mark.parametrize("kill_after", [1, 6])
def test_kill_9_during_delete_then_rerun_finishes_everything_once(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, kill_after: int
) -> None:
    env = make_env(zk, zk_hosts, tmp_path, extra_orphans=10)
    plan = load_plan(env.plan)
    targets = {a.id: [z.path for z in a.preconditions.znodes] for a in plan.actions}
    assert len(targets) == 18
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    before = dump(zk)
    args = [
        "apply",
        str(env.plan),
        "--zookeeper",
        zk_hosts,
        "--phase",
        "delete",
        "--quarantine",
        "0",
        "--batch-size",
        "4",
        "--apply",
        "--yes",
        "--json",
    ]
    killed = run_cli(args, kill_after)
    assert killed.returncode == -9, killed.stderr
    recs = [json.loads(x) for x in env.journal.read_text().splitlines() if x.strip()]
    states = Counter(r["state"] for r in recs if r["type"] == "action")
    assert states["committed"] == kill_after - 1  # the last commit happened but was never journaled
    gone = [aid for aid, paths in targets.items() if all(zk.exists(p) is None for p in paths)]
    assert len(gone) == kill_after

    rerun = run_cli(args)
    assert rerun.returncode == 0, rerun.stderr
    doc = json.loads(rerun.stdout)
    assert doc["counts"] == {"committed": 18}
    for paths in targets.values():
        assert all(zk.exists(p) is None for p in paths)
    recs = [json.loads(x) for x in env.journal.read_text().splitlines() if x.strip()]
    commits = Counter(r["action"] for r in recs if r.get("state") == "committed")
    assert set(commits) == set(targets) and set(commits.values()) == {1}  # one commit per action
    recovered = [r for r in recs if r.get("recovered")]
    assert len(recovered) == 1  # the action killed between commit and journal
    # nothing outside the plan was touched
    deleted = {p for paths in targets.values() for p in paths}
    after = dump(zk)
    assert {p for p in before if p not in deleted} == set(after)


def test_deleting_record_with_target_present_is_reverified_and_deleted(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    env = make_env(zk, zk_hosts, tmp_path)
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    plan = load_plan(env.plan)
    first = plan.actions[0]
    with J.Journal.open(
        env.journal, plan_checksum=plan.checksum, plan_id=plan.plan_id, actions=len(plan.actions), backup_dir=None
    ) as j:
        j.record(first.id, J.DELETING)  # crashed after journaling `deleting`, before the commit
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"committed": len(plan.actions)}
    assert zk.exists(first.path) is None
    hist = [r["state"] for r in env.journal_records() if r.get("action") == first.id]
    assert hist == ["marked", "deleting", "committed"]
