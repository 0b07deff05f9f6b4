"""--bookie-scan validation (audit/bookie_scans.py) and --bookie-config parsing (audit/params.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pulsar_ops.audit.bookie_scans import check_scraped_dirs, read_scan, read_scans
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


@pytest.mark.parametrize("version", [1, 2])
def test_scans_of_both_formats_count_their_skipped_logs(tmp_path: Path, version: int) -> None:
    """Format 1 (older scan-bookie) listed skipped names in the manifest; format 2 counts them by reason and keeps
    them in skipped_logs.parquet. Both are read; a log skipped for an error makes the scope partial."""
    info = read_scan(_scan(tmp_path, complete=False, format_version=version))
    assert info.logs_skipped == 1 and "scan incomplete (1 log(s) skipped for an error)" in info.partial_reasons()


def test_a_format_2_scan_without_its_skipped_logs_table_is_refused(tmp_path: Path) -> None:
    d = _scan(tmp_path, complete=False)
    (d / "skipped_logs.parquet").unlink()
    with pytest.raises(BookieScanError, match=r"skipped_logs\.parquet is missing"):
        read_scan(d)
    _scan(tmp_path, name="v1", complete=False, format_version=1)
    assert not (tmp_path / "v1" / "skipped_logs.parquet").exists()  # format 1 had none: not asked for


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
        ("format_version", 3, "format_version"),
        ("format_version", "2", "format_version"),
        ("skipped", [], "skipped is not of format 2"),  # format 1's list in a format 2 manifest
        ("skipped", {"by_reason": {"read-error:EIO": -1}}, "skipped is not of format 2"),
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


def test_bookie_config_read_as_the_bookie_reads_it(tmp_path: Path) -> None:
    # commons-configuration2 2.12.0 (BookKeeper's) on this file: gcWaitTime [900000, 60000], getString 900000;
    # minorCompactionThreshold 0.1 and majorCompactionThreshold 0.6 (whitespace and ':' separators)
    conf = tmp_path / "bookkeeper.conf"
    conf.write_text(
        "gcWaitTime=900000\nminorCompactionThreshold 0.1\nmajorCompactionThreshold: 0.6\n"
        "! a comment too\nflushInterval=\\\n  2000\ngcWaitTime=60000\n"
    )
    s = load_bookie_config(conf)
    assert (s.gc.gc_wait_time_ms, s.gc.minor_compaction_threshold, s.gc.major_compaction_threshold) == (
        900000,
        0.1,
        0.6,
    )
    assert s.flush_interval_ms == 2000


def test_bookie_config_validated_like_gc_thread(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="minorCompactionInterval"):
        bookie_settings({"minorCompactionInterval": "10", "gcWaitTime": "900000"})


def test_spark_submit_job_passes_scans_to_the_audit_command() -> None:
    from jobs.audit import cli_args, parse_args

    args = parse_args(
        ["--snapshot", "s", "--out", "o", "--bookie-scan", "a", "--bookie-scan", "b", "--bookie-config", "bk.conf"]
    )
    assert cli_args(args, None) == [
        "audit", "s", "--out", "o", "--bookie-scan", "a", "--bookie-scan", "b", "--bookie-config", "bk.conf"
    ]  # fmt: skip


def test_configured_directories_left_out_make_the_scope_partial(tmp_path: Path) -> None:
    doc = {
        "source": "/pulsar/conf/bookkeeper.conf",
        "not_scanned": {"ledger_dirs": ["/d2"], "index_dirs": []},
    }
    info = read_scan(_scan(tmp_path, bookie_config=doc))
    assert info.complete and not info.covers_bookie and info.dirs_not_scanned == ("/d2",)
    summary = info.summary()
    assert summary["partial"] and summary["config_checked"] and "ledger-data-missing" in summary["not_claimed"]
    assert "(/pulsar/conf/bookkeeper.conf) not scanned: /d2" in summary["partial_reasons"][0]
    covered = read_scan(
        _scan(tmp_path, "t", bookie_config={**doc, "not_scanned": {"ledger_dirs": [], "index_dirs": []}})
    )
    assert covered.covers_bookie and not covered.summary()["partial"] and covered.summary()["config_checked"]
    unchecked = read_scan(_scan(tmp_path, "u"))  # no --bookie-config: trusted as before, and said so
    assert unchecked.covers_bookie and not unchecked.summary()["config_checked"]


@pytest.mark.parametrize(
    "doc", ["x", {"source": 1}, {"source": "f"}, {"source": "f", "not_scanned": {"ledger_dirs": [1]}}]
)
def test_a_malformed_bookie_config_is_refused(tmp_path: Path, doc: object) -> None:
    with pytest.raises(BookieScanError, match="bookie_config"):
        read_scan(_scan(tmp_path, bookie_config=doc))


def test_scan_before_the_scrape_is_named(tmp_path: Path) -> None:
    info = read_scan(_scan(tmp_path))  # started at 1000
    early = info.summary(2000)
    assert early["before_scrape"] and early["not_claimed"] == ["ledger-data-missing", "unreclaimed-ledger-data"]
    assert not info.summary(1000)["before_scrape"] and not info.summary()["before_scrape"]


def test_scans_checked_against_the_scraped_server_config(tmp_path: Path) -> None:
    """The snapshot's bookie_dirs (server_config as scraped): a configured directory no scanned one is makes the
    scope partial; a mount prefix is the same directory; a bookie without an entry is left unchecked."""
    b1 = read_scan(_scan(tmp_path, "a", "b1:3181"))  # scanned /d
    b2 = read_scan(_scan(tmp_path, "b", "b2:3181"))
    b3 = read_scan(_scan(tmp_path, "c", "b3:3181"))
    dirs = {
        "b1:3181": {"ledger_dirs": ["/d", "/e"], "index_dirs": None},
        "b2:3181": {"ledger_dirs": ["d"], "index_dirs": ["/d"]},  # relative: the working directory's
    }
    got = {s.bookie_id: s for s in check_scraped_dirs([b1, b2, b3], dirs)}
    assert got["b1:3181"].dirs_not_scanned == ("/e", "/e (index)") and not got["b1:3181"].covers_bookie
    assert got["b1:3181"].config_source == "server_config (scraped)"
    assert "not scanned: /e" in got["b1:3181"].summary()["partial_reasons"][0]
    assert got["b2:3181"].covers_bookie and got["b2:3181"].summary()["config_checked"]
    assert got["b3:3181"] == b3 and not got["b3:3181"].summary()["config_checked"]
    assert check_scraped_dirs([b1], None) == (b1,)
