"""The audit's join settings (etl.PLAN_CONF): applied to a session unless its configuration sets the key."""

from __future__ import annotations

from pulsar_ops.audit.etl import PLAN_CONF, plan_conf


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
