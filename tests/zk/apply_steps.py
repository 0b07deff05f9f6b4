"""The two apply phases as a test runs them on a seeded cluster, with the checks every round trip makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from tests.zk.repair_cluster import dump
from tests.zk.test_apply import cli

Dump = dict[str, tuple[bytes, int, int, list[Any]]]


def mark_then_delete(zk: KazooClient, plan: Path, zk_hosts: str) -> tuple[Dump, Dump]:
    """``apply --phase mark`` (which must leave the tree as it was), then ``--phase delete --quarantine 0``
    (every action committed): the full dumps before and after."""
    actions = json.loads(plan.read_text())["actions"]
    before = dump(zk)
    base = ["apply", str(plan), "--zookeeper", zk_hosts, "--apply", "--yes", "--json"]
    code, _, err = cli(*base, "--phase", "mark")
    assert code == 0, err
    assert dump(zk) == before
    code, out, err = cli(*base, "--phase", "delete", "--quarantine", "0")
    assert code == 0, err
    assert json.loads(out)["counts"] == {"committed": len(actions)}
    return before, dump(zk)
