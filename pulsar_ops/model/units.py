"""Units for model inputs and human output: durations ("250ms", "20s", "1m", "5h", "2d") and byte sizes."""

from __future__ import annotations

from pulsar_ops import units
from pulsar_ops.errors import ConfigError, ModelError


def parse_duration_ms(text: str, *, flag: str = "duration") -> float:
    """``"1m"`` -> 60000.0: the one duration syntax (``pulsar_ops.units``), as a model input error when wrong."""
    try:
        return float(units.parse_duration_ms(text, flag=flag))
    except ConfigError as e:
        raise ModelError(e.message, hint=e.hint) from None


fmt_bytes = units.human_bytes  # the one bytes formatter (pulsar_ops.units)


def fmt_duration_ms(ms: float) -> str:
    s = ms / 1000
    if s < 1:
        return f"{ms:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172_800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86_400:.1f} d"
