"""The one SparkSession builder: quiet, bound to 127.0.0.1, small shuffles for local mode, Arrow on.

Reuses the active session when there is one (``spark-submit`` on a cluster provides it), so the same job code
runs in-process from the CLI, under pytest and under ``spark-submit --master spark://...``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from pulsar_ops.audit import class_cache

_LOG4J2 = """\
status = error
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


def log4j2_properties() -> Path:
    """Write (once per process) the quiet log4j2 configuration and return its path."""
    path = Path(tempfile.gettempdir()) / f"pulsar-ops-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        tmp.replace(path)
    return path


# HotSpot settings for the one short-lived JVM of a local-mode audit, a batch job on few cores. A cold JVM spends
# its run compiling: at 600,000 topics on 2 cores, `-XX:+CITime` counted 137 s of JIT compilation (C2: 118 s,
# 6,400 methods, many of them Spark's per-stage generated code) in a 134 s audit: one of the two cores the whole
# time. Inlining less (FreqInlineSize 325 -> 100, InlineSmallCode 2500 -> 1000) and promoting to C2 only methods
# about four times hotter (the Tier4 thresholds) cut it to 71-76 s and the audit to 111-118 s; the demo's audit
# took 34-36 s instead of 39-42 s. The throughput collector (ParallelGC) instead of G1, whose concurrent threads
# compete for the same two cores: 600,000 topics 89 s instead of 93 s, the demo's audit 31-33 s instead of
# 35-36 s (README "Benchmarks"). A C1-only JIT was slower at 600,000 topics (C2's code matters there). Local
# mode only: a cluster's executors are long-lived and keep the JVM's defaults. An explicit
# `--spark-conf spark.driver.extraJavaOptions=...` replaces these and the logging option.
LOCAL_JVM_OPTIONS = (
    "-XX:+UseParallelGC",
    "-XX:FreqInlineSize=100",
    "-XX:InlineSmallCode=1000",
    "-XX:Tier4InvocationThreshold=20000",
    "-XX:Tier4MinInvocationThreshold=2400",
    "-XX:Tier4CompileThreshold=40000",
)


# For a small snapshot (one shuffle partition: audit/sizing.py) the same JVM spends its run compiling code it runs
# a few times: C1 alone (no C2 tier) took the demo's audit from 26-31 s to 21-27 s and the 10,000-topic one from
# 33 s to 29-31 s, but the 100,000-topic one from 41-43 s to 45-47 s (C2's code matters there). C1's code cache
# alone is 48 MB, which a session that runs more than one audit filled ("CodeCache is full. Compiler has been
# disabled"): 256 MB.
SMALL_INPUT_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=256m")


# Spark keeps the classes it compiled for generated code in a cache of 100 entries by default; one audit generates
# about 400 distinct classes, so a session that runs a second audit compiled every one of them again (Janino,
# about 20 ms each: 8-12 s per audit of the demo's snapshot). With room for several audits' classes, a second
# audit in the same session compiles about ten. A static setting: it must be given when the session is built.
CODEGEN_CACHE_ENTRIES = 2000


def default_conf(master: str, warehouse: Path | None, jvm_options: Sequence[str] = LOCAL_JVM_OPTIONS) -> dict[str, str]:
    """The configuration pulsar-ops sets unless the caller overrides a key; ``jvm_options`` are the local-mode
    driver's (a cluster's executors are long-lived and keep the JVM's defaults)."""
    log4j = f"-Dlog4j2.configurationFile=file:{log4j2_properties()}"
    driver_java = " ".join((log4j, *jvm_options)) if master.startswith("local") else log4j
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        "spark.driver.extraJavaOptions": driver_java,
        "spark.executor.extraJavaOptions": log4j,
    }
    if master.startswith("local"):
        conf.update(
            {
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.host": "127.0.0.1",
                "spark.sql.shuffle.partitions": "4",  # run_audit sizes these from the snapshot
                "spark.default.parallelism": "4",
            }
        )
    if warehouse is not None:
        conf["spark.sql.warehouse.dir"] = str(warehouse)
    return conf


def set_unless_explicit(spark: SparkSession, settings: Mapping[str, str]) -> None:
    """Set runtime settings on a session, but for any key its configuration sets explicitly (``--spark-conf``,
    ``spark-submit --conf``): those are the operator's."""
    explicit = spark.sparkContext.getConf()
    for key, value in settings.items():
        if not explicit.contains(key):
            spark.conf.set(key, value)


def build_session(
    master: str = "local[*]",
    app_name: str = "pulsar-ops-audit",
    warehouse: Path | None = None,
    conf: Mapping[str, str] | None = None,
    jvm_options: Sequence[str] = LOCAL_JVM_OPTIONS,
) -> SparkSession:
    """Return the active SparkSession, or build a quiet one for ``master``.

    A local-mode driver JVM it starts maps the class-data archive of earlier audits, or builds it
    (audit/class_cache.py), unless ``conf`` sets ``spark.driver.extraJavaOptions`` itself."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # a JVM this call starts, not spark-submit's (which launched Python, and took its options from spark-submit)
    starts_jvm = SparkContext._active_spark_context is None and "PYSPARK_GATEWAY_PORT" not in os.environ
    cache = class_cache.Plan(class_cache.OFF)
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if starts_jvm and "spark.driver.extraJavaOptions" not in (conf or {}):
            cache = class_cache.plan()
    settings = default_conf(master, warehouse, (*jvm_options, *cache.options))
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    jvm = session.sparkContext._jvm
    if cache.part is not None and jvm is not None:
        arguments = " ".join(
            str(a) for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
        )
        if str(cache.part) in arguments:  # this JVM writes the archive as it exits
            pid = int(jvm.java.lang.ProcessHandle.current().pid())
            class_cache.record_builder(cache.part, pid, str(jvm.System.getProperty("java.class.path")))
    return session
