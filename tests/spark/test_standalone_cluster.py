"""A real Spark cluster: a standalone master and two workers started from the installed pyspark on 127.0.0.1, and
the README's `spark-submit` command run against it as written (hosts and paths substituted). The findings must
equal the in-process local run's on the same snapshot."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import run_audit
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(path: Path, pattern: str, proc: subprocess.Popen[bytes], seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and re.search(pattern, path.read_text(errors="replace")):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    raise AssertionError(f"{pattern!r} not seen in {path}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[str]:
    """``spark://127.0.0.1:PORT`` with two registered workers (1 core, 1 GiB each)."""
    spark_class = _spark_home() / "bin" / "spark-class"
    if not spark_class.exists() or shutil.which("java") is None:
        pytest.skip("spark-class or java is not installed here")
    env = {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(tmp_path / "work"),
        "SPARK_LOG_DIR": str(tmp_path / "logs"),
    }
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"{name}.log"
        with log.open("wb") as out:
            p = subprocess.Popen([str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT, env=env)
        procs.append(p)
        logs.append(log)
        return p, log

    try:
        master, mlog = start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(_free_port()),
        )
        _wait_for(mlog, r"I have been elected leader|Starting Spark master", master)
        for i in range(2):
            w, wlog = start(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                "1",
                "--memory",
                "1g",
                "--webui-port",
                str(_free_port()),
                url,
            )
            _wait_for(wlog, r"Successfully registered with master", w)
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _readme_submit_block(readme: str) -> str:
    """The README's scheduled-audit shell block (zip + spark-submit), exactly as documented."""
    m = re.search(r"### Scheduled audits on a Spark cluster\s+```bash\n(.*?)```", readme, re.S)
    assert m, "README has no scheduled-audit spark-submit block"
    return m.group(1)


def _findings(doc: dict[str, Any]) -> list[str]:
    return sorted(json.dumps(f, sort_keys=True) for f in doc["findings"])


def test_readme_spark_submit_on_a_standalone_cluster_equals_the_local_run(
    standalone: str, repo_root: Path, tmp_path: Path, spark: Any
) -> None:
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - 3 * DAY), (12, 1, 5, NOW - 2 * DAY)])
    b.bk_ledger(12, owner="t/ns/persistent/a")  # 10 is referenced but has no metadata: dangling
    b.bk_ledger(3, owner="t/ns/persistent/a")  # unreferenced: orphan
    b.bk_ledger(4, owner="t/ns/persistent/gone")
    snap = b.write(tmp_path / "shared" / "snap")
    config = tmp_path / "audit.json"
    config.write_text(json.dumps({"min_age": "1h", "now": NOW + 1}))
    local = run_audit(snap, tmp_path / "local", AuditParams(min_age_ms=3_600_000, now_ms=NOW + 1), spark=spark)

    block = _readme_submit_block((repo_root / "README.md").read_text())
    out = tmp_path / "shared" / "audit"
    script = (
        block.replace("spark://spark-master:7077", standalone)
        .replace("/shared/snap-2026-11-21", str(snap))
        .replace("/shared/audit-2026-11-21", str(out))
        .replace("/tmp/pulsar_ops.zip", str(tmp_path / "pulsar_ops.zip"))
        .replace("audit.json", str(config))
    )
    env = {
        **os.environ,
        "PATH": f"{_spark_home() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    r = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 2, r.stdout[-4000:] + r.stderr[-4000:]  # a dangling ledger is critical
    doc = json.loads((out / "findings.json").read_text())
    assert doc["audit"]["master"] == standalone  # ran on the cluster, not on a local fallback
    assert _findings(doc) == _findings(local.document())
    assert {f["detection"] for f in doc["findings"]} >= {"orphan-ledger", "dangling-ledger"}
    # Spark's own stage metrics are read on a cluster's driver too: the detections ran as tasks on the workers
    detections = doc["audit"]["stages"]["by_step"]["detections"]
    assert detections["stages"] >= 1 and detections["tasks"] >= 1 and detections["task_run_s"] >= 0


def test_storage_detections_on_a_standalone_cluster_equal_the_local_run(
    standalone: str, repo_root: Path, tmp_path: Path, spark: Any
) -> None:
    """The README's spark-submit command with `--bookie-scan` per scan: the storage findings equal the local run's."""
    from tests.spark.test_storage_detections import scans, snapshot

    snap = snapshot().write(tmp_path / "shared" / "snap")
    dirs = scans(tmp_path / "shared")
    config = tmp_path / "audit.json"
    config.write_text(json.dumps({"now": NOW + 1}))
    local = run_audit(snap, tmp_path / "local", AuditParams(now_ms=NOW + 1), spark=spark, bookie_scans=dirs)
    out = tmp_path / "shared" / "audit"
    script = (
        _readme_submit_block((repo_root / "README.md").read_text())
        .replace("spark://spark-master:7077", standalone)
        .replace("/shared/snap-2026-11-21", str(snap))
        .replace("/shared/audit-2026-11-21", str(out))
        .replace("/tmp/pulsar_ops.zip", str(tmp_path / "pulsar_ops.zip"))
        .replace("audit.json", str(config))
        .rstrip()
        + "".join(f" --bookie-scan {d}" for d in dirs)
        + "\n"
    )
    env = {
        **os.environ,
        "PATH": f"{_spark_home() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    r = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=repo_root, env=env, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 2, r.stdout[-4000:] + r.stderr[-4000:]  # ledger-data-missing is critical
    doc = json.loads((out / "findings.json").read_text())
    assert doc["audit"]["master"] == standalone
    assert _findings(doc) == _findings(local.document())
    assert {f["detection"] for f in doc["findings"]} >= {
        "unreclaimed-ledger-data",
        "ledger-data-missing",
        "stale-entry-log",
    }
