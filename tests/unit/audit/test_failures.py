"""Spark/JVM failures become error codes with the setting to change (the Java text as Py4J carries it)."""

from __future__ import annotations

import pytest

from pulsar_ops.audit.failures import classify


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
        ("Java gateway process exited before sending its port number", "java-missing", "JAVA_HOME"),
    ],
)
def test_known_failures(text: str, code: str, setting: str) -> None:
    err = classify(Py4JJavaError(text))
    assert err is not None and err.code == code and setting in err.hint


def test_unknown_failure_is_left_alone() -> None:
    assert classify(Py4JJavaError("org.apache.spark.sql.AnalysisException: [UNRESOLVED_COLUMN]")) is None
