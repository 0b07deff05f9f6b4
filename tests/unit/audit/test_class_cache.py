"""The local driver's class-data archive: where it lives, when a JVM builds it, maps it or runs without it, and
that nothing unverified is ever mapped. Archives here are real (written and checked by this machine's java)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulsar_ops.audit import class_cache
from pulsar_ops.audit.class_cache import BUILDING, BUSY, FAILED, OFF, USED

JAVA = shutil.which("java")
pytestmark = pytest.mark.skipif(JAVA is None, reason="no java on PATH")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    return {
        "PULSAR_OPS_JVM_CACHE": str(tmp_path / "cache"),
        "SPARK_HOME": str(tmp_path / "spark"),
        "PATH": os.environ["PATH"],
    }


def test_the_cache_directory_follows_the_environment(tmp_path: Path) -> None:
    assert class_cache.cache_dir({"PULSAR_OPS_JVM_CACHE": "off"}) is None
    assert class_cache.cache_dir({"PULSAR_OPS_JVM_CACHE": "0"}) is None
    assert class_cache.cache_dir({"PULSAR_OPS_JVM_CACHE": str(tmp_path)}) == tmp_path
    assert class_cache.cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/pulsar-ops/jvm")
    assert class_cache.cache_dir({"HOME": "/home/op"}) == Path("/home/op/.cache/pulsar-ops/jvm")


def test_off_gives_the_jvm_no_archive_options(env: dict[str, str]) -> None:
    assert class_cache.plan({**env, "PULSAR_OPS_JVM_CACHE": "off"}) == class_cache.Plan(OFF)


def test_another_spark_jar_is_another_archive(env: dict[str, str]) -> None:
    java = Path(str(JAVA))
    jars = Path(env["SPARK_HOME"]) / "jars"
    before = class_cache.cache_key(java, jars)
    assert class_cache.cache_key(java, jars) == before
    (jars / "spark-sql.jar").write_bytes(b"PK")
    assert class_cache.cache_key(java, jars) != before


def test_the_first_jvm_builds_into_a_part_file_in_the_cache(env: dict[str, str]) -> None:
    plan = class_cache.plan(env)
    assert plan.state == BUILDING and plan.part is not None
    assert plan.part.parent == Path(env["PULSAR_OPS_JVM_CACHE"]) and plan.part.name.endswith(".jsa.part")
    assert f"-XX:ArchiveClassesAtExit={plan.part}" in plan.options
    assert "-Xlog:cds=off" in plan.options  # an unusable archive never prints into the operator's output
    assert class_cache.state_of(" ".join(plan.options)) == BUILDING


def build_archive(part: Path, class_path: str) -> int:
    """Write ``part`` the way an audit's JVM does (at its exit) and return that (now dead) JVM's pid."""
    done = subprocess.run(
        [str(JAVA), f"-XX:ArchiveClassesAtExit={part}", *class_cache.QUIET, "-cp", class_path, "-version"],
        capture_output=True,
        check=True,
    )
    assert done.returncode == 0 and part.exists()
    return dead_pid()


def dead_pid() -> int:
    """The pid of a process that has exited."""
    probe = subprocess.Popen(["true"])
    probe.wait()
    return probe.pid


def test_a_finished_build_is_verified_promoted_and_mapped(env: dict[str, str], tmp_path: Path) -> None:
    plan = class_cache.plan(env)
    assert plan.part is not None
    class_path = str(tmp_path)
    class_cache.record_builder(plan.part, build_archive(plan.part, class_path), class_path)
    mapped = class_cache.plan(env)
    assert mapped.state == USED and mapped.part is None
    final = plan.part.parent / (plan.part.name.split(".")[0] + ".jsa")
    assert f"-XX:SharedArchiveFile={final}" in mapped.options and final.exists()
    assert not plan.part.exists() and not list(final.parent.glob("*.pid"))
    assert class_cache.state_of(" ".join(mapped.options)) == USED


def test_a_truncated_archive_is_never_mapped_and_not_rebuilt(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    plan = class_cache.plan(env)
    assert plan.part is not None
    pid = build_archive(plan.part, str(tmp_path))
    data = plan.part.read_bytes()
    plan.part.chmod(0o644)
    plan.part.write_bytes(data[: len(data) // 2])  # the JVM was killed while it wrote
    class_cache.record_builder(plan.part, pid, str(tmp_path))
    after = class_cache.plan(env)
    assert after == class_cache.Plan(FAILED)  # no options: the audit runs without an archive
    assert not plan.part.exists() and not list(plan.part.parent.glob("*.jsa"))
    assert list(workdir.iterdir()) == []  # the checking JVM's crash report (if any) is not left behind here


@pytest.fixture
def live_java() -> Iterator[int]:
    """A running process whose command line names java (what a builder JVM's does)."""
    proc = subprocess.Popen(["java-builder", "60"], executable="sleep")
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    deadline = time.monotonic() + 10
    while b"java" not in cmdline.read_bytes() and time.monotonic() < deadline:  # until the fork has exec'd
        time.sleep(0.01)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_while_a_builder_writes_its_part_other_jvms_run_without_an_archive(
    env: dict[str, str], tmp_path: Path, live_java: int
) -> None:
    plan = class_cache.plan(env)
    assert plan.part is not None
    plan.part.write_bytes(b"being written")
    class_cache.record_builder(plan.part, live_java, str(tmp_path))
    assert class_cache.plan(env) == class_cache.Plan(BUSY)
    assert plan.part.exists()  # its builder still owns it


def test_a_part_without_its_builder_record_is_waited_for_then_dropped(env: dict[str, str]) -> None:
    plan = class_cache.plan(env)
    assert plan.part is not None
    plan.part.write_bytes(b"builder died before recording itself")
    assert class_cache.plan(env).state == BUSY  # it may still be starting
    old = time.time() - class_cache.ORPHAN_AFTER_S - 10
    os.utime(plan.part, (old, old))
    assert class_cache.plan(env).state == BUILDING and not plan.part.exists()


def test_the_state_of_options_without_an_archive_is_off() -> None:
    assert class_cache.state_of("-Dlog4j2.configurationFile=file:/x -XX:+UseParallelGC") == OFF


def test_the_suite_runs_without_an_archive() -> None:
    # tests/conftest.py: no test but these leaves a JVM writing into the user's cache, or maps one
    assert os.environ.get("PULSAR_OPS_JVM_CACHE") == "off"
    assert class_cache.plan() == class_cache.Plan(OFF)


def test_a_promotion_keeps_the_three_newest_archives(tmp_path: Path) -> None:
    for age, name in enumerate(["spark-a.jsa", "spark-b.jsa", "spark-c.jsa", "spark-d.jsa", "spark-e.jsa"]):
        (tmp_path / name).write_bytes(b"x")
        os.utime(tmp_path / name, (time.time() - 100 * age, time.time() - 100 * age))
    (tmp_path / "spark-f.failed").write_text("{}")
    class_cache.prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-a.jsa", "spark-b.jsa", "spark-c.jsa", "spark-f.failed"]


def test_parts_another_installation_left_are_dropped_after_an_hour(tmp_path: Path, live_java: int) -> None:
    dead = dead_pid()
    hour_ago = time.time() - class_cache.ORPHAN_AFTER_S - 10
    parts = {}
    for name, pid, old in [("gone", dead, True), ("young", dead, False), ("running", live_java, True)]:
        part = tmp_path / f"spark-{name}.0123.jsa.part"
        part.write_bytes(b"x")
        class_cache.record_builder(part, pid, "/cp")
        if old:
            os.utime(part, (hour_ago, hour_ago))
        parts[name] = part
    unrecorded = tmp_path / "spark-unrecorded.0123.jsa.part"
    unrecorded.write_bytes(b"x")
    os.utime(unrecorded, (hour_ago, hour_ago))
    class_cache.prune(tmp_path)
    assert not parts["gone"].exists() and not (tmp_path / "spark-gone.0123.pid").exists()
    assert not unrecorded.exists()
    assert parts["young"].exists() and parts["running"].exists()  # may still be promoted by their installation


def test_a_recycled_pid_is_not_the_builder(env: dict[str, str], tmp_path: Path, live_java: int) -> None:
    plan = class_cache.plan(env)
    assert plan.part is not None
    plan.part.write_bytes(b"left by a builder that is gone")
    class_cache.record_builder(plan.part, live_java, str(tmp_path))
    record = json.loads(plan.part.with_name(plan.part.name.replace(".jsa.part", ".pid")).read_text())
    assert record["started"] == class_cache.start_ticks(live_java)  # recorded with the JVM's start time
    record["started"] = str(int(record["started"]) - 1)  # ... and that pid now belongs to a later process
    plan.part.with_name(plan.part.name.replace(".jsa.part", ".pid")).write_text(json.dumps(record))
    assert class_cache.plan(env) == class_cache.Plan(FAILED)  # judged (and refused), not waited for forever


def test_the_record_of_a_builder_that_died_before_writing_is_dropped(tmp_path: Path, live_java: int) -> None:
    for name, pid in [("died", dead_pid()), ("auditing", live_java)]:
        class_cache.record_builder(tmp_path / f"spark-{name}.0123.jsa.part", pid, "/cp")  # no part: not written yet
    class_cache.prune(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-auditing.0123.pid"]
