"""Spark and JVM failures, classified into error codes with a hint that names the setting to change. Pure.

A Spark failure reaches Python as a Py4J error whose text holds the Java exception; an operator needs to know
which knob to turn, not 200 lines of Java frames (those come with ``--debug``).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pulsar_ops.errors import AuditError, JavaMissingError, PulsarOpsError, SnapshotError


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


# Spark's error class for a file a scan could not read (its footer was, when the scan was planned: a corrupt page,
# a page header that does not decode), with the file's URI; the first "Caused by" says what was wrong with it.
_FAILED_READ = re.compile(r"FAILED_READ_FILE[.A-Z_]*\] Encountered error while reading file (\S+?)\.?\s")
_CAUSE = re.compile(r"Caused by: ([^\n]+)")


def unreadable_file(error: BaseException, snapshot_dir: Path | None = None) -> PulsarOpsError | None:
    """A scan's ``FAILED_READ_FILE`` as an error naming the file: ``snapshot-invalid`` for a part file of
    ``snapshot_dir`` (the snapshot is damaged), ``spark-read-failed`` for any other file."""
    text = str(error)
    found = _FAILED_READ.search(text)
    if found is None:
        return None
    path = Path(unquote(re.sub(r"^file:(//)?", "", found.group(1))))
    cause = _CAUSE.search(text)
    reason = f" ({cause.group(1).strip()})" if cause else ""
    if snapshot_dir is not None and path.resolve().is_relative_to(Path(snapshot_dir).resolve()):
        return SnapshotError(
            f"{path}: not a readable Parquet file{reason}",
            hint="the snapshot is damaged: scrape again with `pulsar-ops scrape --zookeeper HOSTS --out DIR`",
        )
    return AuditError(
        f"Spark could not read {path}{reason}",
        hint="check that file (and that every executor reads the same storage), then re-run the audit",
        code="spark-read-failed",
    )


def classify(
    error: BaseException, java: Callable[[], Path | None] = find_java, snapshot_dir: Path | None = None
) -> PulsarOpsError | None:
    """The PulsarOpsError a Spark/JVM failure means, or None when it is not one we recognise. ``java`` finds the
    Java Spark runs, which tells a missing Java from an option the JVM rejected; ``snapshot_dir``: the audited
    snapshot, whose unreadable part files are ``snapshot-invalid`` (:func:`unreadable_file`)."""
    unreadable = unreadable_file(error, snapshot_dir)
    if unreadable is not None:
        return unreadable
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
