"""Spark and JVM failures, classified into error codes with a hint that names the setting to change. Pure.

A Spark failure reaches Python as a Py4J error whose text holds the Java exception; an operator needs to know
which knob to turn, not 200 lines of Java frames (those come with ``--debug``).
"""

from __future__ import annotations

from dataclasses import dataclass

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
_JAVA_MISSING = (
    "Java gateway process exited before sending its port number",
    "JAVA_HOME is not set",
    "java: not found",
    "No such file or directory: 'java'",
)


def classify(error: BaseException) -> PulsarOpsError | None:
    """The PulsarOpsError a Spark/JVM failure means, or None when it is not one we recognise."""
    text = f"{type(error).__name__}: {error}"
    if any(n in text for n in _JAVA_MISSING):
        return JavaMissingError(
            "Spark could not start its JVM: no usable Java",
            hint="install Java 17 (Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME",
        )
    for rule in _RULES:
        if any(n in text for n in rule.needles):
            return AuditError(rule.message, hint=rule.hint, code=rule.code)
    return None
