"""`pulsar-ops audit`: --json on stdout, human summary on stderr, exit codes 0/1/2/3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from tests.spark.snapshot_builder import SnapshotBuilder

pytestmark = pytest.mark.spark


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["audit", *args])


# `--json` with a critical finding (exit 2, the document on stdout and in findings.json, the summary on stderr) is
# checked on tests/spark/test_class_cache_cli.py's CLI audit in its own process: the same snapshot, one audit fewer


def test_clean_exit_zero_and_warning_exit_one(spark: Any, tmp_path: Path) -> None:
    # one snapshot, two audits: its warning (a TTL with delayed delivery on) exits 1; with the broker's own
    # broker.conf turning delayed delivery off it has no warning, a clean audit: exit 0 and, without --json,
    # nothing on stdout (an empty snapshot's audit is test_contract's test_empty_snapshot_is_clean)
    b = SnapshotBuilder()
    b.namespace("t/ns", message_ttl_seconds=60)
    warn = b.write(tmp_path / "warn")
    cfg = tmp_path / "audit.json"
    cfg.write_text(json.dumps({"inactive_after": "7d", "broker": {"delayedDeliveryEnabled": "true"}}))
    assert run(str(warn), "--out", str(tmp_path / "o2"), "--config", str(cfg)).exit_code == 1
    broker = tmp_path / "broker.conf"
    broker.write_text("# broker\ndelayedDeliveryEnabled=false\n")
    r = run(str(warn), "--out", str(tmp_path / "o3"), "--broker-config", str(broker))
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""


def test_tool_failures_exit_three(tmp_path: Path) -> None:
    r = run(str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert r.exit_code == 3
    assert "snapshot" in r.stderr and "hint" in r.stderr
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    r = run(str(unfinished), "--out", str(tmp_path / "out"))
    assert r.exit_code == 3 and "snapshot-unfinished" in r.stderr
    r = run(str(unfinished), "--out", str(tmp_path / "out"), "--min-age", "soon")
    assert r.exit_code == 3 and "config-invalid" in r.stderr


def test_truncated_part_file_is_snapshot_invalid_naming_it(spark: Any, tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.bk_ledger(3, owner="t/ns/persistent/a")
    snap = b.write(tmp_path / "snap")
    part = sorted((snap / "tables" / "bk_ledgers").glob("part-*.parquet"))[0]
    part.write_bytes(part.read_bytes()[:40])
    r = run(str(snap), "--out", str(tmp_path / "out"), "--json")
    assert r.exit_code == 3
    assert "snapshot-invalid" in r.stderr and part.name in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out" / "findings.json").exists()


def test_corrupt_pages_behind_an_intact_footer_are_snapshot_invalid_naming_the_file(
    tmp_path: Path, repo_root: Path
) -> None:
    """The footer check before Spark passes; the scan fails on the pages: the same error `plan` gives, and no Java
    stack (nor the JVM's incubator-module warning) on the operator's terminal."""
    import os
    import subprocess
    import sys

    import pyarrow.parquet as pq

    b = SnapshotBuilder()
    b.namespace("t/ns")
    for ledger in range(3, 203):
        b.bk_ledger(ledger, owner="t/ns/persistent/a")
    snap = b.write(tmp_path / "snap")
    part = sorted((snap / "tables" / "bk_ledgers").glob("part-*.parquet"))[0]
    data = bytearray(part.read_bytes())
    pages_end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")  # footer: metadata, its length, PAR1
    data[4:pages_end] = b"\xab" * (pages_end - 4)
    part.write_bytes(bytes(data))
    assert pq.read_metadata(part).num_rows == 200  # the footer is intact
    env = {**os.environ, "PYTHONPATH": str(repo_root), "PULSAR_OPS_JVM_CACHE": "off"}
    r = subprocess.run(
        [sys.executable, "-m", "pulsar_ops.cli.main", "audit", str(snap), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 3, r.stderr[-3000:]
    assert f"error[snapshot-invalid]: {part}: not a readable Parquet file" in r.stderr, r.stderr[-3000:]
    assert "\tat org.apache" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "incubator" not in r.stderr
    assert not (tmp_path / "out" / "findings.json").exists()
