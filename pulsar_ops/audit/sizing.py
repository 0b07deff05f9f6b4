"""Spark settings for one audit, derived from the machine and the snapshot, never constants. Pure (no pyspark).

Local mode (``local[*]``, the CLI's default) sizes the one JVM that is driver and executor:

* ``spark.driver.memory``: what the snapshot needs (1.5 KB per snapshot row, at least 2 GiB), but never more
  than 60 % of the memory available now (``MemAvailable``) nor 31 GiB (compressed object pointers), and never
  less than 1 GiB. Spark's own default, 1 GiB, fails at 600,000 topics (about 9 M rows: 13 GiB here); a heap
  far larger than the data only lets the JVM's resident memory grow before it collects.
* ``spark.sql.shuffle.partitions`` / ``spark.default.parallelism``: two per core, or one per 2,500,000 snapshot
  rows (the manifest's ``row_counts``) when that is more, rounded to the nearest multiple of the cores, at most
  200; a small snapshot (up to 250,000 rows: the demo, CI) gets 1, so no stage pays for empty tasks. In one JVM
  every task shares the driver's heap, so more partitions than cores buy no parallelism and each costs per-task
  overhead in every one of the audit's ~200 stages (600,000 topics, 2 cores: 146 s with the 43 partitions a
  cluster would get, 106 s with 4; measured with ``--spark-conf``, see README "Benchmarks"). A multiple of the
  cores, because a stage of equal tasks takes as many waves as tasks over cores: at 600,000 topics (10.5 M rows:
  5 by rows, 4 now) the storage stage's heaviest stages ran their 5 tasks as 3 waves on 2 cores, the last on one
  core (``storage_ledgers``' aggregate: 13.0 s for 21.8 task-s, against 10.5-12.1 s for 21-23 with 4 or 6).
* ``spark.sql.files.maxPartitionBytes``: the snapshot's Parquet bytes spread over two splits per core, between
  4 MiB and 128 MiB.
* a small snapshot (:func:`small_snapshot`) is audited without generated code (``spark.sql.codegen.wholeStage`` off,
  expressions interpreted: ``spark.sql.codegen.factoryMode`` ``NO_CODEGEN``): its rows are too few to repay
  compiling about 380 classes (Janino, 14.7 s of the demo's cold audit; the audit took 29-31 s instead of 39 s, and
  31.8 s instead of 33.9 s at 10,000 topics, with the same findings). The runner also gives its JVM C1 alone
  (audit/session.py ``SMALL_INPUT_JVM_OPTIONS``) and reads every table as one partition (etl.read_parquet: about
  half the stages; without adaptive execution, etl.ONE_PARTITION_CONF). Up to ``INTERPRETED_MAX_ROWS`` (2,500,000
  rows) expressions are interpreted too, with both JIT tiers: at 100,000 topics (1.76 M rows) 45.0-46.8 s against
  49.1-50.3 s with generated code (alternating, same findings; Janino 17-20 s of CPU and the JIT 48 s -> 35-38 s),
  while at 600,000 topics (10.5 M rows) generated code still pays (74.6 s against 88.9 s interpreted).

Explicit settings win: ``--spark-conf KEY=VALUE`` over the audit config file's ``spark_conf`` object over these
defaults. On a cluster (``--master spark://...`` or under ``spark-submit``) memory and cores are the cluster's
(spark-submit's ``--driver-memory``, ``--executor-memory``, ``--conf``); only the two runtime SQL settings are
sized, from the snapshot and the session's default parallelism, and only when nobody set them
(:func:`sql_defaults`): Spark's 200 shuffle partitions cost a small audit minutes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pulsar_ops.errors import ConfigError

MIB = 1024 * 1024
ROWS_PER_PARTITION = 250_000
INTERPRETED_MAX_ROWS = 2_500_000
LOCAL_ROWS_PER_PARTITION = 2_500_000
LOCAL_PARTITIONS_PER_CORE = 2
MAX_PARTITIONS = 200
MIN_DRIVER_MB = 1024
SMALL_DRIVER_MB = 2048
MAX_DRIVER_MB = 31 * 1024
DRIVER_SHARE = 0.6
BYTES_PER_ROW = 1536


@dataclass(frozen=True)
class Machine:
    cpus: int
    mem_available_bytes: int


def this_machine(meminfo: Path = Path("/proc/meminfo")) -> Machine:
    """Cores usable by this process and the memory available now (``MemAvailable``, else free pages)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    available = 0
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        available = 0
    if available <= 0:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError):
            available = 4 * 1024 * MIB
    return Machine(cpus=max(1, cpus), mem_available_bytes=available)


SQL_SIZING_KEYS = ("spark.sql.shuffle.partitions", "spark.sql.files.maxPartitionBytes")


def _rows(row_counts: Mapping[str, int]) -> int:
    return sum(max(0, int(n)) for n in row_counts.values())


def _partitions(rows: int, at_least: int, rows_per_partition: int, multiple_of: int = 1) -> int:
    """1 for a small snapshot (no stage pays for empty tasks), else one per ``rows_per_partition`` rows but at
    least ``at_least``; with ``multiple_of`` > 1 (the cores) the rows' count is rounded to its nearest multiple
    instead (halves up), so no stage's last wave of tasks runs on fewer cores than the others; at most
    ``MAX_PARTITIONS``."""
    if rows <= ROWS_PER_PARTITION:
        return 1
    if multiple_of > 1:
        by_rows = multiple_of * math.floor(rows / (rows_per_partition * multiple_of) + 0.5)
    else:
        by_rows = math.ceil(rows / rows_per_partition)
    return min(MAX_PARTITIONS, max(at_least, by_rows))


def _split_bytes(snapshot_bytes: int, cores: int) -> int:
    """File splits: the snapshot's Parquet bytes over two splits per core, between 4 MiB and 128 MiB."""
    return max(4 * MIB, min(128 * MIB, snapshot_bytes // max(1, cores * 2)))


def sql_defaults(row_counts: Mapping[str, int], snapshot_bytes: int, cores: int) -> dict[str, str]:
    """Runtime SQL settings (settable on a running session, so also on a cluster under spark-submit): shuffle
    partitions from the snapshot's rows, at least ``cores`` once split; file splits from its Parquet bytes."""
    partitions = _partitions(_rows(row_counts), cores, ROWS_PER_PARTITION)
    return {
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.sql.files.maxPartitionBytes": str(_split_bytes(snapshot_bytes, cores)),
    }


def _known_at_most(row_counts: Mapping[str, int], limit: int) -> bool:
    """At most ``limit`` rows in all; a manifest without row counts is not known to be that small."""
    return bool(row_counts) and _rows(row_counts) <= limit


def small_snapshot(row_counts: Mapping[str, int]) -> bool:
    """At most ``ROWS_PER_PARTITION`` rows in all: one partition, no generated code, C1 alone."""
    return _known_at_most(row_counts, ROWS_PER_PARTITION)


def interpreted(row_counts: Mapping[str, int]) -> bool:
    """At most ``INTERPRETED_MAX_ROWS`` rows in all: audited locally without generated code (:data:`NO_CODEGEN`)."""
    return _known_at_most(row_counts, INTERPRETED_MAX_ROWS)


NO_CODEGEN = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


def local_defaults(row_counts: Mapping[str, int], snapshot_bytes: int, machine: Machine) -> dict[str, str]:
    """The local-mode settings for a snapshot of these row counts and Parquet bytes on this machine."""
    rows = _rows(row_counts)
    at_least = LOCAL_PARTITIONS_PER_CORE * machine.cpus
    partitions = str(_partitions(rows, at_least, LOCAL_ROWS_PER_PARTITION, machine.cpus))
    needed_mb = max(SMALL_DRIVER_MB, math.ceil(rows * BYTES_PER_ROW / MIB))
    room_mb = int(machine.mem_available_bytes * DRIVER_SHARE / MIB)
    driver_mb = max(MIN_DRIVER_MB, min(MAX_DRIVER_MB, room_mb, needed_mb))
    conf = {
        "spark.driver.memory": f"{driver_mb}m",
        "spark.sql.shuffle.partitions": partitions,
        "spark.default.parallelism": partitions,
        "spark.sql.files.maxPartitionBytes": str(_split_bytes(snapshot_bytes, machine.cpus)),
    }
    if interpreted(row_counts):
        conf.update(NO_CODEGEN)
    return conf


def parse_spark_conf(items: Iterable[str], where: str = "--spark-conf") -> dict[str, str]:
    """``KEY=VALUE`` strings (``spark.driver.memory=12g``) as a mapping; keys must be Spark's (``spark.``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(f"{where} {item!r} is not KEY=VALUE", hint=f"e.g. {where} spark.driver.memory=12g")
        if not key.startswith("spark."):
            raise ConfigError(f"{where} {key!r} is not a Spark setting", hint="Spark settings start with `spark.`")
        out[key] = value
    return out


def spark_conf_from_config(doc: Mapping[str, object]) -> dict[str, str]:
    """The audit config file's ``spark_conf`` object (``{"spark.driver.memory": "12g"}``)."""
    raw = doc.get("spark_conf")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError("audit config: `spark_conf` must be an object of Spark settings")
    items = []
    for k, v in raw.items():
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise ConfigError(f"audit config: spark_conf.{k} must be a string or a number")
        items.append(f"{k}={v}")
    return parse_spark_conf(items, where="spark_conf")


def snapshot_bytes(snapshot_dir: Path) -> int:
    """Summed size of the snapshot's Parquet parts."""
    total = 0
    for p in (snapshot_dir / "tables").rglob("*.parquet"):
        try:
            total += p.stat().st_size
        except OSError:
            continue
    return total
