"""Parsing of human sizes (``10GB``) and durations (``1h``) for repair flags. Pure."""

from __future__ import annotations

import re

from pulsar_ops.errors import ConfigError
from pulsar_ops.units import human_bytes as human_bytes  # the one bytes formatter
from pulsar_ops.units import parse_duration_ms as parse_duration_ms  # one syntax for every command

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
