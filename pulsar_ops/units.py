"""One duration syntax for every command: a number and a unit. Pure.

``500ms``, ``90s``, ``15m`` (or ``15min``), ``1.5h``, ``7d``, ``2w``. A bare number is refused, except ``0``:
the commands used to disagree on what it meant (``audit --min-age 3600`` was 3.6 seconds while
``apply --quarantine 3600`` was an hour), and a guessed unit in a safety margin is how the wrong thing gets
deleted. Also sizes (``10GB``, ``512MiB``) and the human forms of bytes and durations.
"""

from __future__ import annotations

import re

from pulsar_ops.errors import ConfigError

UNITS_MS: dict[str, int] = {
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 7 * 86_400_000,
}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_duration_ms(value: str | int, *, flag: str = "duration") -> int:
    """``"1.5h"`` -> 5_400_000 milliseconds (rounded to whole ms). ``0`` / ``"0"`` -> 0; any other bare number,
    a negative value or an unknown unit is a ConfigError whose hint shows ``flag`` with a unit."""
    hint = f"give a unit: {flag} 24h (units: ms, s, m, h, d, w; e.g. 500ms, 90s, 15m, 1.5h, 7d)"
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{flag}: not a duration: {value!r}", hint=hint)
    text = str(value)
    m = _DURATION.fullmatch(text)
    if m is None:
        raise ConfigError(f"{flag}: not a duration: {text!r}", hint=hint)
    number, unit = m.group(1), m.group(2).lower()
    if not unit:
        if float(number) == 0:
            return 0
        raise ConfigError(f"{flag}: {text!r} has no unit (milliseconds? seconds?)", hint=hint)
    if unit not in UNITS_MS:
        raise ConfigError(f"{flag}: unknown unit {m.group(2)!r} in {text!r}", hint=hint)
    return round(float(number) * UNITS_MS[unit])


_BYTE_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")


def human_bytes(n: float) -> str:
    """The one bytes formatter (plan, report, model): decimal units as operators quote disks, three significant
    figures: ``0 B``, ``512 B``, ``1.50 kB``, ``185 MB``, ``12.3 GB``."""
    value = float(n)
    sign = "-" if value < 0 else ""
    value = abs(value)
    unit = 0
    while value >= 1000 and unit < len(_BYTE_UNITS) - 1:
        value /= 1000
        unit += 1
    if unit == 0:
        return f"{sign}{int(value)} B"
    if round(value, 2) >= 100:
        return f"{sign}{value:.0f} {_BYTE_UNITS[unit]}"
    if round(value, 2) >= 10:
        return f"{sign}{value:.1f} {_BYTE_UNITS[unit]}"
    return f"{sign}{value:.2f} {_BYTE_UNITS[unit]}"


_SIZE_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")
_SIZE_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "pb": 1000**5,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "t": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "pib": 1024**5,
}


def parse_size(text: str, *, flag: str = "--max-bytes") -> int:
    """``10GB`` -> 10_000_000_000 (KB/MB/GB/TB are powers of 1000; KiB/MiB/GiB/TiB powers of 1024)."""
    m = _SIZE_RE.fullmatch(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _SIZE_UNITS:
        raise ConfigError(
            f"{flag}: cannot parse size {text!r}",
            hint=f"use a number with an optional unit, e.g. {flag} 10GB or {flag} 512MiB",
        )
    return int(float(m.group(1)) * _SIZE_UNITS[unit])


def human_duration(ms: int) -> str:
    """``3_600_000`` -> ``1h``; ``3_597_292`` -> ``59m57s``; under a second -> ``NNNms``."""
    if ms < 1000:
        return f"{ms}ms"
    secs = ms // 1000
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if secs >= size:
            parts.append(f"{secs // size}{unit}")
            secs %= size
    return "".join(parts[:2])
