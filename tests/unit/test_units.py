"""One duration syntax for every command (pulsar_ops.units): a number and a unit; no bare numbers but 0."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.audit.params import parse_duration_ms as audit_duration
from pulsar_ops.cli.apply import parse_duration_ms as repair_duration  # what apply parses its flags with
from pulsar_ops.errors import ConfigError, ModelError
from pulsar_ops.model.units import parse_duration_ms as model_duration
from pulsar_ops.units import UNITS_MS, parse_duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [("500ms", 500), ("90s", 90_000), ("15m", 900_000), ("15min", 900_000), ("1.5h", 5_400_000), ("7d", 604_800_000),
     ("2w", 1_209_600_000), ("24H", 86_400_000), (" 3 h ", 10_800_000), ("0", 0), (0, 0), ("0.0", 0)],
)  # fmt: skip
def test_durations(text: str | int, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("bare", ["3600", "1", "1.5", 3600])
def test_a_bare_number_is_refused_with_a_hint_naming_the_flag(bare: str | int) -> None:
    with pytest.raises(ConfigError) as info:
        parse_duration_ms(bare, flag="--min-age")
    assert "no unit" in info.value.message or "not a duration" in info.value.message
    assert info.value.hint is not None and "--min-age 24h" in info.value.hint


@pytest.mark.parametrize("bad", ["", "soon", "-1h", "1y", "1 h 2", "h", True, None, 1.5])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ConfigError):
        parse_duration_ms(bad)  # type: ignore[arg-type]


def test_every_command_reads_the_same_text_the_same_way() -> None:
    """The three entry points used to disagree: 3600 was 3.6 s for audit, an hour for apply, 3.6 s for model."""
    for text in ("90s", "1.5h", "7d", "0"):
        assert audit_duration(text) == repair_duration(text) == model_duration(text) == parse_duration_ms(text)
    for entry in (audit_duration, repair_duration):
        with pytest.raises(ConfigError):
            entry("3600")
    with pytest.raises(ModelError):
        model_duration("3600")


@given(st.integers(0, 10**9), st.sampled_from(sorted(UNITS_MS)))
def test_integer_amounts_round_trip(n: int, unit: str) -> None:
    assert parse_duration_ms(f"{n}{unit}") == n * UNITS_MS[unit]
