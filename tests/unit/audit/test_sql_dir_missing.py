"""A wrong ``PULSAR_OPS_SQL_DIR``: `sql-not-found` naming the variable, before a JVM starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pulsar_ops.audit import sql_files
from pulsar_ops.errors import AuditError
from tests.spark.snapshot_builder import SnapshotBuilder

_PROBE = """\
import json, sys
from pathlib import Path
import pyspark
from pulsar_ops.audit.runner import run_audit
from pulsar_ops.errors import PulsarOpsError
try:
    run_audit(Path(sys.argv[1]), Path(sys.argv[2]))
    out = {"code": None}
except PulsarOpsError as e:
    out = e.to_dict()
out["jvm_started"] = pyspark.SparkContext._gateway is not None
print(json.dumps(out))
"""


def test_the_sql_dir_variable_is_named_in_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sql").mkdir()
    monkeypatch.setenv(sql_files.SQL_DIR_ENV, str(tmp_path / "sql"))
    with pytest.raises(AuditError) as e:
        sql_files.sql_root()
    assert e.value.code == "sql-not-found"
    assert f"PULSAR_OPS_SQL_DIR={tmp_path / 'sql'}" in e.value.message and "PULSAR_OPS_SQL_DIR" in e.value.hint


def test_the_audit_checks_the_sql_dir_before_starting_a_jvm(tmp_path: Path, repo_root: Path) -> None:
    snap = SnapshotBuilder().write(tmp_path / "snap")
    env = {**os.environ, "PYTHONPATH": str(repo_root), "PULSAR_OPS_SQL_DIR": str(tmp_path / "nowhere")}
    r = subprocess.run(
        [sys.executable, "-c", _PROBE, str(snap), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["code"] == "sql-not-found" and "PULSAR_OPS_SQL_DIR" in out["hint"]
    assert out["jvm_started"] is False
