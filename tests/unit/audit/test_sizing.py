"""Local-mode Spark settings derived from the machine and the snapshot, and --spark-conf parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsar_ops.audit.sizing import (
    MIB,
    Machine,
    local_defaults,
    parse_spark_conf,
    small_snapshot,
    spark_conf_from_config,
    this_machine,
)
from pulsar_ops.errors import ConfigError

GIB = 1024 * MIB
BOX = Machine(cpus=2, mem_available_bytes=20 * GIB)


def test_a_demo_sized_snapshot_gets_one_partition_and_small_splits() -> None:
    conf = local_defaults({"znodes": 1_876, "bk_ledgers": 300}, 400_000, BOX)
    assert conf["spark.sql.shuffle.partitions"] == "1" and conf["spark.default.parallelism"] == "1"
    assert conf["spark.driver.memory"] == "2048m"  # what a small snapshot needs, not most of the machine
    assert conf["spark.sql.files.maxPartitionBytes"] == str(4 * MIB)


def test_the_600k_topic_snapshot_gets_partitions_by_rows_and_the_memory_it_needs() -> None:
    counts = {"znodes": 4_000_000, "bk_ledgers": 2_170_000, "ledger_list": 1_730_000, "cursors": 1_040_000}
    conf = local_defaults(counts, 900 * MIB, Machine(cpus=2, mem_available_bytes=23 * GIB))
    assert conf["spark.sql.shuffle.partitions"] == "4"  # two per core: one JVM, more tasks only cost overhead
    assert conf["spark.driver.memory"] == f"{-(-8_940_000 * 1536 // MIB)}m"  # 13096m, not Spark's 1g
    tight = local_defaults(counts, 900 * MIB, Machine(2, 16 * GIB))
    assert tight["spark.driver.memory"] == f"{int(16 * 1024 * 0.6)}m"  # capped by what the machine has
    assert conf["spark.sql.files.maxPartitionBytes"] == str(128 * MIB)  # 900 MiB over 4 splits, capped


@pytest.mark.parametrize(
    ("available", "expected"),
    [(512 * MIB, "1024m"), (2 * GIB, f"{int(2 * 1024 * 0.6)}m"), (256 * GIB, f"{31 * 1024}m")],
)
def test_driver_memory_is_clamped(available: int, expected: str) -> None:
    assert local_defaults({"znodes": 10**9}, 0, Machine(8, available))["spark.driver.memory"] == expected


def test_local_partitions_two_per_core_or_by_rows_and_never_above_200() -> None:
    assert local_defaults({"znodes": 600_000}, 0, Machine(8, GIB))["spark.sql.shuffle.partitions"] == "16"
    assert local_defaults({"znodes": 100_000_000}, 0, Machine(2, GIB))["spark.sql.shuffle.partitions"] == "40"
    assert local_defaults({"znodes": 10**9}, 0, Machine(8, GIB))["spark.sql.shuffle.partitions"] == "200"
    assert local_defaults({"znodes": 250_000}, 0, Machine(8, GIB))["spark.sql.shuffle.partitions"] == "1"


def test_local_partitions_by_rows_are_a_multiple_of_the_cores() -> None:
    # 5 tasks on 2 cores run as 3 waves, the last on one core: the bench's 600,000 topics (10,554,397 rows) get 4
    def partitions(rows: int, cpus: int) -> int:
        return int(local_defaults({"znodes": rows}, 0, Machine(cpus, GIB))["spark.sql.shuffle.partitions"])

    assert partitions(10_554_397, 2) == 4  # 4.2 by rows: the nearest multiple of 2
    assert partitions(13_000_000, 2) == 6  # 5.2
    assert partitions(45_000_001, 3) == 18 and partitions(100_000_000, 3) == 39
    assert partitions(10_554_397, 1) == 5  # one core: one per 2,500,000 rows, as before
    assert all(partitions(rows, 2) % 2 == 0 for rows in range(250_001, 60_000_000, 1_234_567))


def test_this_machine_reads_meminfo(tmp_path: Path) -> None:
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n")
    m = this_machine(f)
    assert m.mem_available_bytes == 20_000_000 * 1024 and m.cpus >= 1


def test_spark_conf_flags_and_config_file() -> None:
    assert parse_spark_conf(["spark.driver.memory=12g", "spark.sql.shuffle.partitions = 64"]) == {
        "spark.driver.memory": "12g",
        "spark.sql.shuffle.partitions": "64",
    }
    assert spark_conf_from_config({"spark_conf": {"spark.executor.memory": "4g", "spark.cores.max": 8}}) == {
        "spark.executor.memory": "4g",
        "spark.cores.max": "8",
    }
    assert spark_conf_from_config({}) == {}


@pytest.mark.parametrize("item", ["spark.driver.memory", "=12g", "driver.memory=12g", "spark.x="])
def test_bad_spark_conf_is_config_invalid(item: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_spark_conf([item])
    assert e.value.code == "config-invalid" and "--spark-conf" in str(e.value)


def test_bad_spark_conf_in_the_config_file() -> None:
    with pytest.raises(ConfigError):
        spark_conf_from_config({"spark_conf": ["spark.a=b"]})
    with pytest.raises(ConfigError):
        spark_conf_from_config({"spark_conf": {"spark.a": True}})


def test_cluster_sql_sizing_uses_the_cluster_parallelism() -> None:
    from pulsar_ops.audit.sizing import sql_defaults

    assert sql_defaults({"znodes": 2_000}, 10 * MIB, 16)["spark.sql.shuffle.partitions"] == "1"
    assert sql_defaults({"znodes": 1_000_000}, 10 * MIB, 16)["spark.sql.shuffle.partitions"] == "16"
    assert sql_defaults({"znodes": 10_000_000}, 10 * MIB, 16)["spark.sql.shuffle.partitions"] == "40"


def test_a_small_snapshot_is_audited_without_generated_code_and_a_large_one_with_it() -> None:
    small = local_defaults({"znodes": 1_876, "bk_ledgers": 300}, 400_000, BOX)
    assert small["spark.sql.codegen.wholeStage"] == "false"
    assert small["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"
    # up to 2,500,000 rows (100,000 topics: 1.76 M) interpreted too; above, Spark's defaults (whole-stage codegen)
    medium = local_defaults({"znodes": 1_500_000, "bk_ledgers": 1_000_000}, 90 * MIB, BOX)
    assert medium["spark.sql.codegen.factoryMode"] == "NO_CODEGEN" and not small_snapshot({"znodes": 2_500_000})
    large = local_defaults({"znodes": 1_500_000, "bk_ledgers": 1_000_001}, 90 * MIB, BOX)
    assert not any(k.startswith("spark.sql.codegen.") for k in large)
    assert small_snapshot({"znodes": 250_000}) and not small_snapshot({"znodes": 250_000, "cursors": 1})


def test_a_manifest_without_row_counts_is_not_known_to_be_small() -> None:
    assert not small_snapshot({})
    assert "spark.sql.codegen.wholeStage" not in local_defaults({}, 0, BOX)
