"""`pulsar-ops audit` in its own process, twice, with a fresh class-data cache: the first JVM builds the archive
as it exits, the second maps it, and the findings are the same (audit/class_cache.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark


def audit(snap: Path, out: Path, cache: Path) -> dict[str, object]:
    env = {**os.environ, "PULSAR_OPS_JVM_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "pulsar_ops.cli.main", "audit", str(snap), "--out", str(out), "--json"]
    done = subprocess.run([*cmd, "--now", str(NOW + 1)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


def wait_for_builders(cache: Path, timeout_s: float = 300) -> None:
    """Until every JVM that writes an archive into ``cache`` has exited (they outlive the CLI's process)."""
    deadline = time.monotonic() + timeout_s
    for record in cache.glob("*.pid"):
        pid = int(json.loads(record.read_text())["pid"])
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{pid}").exists(), f"builder JVM {pid} still running"


def test_the_second_audit_maps_the_archive_the_first_one_built(tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - DAY)])  # dangling: no BookKeeper metadata
    b.bk_ledger(3, owner="t/ns/persistent/a")  # orphan
    snap = b.write(tmp_path / "snap")
    cache = tmp_path / "jvm-cache"
    first = audit(snap, tmp_path / "o1", cache)
    assert first["audit"]["jvm"]["class_cache"] == "building"  # type: ignore[index]
    assert len(list(cache.glob("*.pid"))) == 1  # the builder recorded itself
    wait_for_builders(cache)
    second = audit(snap, tmp_path / "o2", cache)
    assert second["audit"]["jvm"]["class_cache"] == "used"  # type: ignore[index]
    assert [p.suffix for p in cache.iterdir()] == [".jsa"]  # promoted: one verified archive, nothing pending
    assert second["findings"] == first["findings"]
    assert {f["detection"] for f in second["findings"]} == {"dangling-ledger", "orphan-ledger"}  # type: ignore[attr-defined, index]
