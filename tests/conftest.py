"""Shared fixtures: one real ZooKeeper per test session (each test gets its own chroot) and one SparkSession."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

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


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from pulsar_ops.audit.session import LOCAL_JVM_OPTIONS, SMALL_INPUT_JVM_OPTIONS, build_session
    from pulsar_ops.audit.sizing import NO_CODEGEN

    # Every test snapshot is small: the test session runs as `audit` runs a small snapshot's (audit/sizing.py
    # NO_CODEGEN, audit/session.py SMALL_INPUT_JVM_OPTIONS: expressions interpreted, C1 alone).
    s = build_session(
        master="local[2]",
        app_name="pulsar-ops-tests",
        warehouse=tmp_path_factory.mktemp("wh"),
        jvm_options=(*LOCAL_JVM_OPTIONS, *SMALL_INPUT_JVM_OPTIONS),
        defaults=NO_CODEGEN,
    )
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
