"""Ack-range representations outside the protobufs (reference §9).

* ``internalStats`` cursor ``individuallyDeletedMessages`` strings: ``[(3:5..3:10],(3:12..3:20]]`` (default
  range set), ``[(3:5..3:10], (3:12..3:20]]`` (Guava range set), ``[]``;
* ``internal-info`` JSON ``[{"from": pos, "to": pos}]`` with ``pos`` either ``{"ledgerId", "entryId"}`` or
  ``"L:E"``;
* ``java.util.BitSet.toLongArray()`` words (PositionInfo ``individualDeletedMessageRanges``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.cursor import MessageRange, Position

_RANGE = r"\(\s*(-?[0-9]+)\s*:\s*(-?[0-9]+)\s*\.\.\s*(-?[0-9]+)\s*:\s*(-?[0-9]+)\s*\]"
_RANGE_RE = re.compile(_RANGE)
_WHOLE_RE = re.compile(rf"\s*\[\s*(?:{_RANGE}(?:\s*,\s*{_RANGE})*)?\s*\]\s*")


def parse_ack_ranges_string(s: str, path: str = "") -> tuple[MessageRange, ...]:
    """Parse an ``individuallyDeletedMessages`` string (either spelling); DecodeError when malformed."""
    if _WHOLE_RE.fullmatch(s) is None:
        raise DecodeError(path or "individuallyDeletedMessages", f"malformed ack-range string {s[:80]!r}")
    return tuple(MessageRange((int(m[1]), int(m[2])), (int(m[3]), int(m[4]))) for m in _RANGE_RE.finditer(s))


def format_ack_ranges(ranges: Iterable[MessageRange], *, guava: bool = False) -> str:
    """Render ranges like the broker (``guava=True`` for the ``", "`` separator)."""
    sep = ", " if guava else ","
    return "[" + sep.join(f"({r.lower[0]}:{r.lower[1]}..{r.upper[0]}:{r.upper[1]}]" for r in ranges) + "]"


def _position(value: Any, path: str) -> Position:
    if isinstance(value, dict):
        lid, eid = value.get("ledgerId"), value.get("entryId")
        if isinstance(lid, int) and isinstance(eid, int) and not isinstance(lid, bool) and not isinstance(eid, bool):
            return lid, eid
    elif isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 2:
            try:
                return int(parts[0]), int(parts[1])
            except ValueError:
                pass
    raise DecodeError(path, f"malformed position {str(value)[:60]!r}")


def parse_ack_ranges_json(items: Any, path: str = "") -> tuple[MessageRange, ...]:
    """Parse ``internal-info`` ``individualDeletedMessages`` (``from`` exclusive, ``to`` inclusive)."""
    where = path or "individualDeletedMessages"
    if not isinstance(items, list):
        raise DecodeError(where, "individualDeletedMessages is not a JSON list")
    out = []
    for item in items:
        if not isinstance(item, dict) or "from" not in item or "to" not in item:
            raise DecodeError(where, f"malformed range {str(item)[:60]!r}")
        out.append(MessageRange(_position(item["from"], where), _position(item["to"], where)))
    return tuple(out)


def bitset_entries(words: Sequence[int]) -> tuple[int, ...]:
    """Entry ids whose bit is set in ``java.util.BitSet.toLongArray()`` words (signed int64 each)."""
    out: list[int] = []
    for i, w in enumerate(words):
        u = w & 0xFFFFFFFFFFFFFFFF
        base = i * 64
        while u:
            low = u & -u
            out.append(base + low.bit_length() - 1)
            u ^= low
    return tuple(out)


def entries_to_bitset(entries: Iterable[int]) -> tuple[int, ...]:
    """Inverse of ``bitset_entries`` (signed int64 words, trailing zero words dropped like Java)."""
    acc = 0
    for e in entries:
        if e < 0:
            raise ValueError(f"negative entry id {e}")
        acc |= 1 << e
    words = []
    while acc:
        w = acc & 0xFFFFFFFFFFFFFFFF
        words.append(w - (1 << 64) if w >= 1 << 63 else w)
        acc >>= 64
    return tuple(words)
