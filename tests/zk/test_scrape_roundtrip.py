"""Scrape a seeded cluster (real ZooKeeper) and check every seeded value comes back decoded in the snapshot."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.cursor import ManagedCursorInfo
from pulsar_ops.formats.ledger_metadata import LedgerMetadata
from pulsar_ops.formats.managed_ledger import ManagedLedgerInfo
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.reader import Snapshot, open_snapshot
from pulsar_ops.testing.model_spec import ALL_KINDS
from pulsar_ops.testing.seeder import SeedOptions, SeedResult, seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

pytestmark = pytest.mark.zk

WALKED = (
    "/managed-ledgers",
    "/ledgers",
    "/schemas",
    "/admin/policies",
    "/admin/local-policies",
    "/admin/partitioned-topics",
    "/admin/clusters",
    "/admin/topic-policies",
    "/namespace",
    "/loadbalance/bundle-data",
)


def _walked(path: str) -> bool:
    return any(path == r or path.startswith(r + "/") for r in WALKED)


@pytest.fixture(scope="module")
def seeded(zk_server: EmbeddedZooKeeper) -> Iterator[tuple[str, SeedResult]]:
    chroot = f"/rt-{uuid.uuid4().hex[:8]}"
    root = KazooClient(hosts=zk_server.hosts)
    root.start(timeout=30)
    root.ensure_path(chroot)
    root.stop()
    root.close()
    c = KazooClient(hosts=zk_server.hosts + chroot)
    c.start(timeout=30)
    try:
        res = seed_cluster(c, None, SeedOptions(topics=60, seed=7, keep_model=True, defects=frozenset(ALL_KINDS)))
        yield zk_server.hosts + chroot, res
    finally:
        c.stop()
        c.close()


@pytest.fixture(scope="module")
def snaps(seeded: tuple[str, SeedResult], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Snapshot]:
    hosts, _ = seeded
    out: dict[str, Snapshot] = {}
    for mode, mr, workers in (("multiread", True, 0), ("fallback", False, 0), ("workers", True, 2)):
        d = tmp_path_factory.mktemp(mode) / "snap"
        scrape(ScrapeConfig(zookeeper=hosts, out=d, multiread=mr, batch=50, workers=workers, decode_chunk=40))
        out[mode] = open_snapshot(d)
    return out


def _rows(snap: Snapshot, table: str) -> list[dict[str, Any]]:
    return snap.table(table).to_pylist()  # type: ignore[no-any-return]


def test_every_seeded_znode_is_in_the_inventory_with_its_exact_bytes(
    seeded: tuple[str, SeedResult], snaps: dict[str, Snapshot]
) -> None:
    _, res = seeded
    assert res.model is not None
    znodes = {r["path"]: r for r in _rows(snaps["multiread"], "znodes")}
    expected = [z for z in res.model.znodes if _walked(z.path)]
    assert len(expected) > 300
    for z in expected:
        row = znodes.get(z.path)
        assert row is not None, z.path
        assert row["data_sha256"] == hashlib.sha256(z.data).hexdigest(), z.path
        assert row["data_length"] == len(z.data)
        assert row["ephemeral_owner"] != 0 if z.ephemeral else row["ephemeral_owner"] == 0


def test_decoded_values_match_the_seeded_objects(seeded: tuple[str, SeedResult], snaps: dict[str, Snapshot]) -> None:
    _, res = seeded
    assert res.model is not None
    snap = snaps["multiread"]
    mls = {r["path"]: r for r in _rows(snap, "managed_ledgers")}
    ll: dict[str, list[int]] = {}
    for r in sorted(_rows(snap, "ledger_list"), key=lambda r: (r["ml_path"], r["idx"])):
        ll.setdefault(r["ml_path"], []).append(r["ledger_id"])
    cursors = {r["path"]: r for r in _rows(snap, "cursors")}
    bk = {r["path"]: r for r in _rows(snap, "bk_ledgers")}
    seen_enc: set[str] = set()
    for z in res.model.znodes:
        if z.kind == "managed-ledger" and isinstance(z.obj, ManagedLedgerInfo):
            row = mls[z.path]
            assert ll.get(z.path, []) == [li.ledger_id for li in z.obj.ledgers], z.path
            assert row["ledger_count"] == len(z.obj.ledgers)
            seen_enc.add(f"ml:{z.encoding}")
            if z.encoding in ("LZ4", "ZSTD"):
                assert row["compression"] == z.encoding
            if z.encoding == "empty":
                assert row["format"] == "empty"
        elif z.kind == "cursor" and isinstance(z.obj, ManagedCursorInfo):
            row = cursors[z.path]
            md = z.obj.mark_delete
            assert (row["mark_delete_ledger_id"], row["mark_delete_entry_id"]) == (md or (None, None))
            assert row["range_count"] == len(z.obj.individual_deleted)
            assert row["cursors_ledger_id"] == z.obj.cursors_ledger_id
        elif z.kind == "bk-ledger" and isinstance(z.obj, LedgerMetadata) and z.encoding in ("v1", "v2", "v3"):
            row = bk[z.path]
            assert row["format_version"] == int(z.encoding[1])
            assert (row["length"], row["last_entry_id"], row["state"]) == (
                z.obj.length,
                z.obj.last_entry_id,
                z.obj.state,
            )
            assert row["ml_name"] == z.obj.custom("pulsar/managed-ledger")
            seen_enc.add(f"bk:{z.encoding}")
    assert {"ml:LZ4", "ml:ZSTD", "bk:v1", "bk:v2", "bk:v3"} <= seen_enc
    # Encoded names, V1 paths and long ledger ids came through.
    assert any("%" in r["encoded_name"] and r["local_name"] != r["encoded_name"] for r in mls.values())
    assert any(r["is_v1"] for r in mls.values())
    assert any(r["ledger_id"] > 2**31 for r in bk.values())
    assert any(r["layout"] == "long" for r in bk.values())


def test_undecodable_znodes_are_named_and_leave_their_scope_complete(
    seeded: tuple[str, SeedResult], snaps: dict[str, Snapshot]
) -> None:
    _, res = seeded
    assert res.model is not None
    snap = snaps["multiread"]
    bad = {z.path: z.encoding for z in res.model.znodes if z.encoding in ("garbage", "truncated")}
    assert bad
    errors = {r["path"]: r for r in _rows(snap, "scrape_errors")}
    assert set(errors) == set(bad)
    for path, enc in bad.items():
        if enc == "truncated":
            assert errors[path]["code"] == "input-truncated"
    znodes = {r["path"]: r for r in _rows(snap, "znodes")}
    for path in bad:
        assert znodes[path]["decode_error"] == errors[path]["code"]
    # read but not decodable: the znode exists with unknown content; its listing (the scope) is whole
    scopes = {r["scope"]: r for r in _rows(snap, "scopes")}
    assert {r["scope"] for r in errors.values()} <= set(scopes)
    assert all(r["complete"] for r in scopes.values())
    m = snap.manifest
    assert m.complete and m.errors_count == len(bad)
    assert m.incomplete_scopes == ()
    assert m.multiread and m.server_versions["local"].startswith("3.")
    assert m.zxid_range["local"]["min"] is not None


def _sorted_table(snap: Snapshot, name: str) -> pa.Table:
    t = snap.table(name)
    keys = [(c, "ascending") for c in t.column_names if not str(t.schema.field(c).type).startswith("list")]
    return t.sort_by(keys) if t.num_rows else t


@pytest.mark.parametrize("other", ["fallback", "workers"])
def test_multiread_fallback_and_worker_decoding_produce_identical_tables(
    snaps: dict[str, Snapshot], other: str
) -> None:
    a, b = snaps["multiread"], snaps[other]
    assert b.manifest.multiread == (other != "fallback")
    for t in schema.TABLES:
        ta, tb = _sorted_table(a, t.name), _sorted_table(b, t.name)
        assert ta.num_rows == tb.num_rows, t.name
        assert ta.equals(tb), t.name
    assert a.manifest.row_counts == b.manifest.row_counts
    assert a.manifest.incomplete_scopes == b.manifest.incomplete_scopes
    assert a.manifest.zxid_range == b.manifest.zxid_range
    if other == "workers":  # the worker processes really wrote parts (numbered from 10000)
        assert any(p.name >= "part-10000" for p in b.table_dir("znodes").glob("part-*.parquet"))


def test_oversized_and_unknown_version_znodes(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    zk.create("/managed-ledgers/t/ns/persistent/big", b"\x0a" * 5000, makepath=True)
    zk.create("/managed-ledgers/t/ns/persistent/ok", b"", makepath=True)
    zk.create("/ledgers/00/0000/L0007", b"BookieMetadataFormatVersion\t7\nxx", makepath=True)
    zk.create("/admin/policies/t", b'{"allowedClusters":["c"]}', makepath=True)
    zk.create("/admin/policies/t/ns", b"{}", makepath=True)
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "s", max_znode_bytes=4096))
    snap = open_snapshot(tmp_path / "s")
    errors = {r["path"]: r for r in _rows(snap, "scrape_errors")}
    assert errors["/managed-ledgers/t/ns/persistent/big"]["code"] == "input-oversized"
    assert errors["/ledgers/00/0000/L0007"]["code"] == "format-version-unknown"
    assert "/managed-ledgers/t/ns/persistent/ok" in {r["path"] for r in _rows(snap, "managed_ledgers")}
    # read but not decodable: named in scrape_errors, and their scopes stay complete (blast radius: the znode)
    assert {r["scope"] for r in errors.values()} == {"/managed-ledgers/t/ns", "/ledgers"}
    assert m.incomplete_scopes == () and m.errors_count == 2


def test_missing_managed_ledgers_root_beside_ledgers_is_not_taken_as_absence(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    zk.create("/ledgers/00/0000/L0001", b"BookieMetadataFormatVersion\t3\n", makepath=True)
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "s"))
    assert ("/managed-ledgers", "zookeeper-root-missing") in {(s.scope, s.code) for s in m.incomplete_scopes}


def test_multiread_probe_and_version_detection_on_a_real_server(zk_server: EmbeddedZooKeeper, zk_hosts: str) -> None:
    from pulsar_ops.scrape.zk import ZkTarget, close, connect, connected_server, host_version, probe_multiread

    target = ZkTarget.parse(zk_hosts)
    client = connect(target)
    try:
        assert probe_multiread(client) is True
        # multiRead is decided per connected server: which one answers, and its srvr version
        assert connected_server(client) == zk_server.hosts
        assert host_version(zk_server.host, zk_server.port) == zk_server.version()
    finally:
        close(client)
