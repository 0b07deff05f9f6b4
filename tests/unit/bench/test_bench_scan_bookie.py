"""`pulsar-ops bench scan-bookie` at a tiny size: its figures are printed and in the JSON (no timing asserted)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pulsar_ops.cli.main import app


def test_bench_scan_bookie_reports_both_paths() -> None:
    r = CliRunner().invoke(
        app,
        [
            "bench",
            "scan-bookie",
            "--logs",
            "6",
            "--ledgers",
            "50",
            "--ledgers-per-log",
            "20",
            "--log-mb",
            "2",
            "--dense-mb",
            "1",
            "--big-map-mb",
            "1",
            "--dense-small-mb",
            "1",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["generated"]["logs"] == 6 and doc["generated"]["pairs"] == 6 * 20
    for path, via in (("map_path", "map"), ("scan_path", "scanned")):
        p = doc[path]
        assert p["logs"] == 6 and p["pairs"] == 120 and p["via"][via] == 6
        assert {
            "pairs_per_s",
            "logs_per_s",
            "mb_per_s",
            "logical_gb_per_s",
            "seconds",
            "read_mb",
            "cpu_seconds",
        } <= set(p)
    assert doc["same_pairs"] is True and doc["peak_rss_mb"] > 0
    dense = doc["dense_scan"]
    assert dense["read_via"] == {"map": 0, "scanned": 1, "skipped": 0} and dense["entries"] == (1 << 20) // 1028
    assert {"mb_per_s", "entries_per_s", "mb_per_cpu_s", "seconds"} <= set(dense)
    big, small = doc["big_map"], doc["dense_small"]
    assert big["pairs"] == (1 << 20) // 16 and big["read_via"]["map"] == 1 and big["peak_rss_mb"] > 0
    assert small["entries"] == ((1 << 20) - 1024) // 16 and small["read_via"]["scanned"] == 1
    assert small["peak_rss_mb"] > 0 and small["ledgers"] == min(small["entries"], 1_000_000)
    assert set(doc["targets"]) == {
        "map path >= 1,000,000 pairs/s",
        "peak RSS < 500 MB",
        "big map: scan-bookie peak RSS < 500 MB",
        "dense small-record log: scan-bookie peak RSS < 500 MB",
    }
    for word in ("pairs/s", "logs/s", "MB/s", "peak RSS", "pairs/cpu-s"):
        assert word in r.stderr
