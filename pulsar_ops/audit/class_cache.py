"""A class-data-sharing archive of the local Spark driver's classes, kept between audits. No pyspark import.

A local-mode audit starts a fresh JVM that loads about 24,000 classes from Spark's 250 jars, linearly searched
(``JarFile.getEntry`` was the top of a profile of the demo's audit), parsed and verified. HotSpot can instead map
them from an archive written by an earlier JVM (JDK 17 dynamic CDS: ``-XX:ArchiveClassesAtExit`` writes one when
that JVM exits, ``-XX:SharedArchiveFile`` maps it). Measured on this 2-core machine: a Spark session started in
2.3 s instead of 6.0 s, the demo's audit took 20-21 s instead of 27-31 s and the 100,000-topic audit 37.9 s
instead of 46.1 s (README "Benchmarks").

The archive lives in ``$PULSAR_OPS_JVM_CACHE`` (``off`` disables it), else ``$XDG_CACHE_HOME/pulsar-ops/jvm``,
else ``~/.cache/pulsar-ops/jvm``, one file per Java runtime and set of Spark jars (:func:`cache_key`). The first
local audit without one *builds* it: its JVM writes ``<key>.<token>.jsa.part`` as it exits, which happens after
the command has printed its result (the JVM ends when the Python process does), and ``<key>.<token>.pid``
records that JVM's process id and class path. The next audit *promotes* the part once that process is gone and
``java -Xshare:on -XX:+VerifySharedSpaces`` maps it with the same class path (a truncated archive crashes a JVM
that maps it, so nothing unverified is ever used), with an atomic rename to ``<key>.jsa``. While a builder writes
its part, audits run without an archive (``busy``); one started while a builder is still auditing builds its
own (the JVM writes only as it exits), and the last promoted wins. A build that left nothing usable is recorded
(``<key>.failed``) and not retried for this key. The three newest archives are kept (each about 190 MB; another
pyspark or Java installation has its own), and parts another installation's builder left over an hour ago are
dropped, with the records of builders that died before writing (:func:`prune`). Any file-system error leaves
the audit without an archive, never failed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV = "PULSAR_OPS_JVM_CACHE"
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # an unusable archive is skipped silently, never printed
ORPHAN_AFTER_S = 3600  # a part without its pid file this old was left by a builder that died before writing it
VERIFY_TIMEOUT_S = 60
KEEP = 3  # archives kept: a promotion removes older ones beyond this (another pyspark or Java: another archive)

USED, BUILDING, BUSY, OFF, FAILED = "used", "building", "busy", "off", "failed"


@dataclass(frozen=True)
class Plan:
    """What one JVM start does with the archive: its options, and the part it builds (if it builds one)."""

    state: str  # used | building | busy | off | failed
    options: tuple[str, ...] = ()
    part: Path | None = None


def cache_dir(env: Mapping[str, str] = os.environ) -> Path | None:
    """Where archives live, or ``None`` when ``$PULSAR_OPS_JVM_CACHE`` is ``off`` (or ``0``, ``false``)."""
    explicit = env.get(ENV, "").strip()
    if explicit.lower() in ("off", "0", "false", "no"):
        return None
    if explicit:
        return Path(explicit)
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "pulsar-ops" / "jvm"


def java_executable(env: Mapping[str, str] = os.environ) -> Path | None:
    """The java Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the first ``java`` on ``PATH``."""
    home = env.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return Path(home) / "bin" / "java"
    found = shutil.which("java", path=env.get("PATH"))
    return Path(found) if found else None


def spark_jars(env: Mapping[str, str] = os.environ) -> Path | None:
    """``$SPARK_HOME/jars``, else the installed pyspark's ``jars`` (what pyspark's launcher puts on the path)."""
    home = env.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _stat_line(path: Path) -> str:
    st = path.stat()
    return f"{path.name}\t{st.st_size}\t{st.st_mtime_ns}"


def cache_key(java: Path, jars: Path) -> str:
    """A name for the archive of this Java runtime (its binary and module image) and these Spark jars (names,
    sizes, modification times): an upgrade of either is a new key, so an old archive is never mapped."""
    real = java.resolve()
    lines = [str(real), _stat_line(real)]
    modules = real.parent.parent / "lib" / "modules"
    if modules.exists():
        lines.append(_stat_line(modules))
    lines.extend(_stat_line(j) for j in sorted(jars.glob("*.jar")))
    return "spark-" + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:20]


def start_ticks(pid: int) -> str | None:
    """When process ``pid`` started (``/proc/<pid>/stat`` field 22, clock ticks since boot), or ``None``."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, started: str | None = None) -> bool:
    """Whether the builder JVM ``pid`` (started at ``started``, when recorded) still runs. A recycled pid is
    another process: another start time, or (without one) a command line without java."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if started is not None:
        return start_ticks(pid) in (started, None)
    try:
        return b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


@dataclass(frozen=True)
class Builder:
    """A builder's record: its JVM's pid and start time, and the class path to verify its archive with."""

    pid: int
    started: str | None
    class_path: str

    @classmethod
    def read(cls, pid_file: Path) -> Builder:
        """Raises OSError (no record yet) or ValueError (not a record)."""
        try:
            doc = json.loads(pid_file.read_text())
            started = doc.get("started")
            return cls(int(doc["pid"]), None if started is None else str(started), str(doc["class_path"]))
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{pid_file}: not a builder record") from e

    def alive(self) -> bool:
        return _alive(self.pid, self.started)


def verified(java: Path, archive: Path, class_path: str) -> bool:
    """Whether a JVM with this class path maps ``archive`` whole: ``-Xshare:on`` refuses to start otherwise and
    ``-XX:+VerifySharedSpaces`` checks every region's checksum."""
    check = ["-Xshare:on", "-XX:+VerifySharedSpaces", f"-XX:SharedArchiveFile={archive}", *QUIET]
    try:
        with tempfile.TemporaryDirectory(prefix="pulsar-ops-cds-") as scratch:
            # checksumming a truncated archive crashes that JVM (SIGBUS): its crash report goes here, not into the
            # operator's working directory
            crash = ["-XX:-CreateCoredumpOnCrash", f"-XX:ErrorFile={scratch}/hs_err_%p.log"]
            done = subprocess.run(
                [str(java), *check, *crash, "-cp", class_path, "-version"],
                cwd=scratch,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=VERIFY_TIMEOUT_S,
                check=False,
            )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _unlink(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            p.unlink()


def _pid_file(part: Path) -> Path:
    return part.with_name(part.name.removesuffix(".jsa.part") + ".pid")


def _stale(part: Path, now: float) -> bool:
    """Left over ``ORPHAN_AFTER_S`` ago (a part that is gone is not stale: nothing to drop)."""
    try:
        return now - part.stat().st_mtime >= ORPHAN_AFTER_S
    except OSError:
        return False


def prune(directory: Path, keep: int = KEEP, now: float | None = None) -> None:
    """Keep the ``keep`` newest archives (each Spark installation or Java runtime has its own, about 190 MB), and
    drop parts of any key left an hour ago by a builder that is gone: another installation's (a removed venv's)
    would otherwise stay forever, as only that installation's next audit promotes them."""
    archives = sorted(directory.glob("spark-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    _unlink(*archives[keep:])
    now = time.time() if now is None else now
    for part in directory.glob("spark-*.jsa.part"):
        builder: Builder | None
        try:
            if not _stale(part, now):
                continue
            builder = Builder.read(_pid_file(part))
        except FileNotFoundError:
            builder = None
        except (OSError, ValueError):
            continue
        if builder is None or not builder.alive():
            _unlink(part, _pid_file(part))
    for record in directory.glob("spark-*.pid"):  # a builder that died before it wrote anything (killed, crashed)
        part = record.with_name(record.name.removesuffix(".pid") + ".jsa.part")
        try:
            if not part.exists() and not Builder.read(record).alive():
                _unlink(record)
        except (OSError, ValueError):
            continue


def _settle(directory: Path, key: str, java: Path) -> str | None:
    """Promote or discard the parts earlier builders left. Returns ``busy`` while one still runs."""
    busy = False
    for part in sorted(directory.glob(f"{key}.*.jsa.part")):
        pid_file = _pid_file(part)
        try:
            builder = Builder.read(pid_file)
        except (OSError, ValueError):  # no record: its builder may still be starting; prune drops it after an hour
            busy = busy or not _stale(part, time.time())
            continue
        if builder.alive():  # still writing it
            busy = True
            continue
        final = directory / f"{key}.jsa"
        if verified(java, part, builder.class_path):
            os.replace(part, final)
        else:
            (directory / f"{key}.failed").write_text(json.dumps({"part": part.name, "pid": builder.pid}) + "\n")
            _unlink(part)
        _unlink(pid_file)
    return BUSY if busy else None


def plan(env: Mapping[str, str] = os.environ) -> Plan:
    """The archive options for a local driver JVM about to start (see the module's docstring)."""
    directory = cache_dir(env)
    java = java_executable(env)
    jars = spark_jars(env)
    if directory is None or java is None or jars is None or not jars.is_dir():
        return Plan(OFF)
    try:
        key = cache_key(java, jars)
        directory.mkdir(parents=True, exist_ok=True)
        busy = _settle(directory, key, java)
        prune(directory)
        final = directory / f"{key}.jsa"
        if final.exists():
            return Plan(USED, (f"-XX:SharedArchiveFile={final}", *QUIET))
        if busy is not None:
            return Plan(BUSY)
        if (directory / f"{key}.failed").exists():
            return Plan(FAILED)
        part = directory / f"{key}.{uuid.uuid4().hex[:12]}.jsa.part"
        return Plan(BUILDING, (f"-XX:ArchiveClassesAtExit={part}", *QUIET), part)
    except OSError:
        return Plan(OFF)


def record_builder(part: Path, pid: int, class_path: str) -> None:
    """Note which JVM writes ``part`` (and its class path, to verify the archive with): written once the JVM runs."""
    pid_file = _pid_file(part)
    tmp = pid_file.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps({"pid": pid, "started": start_ticks(pid), "class_path": class_path}) + "\n")
        tmp.replace(pid_file)
    except OSError:
        pass


def state_of(java_options: str) -> str:
    """The archive state a driver's ``spark.driver.extraJavaOptions`` shows (for ``findings.json``)."""
    if "-XX:SharedArchiveFile=" in java_options:
        return USED
    if "-XX:ArchiveClassesAtExit=" in java_options:
        return BUILDING
    return OFF
