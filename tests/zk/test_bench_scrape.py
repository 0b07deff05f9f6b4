"""`pulsar-ops bench scrape` end to end on a tiny tree: the figures document the README quotes is complete, says
which decoders ran, and the scraper read exactly the znodes the naive walk reads (same tree, same roots).
Speed itself is never asserted (benchmarks print; tests don't time)."""

from __future__ import annotations

import json

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
