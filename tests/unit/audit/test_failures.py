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
