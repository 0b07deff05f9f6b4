"""The settings the one SparkSession builder gives a local JVM versus a cluster's."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pulsar_ops.audit.session import CODEGEN_CACHE_ENTRIES, LOCAL_JVM_OPTIONS, default_conf, jvm_stderr_filtered


def test_a_local_jvm_gets_the_quiet_logging_and_the_short_run_jit_settings() -> None:
    conf = default_conf("local[*]", None)
    driver = conf["spark.driver.extraJavaOptions"].split()
    assert driver[0].startswith("-Dlog4j2.configurationFile=file:") and Path(driver[0].split("file:", 1)[1]).exists()
    assert driver[1:] == list(LOCAL_JVM_OPTIONS)
    assert {"-XX:+UseParallelGC", "-XX:FreqInlineSize=100", "-XX:Tier4InvocationThreshold=20000"} <= set(driver)
    # executors of a local session live in the driver's JVM: nothing of theirs to set
    assert "spark.executor.extraJavaOptions" not in conf


def test_a_cluster_session_sets_no_jvm_options_and_sends_no_driver_path() -> None:
    """A cluster's driver JVM is started before its settings are read (spark-submit's, or build_session's launch
    with the logging option in SPARK_SUBMIT_OPTS); its executors run on hosts without the driver's files."""
    for conf in (default_conf("spark://127.0.0.1:7077", None), default_conf("local[1]", None, starts_jvm=False)):
        assert "spark.driver.extraJavaOptions" not in conf and "spark.executor.extraJavaOptions" not in conf
        assert not any(tempfile.gettempdir() in v or "log4j" in v for v in conf.values())


def test_every_session_keeps_the_generated_code_of_several_audits() -> None:
    for master in ("local[*]", "spark://127.0.0.1:7077"):
        assert int(default_conf(master, None)["spark.sql.codegen.cache.maxEntries"]) == CODEGEN_CACHE_ENTRIES >= 1000


def test_the_driver_of_a_small_snapshot_compiles_with_c1_alone() -> None:
    from pulsar_ops.audit.runner import SnapshotSize, jvm_options
    from pulsar_ops.audit.session import SMALL_INPUT_JVM_OPTIONS

    small = jvm_options(SnapshotSize({"znodes": 1_876}, 400_000))
    large = jvm_options(SnapshotSize({"znodes": 4_000_000}, 900_000_000))
    assert "-XX:TieredStopAtLevel=1" in small and small[: len(LOCAL_JVM_OPTIONS)] == LOCAL_JVM_OPTIONS
    assert large == LOCAL_JVM_OPTIONS and not set(SMALL_INPUT_JVM_OPTIONS) & set(large)
    driver = default_conf("local[*]", None, small)["spark.driver.extraJavaOptions"].split()
    assert driver[1:] == list(small)


def test_the_jvm_stderr_filter_drops_the_incubator_warning_only(capfd: pytest.CaptureFixture[str]) -> None:
    script = (
        "import sys; sys.stderr.write('WARNING: Using incubator modules: jdk.incubator.vector\\n'"
        " 'WARNING: An illegal reflective access operation has occurred\\n' 'Exception in thread main\\n')"
    )
    with jvm_stderr_filtered() as forward:
        child = subprocess.Popen([sys.executable, "-c", script])  # inherits fd 2 as a JVM launch does
    assert forward is not None
    print("after the launch", file=sys.stderr, flush=True)  # this process's own stderr is its own again
    child.wait()
    forward.join()  # ends once the child, the pipe's last writer, has exited
    err = capfd.readouterr().err
    assert "incubator" not in err
    assert "WARNING: An illegal reflective access operation has occurred\n" in err
    assert "Exception in thread main\n" in err and "after the launch\n" in err
