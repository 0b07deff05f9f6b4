"""Spark/JVM failures become error codes with the setting to change (the Java text as Py4J carries it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsar_ops.audit.failures import classify, find_java


class Py4JJavaError(Exception):  # the shape of py4j's error: a name and the Java text
    pass


@pytest.mark.parametrize(
    ("text", "code", "setting"),
    [
        (
            "An error occurred while calling o123.parquet.\n: org.apache.spark.SparkException: Not enough memory to "
            "build and broadcast the table to all worker nodes",
            "spark-broadcast-too-large",
            "spark.sql.autoBroadcastJoinThreshold",
        ),
        (
            "An error occurred while calling o9.collect.\n: java.lang.OutOfMemoryError: Java heap space",
            "spark-out-of-memory",
            "--driver-memory",
        ),
        (
            "java.net.BindException: Address already in use: Service 'sparkDriver' could not bind on a free port",
            "spark-port-in-use",
            "spark.driver.port",
        ),
        ("JAVA_HOME is not set", "java-missing", "JAVA_HOME"),
    ],
)
def test_known_failures(text: str, code: str, setting: str) -> None:
    err = classify(Py4JJavaError(text))
    assert err is not None and err.code == code and setting in err.hint


GATEWAY = "Java gateway process exited before sending its port number"


def test_a_jvm_that_exits_at_start_without_a_java_is_java_missing() -> None:
    err = classify(Py4JJavaError(GATEWAY), java=lambda: None)
    assert err is not None and err.code == "java-missing" and "JAVA_HOME" in err.hint


def test_a_jvm_that_exits_at_start_with_a_java_is_a_rejected_setting_not_a_missing_java(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    err = classify(RuntimeError(GATEWAY), java=lambda: java)
    assert err is not None and err.code == "spark-jvm-start-failed"
    assert str(java) in str(err) and "spark.driver.extraJavaOptions" in err.hint


def test_find_java_follows_java_home_like_spark_s_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert find_java() is None  # JAVA_HOME set but no bin/java: the launcher fails, so does the lookup
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    assert find_java() == java


def test_unknown_failure_is_left_alone() -> None:
    assert classify(Py4JJavaError("org.apache.spark.sql.AnalysisException: [UNRESOLVED_COLUMN]")) is None


_READ_FAILED = (
    "An error occurred while calling o582.parquet.\n: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] "
    "Encountered error while reading file file://{path}.  SQLSTATE: KD001\n\tat org.apache.spark.sql.errors.X\n"
    "Caused by: java.io.IOException: can not read class org.apache.parquet.format.PageHeader: Socket is closed\n"
    "Caused by: shaded.parquet.org.apache.thrift.transport.TTransportException: Socket is closed by peer.\n"
)


def test_an_unreadable_snapshot_part_is_snapshot_invalid_naming_it(tmp_path: Path) -> None:
    part = tmp_path / "snap" / "tables" / "bk_ledgers" / "part-00000.parquet"
    err = classify(RuntimeError(_READ_FAILED.format(path=part)), snapshot_dir=tmp_path / "snap")
    assert err is not None and err.code == "snapshot-invalid"
    assert err.message.startswith(f"{part}: not a readable Parquet file (java.io.IOException: can not read")
    assert "pulsar-ops scrape" in err.hint
    # a file outside the snapshot (an intermediate under --out) is not the snapshot's damage
    other = tmp_path / "out" / "_intermediate" / "x" / "part-0.parquet"
    err = classify(RuntimeError(_READ_FAILED.format(path=other)), snapshot_dir=tmp_path / "snap")
    assert err is not None and err.code == "spark-read-failed" and str(other) in err.message
