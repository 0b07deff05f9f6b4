"""The scheduled-audit path: `spark-submit jobs/audit.py` with a JSON config, as on a Spark cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _spark_submit() -> str:
    import pyspark

    found = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    return str(found) if found.exists() else (shutil.which("spark-submit") or "")


def test_spark_submit_runs_the_audit_job_with_a_config(repo_root: Path, tmp_path: Path) -> None:
    submit = _spark_submit()
    if not submit:
        pytest.skip("spark-submit is not installed with pyspark here")
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - DAY)])  # ledger 10 has no BookKeeper metadata: dangling
    b.bk_ledger(3, owner="t/ns/persistent/a")
    snap = b.write(tmp_path / "snap")
    config = tmp_path / "audit.json"
    config.write_text(json.dumps({"min_age": "1h", "now": NOW + 1}))
    env = {**os.environ, "PULSAR_OPS_SQL_DIR": str(repo_root / "sql"), "SPARK_LOCAL_IP": "127.0.0.1"}
    r = subprocess.run(
        [
            submit,
            "--master",
            "local[1]",
            "--conf",
            "spark.ui.enabled=false",
            str(repo_root / "jobs" / "audit.py"),
            "--snapshot",
            str(snap),
            "--out",
            str(tmp_path / "out"),
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=repo_root,
    )
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-3000:]  # a critical finding (dangling ledger)
    # Spark's PythonRunner merges the driver's stderr into stdout: the job's contract is findings.json
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    assert {f["detection"] for f in doc["findings"]} == {"dangling-ledger", "orphan-ledger"}
    assert doc["audit"]["master"] == "local[1]"  # the master spark-submit was given, not a local default
    assert doc["audit"]["params"]["min_age_ms"] == 3_600_000
