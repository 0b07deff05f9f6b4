"""Audit parameters: durations, times, broker config files and the JSON config (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.audit.params import (
    AuditParams,
    BrokerDefaults,
    broker_defaults_from_mapping,
    load_broker_config,
    params_from_config,
    parse_broker_config,
    parse_duration_ms,
    parse_time_ms,
)
from pulsar_ops.audit.sql_files import strip_comments
from pulsar_ops.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("90s", 90_000),
        ("15m", 900_000),
        ("24h", 86_400_000),
        ("7d", 604_800_000),
        ("2w", 1_209_600_000),
        ("500ms", 500),
        ("0", 0),
        (" 3 h ", 10_800_000),
        ("1.5h", 5_400_000),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["ms", "s", "m", "h", "d", "w"]))
def test_duration_round_trip(n: int, unit: str) -> None:
    factor = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}[unit]
    assert parse_duration_ms(f"{n}{unit}") == n * factor


@pytest.mark.parametrize("bad", ["", "soon", "-1h", "1y", "1234", 3600])
def test_bad_durations(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_duration_ms(bad)


def test_times() -> None:
    assert parse_time_ms("1700000000000") == 1_700_000_000_000
    assert parse_time_ms("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_time_ms("2023-11-14T22:13:20") == 1_700_000_000_000
    with pytest.raises(ConfigError):
        parse_time_ms("yesterday")


def test_broker_conf_and_json(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("# c\ndefaultRetentionTimeInMinutes=60\n\ndelayedDeliveryEnabled = false\nother=x\n")
    b = load_broker_config(conf)
    assert b == BrokerDefaults(default_retention_time_minutes=60, delayed_delivery_enabled=False)
    assert parse_broker_config('{"ttlDurationDefaultInSeconds": 30, "delayedDeliveryEnabled": true}') == {
        "ttlDurationDefaultInSeconds": "30",
        "delayedDeliveryEnabled": "true",
    }
    with pytest.raises(ConfigError):
        parse_broker_config("no equals sign")
    with pytest.raises(ConfigError):
        broker_defaults_from_mapping({"defaultRetentionSizeInMB": "lots"})


def test_config_document(tmp_path: Path) -> None:
    p = params_from_config(
        {
            "now": "1700000000000",
            "min_age": "1h",
            "inactive_after": "2d",
            "broker": {"managedLedgerMaxUnackedRangesToPersistInMetadataStore": 200000},
        }
    )
    assert p.now_ms == 1_700_000_000_000 and p.min_age_ms == 3_600_000 and p.inactive_after_ms == 172_800_000
    assert p.broker.max_unacked_ranges_metadata == 200000
    assert AuditParams().resolved(5).now_ms == 5
    with pytest.raises(ConfigError):
        params_from_config({"min_age": "1h", "typo": 1})


def test_strip_comments_keeps_literals() -> None:
    assert strip_comments("SELECT '--x' AS a -- comment\nFROM t;") == "SELECT '--x' AS a\nFROM t"
