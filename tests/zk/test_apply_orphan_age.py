"""The orphan age has one clock (issue 34): apply ages a ledger as the audit's SQL and the planner do, from its
znode's ctime (ZooKeeper's clock), or from its metadata's own ctime when that is later
(:func:`pulsar_ops.repair.rules.orphan_created_ms`). A forged plan (checksum recomputed) for a ledger too young on
either edge is refused at mark and again at delete, with the tree byte-identical:

* metadata ctime 30 days old, znode created just now (a re-created znode, or a broker clock behind ZooKeeper's):
  young by its znode;
* znode old, metadata stamped minutes ago (a broker clock ahead of ZooKeeper's): young by the later stamp.

A real ZooKeeper stamps the znode when the test creates it, so "old" is made by the operator's clock the rules read
(``PULSAR_OPS_APPLY_NOW_MS``, as the seeded demo sets it); it steps back between the phases to show that delete
decides again (a refusal at mark is final: each phase gets its own plan).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.executor import APPLY_NOW_ENV
from tests.unit.repair.encoders import ledger_md
from tests.zk.forged_plans import DAY, HOUR, OWNED, _env, _forge, _ledger_action, _refused
from tests.zk.repair_cluster import dump
from tests.zk.test_apply import Env, apply

pytestmark = pytest.mark.zk

LID = 40  # below the watermark (1000), referenced by nothing, its owner gone: only its age can refuse it


def _wall() -> int:
    return int(time.time() * 1000)


def _refused_at(
    env: Env, monkeypatch: pytest.MonkeyPatch, phase: str, young_now: int, old_now: int, words: str
) -> None:
    """Refused at ``phase`` by the operator's clock ``young_now``; at delete, after a mark at ``old_now`` (a refusal
    at mark is final, so each phase gets its own plan)."""
    if phase == "delete":
        monkeypatch.setenv(APPLY_NOW_ENV, str(old_now))
        code, _doc, err = apply(env, "mark", "--apply", "--yes")
        assert code == 0, err
    monkeypatch.setenv(APPLY_NOW_ENV, str(young_now))
    _refused(env, words, phase=phase)
    assert env.zk.exists(ledger_path(LID)) is not None


@pytest.mark.parametrize("phase", ["mark", "delete"])
def test_old_metadata_young_znode_is_refused_by_the_znode_clock(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    wall = _wall()
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(LID): ledger_md(OWNED, ctime_ms=wall - 30 * DAY)})
    _forge(env, [_ledger_action(zk, LID)], min_age_ms=HOUR)
    # young: the wall clock (its znode is seconds old); old: 2 h ahead (old by both stamps)
    _refused_at(env, monkeypatch, phase, _wall(), wall + 2 * HOUR, "(znode ctime), less than the min-age 3600 s")


@pytest.mark.parametrize("phase", ["mark", "delete"])
def test_old_znode_later_metadata_stamp_is_refused_by_the_later_stamp(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    wall = _wall()
    stamped = wall + 2 * HOUR - 10 * 60_000  # the broker's clock: 2 h ahead of ZooKeeper's
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(LID): ledger_md(OWNED, ctime_ms=stamped)})
    _forge(env, [_ledger_action(zk, LID)], min_age_ms=HOUR)
    # young: 2 h ahead (its znode 2 h old, its metadata stamp 10 min); old: 3 h ahead (70 min by the later stamp)
    words = "(metadata ctime), less than the min-age 3600 s"
    _refused_at(env, monkeypatch, phase, wall + 2 * HOUR, wall + 3 * HOUR, words)


def test_old_by_both_stamps_is_deleted(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control of both cases: the same forged shape, old by its znode and by its metadata, goes through."""
    wall = _wall()
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(LID): ledger_md(OWNED, ctime_ms=wall - 30 * DAY)})
    _forge(env, [_ledger_action(zk, LID)], min_age_ms=HOUR)
    monkeypatch.setenv(APPLY_NOW_ENV, str(wall + 2 * HOUR))
    before = dump(zk)
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    assert dump(zk) == before  # mark backs up and journals; the tree is untouched
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"committed": 1}
    assert zk.exists(ledger_path(LID)) is None
