"""Inline SVG charts generated in Python for the HTML report: horizontal bar charts and histograms.

Every chart is ``<svg role="img" aria-labelledby=...>`` with a ``<title>`` and a ``<desc>`` naming its data,
and one ``<title>`` per bar (a tooltip with the exact value). Colours are SVG presentation attributes, not
``style`` attributes, so the report's Content-Security-Policy can forbid inline style attributes. Every label
is escaped; nothing refers to anything outside the document.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pulsar_ops.report.model import Histogram
from pulsar_ops.report.text import display

WIDTH = 720
BAR_H = 22
GAP = 6
LABEL_W = 230
VALUE_W = 90
PALETTE = {
    "bar": "#3b6ea8",
    "bar2": "#9bb7d6",
    "unknown": "#9a9a9a",
    "axis": "#555555",
    "text": "#1d1d1d",
    "grid": "#e3e3e3",
}


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    tooltip: str
    muted: bool = False  # drawn in a lighter colour (the "others" bar)


def esc(value: object) -> str:
    return html.escape(display(value), quote=True)


def bar_chart(
    chart_id: str,
    title: str,
    desc: str,
    bars: Sequence[Bar],
    fmt: Callable[[float], str],
) -> str:
    """A horizontal bar chart, one row per bar, longest label truncated (full text in the tooltip)."""
    height = max(len(bars), 1) * (BAR_H + GAP) + GAP + 28
    top = 24
    out = [_open(chart_id, title, desc, WIDTH, height)]
    out.append(_text(8, 16, title, weight="600"))
    if not bars:
        out.append(_text(LABEL_W, top + BAR_H - 6, "no data"))
        out.append("</svg>")
        return "".join(out)
    vmax = max((b.value for b in bars), default=0.0) or 1.0
    plot_w = WIDTH - LABEL_W - VALUE_W - 8
    for i, b in enumerate(bars):
        y = top + GAP + i * (BAR_H + GAP)
        w = max(b.value / vmax * plot_w, 1.0 if b.value > 0 else 0.0)
        out.append('<g class="bar">')
        out.append(f"<title>{esc(b.tooltip)}</title>")
        out.append(_text(LABEL_W - 8, y + BAR_H - 6, display(b.label, limit=32), anchor="end"))
        colour = PALETTE["bar2" if b.muted else "bar"]
        out.append(f'<rect x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H}" fill="{colour}" rx="2"></rect>')
        out.append(_text(LABEL_W + w + 6, y + BAR_H - 6, fmt(b.value)))
        out.append("</g>")
    out.append(f'<line x1="{LABEL_W}" y1="{top}" x2="{LABEL_W}" y2="{height - 4}" stroke="{PALETTE["axis"]}"></line>')
    out.append("</svg>")
    return "".join(out)


def histogram_chart(chart_id: str, hist: Histogram, desc: str) -> str:
    """Vertical bars per bucket (left to right, smallest first) and a grey bar for unknown values."""
    cols: list[tuple[str, int, str]] = [(b.label, b.count, PALETTE["bar"]) for b in hist.buckets]
    cols.append(("unknown", hist.unknown, PALETTE["unknown"]))
    height = 240
    top, bottom, left, right = 34, 40, 40, 10
    plot_h = height - top - bottom
    plot_w = WIDTH - left - right
    slot = plot_w / len(cols)
    bar_w = max(slot * 0.7, 4.0)
    vmax = max((c for _, c, _ in cols), default=0) or 1
    out = [_open(chart_id, hist.title, desc, WIDTH, height)]
    out.append(_text(8, 18, f"{hist.title} ({hist.total})", weight="600"))
    ticks = [vmax] if vmax < 4 else [vmax // 2, vmax]
    for tick in ticks:
        gy = top + plot_h * (1 - tick / vmax)
        out.append(
            f'<line x1="{left}" y1="{gy:.1f}" x2="{WIDTH - right}" y2="{gy:.1f}" stroke="{PALETTE["grid"]}"></line>'
        )
        out.append(_text(left - 4, gy + 4, str(tick), anchor="end", size=10))
    for i, (label, count, colour) in enumerate(cols):
        x = left + i * slot + (slot - bar_w) / 2
        h = count / vmax * plot_h
        y = top + plot_h - h
        out.append('<g class="bar">')
        out.append(f"<title>{esc(label)}: {count}</title>")
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0.0):.1f}" '
            f'fill="{colour}" rx="2"></rect>'
        )
        if count:
            out.append(_text(x + bar_w / 2, y - 4, str(count), anchor="middle", size=11))
        out.append(_text(x + bar_w / 2, top + plot_h + 16, label, anchor="middle", size=10))
        out.append("</g>")
    out.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{WIDTH - right}" y2="{top + plot_h}" '
        f'stroke="{PALETTE["axis"]}"></line>'
    )
    out.append("</svg>")
    return "".join(out)


def step_chart(
    chart_id: str,
    title: str,
    desc: str,
    points: Sequence[tuple[int, int]],
    fmt_x: Callable[[float], str],
    fmt_y: Callable[[float], str],
) -> str:
    """A cumulative step line (x = ms after the start, y = a running total), one tooltip per step."""
    height = 260
    top, bottom, left, right = 34, 40, 90, 20
    plot_h = height - top - bottom
    plot_w = WIDTH - left - right
    out = [_open(chart_id, title, desc, WIDTH, height)]
    out.append(_text(8, 18, title, weight="600"))
    if not points:
        out.append(_text(left, top + plot_h / 2, "nothing is reclaimed within the simulated horizon"))
        out.append("</svg>")
        return "".join(out)
    xmax = max(p[0] for p in points) or 1
    ymax = max(p[1] for p in points) or 1

    def xy(x: float, y: float) -> tuple[float, float]:
        return left + x / xmax * plot_w, top + plot_h * (1 - y / ymax)

    for frac in (0.5, 1.0):
        _, gy = xy(0, ymax * frac)
        out.append(
            f'<line x1="{left}" y1="{gy:.1f}" x2="{WIDTH - right}" y2="{gy:.1f}" stroke="{PALETTE["grid"]}"></line>'
        )
        out.append(_text(left - 4, gy + 4, fmt_y(ymax * frac), anchor="end", size=10))
    path: list[str] = []
    prev = 0
    for x, y in points:
        px, py_prev = xy(x, prev)
        _, py = xy(x, y)
        path.append(f"{'M' if not path else 'L'}{px:.1f},{py_prev:.1f} L{px:.1f},{py:.1f}")
        prev = y
    ex, ey = xy(xmax, prev)
    path.append(f"L{ex:.1f},{ey:.1f}")
    start_x, start_y = xy(0, 0)
    out.append(
        f'<path d="M{start_x:.1f},{start_y:.1f} {" ".join(path).lstrip("M")}" fill="none" '
        f'stroke="{PALETTE["bar"]}" stroke-width="2"></path>'
    )
    for x, y in points:
        px, py = xy(x, y)
        out.append(
            f'<g class="bar"><title>+{esc(fmt_x(x))}: {esc(fmt_y(y))} reclaimed</title>'
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{PALETTE["bar"]}"></circle></g>'
        )
    out.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{WIDTH - right}" y2="{top + plot_h}" '
        f'stroke="{PALETTE["axis"]}"></line>'
    )
    out.append(_text(left, top + plot_h + 16, "now", size=10))
    out.append(
        _text((left + WIDTH - right) / 2, top + plot_h + 30, f"first bytes back at +{fmt_x(points[0][0])}", size=10)
    )
    out.append(_text(WIDTH - right, top + plot_h + 16, f"+{fmt_x(xmax)}", anchor="end", size=10))
    out.append("</svg>")
    return "".join(out)


def _open(chart_id: str, title: str, desc: str, width: int, height: int) -> str:
    cid = html.escape(chart_id, quote=True)
    return (
        f'<svg id="{cid}" class="chart" role="img" aria-labelledby="{cid}-title {cid}-desc" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'preserveAspectRatio="xMinYMin meet">'
        f'<title id="{cid}-title">{esc(title)}</title><desc id="{cid}-desc">{esc(desc)}</desc>'
    )


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 12, weight: str = "400") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}" '
        f'fill="{PALETTE["text"]}">{esc(text)}</text>'
    )


@dataclass(frozen=True)
class StackRow:
    label: str
    values: tuple[float, ...]  # one per series, drawn left to right
    tooltip: str


def stacked_bar_chart(
    chart_id: str,
    title: str,
    desc: str,
    rows: Sequence[StackRow],
    series: Sequence[tuple[str, str]],
    fmt: Callable[[float], str],
) -> str:
    """Horizontal stacked bars, one row per item, one segment per series (``(name, colour)``), and a legend.
    Each segment carries its own tooltip (series, value); the row total is printed after the bar."""
    legend_h = 22
    height = max(len(rows), 1) * (BAR_H + GAP) + GAP + 28 + legend_h
    top = 24 + legend_h
    out = [_open(chart_id, title, desc, WIDTH, height)]
    out.append(_text(8, 16, title, weight="600"))
    x = float(LABEL_W)
    for name, colour in series:
        out.append(f'<rect x="{x:.1f}" y="{top - 18}" width="10" height="10" fill="{colour}"></rect>')
        out.append(_text(x + 14, top - 9, name, size=11))
        x += 14 + 7 * len(name) + 18
    if not rows:
        out.append(_text(LABEL_W, top + BAR_H - 6, "no data"))
        out.append("</svg>")
        return "".join(out)
    vmax = max((sum(r.values) for r in rows), default=0.0) or 1.0
    plot_w = WIDTH - LABEL_W - VALUE_W - 8
    for i, r in enumerate(rows):
        y = top + GAP + i * (BAR_H + GAP)
        out.append('<g class="bar">')
        out.append(f"<title>{esc(r.tooltip)}</title>")
        out.append(_text(LABEL_W - 8, y + BAR_H - 6, display(r.label, limit=32), anchor="end"))
        x = float(LABEL_W)
        for (name, colour), v in zip(series, r.values, strict=True):
            w = v / vmax * plot_w
            if v > 0:
                out.append(
                    f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1.0):.1f}" height="{BAR_H}" fill="{colour}">'
                    f"<title>{esc(r.label)}: {esc(name)} {esc(fmt(v))}</title></rect>"
                )
            x += w
        out.append(_text(x + 6, y + BAR_H - 6, fmt(sum(r.values))))
        out.append("</g>")
    out.append(f'<line x1="{LABEL_W}" y1="{top}" x2="{LABEL_W}" y2="{height - 4}" stroke="{PALETTE["axis"]}"></line>')
    out.append("</svg>")
    return "".join(out)
