"""The one SparkSession builder: quiet, bound to 127.0.0.1, small shuffles for local mode, Arrow on, each only
where the operator set nothing (``--spark-conf``; under spark-submit or for a cluster master also spark-submit's
``--conf`` and ``spark-defaults.conf``).

Reuses the active session when there is one (``spark-submit`` on a cluster provides it), so the same job code
runs in-process from the CLI, under pytest and under ``spark-submit --master spark://...``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from pulsar_ops.audit import class_cache

# The quiet configuration: errors only, and each as its one line: a failed task's Java stack (a damaged Parquet
# page: hundreds of frames, printed once per task and again by the job's writer) is not for an operator's
# terminal; the failure reaches Python, which names the code and the hint (the frames come with --debug).
_LOG4J2 = """\
status = error
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
appender.console.layout.alwaysWriteExceptions = false
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
"""


def log4j2_properties() -> Path:
    """Write (once per process) the quiet log4j2 configuration and return its path: named by its content, so two
    installed versions never read each other's."""
    digest = hashlib.sha256(_LOG4J2.encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"pulsar-ops-log4j2-{os.getuid()}-{digest}.properties"
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


def log4j_option() -> str:
    """The driver JVM option that points log4j2 at the quiet configuration (a file on the driver's host)."""
    return f"-Dlog4j2.configurationFile=file:{log4j2_properties()}"


def default_conf(
    master: str, warehouse: Path | None, jvm_options: Sequence[str] = LOCAL_JVM_OPTIONS, *, starts_jvm: bool = True
) -> dict[str, str]:
    """The configuration pulsar-ops sets for any key the operator did not set (:func:`build_session`).

    ``spark.driver.extraJavaOptions`` (the quiet logging and ``jvm_options``) only for a local-mode driver JVM
    this process starts: a JVM that spark-submit (or a cluster session's launch) started has its options already.
    Never ``spark.executor.extraJavaOptions``: a local session's executors run in the driver's JVM, and a
    cluster's on other hosts, where the driver's files (the log4j2 configuration, the class-data archive) are
    not."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
    }
    local = master.startswith("local")
    if local and starts_jvm:
        conf["spark.driver.extraJavaOptions"] = " ".join((log4j_option(), *jvm_options))
    if local:
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


# The one line of the JVM's own stderr an operator is never meant to see: Spark's launcher always adds
# `--add-modules=jdk.incubator.vector` (JavaModuleOptions), and the JDK's module bootstrap warns about any
# incubator module it resolves (java.base jdk.internal.module.ModuleBootstrap, `checkIncubatingStatus`). No JVM option
# turns the warning off, so the stderr of a JVM this process starts is filtered for it; every other line passes.
INCUBATOR_WARNING = b"WARNING: Using incubator modules"


def _forward(source: int, target: int) -> None:
    try:
        with open(source, "rb") as pipe, contextlib.suppress(OSError):
            for line in iter(pipe.readline, b""):
                if not line.startswith(INCUBATOR_WARNING):
                    os.write(target, line)
    finally:
        os.close(target)


@contextlib.contextmanager
def jvm_stderr_filtered() -> Iterator[threading.Thread | None]:
    """While a JVM is launched inside, make fd 2 a pipe whose lines (but :data:`INCUBATOR_WARNING`) a daemon
    thread copies to the real stderr for as long as that JVM (and the Python workers it forks) writes to it.
    Yields that thread (it ends when every writer has closed the pipe), ``None`` when nothing is filtered."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr (or no descriptor to spare): the warning shows, nothing else changes
        yield None
        return
    try:
        read_end, write_end = os.pipe()
    except OSError:
        os.close(saved)
        yield None
        return
    forward = threading.Thread(target=_forward, args=(read_end, saved), daemon=True, name="jvm-stderr")
    forward.start()
    sys.stderr.flush()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield forward
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # this process's stderr back; only the JVM holds the pipe now


def operator_settings(conf: Mapping[str, str] | None) -> dict[str, str]:
    """What the operator set for a session about to be created on a running JVM: that JVM's configuration
    (spark-submit's ``--conf`` and ``--properties-file``, ``spark-defaults.conf``, which the launcher made its
    system properties and ``SparkConf`` loads), then ``conf`` (``--spark-conf``, the config file's)."""
    context = SparkContext._active_spark_context
    if context is not None:  # a context without a session: its configuration is the one in force
        loaded = context.getConf().getAll()
    else:
        SparkContext._ensure_initialized()  # attach to spark-submit's gateway (no SparkContext is created)
        loaded = SparkConf().getAll()
    return {**{str(k): str(v) for k, v in loaded}, **(conf or {})}


def _start_cluster_driver(conf: Mapping[str, str] | None, app_name: str) -> None:
    """Launch the driver JVM of a non-local master with the operator's ``conf`` only (so ``spark-defaults.conf``
    and ``PYSPARK_SUBMIT_ARGS`` keep their settings) and the quiet logging through ``SPARK_SUBMIT_OPTS``, which
    Spark's launcher puts before ``spark.driver.extraJavaOptions`` (launcher SparkSubmitCommandBuilder,
    ``buildSparkSubmitCommand``): an operator's own log4j2 option there wins."""
    launch = SparkConf(loadDefaults=False).setAll(list({"spark.app.name": app_name, **(conf or {})}.items()))
    previous = os.environ.get("SPARK_SUBMIT_OPTS")
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(o for o in (log4j_option(), previous) if o)
    try:
        with jvm_stderr_filtered():
            SparkContext._ensure_initialized(conf=launch)
    finally:
        if previous is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = previous


def build_session(
    master: str = "local[*]",
    app_name: str = "pulsar-ops-audit",
    warehouse: Path | None = None,
    conf: Mapping[str, str] | None = None,
    jvm_options: Sequence[str] = LOCAL_JVM_OPTIONS,
    defaults: Mapping[str, str] | None = None,
) -> SparkSession:
    """Return the active SparkSession, or build a quiet one for ``master``.

    ``conf`` is the operator's (``--spark-conf``), ``defaults`` the product's sizing (audit/sizing.py), set like
    :func:`default_conf`'s only where the operator set nothing. For a local-mode driver JVM this call starts, the
    operator's settings are ``conf``; that JVM maps the class-data archive of earlier audits, or builds it
    (audit/class_cache.py), unless ``conf`` sets ``spark.driver.extraJavaOptions`` itself. Under spark-submit and
    for a non-local master they are also the running JVM's configuration (:func:`operator_settings`): spark-submit's
    ``--conf spark.executor.extraJavaOptions=...`` reaches the executors as given."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # a JVM this call starts, not spark-submit's (which launched Python, and took its options from spark-submit)
    attached = SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ
    starts_jvm = SparkContext._active_spark_context is None and not attached
    local = master.startswith("local")
    cache = class_cache.Plan(class_cache.OFF)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if local and starts_jvm:
        if "spark.driver.extraJavaOptions" not in (conf or {}):
            cache = class_cache.plan()
        operator = dict(conf or {})
    else:
        if starts_jvm:
            _start_cluster_driver(conf, app_name)
        operator = operator_settings(conf)
        app_name = operator.get("spark.app.name", app_name)  # spark-submit's --name (or its script's name)
    product = {**default_conf(master, warehouse, (*jvm_options, *cache.options), starts_jvm=starts_jvm)}
    product.update(defaults or {})
    settings = {k: v for k, v in product.items() if k not in operator}
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if local and starts_jvm:
        with jvm_stderr_filtered():
            session = builder.getOrCreate()
    else:
        session = builder.getOrCreate()
    if "spark.log.level" not in operator:  # spark-submit --conf spark.log.level=WARN is the operator's too
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
