"""The capacity view of ``findings.json`` ``audit.storage`` for the reports: what holds each scanned bookie's
disk (live data by owner, orphan, unreclaimed, unattributed bytes, free space when the snapshot knows it) and
why its oldest entry logs are still there. Text lines (terminal, Markdown) and the rows the HTML chart draws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulsar_ops.report.text import display, human_bytes

CLASSES = ("live", "orphan", "unreclaimed", "unattributed")


@dataclass(frozen=True)
class BookieCapacity:
    bookie: str
    complete: bool
    data_bytes: int
    by_class: Mapping[str, int]
    free_bytes: int | None
    total_bytes: int | None
    top_topics: tuple[tuple[str, int], ...]
    topics: int  # live topics on this bookie in all (the top list is the first ``top_n``)
    oldest: tuple[Mapping[str, Any], ...]

    def share(self, cls: str) -> float | None:
        return self.by_class.get(cls, 0) / self.data_bytes if self.data_bytes else None


@dataclass(frozen=True)
class Capacity:
    top_n: int
    bookies: tuple[BookieCapacity, ...]
    skew: Mapping[str, Any]


def _int(v: Any) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def capacity_of(storage: Any) -> Capacity | None:
    """The capacity view, or None when the audit had no bookie scans (or predates ``audit.storage``)."""
    if not isinstance(storage, Mapping) or not isinstance(storage.get("bookies"), list):
        return None
    out = []
    for b in storage["bookies"]:
        if not isinstance(b, Mapping):
            continue
        topic = ((b.get("top") or {}).get("live") or {}).get("topic") or {}
        free, total = b.get("free_bytes"), b.get("total_bytes")
        out.append(
            BookieCapacity(
                bookie=str(b.get("bookie_id")),
                complete=bool(b.get("complete")),
                data_bytes=_int(b.get("data_bytes")),
                by_class={c: _int(b.get(f"{c}_bytes")) for c in CLASSES},
                free_bytes=_int(free) if free is not None else None,
                total_bytes=_int(total) if total is not None else None,
                top_topics=tuple((str(r.get("name")), _int(r.get("bytes"))) for r in topic.get("rows") or ()),
                topics=_int(topic.get("of")),
                oldest=tuple(x for x in b.get("oldest_logs") or () if isinstance(x, Mapping)),
            )
        )
    skew = storage.get("skew")
    return Capacity(_int(storage.get("top_n")), tuple(out), skew if isinstance(skew, Mapping) else {})


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f} %"


def _retention(value: object, unit: str) -> str:
    """A retention limit as Pulsar reads it: -1 is infinite (RetentionPolicies), None is not set."""
    if value is None:
        return f"{unit} not set"
    return "infinite" if _int(value) < 0 else f"{_int(value)} {unit}"


def pinned_text(log: Mapping[str, Any], limit: int = 3) -> str:
    """``pinned by`` the live ledgers in a log, with topic and retention (or that no live ledger pins it)."""
    parts = []
    for p in list(log.get("pinned_by") or ())[:limit]:
        ret = []
        for scope, prefix in (("topic", "topic_retention"), ("namespace", "ns_retention")):
            minutes, mb = p.get(f"{prefix}_minutes"), p.get(f"{prefix}_mb")
            if minutes is not None or mb is not None:
                ret.append(f"{scope} retention {_retention(minutes, 'min')} / {_retention(mb, 'MB')}")
                break
        parts.append(
            f"ledger {p.get('ledger_id')} ({human_bytes(_int(p.get('bytes')))}, {p.get('kind')} of "
            f"{display(p.get('topic'), limit=80)}" + (f"; {ret[0]}" if ret else "") + ")"
        )
    more = _int(log.get("live_ledgers")) - len(parts)
    if more > 0:
        parts.append(f"{more} more")
    return "pinned by " + ", ".join(parts) if parts else "no live ledger pins it"


def bookie_line(b: BookieCapacity) -> str:
    free = "" if b.free_bytes is None else f"; free {human_bytes(b.free_bytes)}"
    return (
        f"{b.bookie}: {human_bytes(b.data_bytes)} scanned"
        + ("" if b.complete else " (INCOMPLETE scan)")
        + ": "
        + ", ".join(f"{c} {human_bytes(b.by_class[c])} ({pct(b.share(c))})" for c in CLASSES)
        + free
    )


def capacity_lines(cap: Capacity, topics: int = 3, logs: int = 3) -> list[str]:
    """Per bookie: the split, its largest live topics and oldest logs with what pins them; then the skew."""
    lines = [f"Bookie capacity ({len(cap.bookies)} scanned bookie(s); per bookie top {cap.top_n} in findings.json):"]
    for b in cap.bookies:
        lines.append("  " + bookie_line(b))
        if b.top_topics:
            shown = ", ".join(f"{display(t, limit=80)} {human_bytes(n)}" for t, n in b.top_topics[:topics])
            lines.append(f"    largest live topics (of {b.topics}): {shown}")
        for log in b.oldest[:logs]:
            lines.append(
                f"    old log {log.get('log_id')} ({log.get('ledger_dir')}): "
                f"{human_bytes(_int(log.get('data_bytes')))}, live {pct(log.get('live_fraction'))}, {pinned_text(log)}"
            )
    s = cap.skew
    if s.get("max_over_mean") is not None:
        lines.append(
            f"  skew: largest bookie {human_bytes(_int(s.get('max_bytes')))}, smallest "
            f"{human_bytes(_int(s.get('min_bytes')))}, max / mean {s.get('max_over_mean')}"
        )
    return lines
