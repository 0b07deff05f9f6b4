"""--bookie-scan validation (audit/bookie_scans.py) and --bookie-config parsing (audit/params.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pulsar_ops.audit.bookie_scans import read_scan, read_scans
from pulsar_ops.audit.params import bookie_settings, load_bookie_config
from pulsar_ops.errors import BookieScanError, ConfigError
from tests.spark.scan_builder import ScanBuilder


def _scan(root: Path, name: str = "s", bookie: str = "b1:3181", **kw: object) -> Path:
    s = ScanBuilder(bookie, started_at_ms=1000, **kw)  # type: ignore[arg-type]
    s.log("/d", 1, mtime_ms=1, ledgers={5: 10})
    s.index(5)
    return s.write(root / name)


def test_a_valid_scan(tmp_path: Path) -> None:
    info = read_scan(_scan(tmp_path))
    assert (info.bookie_id, info.complete, info.index_read, info.partial_reasons()) == ("b1:3181", True, True, [])


def test_partial_scan_says_why(tmp_path: Path) -> None:
    info = read_scan(_scan(tmp_path, complete=False, index_status="unavailable"))
    assert info.summary()["partial"] and len(info.partial_reasons()) == 2
    assert "ledger-data-missing" in info.summary()["not_claimed"]


def test_no_manifest_is_not_a_scan(tmp_path: Path) -> None:
    d = _scan(tmp_path)
    (d / "manifest.json").unlink()
    with pytest.raises(BookieScanError, match=r"no manifest\.json") as e:
        read_scan(d)
    assert e.value.code == "bookie-scan-invalid"


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("format", "pulsar-ops-snapshot", "format"),
        ("format_version", 2, "format_version"),
        ("bookie_id", "", "bookie_id"),
    ],
)
def test_foreign_manifest(tmp_path: Path, key: str, value: object, match: str) -> None:
    d = _scan(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m[key] = value
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BookieScanError, match=match):
        read_scan(d)


def test_row_count_mismatch(tmp_path: Path) -> None:
    d = _scan(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["tables"]["entry_log_ledgers"] = 7
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BookieScanError, match="has 1 rows, its manifest says 7"):
        read_scan(d)


def test_two_scans_of_one_bookie(tmp_path: Path) -> None:
    with pytest.raises(BookieScanError, match="both scans of bookie b1:3181"):
        read_scans([_scan(tmp_path, "a"), _scan(tmp_path, "b")])


def test_bookie_config(tmp_path: Path) -> None:
    conf = tmp_path / "bookkeeper.conf"
    conf.write_text(
        "# comment\nledgerDirectories=/data\ngcWaitTime=60000\nmajorCompactionThreshold=0.7\nflushInterval=1000\n"
    )
    s = load_bookie_config(conf)
    assert (s.gc.gc_wait_time_ms, s.gc.major_compaction_threshold, s.flush_interval_ms) == (60000, 0.7, 1000)
    assert bookie_settings({}).gc.major_compaction_threshold == 0.5  # Pulsar's conf/bookkeeper.conf


def test_bookie_config_validated_like_gc_thread(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="minorCompactionInterval"):
        bookie_settings({"minorCompactionInterval": "10", "gcWaitTime": "900000"})
