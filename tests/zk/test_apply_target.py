"""The target is the plan's target (issue 29, deliverable 2), against the embedded real ZooKeeper.

A staging or DR copy restored from a ZooKeeper snapshot has the same ``INSTANCEID`` and cluster names as the
cluster a plan was made from. ``apply`` and ``restore`` also compare the address recorded at scrape time (each
store's chroot and ensemble) and the ledgers root's ``LAYOUT``; a refused target journals nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.zk.repair_cluster import dump, walk
from tests.zk.test_apply import Env, apply, cli, make_env

pytestmark = pytest.mark.zk


def _copy_tree(src: KazooClient, hosts: str, chroot: str) -> KazooClient:
    """A byte-identical copy of ``src``'s chroot under ``chroot`` (what restoring a ZooKeeper snapshot into
    another chroot gives): same INSTANCEID, same cluster names. Returns a started client rooted there."""
    root = KazooClient(hosts=hosts)
    root.start(timeout=30)
    try:
        root.ensure_path(chroot)
    finally:
        root.stop()
        root.close()
    copy = KazooClient(hosts=hosts + chroot)
    copy.start(timeout=30)
    for path, (data, _st) in sorted(walk(src).items(), key=lambda kv: kv[0].count("/")):
        if path != "/":
            copy.create(path, data, acl=src.get_acls(path)[0])
    return copy


def _refused(env: Env, hosts: str, phase: str, code: str) -> str:
    rc, _out, err = cli(
        "apply", str(env.plan), "--zookeeper", hosts, "--phase", phase, "--apply", "--yes", "--quarantine", "0"
    )
    assert rc == 3, err
    assert code in err, err
    return err


def test_same_identity_copy_under_another_chroot_is_refused(
    zk: KazooClient, zk_server: Any, zk_hosts: str, tmp_path: Path
) -> None:
    env = make_env(zk, zk_hosts, tmp_path)
    chroot = "/" + zk_hosts.split("/", 1)[1] + "-dr"
    copy = _copy_tree(zk, zk_server.hosts, chroot)
    try:
        assert dump(copy).keys() == dump(zk).keys()  # the same tree, INSTANCEID and cluster names included
        copy_hosts = zk_server.hosts + chroot
        before_copy, before = dump(copy), dump(zk)
        err = _refused(env, copy_hosts, "mark", "target-chroot-mismatch")
        assert "scraped from /" in err and "DR copy" in err  # the message and the hint
        assert not env.journal.exists() and not env.backup.exists()
        # mark the real target, then a delete aimed at the copy: refused, the journal not appended to
        assert apply(env, "mark", "--apply", "--yes")[0] == 0
        journal = env.journal.read_bytes()
        _refused(env, copy_hosts, "delete", "target-chroot-mismatch")
        assert env.journal.read_bytes() == journal
        # restore of the plan's backup into the copy: refused the same way
        rc, _o, err = cli("restore", str(env.backup), "--zookeeper", copy_hosts, "--apply", "--yes")
        assert rc == 3 and "target-chroot-mismatch" in err, err
        assert dump(copy) == before_copy and dump(zk) == before
        # and the right target still applies the plan
        code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
        assert code == 0 and doc is not None and set(doc["counts"]) == {"committed"}, err
    finally:
        copy.stop()
        copy.close()


def test_another_ensemble_with_the_same_chroot_is_refused(
    zk: KazooClient, zk_server: Any, zk_hosts: str, tmp_path: Path
) -> None:
    """The same server under another name cannot be told from a copy on another ensemble: refused, with a
    hint to use the scraped address or re-scrape."""
    env = make_env(zk, zk_hosts, tmp_path)
    port = zk_server.hosts.rsplit(":", 1)[1]
    other = f"localhost:{port}/" + zk_hosts.split("/", 1)[1]
    before = dump(zk)
    err = _refused(env, other, "mark", "target-ensemble-mismatch")
    assert "share none with the ensemble" in err
    assert not env.journal.exists() and dump(zk) == before


def test_a_changed_ledger_layout_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    zk.create("/ledgers/LAYOUT", b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1\n", makepath=True)
    env = make_env(zk, zk_hosts, tmp_path)
    zk.set("/ledgers/LAYOUT", b"2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1\n")
    before = dump(zk)
    err = _refused(env, zk_hosts, "mark", "target-mismatch")
    assert "LAYOUT" in err and "LongHierarchical" in err
    assert not env.journal.exists() and dump(zk) == before


def test_the_scrape_records_the_address_and_the_ledger_layout(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    from pulsar_ops.scrape.run import ScrapeConfig, scrape

    zk.create("/ledgers/INSTANCEID", b"iid", makepath=True)
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "a"))
    assert m.identity["ledger_layout"] == ""  # no LAYOUT znode: recorded as absent, and compared so
    zk.create("/ledgers/LAYOUT", b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1\n")
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "b"))
    assert m.identity["ledger_layout"] == "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"
    hosts, chroot = zk_hosts.split("/", 1)
    assert m.stores["local"] == {"hosts": hosts, "chroot": "/" + chroot} == m.stores["config"]
