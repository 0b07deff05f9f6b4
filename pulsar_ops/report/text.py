"""Small pure helpers shared by the report renderers: safe display of hostile strings, bytes and durations.

Topic, subscription and namespace names come from the cluster and are hostile: they may hold control
characters (ANSI escapes, newlines), lone surrogates that cannot be encoded as UTF-8, markup. Every renderer
passes them through :func:`display` first and then applies its own escaping (HTML, Markdown, Prometheus).
"""

from __future__ import annotations

import datetime as _dt
import re

from pulsar_ops.units import human_bytes as human_bytes  # the one bytes formatter

# Characters never shown raw: C0/C1 controls (Unicode category Cc), lone surrogates, and the bidirectional
# overrides and isolates that can make a name display as a different name ("Trojan Source").
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def display(value: object, *, limit: int | None = None) -> str:
    """``value`` as a printable, UTF-8-encodable string.

    C0/C1 control characters become ``\\xNN``, lone surrogates and bidirectional controls ``\\uNNNN``, so
    that nothing reaches a terminal, a file or a browser that could move the cursor, end a line, reorder the
    text on screen or fail to encode. With ``limit``, longer strings are cut and end in an ellipsis.
    """
    s = "" if value is None else str(value)
    if limit is not None and len(s) > limit:
        s = s[:limit]  # escaping only lengthens: cut first so huge values cost nothing
        text = _UNSAFE.sub(_escape_char, s)
        return text[: max(limit - 1, 0)] + "…"
    text = _UNSAFE.sub(_escape_char, s)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def _escape_char(m: re.Match[str]) -> str:
    cp = ord(m.group(0))
    return f"\\x{cp:02x}" if cp <= 0x9F else f"\\u{cp:04x}"


def utf8_safe(value: str) -> str:
    """``value`` with lone surrogates replaced by ``\\udNNN`` (all else untouched) so it encodes as UTF-8."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", value)


_DURATION_STEPS = (
    (365 * 86_400_000, "y"),
    (86_400_000, "d"),
    (3_600_000, "h"),
    (60_000, "m"),
    (1_000, "s"),
)


def human_duration(ms: float | None) -> str:
    """``3d 4h``, ``12m 5s``, ``850ms``; ``?`` for None. Two largest units at most."""
    if ms is None:
        return "?"
    value = int(ms)
    if value < 0:
        return "-" + human_duration(-value)
    if value < 1000:
        return f"{value}ms"
    parts: list[str] = []
    for size, name in _DURATION_STEPS:
        if value >= size:
            parts.append(f"{value // size}{name}")
            value %= size
        if len(parts) == 2:
            break
        if parts and value == 0:
            break
    return " ".join(parts)


def iso_utc(ms: int | None) -> str:
    """Milliseconds since the epoch as ``2024-05-01 12:00:00Z``; ``unknown`` for None."""
    if ms is None:
        return "unknown"
    try:
        t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"
    return t.strftime("%Y-%m-%d %H:%M:%SZ")
