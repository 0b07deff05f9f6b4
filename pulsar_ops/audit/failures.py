"""Spark and JVM failures, classified into error codes with a hint that names the setting to change. Pure.

A Spark failure reaches Python as a Py4J error whose text holds the Java exception; an operator needs to know
which knob to turn, not 200 lines of Java frames (those come with ``--debug``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pulsar_ops.errors import AuditError, JavaMissingError, PulsarOpsError


@dataclass(frozen=True)
class _Rule:
    needles: tuple[str, ...]
    code: str
    message: str
    hint: str


_RULES = (
    _Rule(
        ("Not enough memory to build and broadcast", "Cannot broadcast the table", "SparkOutOfMemoryError"),
        "spark-broadcast-too-large",
        "Spark could not broadcast a join side: a table is too big to broadcast in the driver's memory",
        "raise the driver memory (`pulsar-ops audit --spark-conf spark.driver.memory=16g`, or spark-submit "
        "--driver-memory 16g) or turn automatic broadcasts off (--spark-conf spark.sql.autoBroadcastJoinThreshold=-1)",
    ),
    _Rule(
        ("java.lang.OutOfMemoryError", "Java heap space", "GC overhead limit exceeded"),
        "spark-out-of-memory",
        "the Spark driver (or an executor) ran out of memory",
        "raise spark.driver.memory (`pulsar-ops audit --spark-conf spark.driver.memory=16g`, or spark-submit "
        "--driver-memory 16g) and, on a cluster, spark.executor.memory",
    ),
    _Rule(
        (
            "java.net.BindException",
            "Address already in use",
            "Service 'sparkDriver' could not bind",
            "Cannot assign requested address",
        ),
        "spark-port-in-use",
        "Spark could not bind its driver or block-manager port",
        "free the port or set spark.driver.port / spark.blockManager.port (and SPARK_LOCAL_IP=127.0.0.1 on a "
        "machine whose hostname does not resolve)",
    ),
)
# pyspark says this for every JVM that exits before it starts: no Java, but also a JVM option the JVM rejects
# (a typo in spark.driver.extraJavaOptions) or a setting spark-submit refuses (spark.driver.memory=12x). The
# JVM's own message is on stderr above ours; which one it was depends on whether there is a Java to run.
_GATEWAY_EXITED = "Java gateway process exited before sending its port number"
_JAVA_MISSING = ("JAVA_HOME is not set", "java: not found", "No such file or directory: 'java'")


def find_java() -> Path | None:
    """The ``java`` Spark's launcher runs (``$JAVA_HOME/bin/java``, else the one on PATH), if it exists."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None
    found = shutil.which("java")
    return Path(found) if found else None


def _java_missing() -> JavaMissingError:
    return JavaMissingError(
        "Spark could not start its JVM: no usable Java",
        hint="install Java 17 (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME",
    )


def classify(error: BaseException, java: Callable[[], Path | None] = find_java) -> PulsarOpsError | None:
    """The PulsarOpsError a Spark/JVM failure means, or None when it is not one we recognise. ``java`` finds the
    Java Spark runs, which tells a missing Java from an option the JVM rejected."""
    text = f"{type(error).__name__}: {error}"
    if any(n in text for n in _JAVA_MISSING):
        return _java_missing()
    if _GATEWAY_EXITED in text:
        found = java()
        if not found:
            return _java_missing()
        return AuditError(
            f"Spark's JVM ({found}) exited while starting: it rejected an option or a setting (its message is "
            "printed above)",
            hint="fix or drop the --spark-conf / config-file spark_conf entry it names (spark.driver.extraJavaOptions,"
            " spark.driver.memory, ...); `java -version` checks the Java itself",
            code="spark-jvm-start-failed",
        )
    for rule in _RULES:
        if any(n in text for n in rule.needles):
            return AuditError(rule.message, hint=rule.hint, code=rule.code)
    return None
