"""`pulsar-ops audit` in its own process maps the class-data archive an earlier local driver JVM built: the first
JVM, started as every audit starts its session (``build_session``), builds the archive as it exits; the audit
verifies, promotes and maps it, and its findings are the snapshot's (audit/class_cache.py).

The builder only starts its session (no audit): an audit's archive holds more classes, but what is proved (built at
exit, recorded, verified, promoted, mapped by the CLI's audit, findings unchanged) is the same, for one JVM audit
instead of two. The findings are checked against what the snapshot holds, not against a second audit.

That one CLI audit in its own process is also the suite's check of `audit --json` on a critical snapshot (it was
tests/spark/test_audit_cli.py's `test_json_and_critical_exit`, a cold in-process audit of the same snapshot): exit
2, the findings document on stdout and in ``findings.json``, the human summary on stderr, ``--min-age`` and
``--now`` in ``audit.params``.
"""

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
    """``audit --json`` in its own process: a critical finding exits 2, the document goes to stdout (and to
    ``findings.json``), the human summary to stderr."""
    env = {**os.environ, "PULSAR_OPS_JVM_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "pulsar_ops.cli.main", "audit", str(snap), "--out", str(out), "--json"]
    args = ["--min-age", "1h", "--now", str(NOW + 1)]
    done = subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    assert doc["snapshot"]["snapshot_id"] and doc["audit"]["params"]["min_age_ms"] == 3_600_000
    assert doc["audit"]["params"]["now_ms"] == NOW + 1
    assert "dangling-ledger" in done.stderr  # the summary goes to stderr
    assert json.loads((out / "findings.json").read_text())["findings"] == doc["findings"]
    return doc


def wait_for_builders(cache: Path, timeout_s: float = 300) -> None:
    """Until every JVM that writes an archive into ``cache`` has exited (they outlive the CLI's process)."""
    deadline = time.monotonic() + timeout_s
    for record in cache.glob("*.pid"):
        pid = int(json.loads(record.read_text())["pid"])
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{pid}").exists(), f"builder JVM {pid} still running"


BUILDER = """
import sys
from pulsar_ops.audit import class_cache
from pulsar_ops.audit.session import build_session
session = build_session(master="local[1]", app_name="pulsar-ops-archive-builder")
print(class_cache.state_of(session.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""))
"""


def build_in_own_process(cache: Path) -> str:
    """Start a local session as an audit does, in its own process, and exit: its JVM writes the archive as it exits.
    Returns the archive state that session's driver options show (what an audit reports in ``audit.jvm``)."""
    env = {**os.environ, "PULSAR_OPS_JVM_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", BUILDER], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_audit_maps_the_archive_an_earlier_jvm_built(tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - DAY)])  # dangling: no BookKeeper metadata
    b.bk_ledger(3, owner="t/ns/persistent/a")  # orphan
    snap = b.write(tmp_path / "snap")
    cache = tmp_path / "jvm-cache"
    assert build_in_own_process(cache) == "building"
    assert len(list(cache.glob("*.pid"))) == 1  # the builder recorded itself
    wait_for_builders(cache)
    assert len(list(cache.glob("*.jsa.part"))) == 1  # its JVM wrote the part as it exited
    audited = audit(snap, tmp_path / "o1", cache)
    assert audited["audit"]["jvm"]["class_cache"] == "used"  # type: ignore[index]
    assert [p.suffix for p in cache.iterdir()] == [".jsa"]  # promoted: one verified archive, nothing pending
    got = {(f["detection"], f["ledger_id"], f["plannable"]) for f in audited["findings"]}  # type: ignore[attr-defined, index]
    assert got == {("dangling-ledger", 10, False), ("orphan-ledger", 3, True)}
