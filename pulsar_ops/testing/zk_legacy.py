"""A ZooKeeper server WITHOUT multiRead (3.4.14) for the mixed-ensemble tests: its jars come from an old pyspark
source artifact, fetched once per machine with pip and cached under ``~/.cache/pulsar-ops/``.

pyspark 3.1.x bundles ``zookeeper-3.4.14.jar`` (Spark 3.1 built against ZooKeeper 3.4.14) with the jars the
standalone server needs (log4j 1.2, slf4j, audience-annotations, jline); its 2.4.x releases bundle 3.4.6 but
their source artifact no longer prepares metadata under a current pip, so ``pip download`` refuses them.
ZooKeeper 3.4.14 runs on Java 17 (``ZooKeeperServerMain`` with the NIO connection factory). It has no opcode
22: upstream ``OpCode.multiRead`` arrived in 3.6.0.

The same way, pyspark 3.2.x (Spark 3.2 built against ZooKeeper 3.6.2) gives a 3.6.2 server (``legacy_jars_dir(
"3.6.2")``): the first release with the snapshot digest and compressed snapshots, for the data-directory tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

LEGACY_VERSION = "3.4.14"
_MEMBER_DIR = "deps/jars/"
_COMMON = ("log4j-1.2.17.jar", "slf4j-api-1.7.30.jar", "slf4j-log4j12-1.7.30.jar", "audience-annotations-0.5.0.jar")
# release -> (the pyspark source artifact that bundles it, the server's jars in that artifact)
RELEASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "3.4.14": ("pyspark==3.1.3", ("zookeeper-3.4.14.jar", *_COMMON, "jline-2.14.6.jar")),
    "3.6.2": (
        "pyspark==3.2.4",
        (
            "zookeeper-3.6.2.jar",
            "zookeeper-jute-3.6.2.jar",
            *_COMMON,
            "snappy-java-1.1.8.4.jar",
            "netty-all-4.1.68.Final.jar",
            "metrics-core-4.2.0.jar",
            "commons-lang-2.6.jar",
        ),
    ),
}


class LegacyJarsUnavailable(RuntimeError):
    """The 3.4 jars are not cached and could not be fetched (no package index, no disk...)."""


def cache_dir(version: str = LEGACY_VERSION) -> Path:
    base = os.environ.get("PULSAR_OPS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pulsar-ops")
    return Path(base) / f"zookeeper-{version}"


def _cached(d: Path, jars: tuple[str, ...]) -> bool:
    return all((d / j).is_file() and (d / j).stat().st_size > 0 for j in jars)


def legacy_jars_dir(version: str = LEGACY_VERSION, *, timeout: float = 900.0) -> Path:
    """The directory holding the server jars of ZooKeeper ``version`` (a key of RELEASES), fetching them on
    first use."""
    _ARTIFACT, _JARS = RELEASES[version]
    d = cache_dir(version)
    if _cached(d, _JARS):
        return d
    with tempfile.TemporaryDirectory(prefix="pulsar-ops-zkjars-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--timeout",
            "30",
            "--retries",
            "2",
            "--quiet",
            _ARTIFACT,
            "-d",
            tmp,
        ]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise LegacyJarsUnavailable(f"`pip download {_ARTIFACT}` did not finish: {e}") from e
        archives = sorted(Path(tmp).glob("pyspark-*.tar.gz"))
        if r.returncode != 0 or not archives:
            tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
            raise LegacyJarsUnavailable(f"`pip download {_ARTIFACT}` failed (exit {r.returncode}): {' | '.join(tail)}")
        staging = Path(tmp) / "jars"
        staging.mkdir()
        with tarfile.open(archives[0], "r:gz") as tf:
            for member in tf:
                name = member.name.rsplit("/", 1)[-1]
                if member.isfile() and _MEMBER_DIR in member.name and name in _JARS:
                    src = tf.extractfile(member)
                    assert src is not None
                    with src, open(staging / name, "wb") as out:
                        shutil.copyfileobj(src, out)
        if not _cached(staging, _JARS):
            missing = [j for j in _JARS if not (staging / j).is_file()]
            raise LegacyJarsUnavailable(f"{archives[0].name} lacks {', '.join(missing)}")
        d.parent.mkdir(parents=True, exist_ok=True)
        partial = d.with_name(d.name + f".tmp-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(staging, partial)
        try:
            os.replace(partial, d)
        except OSError:  # another process cached it meanwhile
            shutil.rmtree(partial, ignore_errors=True)
    return d
