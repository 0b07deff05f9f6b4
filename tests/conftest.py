"""Shared fixtures: one real ZooKeeper per test session (each test gets its own chroot) and one SparkSession."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

# No test outcome may depend on timing: hypothesis's defaults fail a property test whose example ran past 200 ms
# (`deadline`: DeadlineExceeded, or "Unreliable test timings!" when the replay was quicker) or whose input
# generation took over a second (HealthCheck.too_slow): on a loaded 2-core CI machine either is a matter of
# scheduling, not of the code. Turned off for every property test; a test's own @settings may still narrow it.
settings.register_profile("pulsar-ops-tests", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pulsar-ops-tests")

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)  # type: ignore[attr-defined]
# no JVM the suite starts maps or builds a class-data archive in the user's cache (audit/class_cache.py); the
# tests of it give it their own directory
os.environ.setdefault("PULSAR_OPS_JVM_CACHE", "off")


@pytest.fixture(scope="session")
def zk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    zk = EmbeddedZooKeeper(data_dir=tmp_path_factory.mktemp("zk"))
    zk.start()
    try:
        yield zk
    finally:
        zk.cleanup()


@pytest.fixture
def zk_chroot(zk_server: EmbeddedZooKeeper) -> str:
    """A fresh, empty chroot path for this test (created, no trailing slash)."""
    from pulsar_ops.zkconn import connected

    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    with connected(zk_server.hosts) as c:
        c.ensure_path(chroot)
    return chroot


@pytest.fixture
def zk_hosts(zk_server: EmbeddedZooKeeper, zk_chroot: str) -> str:
    """`host:port/chroot` for this test's private chroot."""
    return f"{zk_server.hosts}{zk_chroot}"


@pytest.fixture
def zk(zk_hosts: str) -> Iterator[object]:
    """A started KazooClient rooted at this test's chroot."""
    from pulsar_ops.zkconn import connected

    with connected(zk_hosts) as c:
        yield c


# The test session is one long-lived JVM that runs every audit of its shard (about 70 in the spark shard), not
# the one short audit a small snapshot's CLI run is: after its first audit C2's code pays, and the 1 GiB heap Spark
# gives a driver by default collected 189 times (13 full) in three audits. Measured per audit of a small snapshot
# on one session (JVM CPU-s, 2nd-3rd audit, load 8-16; CHANGELOG): C1 alone with 1 GiB 45-48, C2 with 2 GiB
# 26-30. Set as an operator would (build_session's jvm_options and settings); the product's own defaults stay as
# they are, and the tests of them (test_class_cache_cli.py, CLI subprocesses) run them unchanged.
# One parallel-collector thread: the suite runs two shards on two cores, so a second GC thread mostly spins on a
# core the other shard is using. test_loaded_listing.py (five audits on the session), two interleaved pairs at
# load 2-4, whole process tree: 273.2 / 256.5 CPU-s with the default two threads, 241.7 / 235.7 with one (system
# time 35.8 / 29.2 -> 15.8 / 22.9 s).
C1_ONLY = "-XX:TieredStopAtLevel="
TEST_SESSION_JVM_OPTIONS = ("-XX:ParallelGCThreads=1",)
TEST_SESSION_CONF = {"spark.driver.memory": "2g"}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from pulsar_ops.audit.session import LOCAL_JVM_OPTIONS, SMALL_INPUT_JVM_OPTIONS, build_session
    from pulsar_ops.audit.sizing import NO_CODEGEN

    # Every test snapshot is small: the test session runs as `audit` runs a small snapshot's (audit/sizing.py
    # NO_CODEGEN: expressions interpreted), with the JIT and heap of a long-lived JVM (above).
    s = build_session(
        master="local[2]",
        app_name="pulsar-ops-tests",
        warehouse=tmp_path_factory.mktemp("wh"),
        jvm_options=(
            *LOCAL_JVM_OPTIONS,
            *(o for o in SMALL_INPUT_JVM_OPTIONS if not o.startswith(C1_ONLY)),
            *TEST_SESSION_JVM_OPTIONS,
        ),
        defaults={**NO_CODEGEN, **TEST_SESSION_CONF},
    )
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
