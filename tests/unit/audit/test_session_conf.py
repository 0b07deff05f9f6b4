"""The settings the one SparkSession builder gives a local JVM versus a cluster's."""

from __future__ import annotations

from pathlib import Path

from pulsar_ops.audit.session import CODEGEN_CACHE_ENTRIES, LOCAL_JVM_OPTIONS, default_conf


def test_a_local_jvm_gets_the_quiet_logging_and_the_short_run_jit_settings() -> None:
    conf = default_conf("local[*]", None)
    driver = conf["spark.driver.extraJavaOptions"].split()
    assert driver[0].startswith("-Dlog4j2.configurationFile=file:") and Path(driver[0].split("file:", 1)[1]).exists()
    assert driver[1:] == list(LOCAL_JVM_OPTIONS)
    assert {"-XX:+UseParallelGC", "-XX:FreqInlineSize=100", "-XX:Tier4InvocationThreshold=20000"} <= set(driver)
    # executors of a local session live in the driver's JVM: nothing to tune there but logging
    assert conf["spark.executor.extraJavaOptions"] == driver[0]


def test_a_cluster_driver_keeps_hotspot_defaults() -> None:
    conf = default_conf("spark://127.0.0.1:7077", None)
    assert conf["spark.driver.extraJavaOptions"].split() == [conf["spark.executor.extraJavaOptions"]]
    assert not any(o in conf["spark.driver.extraJavaOptions"] for o in LOCAL_JVM_OPTIONS)


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
