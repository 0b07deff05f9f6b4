"""Scraping through ACLs, ZooKeeper restarts and outages: incomplete scopes are recorded, never hidden."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.errors import ConfigError, ZooKeeperError
from pulsar_ops.scrape import zk as zk_scrape
from pulsar_ops.scrape.run import ScrapeConfig, ScrapeProgress, scrape
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.testing.seeder import SeedOptions, seed_cluster
from pulsar_ops.testing.zk_acl import lock_subtree
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkconn import security_from_flags

pytestmark = pytest.mark.zk


def _seed(zk: KazooClient, topics: int = 20) -> None:
    seed_cluster(zk, None, SeedOptions(topics=topics, seed=3, persistent_ownership=True))


def test_no_read_acl_on_one_namespace_makes_only_that_scope_incomplete(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    _seed(zk)
    namespaces = sorted(
        f"/managed-ledgers/{t}/{ns}"
        for t in zk.get_children("/managed-ledgers")
        for ns in zk.get_children(f"/managed-ledgers/{t}")
        if "persistent" in zk.get_children(f"/managed-ledgers/{t}/{ns}")
    )
    locked = namespaces[0]
    lock_subtree(zk_hosts, locked)

    m = scrape(
        ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "a", security=security_from_flags(zk_auth="digest:scraper:pw"))
    )
    assert [(s.scope, s.code) for s in m.incomplete_scopes] == [(locked, "zookeeper-no-auth")]
    snap = open_snapshot(tmp_path / "a")
    scopes = {r["scope"]: r["complete"] for r in snap.table("scopes").to_pylist()}
    assert scopes[locked] is False
    assert all(ok for s, ok in scopes.items() if s != locked)
    assert not any(r["path"].startswith(locked + "/") for r in snap.table("managed_ledgers").to_pylist())
    other = namespaces[1]
    assert any(r["path"].startswith(other + "/") for r in snap.table("managed_ledgers").to_pylist())
    errors = snap.table("scrape_errors").to_pylist()
    assert [(e["path"], e["code"]) for e in errors] == [(locked, "zookeeper-no-auth")]

    # The owner's credentials read everything.
    m2 = scrape(
        ScrapeConfig(
            zookeeper=zk_hosts, out=tmp_path / "b", security=security_from_flags(zk_auth="digest:owner:secret")
        )
    )
    assert m2.incomplete_scopes == ()
    assert m2.row_counts["managed_ledgers"] > m.row_counts["managed_ledgers"]


def _dedicated_server(tmp_path: Path) -> EmbeddedZooKeeper:
    return EmbeddedZooKeeper(data_dir=tmp_path / "zk", heap_mb=256).start()


@pytest.mark.slow
def test_zookeeper_restart_mid_walk_still_gives_a_complete_snapshot(tmp_path: Path) -> None:
    server = _dedicated_server(tmp_path)
    try:
        c = KazooClient(hosts=server.hosts)
        c.start(timeout=30)
        try:
            _seed(c, topics=150)
        finally:
            c.stop()
            c.close()
        clean = scrape(ScrapeConfig(zookeeper=server.hosts, out=tmp_path / "clean"))
        assert clean.incomplete_scopes == ()

        # The restart happens inside the walk by construction: the walk calls on_batch synchronously after each
        # processed read batch, and the 20th one restarts the server before the walk may go on (with 10 reads
        # a batch, the seeded tree has hundreds of batches left then).
        restarted_at: list[int] = []
        batches_after: list[int] = []

        def on_batch(n: int) -> None:
            if not restarted_at and n == 20:
                restarted_at.append(n)
                server.restart()
            elif restarted_at:
                batches_after.append(n)

        m = scrape(
            ScrapeConfig(
                zookeeper=server.hosts,
                out=tmp_path / "restart",
                batch=10,
                window=2,
                on_batch=on_batch,
                retry_seconds=120,
            )
        )
        assert restarted_at == [20]
        assert len(batches_after) > 10, "the walk went on after the restart"
        assert m.complete and m.incomplete_scopes == ()
        assert m.row_counts == clean.row_counts
    finally:
        server.cleanup()


@pytest.mark.slow
def test_zookeeper_gone_for_good_names_the_missing_scopes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Reads issued after the kill sit in kazoo's queue (it keeps reconnecting) until the scraper's per-request
    # timeout, 60 s, then take the connection-lost path: re-issue, wait retry_seconds, abandon. A shorter request
    # timeout takes the same path sooner; before the kill a slow answer only means a re-issued batch.
    monkeypatch.setattr(zk_scrape, "REQUEST_TIMEOUT", 10.0)
    server = _dedicated_server(tmp_path)
    try:
        c = KazooClient(hosts=server.hosts)
        c.start(timeout=30)
        try:
            _seed(c, topics=100)
        finally:
            c.stop()
            c.close()
        stopped = threading.Event()

        def progress(p: ScrapeProgress) -> None:
            if not stopped.is_set() and p.znodes > 150:
                stopped.set()
                server.stop(kill=True)

        m = scrape(
            ScrapeConfig(
                zookeeper=server.hosts,
                out=tmp_path / "gone",
                batch=10,
                window=2,
                progress=progress,
                retry_seconds=3,
            )
        )
        assert stopped.is_set()
        assert m.finished and not m.complete  # the snapshot is finished, not complete ...
        codes = {s.code for s in m.incomplete_scopes}
        assert codes == {"zookeeper-unavailable"}  # ... and says exactly what it could not read
        snap = open_snapshot(tmp_path / "gone")
        assert all(e["code"] == "zookeeper-unavailable" for e in snap.table("scrape_errors").to_pylist())
    finally:
        server.cleanup()


def test_bad_targets_are_clear_errors(zk_server: EmbeddedZooKeeper, zk_hosts: str, tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperError, match="chroot /does-not-exist"):
        scrape(ScrapeConfig(zookeeper=f"{zk_server.hosts}/does-not-exist", out=tmp_path / "x"))
    assert not (tmp_path / "x").exists()
    with pytest.raises(ConfigError):
        scrape(ScrapeConfig(zookeeper="user:pw@host:2181", out=tmp_path / "y"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty"):
        scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "full"))
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    with pytest.raises(ConfigError, match="zk-auth"):
        security_from_flags(zk_auth="digest")


def test_separate_config_store(zk_server: EmbeddedZooKeeper, tmp_path: Path) -> None:
    roots = KazooClient(hosts=zk_server.hosts)
    roots.start(timeout=30)
    import uuid

    a, b = f"/loc-{uuid.uuid4().hex[:6]}", f"/cfg-{uuid.uuid4().hex[:6]}"
    roots.ensure_path(a)
    roots.ensure_path(b)
    roots.stop()
    roots.close()
    local = KazooClient(hosts=zk_server.hosts + a)
    config = KazooClient(hosts=zk_server.hosts + b)
    local.start(timeout=30)
    config.start(timeout=30)
    try:
        seed_cluster(local, config, SeedOptions(topics=10, seed=5, persistent_ownership=True))
        m = scrape(
            ScrapeConfig(zookeeper=zk_server.hosts + a, config_zookeeper=zk_server.hosts + b, out=tmp_path / "s")
        )
    finally:
        for c in (local, config):
            c.stop()
            c.close()
    snap = open_snapshot(tmp_path / "s")
    assert m.stores["config"]["chroot"] == b and m.stores["local"]["chroot"] == a
    stores = {(r["store"], r["kind"]) for r in snap.table("znodes").to_pylist()}
    assert ("config", "namespace") in stores and ("local", "managed-ledger") in stores
    assert ("local", "namespace") not in stores
    assert m.row_counts["namespaces"] > 0 and m.incomplete_scopes == ()
