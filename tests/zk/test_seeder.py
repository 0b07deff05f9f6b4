"""Seeding a real ZooKeeper chroot: exact bytes, layouts, stores, ownership modes, refusal, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.errors import SeedTargetNotEmptyError
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.testing.model_spec import ALL_KINDS, CONFIG, LOCAL, SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

pytestmark = pytest.mark.zk


def test_every_znode_written_byte_exact(zk: Any) -> None:
    res = seed_cluster(zk, None, SeedOptions(topics=60, seed=3, keep_model=True, defects=frozenset(ALL_KINDS)))
    assert res.model is not None
    assert res.znodes_written == len(res.model.znodes) == res.ground_truth["counts"]["znodes"] - 1  # /admin once
    for z in res.model.znodes:
        data, stat = zk.get(z.path)
        assert data == z.data, z.path
        assert (stat.ephemeralOwner != 0) == z.ephemeral, z.path
    # decoders read back what was written: long layout, compressed infos, V1 paths, encoded names
    high = [z for z in res.model.of_kind("bk-ledger") if z.path.startswith("/ledgers/000/0000/0021/4748/L")]
    assert high
    for z in high[:5]:
        assert decode_ledger_metadata(zk.get(z.path)[0], z.path) == z.obj
    assert zk.exists(ledger_path(2147483647)) and zk.exists(ledger_path(2147483646))
    compressed = [z for z in res.model.of_kind("managed-ledger") if z.encoding in ("LZ4", "ZSTD")]
    assert {z.encoding for z in compressed} == {"LZ4", "ZSTD"}
    for z in compressed:
        d = decode_managed_ledger_info(zk.get(z.path)[0], z.path)
        assert d.info == z.obj and d.compression == z.encoding
    v1 = [z for z in res.model.of_kind("managed-ledger") if z.path.startswith("/managed-ledgers/legacy/pulsar-east/")]
    assert v1
    hostile = [z for z in res.model.of_kind("cursor") if "%" in z.path or "+" in z.path]
    assert hostile
    for z in hostile:
        assert decode_cursor_info(zk.get(z.path)[0], z.path).info == z.obj
    assert zk.get("/ledgers/LAYOUT")[0].startswith(b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory")
    owners = zk.get_children("/namespace/acme")
    assert owners


def test_separate_config_store_and_persistent_ownership(zk: Any, zk_server: Any, zk_chroot: str) -> None:
    cfg = KazooClient(hosts=f"{zk_server.hosts}{zk_chroot}")
    cfg.start(timeout=30)
    try:
        cfg.ensure_path("/config")
    finally:
        cfg.stop()
        cfg.close()
    config = KazooClient(hosts=f"{zk_server.hosts}{zk_chroot}/config")
    config.start(timeout=30)
    try:
        local = KazooClient(hosts=f"{zk_server.hosts}{zk_chroot}/local")
        zk.ensure_path("/local")
        local.start(timeout=30)
        try:
            opts = SeedOptions(topics=20, seed=1, keep_model=True, persistent_ownership=True, defects=frozenset())
            res = seed_cluster(local, config, opts)
        finally:
            local.stop()
            local.close()
        assert res.model is not None
        assert config.exists("/admin/policies") and not config.exists("/managed-ledgers")
        assert zk.exists("/local/managed-ledgers") and not zk.exists("/local/admin/policies")
        assert zk.exists("/local/admin/local-policies")
        for z in res.model.znodes:
            client_path = ("/config" if z.store == CONFIG else "/local") + z.path
            assert zk.exists(client_path) is not None, client_path
        # persistent ownership outlives the seeding session
        ns = next(z for z in res.model.of_kind("bundle-owner") if z.store == LOCAL)
        stat = zk.exists("/local" + ns.path)
        assert stat is not None and stat.ephemeralOwner == 0
    finally:
        config.stop()
        config.close()


def test_ephemeral_ownership_vanishes_with_the_session(zk_hosts: str, zk: Any) -> None:
    seeding = KazooClient(hosts=zk_hosts)
    seeding.start(timeout=30)
    try:
        res = seed_cluster(seeding, None, SeedOptions(topics=10, seed=2, defects=frozenset(), keep_model=True))
        assert res.model is not None
        owner = res.model.of_kind("bundle-owner")[0].path
        assert zk.exists(owner) is not None
    finally:
        seeding.stop()
        seeding.close()
    assert zk.exists(owner) is None
    assert zk.exists("/managed-ledgers") is not None


def test_refuses_a_non_empty_target(zk: Any) -> None:
    seed_cluster(zk, None, SeedOptions(topics=5, defects=frozenset()))
    before = zk.get_children("/managed-ledgers")
    with pytest.raises(SeedTargetNotEmptyError) as e:
        seed_cluster(zk, None, SeedOptions(topics=5, seed=9))
    assert e.value.code == "seed-target-not-empty" and "pulsar-ops seed" in e.value.hint
    assert zk.get_children("/managed-ledgers") == before


def test_cli_seed_writes_ground_truth_and_exits(zk_hosts: str, tmp_path: Path) -> None:
    from pulsar_ops.cli.main import app

    gt_file = tmp_path / "truth.json"
    runner = CliRunner()
    args = [
        "seed",
        "--zookeeper",
        zk_hosts + "/cli",
        "--topics",
        "15",
        "--seed",
        "4",
        "--defects",
        "ack-holes,znode-leak",
        "--ground-truth",
        str(gt_file),
    ]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    gt = json.loads(gt_file.read_text())
    assert gt["seed"] == 4 and gt["topics"] == 15
    assert gt["counts"]["ack-holes"] >= 1 and gt["counts"]["orphan-ledger"] == 0
    assert gt["options"]["persistent_ownership"] is True
    r2 = runner.invoke(app, args)
    assert r2.exit_code == 3
    assert "/managed-ledgers already exists" in r2.output and "hint: seed into a fresh" in r2.output
    r3 = runner.invoke(app, ["seed", "--zookeeper", zk_hosts + "/other", "--defects", "bogus"])
    assert r3.exit_code == 3 and "unknown defect kind 'bogus'" in r3.output
