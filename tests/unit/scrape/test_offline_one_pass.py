"""The offline scrape reads the snapshot once, handing nodes to the decoders as it verifies it (one-pass mode).
A newest snapshot whose corruption only shows at its seal, after nodes were handed on, must leave no trace: the
scrape starts over in two passes and falls back to the previous snapshot, as a corrupt one always did."""

from __future__ import annotations

from pathlib import Path

from pulsar_ops.scrape.offline import OfflineScrapeConfig, _scrape, scrape_data_dir
from pulsar_ops.snapshot.reader import open_snapshot
from tests.unit.zkdata.snapshot_bytes import encode_snapshot
from tests.unit.zkdata.snapshot_bytes import stat as _stat


def _tree(extra: list[tuple[str, bytes, bytes]]) -> list[tuple[str, bytes, bytes]]:
    base = [
        ("", b"", _stat(0, cversion=2)),
        ("/admin", b"", _stat(1, cversion=1)),
        ("/admin/clusters", b"", _stat(2)),
        ("/managed-ledgers", b"", _stat(3, cversion=len(extra))),
    ]
    return base + extra


def _paths(out: Path) -> set[str]:
    return {r["path"] for r in open_snapshot(out).table("znodes").to_pylist()}


def test_a_newest_snapshot_corrupt_at_its_seal_leaves_no_row_and_falls_back(tmp_path: Path) -> None:
    v2 = tmp_path / "data" / "version-2"
    v2.mkdir(parents=True)
    (v2 / "snapshot.4").write_bytes(encode_snapshot(_tree([("/managed-ledgers/old", b"OLD-DATA", _stat(4))])))
    newest = encode_snapshot(_tree([("/managed-ledgers/new", b"NEW-DATA", _stat(9))]))
    at = newest.index(b"NEW-DATA")
    (v2 / "snapshot.9").write_bytes(newest[:at] + b"X" + newest[at + 1 :])  # parses; only the seal tells

    good = tmp_path / "good"
    scrape_data_dir(OfflineScrapeConfig(out=good, zk_data_dir=tmp_path / "data", workers=0))
    m = open_snapshot(good).manifest
    local = m.zk_data_dirs["local"]
    assert local["snapshot"] == "snapshot.4"
    assert [f["snapshot"] for f in local["fallbacks"]] == ["snapshot.9"]
    assert "CRC" in local["fallbacks"][0]["reason"]
    paths = _paths(good)
    assert "/managed-ledgers/old" in paths
    assert "/managed-ledgers/new" not in paths  # emitted before the seal failed, then discarded
    assert sorted(p for p in paths if p.startswith("/managed-ledgers")) == ["/managed-ledgers", "/managed-ledgers/old"]

    # the same tree as the valid newest snapshot alone: no duplicate rows from the first attempt
    (v2 / "snapshot.9").unlink()
    ref = tmp_path / "ref"
    scrape_data_dir(OfflineScrapeConfig(out=ref, zk_data_dir=tmp_path / "data", workers=0))
    rows = sorted(map(repr, open_snapshot(good).table("znodes").to_pylist()))
    assert rows == sorted(map(repr, open_snapshot(ref).table("znodes").to_pylist()))


def _rows(out: Path, table: str) -> list[str]:
    return sorted(map(repr, open_snapshot(out).table(table).to_pylist()))


def test_one_pass_equals_two_passes_with_a_separate_configuration_store(tmp_path: Path) -> None:
    """--config-zk-data-dir: each store's directory read in one pass gives the tables the two-pass read gives,
    each node under its own store (the local tree's /admin is not the configuration store's)."""
    local = tmp_path / "local" / "version-2"
    config = tmp_path / "config" / "version-2"
    local.mkdir(parents=True)
    config.mkdir(parents=True)
    local_tree = [*_tree([("/managed-ledgers/t", b"L", _stat(5))]), ("/ledgers", b"", _stat(6))]
    (local / "snapshot.6").write_bytes(encode_snapshot(local_tree))
    config_tree = [
        ("", b"", _stat(0, cversion=1)),
        ("/admin", b"", _stat(1, cversion=1)),
        ("/admin/clusters", b"", _stat(2, cversion=1)),
        ("/admin/clusters/c1", b"{}", _stat(3)),
    ]
    (config / "snapshot.3").write_bytes(encode_snapshot(config_tree))
    outs = []
    for one_pass in (True, False):
        out = tmp_path / f"out-{one_pass}"
        cfg = OfflineScrapeConfig(
            out=out, zk_data_dir=tmp_path / "local", config_zk_data_dir=tmp_path / "config", workers=0
        )
        _scrape(cfg, one_pass=one_pass)
        outs.append(out)
    for table in ("znodes", "clusters", "scopes"):
        assert _rows(outs[0], table) == _rows(outs[1], table)
    stores = {(r["store"], r["path"]) for r in open_snapshot(outs[0]).table("znodes").to_pylist()}
    assert ("config", "/admin/clusters/c1") in stores
    assert ("local", "/managed-ledgers/t") in stores
    assert not any(p.startswith("/admin") for s, p in stores if s == "local")
