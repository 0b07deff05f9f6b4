"""Units for model inputs and human output: durations ("250ms", "20s", "1m", "5h", "2d") and byte sizes."""

from __future__ import annotations

import re

from pulsar_ops.errors import ModelError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "min": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}


def parse_duration_ms(text: str) -> float:
    """``"1m"`` -> 60000.0; a bare number is milliseconds."""
    m = _DURATION.match(str(text))
    if not m:
        raise ModelError(f"not a duration: {text!r}", hint="use a number with a unit: 250ms, 20s, 1m, 5h, 2d")
    return float(m.group(1)) * _UNIT_MS[m.group(2) or "ms"]


def fmt_bytes(n: float) -> str:
    """Decimal units, as operators quote disks: 1.8 TB, 300 GB."""
    v = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(v) < 1000 or unit == "PB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1000
    return f"{v:.1f} PB"  # pragma: no cover


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
