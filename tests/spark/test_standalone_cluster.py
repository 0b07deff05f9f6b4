"""A real Spark cluster: a standalone master and a worker started from the installed pyspark on 127.0.0.1, and
the README's `spark-submit` command run against it as written (hosts and paths substituted). The findings must
equal the in-process local run's on the same snapshot.

Each application costs JVMs (a driver, the worker's executor): the module submits three, the fewest that prove what
it pins (the README's command; the operator's --conf on the executors and the driver; a --master from the CLI with
spark-defaults.conf), and the README's one also carries the scheduled-audit path's own checks (a JSON config read
by `spark-submit jobs/audit.py`, the master it was given recorded)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
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


# What this module's applications are launched with, as an operator sets it: spark-defaults.conf in SPARK_CONF_DIR,
# which Spark's launcher reads for the driver it starts and the master hands to each executor. Each application
# audits one small snapshot in a fresh driver and executor JVM: C1 alone and no generated code (as the product's
# own small-snapshot local audit runs, audit/session.py SMALL_INPUT_JVM_OPTIONS, audit/sizing.py NO_CODEGEN) spare
# each JVM compiling what it runs a few times; the throughput collector, as that local audit's JVM has it
# (audit/session.py LOCAL_JVM_OPTIONS), spares each short-lived JVM G1's concurrent threads. Spark prepends
# `defaultJavaOptions` to an operator's `extraJavaOptions` (docs/configuration.md; launcher
# SparkLauncher.DRIVER_DEFAULT_JAVA_OPTIONS, EXECUTOR_DEFAULT_JAVA_OPTIONS), so what the tests pin of those stays
# as it was.
SMALL_APP_DEFAULTS = (
    "spark.driver.defaultJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseParallelGC\n"
    "spark.executor.defaultJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseParallelGC\n"
    "spark.sql.codegen.wholeStage false\n"
    "spark.sql.codegen.factoryMode NO_CODEGEN\n"
)


def _conf_dir(tmp_path: Path, *lines: str) -> Path:
    """A SPARK_CONF_DIR whose spark-defaults.conf holds :data:`SMALL_APP_DEFAULTS` and ``lines``."""
    conf_dir = tmp_path / "spark-conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text(SMALL_APP_DEFAULTS + "".join(f"{line}\n" for line in lines))
    return conf_dir


@dataclass(frozen=True)
class Standalone:
    """A running standalone cluster: its master URL and the workers' directory (one ``app-*`` per application)."""

    url: str
    work: Path

    def apps(self) -> set[Path]:
        return set(self.work.glob("app-*"))


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """``spark://127.0.0.1:PORT`` with one registered worker (2 cores, 1 GiB: one executor JVM per application, two
    tasks at a time), shared by this module's tests: each test submits its own application (its own driver and
    executor), as an operator's scheduled audits do. A second worker would only add JVMs: an executor is another
    JVM than the driver with one worker as with two, which is what the operator's settings must reach."""
    spark_class = _spark_home() / "bin" / "spark-class"
    if not spark_class.exists() or shutil.which("java") is None:
        pytest.skip("spark-class or java is not installed here")
    tmp_path = tmp_path_factory.mktemp("standalone")
    env = {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(tmp_path / "work"),
        "SPARK_LOG_DIR": str(tmp_path / "logs"),
        # the master and the worker are this test's machinery, not what it pins (the applications' JVMs take
        # their options from spark-defaults.conf and --conf; the worker builds each executor's command from the
        # application's settings, never from this variable: launcher SparkClassCommandBuilder reads it for
        # Master and Worker only, WorkerCommandBuilder for executors): C1 alone and the serial collector spare
        # the two long-idle daemons their C2 compiles and GC threads on a 2-core runner
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }
    port = _free_port()
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        log = tmp_path / f"{name}.log"
        with log.open("wb") as out:
            p = subprocess.Popen([str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT, env=env)
        procs.append(p)
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
        _wait_for(mlog, r"Starting Spark master at spark://", master)
        # the port the master bound: when another process bound the picked one first, Spark takes the next
        # (Utils.startServiceOnPort, spark.port.maxRetries) and says so in this line (Master: its RPC address)
        found = re.search(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", mlog.read_text(errors="replace"))
        assert found, mlog.read_text(errors="replace")[-3000:]
        url = found.group(1)
        worker, wlog = start(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--cores",
            "2",
            "--memory",
            "1g",
            "--webui-port",
            str(_free_port()),
            url,
        )
        _wait_for(wlog, r"Successfully registered with master", worker, seconds=180.0)
        yield Standalone(url, tmp_path / "work")
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


REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ReadmeRun:
    """The README's spark-submit block run once on the cluster (with `--bookie-scan` per scan), and the in-process
    local run of the same snapshot, parameters and scans: the findings of both and the submit's outcome."""

    returncode: int
    output: str
    cluster: dict[str, Any]
    local: dict[str, Any]


@pytest.fixture(scope="module")
def readme_run(standalone: Standalone, tmp_path_factory: pytest.TempPathFactory, spark: Any) -> ReadmeRun:
    """One cluster application carries the README tests' assertions (each extra application costs a driver and two
    executor JVMs): the storage snapshot of test_storage_detections plus a topic with a dangling and two orphan
    ledgers, audited with the README's command as written (hosts and paths substituted) and one `--bookie-scan`
    per scan."""
    from tests.spark.test_storage_detections import scans, snapshot

    tmp_path = tmp_path_factory.mktemp("readme")
    b = snapshot()
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - 3 * DAY), (12, 1, 5, NOW - 2 * DAY)])
    b.bk_ledger(12, owner="t/ns/persistent/a")  # 10 is referenced but has no metadata: dangling
    b.bk_ledger(3, owner="t/ns/persistent/a")  # unreferenced: orphan
    b.bk_ledger(4, owner="t/ns/persistent/gone")
    snap = b.write(tmp_path / "shared" / "snap")
    dirs = scans(tmp_path / "shared")
    config = tmp_path / "audit.json"
    config.write_text(json.dumps({"min_age": "1h", "now": NOW + 1}))
    params = AuditParams(min_age_ms=3_600_000, now_ms=NOW + 1)
    local = run_audit(snap, tmp_path / "local", params, spark=spark, bookie_scans=dirs)

    out = tmp_path / "shared" / "audit"
    script = (
        _readme_submit_block((REPO_ROOT / "README.md").read_text())
        .replace("spark://spark-master:7077", standalone.url)
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
        "SPARK_CONF_DIR": str(_conf_dir(tmp_path)),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    r = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    findings = out / "findings.json"
    cluster = json.loads(findings.read_text()) if findings.exists() else {}
    return ReadmeRun(r.returncode, r.stdout[-4000:] + r.stderr[-4000:], cluster, local.document())


@pytest.mark.timeout(1200)  # its setup may start the cluster and run the shared job: three JVM starts
def test_readme_spark_submit_on_a_standalone_cluster_equals_the_local_run(
    standalone: Standalone, readme_run: ReadmeRun
) -> None:
    assert readme_run.returncode == 2, readme_run.output  # a dangling ledger is critical
    doc = readme_run.cluster
    assert doc["audit"]["master"] == standalone.url  # the master spark-submit was given: not a local fallback
    # the scheduled-audit path reads its JSON config (`--config audit.json`: min_age 1h, a fixed now)
    assert doc["audit"]["params"]["min_age_ms"] == 3_600_000 and doc["audit"]["params"]["now_ms"] == NOW + 1
    assert _findings(doc) == _findings(readme_run.local)
    assert {f["detection"] for f in doc["findings"]} >= {"orphan-ledger", "dangling-ledger"}
    # Spark's own stage metrics are read on a cluster's driver too: the detections ran as tasks on the workers
    detections = doc["audit"]["stages"]["by_step"]["detections"]
    assert detections["stages"] >= 1 and detections["tasks"] >= 1 and detections["task_run_s"] >= 0


# Submitted instead of jobs/audit.py: runs that job as spark-submit would, then asks the cluster's executors (a
# Python task walks up to its executor JVM, CoarseGrainedExecutorBackend) and the driver's JVM what they were
# started with, and writes it next to the audit's output.
_PROBE_JOB = """\
import json, os, runpy, sys
from pathlib import Path

def executor_jvm_args(_):
    pid = os.getppid()
    while pid > 1:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\\0")
        if any(b"CoarseGrainedExecutorBackend" in a for a in args):
            return [a.decode() for a in args if a]
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return []

job, out = sys.argv[1], sys.argv[2]
sys.argv = [job, *sys.argv[3:]]
code = 0
try:
    runpy.run_path(job, run_name="__main__")
except SystemExit as e:
    code = e.code
from pyspark.sql import SparkSession
spark = SparkSession.getActiveSession()
probe = {
    "exit": code,
    "executors": spark.sparkContext.parallelize(range(2), 2).map(executor_jvm_args).collect(),
    "driver_property": spark.sparkContext._jvm.System.getProperty("pulsar.ops.driverprobe"),
    "log_level": str(spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel()),
}
Path(out).write_text(json.dumps(probe))
"""


def test_spark_submit_keeps_the_operators_conf_on_the_executors_and_the_driver(
    standalone: Standalone, repo_root: Path, tmp_path: Path
) -> None:
    """spark-submit's --conf values are the operator's: the audit's defaults replace none of them, they reach the
    executors as given, findings.json records them, and no driver-local file is named on an executor."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.topic("t/ns", "a", ledgers=[(10, 1, 5, NOW - 3 * DAY)])
    b.bk_ledger(3, owner="t/ns/persistent/a")
    snap = b.write(tmp_path / "shared" / "snap")
    config = tmp_path / "audit.json"
    config.write_text(json.dumps({"min_age": "1h", "now": NOW + 1}))
    job = tmp_path / "probe_job.py"
    job.write_text(_PROBE_JOB)
    probe_out, out = tmp_path / "probe.json", tmp_path / "shared" / "audit"
    shutil.make_archive(str(tmp_path / "pulsar_ops"), "zip", repo_root, "pulsar_ops")
    executor_opts = "-Dpulsar.ops.probe=xyz -Dlog4j2.level=warn"
    driver_opts = "-Dpulsar.ops.driverprobe=abc"
    env = {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_CONF_DIR": str(_conf_dir(tmp_path)),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PULSAR_OPS_SQL_DIR": str(repo_root / "sql"),
    }
    r = subprocess.run(
        [
            str(_spark_home() / "bin" / "spark-submit"),
            "--master",
            standalone.url,
            "--conf",
            f"spark.executor.extraJavaOptions={executor_opts}",
            "--conf",
            f"spark.driver.extraJavaOptions={driver_opts}",
            "--conf",
            "spark.sql.codegen.cache.maxEntries=321",  # a key the audit sets when nobody did
            "--conf",
            "spark.log.level=WARN",  # the audit sets ERROR when nobody did
            "--py-files",
            str(tmp_path / "pulsar_ops.zip"),
            str(job),
            str(repo_root / "jobs" / "audit.py"),
            str(probe_out),
            "--snapshot",
            str(snap),
            "--out",
            str(out),
            "--config",
            str(config),
        ],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0 and probe_out.exists(), r.stdout[-4000:] + r.stderr[-4000:]
    probe = json.loads(probe_out.read_text())
    assert probe["exit"] == 2  # ledger 10 is referenced without metadata: dangling, critical
    assert probe["driver_property"] == "abc" and probe["log_level"] == "WARN"
    assert len(probe["executors"]) == 2  # two tasks, both in the worker's one executor
    for args in probe["executors"]:  # each task ran in an executor JVM started with the operator's options
        assert "-Dpulsar.ops.probe=xyz" in args and "-Dlog4j2.level=warn" in args, args
        assert not any("pulsar-ops-log4j2" in a or "log4j2.configurationFile" in a for a in args), args
        assert not any("SharedArchiveFile" in a or "ArchiveClassesAtExit" in a for a in args), args
    doc = json.loads((out / "findings.json").read_text())
    assert doc["audit"]["master"] == standalone.url
    recorded = doc["audit"]["spark_conf"]
    # Spark itself puts its module options (--add-opens ...) before the operator's (SparkContext); nothing else
    for key, given in (
        ("spark.executor.extraJavaOptions", executor_opts),
        ("spark.driver.extraJavaOptions", driver_opts),
    ):
        assert recorded[key].endswith(given) and "log4j2.configurationFile" not in recorded[key], recorded[key]
    assert recorded["spark.sql.codegen.cache.maxEntries"] == "321"


def test_a_cluster_master_from_the_cli_keeps_spark_defaults_conf_on_the_executors(
    standalone: Standalone, repo_root: Path, tmp_path: Path
) -> None:
    """`pulsar-ops audit --master spark://...` starts its own driver JVM: spark-defaults.conf's settings (read by
    Spark's launcher) stay the operator's, and each executor is launched with them and no driver-local file."""
    b = SnapshotBuilder()
    b.namespace("t/ns")
    b.bk_ledger(3, owner="t/ns/persistent/a")  # unreferenced: an orphan, a warning
    snap = b.write(tmp_path / "shared" / "snap")
    executor_opts = "-Dpulsar.ops.probe=fromfile"
    conf_dir = _conf_dir(
        tmp_path, f"spark.executor.extraJavaOptions {executor_opts}", "spark.sql.codegen.cache.maxEntries 321"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(repo_root),
        "SPARK_HOME": str(_spark_home()),
        "SPARK_CONF_DIR": str(conf_dir),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PULSAR_OPS_SQL_DIR": str(repo_root / "sql"),
    }
    out = tmp_path / "shared" / "audit"
    apps_before = standalone.apps()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pulsar_ops.cli.main",
            "audit",
            str(snap),
            "--out",
            str(out),
            "--master",
            standalone.url,
            "--min-age",
            "1h",
            "--now",
            str(NOW + 1),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 1, r.stdout[-4000:] + r.stderr[-4000:]
    assert "incubator" not in r.stderr
    doc = json.loads((out / "findings.json").read_text())
    assert doc["audit"]["master"] == standalone.url
    recorded = doc["audit"]["spark_conf"]
    assert recorded["spark.executor.extraJavaOptions"].endswith(executor_opts)
    assert recorded["spark.sql.codegen.cache.maxEntries"] == "321"
    # the worker writes each executor's launch command at the top of its stderr
    (app_dir,) = standalone.apps() - apps_before  # this audit's application, not another test's
    launched = [p.read_text(errors="replace") for p in app_dir.glob("*/stderr")]
    commands = [line for text in launched for line in text.splitlines() if line.startswith("Spark Executor Command")]
    assert commands, launched
    for command in commands:
        assert executor_opts in command and "pulsar-ops-log4j2" not in command, command


@pytest.mark.timeout(1200)  # its setup may start the cluster and run the shared job: three JVM starts
def test_storage_detections_on_a_standalone_cluster_equal_the_local_run(
    standalone: Standalone, readme_run: ReadmeRun
) -> None:
    """The README's spark-submit command with `--bookie-scan` per scan: the storage findings equal the local run's."""
    assert readme_run.returncode == 2, readme_run.output  # ledger-data-missing is critical
    doc = readme_run.cluster
    assert doc["audit"]["master"] == standalone.url
    assert _findings(doc) == _findings(readme_run.local)
    assert {f["detection"] for f in doc["findings"]} >= {
        "unreclaimed-ledger-data",
        "ledger-data-missing",
        "stale-entry-log",
    }
