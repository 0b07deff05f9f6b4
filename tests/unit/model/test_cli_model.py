"""CLI contracts of `pulsar-ops model gc|cache|nack` and `pulsar-ops bench model`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app

MB = 1_000_000


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


LAYOUT = {
    "bookies": {
        "bk-1:3181": {
            "disk_bytes": 100 * MB,
            "entry_logs": [
                {"id": 1, "ledgers": {"10": 5 * MB}},
                {"id": 2, "ledgers": {"10": 1 * MB, "11": 4 * MB}},
                {"id": 3, "ledgers": {"10": 3 * MB, "11": 3 * MB}},
            ],
        },
        "bk-2:3181": {"disk_bytes": 100 * MB, "entry_logs": [{"id": 7, "ledgers": {"10": 9 * MB, "12": 1 * MB}}]},
    },
    "delete_ledgers": [10],
    "entry_size": 1000,
    "config": {"majorCompactionThreshold": 0.5},
}


def test_gc_json_contract(tmp_path: Path) -> None:
    r = invoke("model", "gc", "--layout", str(write(tmp_path, "l.json", LAYOUT)), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["bookies"]) == {"bk-1:3181", "bk-2:3181"}
    for part in (*doc["bookies"].values(), doc["total"]):
        assert set(part["reclaimed_bytes"]) == {"deletion", "minor", "major"}
        for key in ("unreclaimable_bytes", "rewrite_bytes", "compaction_seconds", "timeline"):
            assert key in part
    assert doc["bookies"]["bk-1:3181"]["reclaimed_bytes"] == {"deletion": 5 * MB, "minor": 0, "major": 0}
    assert doc["bookies"]["bk-2:3181"]["reclaimed_bytes"] == {"deletion": 0, "minor": 9 * MB, "major": 0}
    assert doc["total"]["rewrite_bytes"] == 1 * MB
    # log 2 (usage 0.8) and log 3 (usage 0.5) are at or above the 0.5 major threshold: never compacted
    assert doc["total"]["unreclaimable_bytes"] == 4 * MB
    assert doc["total"]["unreclaimable_by_reason"] == {"usage-at-or-above-compaction-threshold": 4 * MB}
    assert doc["config"]["majorCompactionThreshold"] == 0.5
    assert "garbage after the deletions" in r.stderr


def test_gc_pulsar_preset_and_overrides(tmp_path: Path) -> None:
    lay = {**LAYOUT, "config": {}}
    path = str(write(tmp_path, "l.json", lay))
    bk = json.loads(invoke("model", "gc", "--layout", path, "--json").stdout)
    pulsar = json.loads(invoke("model", "gc", "--layout", path, "--pulsar-conf", "--json").stdout)
    assert bk["config"]["gcWaitTime"] == 600_000 and pulsar["config"]["gcWaitTime"] == 900_000
    # BookKeeper's 0.8 major threshold compacts log 3 (usage 0.5); Pulsar's 0.5 does not
    assert bk["total"]["reclaimed_bytes"]["major"] > pulsar["total"]["reclaimed_bytes"]["major"]
    over = json.loads(invoke("model", "gc", "--layout", path, "--set", "gcWaitTime=60000", "--json").stdout)
    assert over["total"]["timeline"][0]["t_ms"] == 60_000


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ({"bookies": {}}, "non-empty"),
        ({**LAYOUT, "config": {"majorCompactionThreshold": 2}}, "must be <= 1"),
        ({**LAYOUT, "entry_size": 0}, "entry_size"),
    ],
)
def test_gc_bad_input_exits_3_with_code_and_hint(tmp_path: Path, content: Any, needle: str) -> None:
    r = invoke("model", "gc", "--layout", str(write(tmp_path, "bad.json", content)), "--json")
    assert r.exit_code == 3
    assert r.stderr.startswith("error[model-input-invalid]") and needle in r.stderr and "hint:" in r.stderr
    # with --json the failure is one JSON document on stdout too
    assert json.loads(r.stdout)["error"]["code"] == "model-input-invalid"


def test_gc_missing_file_and_no_input() -> None:
    r = invoke("model", "gc", "--layout", "/nonexistent/l.json")
    assert r.exit_code == 3 and "cannot read the layout file" in r.stderr
    r = invoke("model", "gc")
    assert r.exit_code == 3 and "--layout" in r.stderr


def test_gc_plot(tmp_path: Path) -> None:
    out = tmp_path / "gc.svg"
    r = invoke("model", "gc", "--layout", str(write(tmp_path, "l.json", LAYOUT)), "--plot", str(out))
    assert r.exit_code == 0, r.output
    assert out.read_text().lstrip().startswith("<?xml")
    r = invoke("model", "gc", "--layout", str(write(tmp_path, "l.json", LAYOUT)), "--plot", str(tmp_path / "x.gif"))
    assert r.exit_code == 3


WORKLOAD = {
    "topics": 10,
    "duration_s": 3,
    "publish_rate": 100,
    "subscriptions": {"tailing": 1, "key_shared": 1},
    "cache_mb": 8,
}


def test_cache_json_contract_and_plot(tmp_path: Path) -> None:
    wl = str(write(tmp_path, "w.json", WORKLOAD))
    png = tmp_path / "cache.png"
    r = invoke("model", "cache", "--workload", wl, "--policy", "both", "--json", "--plot", str(png))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["hit_rate"]) == {"legacy", "pip430"}
    for p in doc["policies"].values():
        assert 0 <= p["hit_rate"] <= 1
        assert set(p["evicted_bytes"]) == {"ttl", "size", "invalidation", "unload"}
        assert "bookkeeper_reads_per_s" in p and "eviction_work" in p
    assert png.read_bytes()[:4] == b"\x89PNG"
    one = json.loads(invoke("model", "cache", "--workload", wl, "--policy", "pip430", "--json").stdout)
    assert set(one["hit_rate"]) == {"pip430"} and one["hit_rate"]["pip430"] == doc["hit_rate"]["pip430"]
    bad = invoke("model", "cache", "--workload", wl, "--policy", "lru")
    assert bad.exit_code == 3 and "is not one of" in bad.stderr
    bad = invoke("model", "cache", "--workload", str(write(tmp_path, "b.json", {"topics": -1})))
    assert bad.exit_code == 3 and "topics" in bad.stderr


def test_nack_json_contract_and_plot(tmp_path: Path) -> None:
    svg = tmp_path / "nack.svg"
    r = invoke("model", "nack", "--rate", "10000", "--delay", "1m", "--json", "--plot", str(svg))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["entries"] == 600_000
    for key in ("old", "new"):
        assert doc[key]["bytes"] > 0 and doc[key]["bytes_per_entry"] > 0
    assert doc["max_early_ms"] == 255 and doc["max_late_ms"] == 20_000
    assert svg.exists()
    r = invoke("model", "nack", "--rate", "100", "--delay", "soon")
    assert r.exit_code == 3 and "not a duration" in r.stderr
    r = invoke(
        "model",
        "nack",
        "--rate",
        "100",
        "--delay",
        "1m",
        "--precision-bits",
        "0",
        "--entries-per-ledger",
        "1000",
        "--json",
    )
    assert json.loads(r.stdout)["max_early_ms"] == 0


def test_bench_model_prints_figures() -> None:
    r = invoke(
        "bench",
        "model",
        "--cache-topics",
        "5",
        "--cache-seconds",
        "0.5",
        "--gc-logs",
        "200",
        "--impact-ledgers",
        "500",
        "--json",
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["cache"]["pip430"]["entry_ops_per_s"] > 0 and doc["gc"]["entry_logs"] == 200
    assert "simulated entry ops/s" in r.stderr and "entry logs in" in r.stderr


def _snapshot(tmp_path: Path) -> Path:
    from pulsar_ops.snapshot import schema
    from pulsar_ops.snapshot.manifest import Manifest, write_manifest
    from pulsar_ops.snapshot.writer import SnapshotWriter

    defaults = {
        "string": "",
        "int64": 0,
        "int32": 0,
        "bool": False,
        "double": 0.0,
        "list<string>": [],
        "list<int64>": [],
    }
    cols = schema.table("bk_ledgers").columns
    snap = tmp_path / "snap"
    w = SnapshotWriter(snap)
    gib = 1 << 30
    # ledgers 1 and 2 written side by side (every log half/half), ledger 3 alone afterwards
    for lid, start, end in ((1, 0, 100_000), (2, 0, 100_000), (3, 200_000, 300_000)):
        row = {c.name: defaults[c.type] for c in cols}
        row.update(
            ledger_id=lid,
            path=f"/ledgers/L{lid:010d}",
            state="CLOSED",
            length=2 * gib,
            last_entry_id=-1,
            ensemble_size=1,
            write_quorum=1,
            ack_quorum=1,
            ctime_ms=start,
            bookies=["bk-1:3181"],
        )
        w.add("bk_ledgers", row)
        w.add(
            "ledger_list",
            {
                "ml_path": "/managed-ledgers/t/ns/persistent/x",
                "topic": "persistent://t/ns/x",
                "namespace": "t/ns",
                "idx": lid,
                "ledger_id": lid,
                "timestamp_ms": end,
                "is_last": False,
                "offloaded": False,
                "bookkeeper_deleted": False,
            },
        )
    w.add("bookies", {"bookie_id": "bk-1:3181", "readonly": False, "total_bytes": 100 * gib})
    counts = w.close()
    manifest = Manifest(
        snapshot_id="s1",
        cluster=None,
        tool_version="0",
        schema_version=schema.SCHEMA_VERSION,
        complete=True,
        started_at_ms=400_000,
        finished_at_ms=500_000,
        zxid_range={},
        stores={},
        ledgers_root="/ledgers",
        row_counts=counts,
    )
    write_manifest(snap, manifest)
    return snap


def test_gc_from_a_snapshot_estimates_the_layout(tmp_path: Path) -> None:
    snap = str(_snapshot(tmp_path))
    doc = json.loads(invoke("model", "gc", "--snapshot", snap, "--delete", "1,3", "--json").stdout)
    assert doc["start_ms"] == 500_000  # the snapshot's finish time
    t = doc["total"]
    gib = 1 << 30
    assert t["reclaimed_bytes"]["deletion"] == 2 * gib  # ledger 3's two logs
    assert t["reclaimed_bytes"]["major"] == 2 * gib  # ledger 1's halves of four logs (usage 0.5 < 0.8)
    assert doc["bookies"]["bk-1:3181"]["disk_bytes"] == 100 * gib
    est = sum(doc["bookies"]["bk-1:3181"]["reclaimed_bytes"].values())
    band = doc["bookies"]["bk-1:3181"]["reclaim_range"]  # the estimate over 8 log-boundary phases
    assert band["phases"] == 8 and band["low"] <= est <= band["high"] and band["low"] < band["high"]
    pulsar = json.loads(invoke("model", "gc", "--snapshot", snap, "--delete", "1", "--pulsar-conf", "--json").stdout)
    assert pulsar["total"]["unreclaimable_bytes"] == 2 * gib  # 0.5 is not below Pulsar's 0.5
    r = invoke("model", "gc", "--snapshot", snap, "--delete", "99")
    assert r.exit_code == 3 and "not in the snapshot" in r.stderr


def test_gc_with_a_bookie_scan_uses_the_measured_layout_and_says_so(tmp_path: Path) -> None:
    from pulsar_ops.bookiescan.run import ScanConfig, scan
    from pulsar_ops.testing.entrylog_writer import entry_log_path, write_entry_log, write_last_id

    snap = str(_snapshot(tmp_path))
    d = tmp_path / "bk-1" / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(lid, e, 980) for e in range(3) for lid in (1, 2)])  # 3,000 B each
    write_entry_log(entry_log_path(d, 2), 2, [(3, e, 980) for e in range(4)])  # ledger 3 alone: 4,000 B
    write_last_id(d, 2)
    out = tmp_path / "scan"
    scan(ScanConfig(ledger_dirs=[d], bookie_id="bk-1:3181", out=out))
    r = invoke("model", "gc", "--snapshot", snap, "--delete", "1,3", "--bookie-scan", str(out), "--json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["layout_sources"]["bk-1:3181"]["source"] == "measured"
    assert doc["total"]["reclaimed_bytes"] == {"deletion": 4_000, "minor": 0, "major": 3_000}
    acc = doc["estimate_vs_measured"]["bk-1:3181"]
    gib = 1 << 30
    assert acc["total_bytes"]["estimated"] == 6 * gib and acc["total_bytes"]["measured"] == 10_000
    assert acc["entry_logs"] == {"estimated": 6, "measured": 2, "error": 2.0}
    assert acc["predicted_reclaim"]["measured_in_range"] is False  # 7,000 B measured, GiBs estimated at any phase
    assert acc["predicted_reclaim"]["estimated_range"]["low"] > 1 << 30
    assert "measured OUTSIDE" in r.stderr
    assert "bk-1:3181: measured, 2 logs in 1 dir(s)" in r.stderr and "estimate vs measured" in r.stderr
    r = invoke("model", "gc", "--layout", str(tmp_path / "x.json"), "--bookie-scan", str(out))
    assert r.exit_code == 3 and "--bookie-scan needs --snapshot" in r.stderr


def test_cache_needs_one_of_workload_and_scenario(tmp_path: Path) -> None:
    wl = str(write(tmp_path, "w.json", WORKLOAD))
    bad = invoke("model", "cache", "--policy", "all")
    assert bad.exit_code == 3 and "exactly one of --workload" in bad.stderr
    bad = invoke("model", "cache", "--workload", wl, "--scenario", "rolling-restart")
    assert bad.exit_code == 3 and "exactly one of --workload" in bad.stderr
    bad = invoke("model", "cache", "--scenario", "black-friday")
    assert bad.exit_code == 3 and "unknown" in bad.stderr
    bad = invoke("model", "cache", "--workload", wl, "--min-backlog-cursors", "-1")
    assert bad.exit_code == 3
    bad = invoke("model", "cache", "--workload", wl, "--consumer-rate", "60000")
    assert bad.exit_code == 3 and "settings of --scenario rolling-restart" in bad.stderr
    bad = invoke("model", "cache", "--scenario", "rolling-restart", "--move-ms", "-1")
    assert bad.exit_code == 3 and "move_ms" in bad.stderr
    r = invoke("model", "cache", "--workload", wl, "--policy", "all", "--min-backlog-entries", "1", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["hit_rate"]) == {"legacy", "pip430", "mark-delete", "backlog"}
    assert doc["workload"]["config"]["min_backlog_entries_for_caching"] == 1


@pytest.mark.slow
def test_cache_rolling_restart_scenario_prints_model_next_to_published(tmp_path: Path) -> None:
    png = tmp_path / "rr.png"
    r = invoke("model", "cache", "--scenario", "rolling-restart", "--policy", "pip430", "--json", "--plot", str(png))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["published"] == {"pip430": 0.984} and "98.40%" in r.stderr
    assert doc["policies"]["pip430"]["restarts"] == 3 and doc["policies"]["pip430"]["topic_moves"] == 30
    assert "misses by cause" in r.stderr and "hit_rate_if_pending_reads_merged" in doc["policies"]["pip430"]
    assert png.read_bytes()[:4] == b"\x89PNG"
