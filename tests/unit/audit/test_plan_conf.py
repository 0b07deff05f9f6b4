"""The audit's join settings (etl.PLAN_CONF) and one-partition settings (etl.ONE_PARTITION_CONF): applied to a
session unless its configuration sets the key."""

from __future__ import annotations

from pulsar_ops.audit.etl import ONE_PARTITION_CONF, PLAN_CONF, partition_conf, plan_conf


class FakeConf:
    def __init__(self, explicit: dict[str, str]) -> None:
        self.explicit = explicit

    def contains(self, key: str) -> bool:
        return key in self.explicit


class FakeContext:
    def __init__(self, explicit: dict[str, str]) -> None:
        self._conf = FakeConf(explicit)

    def getConf(self) -> FakeConf:
        return self._conf


class FakeRuntimeConf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


class FakeSession:
    def __init__(self, explicit: dict[str, str]) -> None:
        self.sparkContext = FakeContext(explicit)
        self.conf = FakeRuntimeConf()


def test_no_broadcast_by_file_size_and_adaptive_broadcast_by_measured_size() -> None:
    s = FakeSession({})
    plan_conf(s)  # type: ignore[arg-type]
    assert s.conf.values == {
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.adaptive.autoBroadcastJoinThreshold": "10MB",
    }
    assert s.conf.values == PLAN_CONF


def test_an_explicit_setting_wins() -> None:
    s = FakeSession({"spark.sql.autoBroadcastJoinThreshold": "64MB"})  # --spark-conf or spark-submit --conf
    plan_conf(s)  # type: ignore[arg-type]
    assert s.conf.values == {"spark.sql.adaptive.autoBroadcastJoinThreshold": "10MB"}


def test_one_partition_turns_off_adaptive_execution_and_the_shuffles_for_parallelism() -> None:
    s = FakeSession({})
    partition_conf(s, True)  # type: ignore[arg-type]
    assert s.conf.values == {
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    }
    assert s.conf.values == ONE_PARTITION_CONF


def test_a_partitioned_audit_in_the_same_session_gets_sparks_defaults_back() -> None:
    s = FakeSession({})
    s.conf.set("spark.sql.shuffle.partitions", "5")
    partition_conf(s, True)  # type: ignore[arg-type]
    partition_conf(s, False)  # type: ignore[arg-type]
    assert s.conf.values == {"spark.sql.shuffle.partitions": "5"}  # unset: Spark's defaults again


def test_an_explicit_partition_setting_wins_either_way() -> None:
    s = FakeSession({"spark.sql.adaptive.enabled": "true"})
    s.conf.set("spark.sql.adaptive.enabled", "true")  # as the session was built with it
    partition_conf(s, True)  # type: ignore[arg-type]
    assert s.conf.values == {"spark.sql.adaptive.enabled": "true", "spark.sql.maxSinglePartitionBytes": str(2**63 - 1)}
    partition_conf(s, False)  # type: ignore[arg-type]
    assert s.conf.values == {"spark.sql.adaptive.enabled": "true"}
