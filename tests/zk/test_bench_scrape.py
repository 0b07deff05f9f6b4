"""`pulsar-ops bench scrape` end to end on a tiny tree: the figures document the README quotes is complete, says
which decoders ran, and the scraper read exactly the znodes the naive walk reads (same tree, same roots).
Speed itself is never asserted (benchmarks print; tests don't time)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pulsar_ops import native
from pulsar_ops.cli.main import app

pytestmark = [pytest.mark.zk, pytest.mark.slow]


def test_bench_scrape_reports_both_walks_and_the_decoders() -> None:
    r = CliRunner().invoke(app, ["bench", "scrape", "--topics", "30", "--naive-max-seconds", "60", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    s, naive, walk = doc["scraper"], doc["naive"], doc["walk_only"]
    assert naive["finished"] is True
    assert s["znodes"] == naive["znodes"] == walk["znodes"] > 100
    assert s["incomplete_scopes"] == 0 and s["multiread"] is True
    assert s["native"] == native.STATUS
    assert set(doc["targets"]) == {"znodes_per_s>=50000", "ratio>=20", "rss<1GB"}
    assert f"decoders {native.STATUS}" in r.stderr


def test_bench_scrape_of_a_kept_data_directory_compares_offline_and_live(tmp_path: Path) -> None:
    """`--zk-data-dir --keep-data-dir`: a real server's directory built once, then the offline and the live
    scrape of the same tree; their tables hold the same rows. A second run reuses the directory; another tree
    size is refused rather than mixed up."""
    kept = tmp_path / "zk"
    args = ["bench", "scrape", "--topics", "20", "--zk-data-dir", "--keep-data-dir", str(kept), "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    o, s = doc["offline"], doc["scraper"]
    assert o["znodes"] == s["znodes"] > 100 and doc["row_counts_equal"] is True
    assert doc["row_count_differences"] == {} and o["replayed_txns"] >= 1
    assert doc["targets"]["same_row_counts"] is True and "offline_rss<1.5GB" in doc["targets"]
    assert (kept / "BUILT.json").is_file() and "row counts equal" in r.stderr
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "reusing the data directory" in again.stderr
    other = CliRunner().invoke(app, [*args[:3], "21", *args[4:]])
    assert other.exit_code != 0 and "holds another tree" in other.stderr
