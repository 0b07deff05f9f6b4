"""The offline scrape reads the snapshot once, handing nodes to the decoders as it verifies it (one-pass mode).
A newest snapshot whose corruption only shows at its seal, after nodes were handed on, must leave no trace: the
scrape starts over in two passes and falls back to the previous snapshot, as a corrupt one always did."""

from __future__ import annotations

from pathlib import Path

from pulsar_ops.scrape.offline import OfflineScrapeConfig, scrape_data_dir
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
