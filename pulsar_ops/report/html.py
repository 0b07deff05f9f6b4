"""The HTML report: ONE self-contained file (inline CSS, inline SVG charts, a little inline JS).

It makes no network request at all: no CDN, no web font, no external image, and a Content-Security-Policy
(``default-src 'none'``, the style block and the script allowed by their SHA-256 hashes) tells the browser to
refuse anything else, so even a name that slipped past escaping could neither run script nor fetch a URL.
Every string from the findings is escaped (:func:`pulsar_ops.report.svg.esc`). The findings table sorts on a
click of its column headers and filters on typed text; it holds the ``max_rows`` largest findings.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import json
from collections.abc import Sequence

from pulsar_ops.findings import SEVERITIES, Finding
from pulsar_ops.report.capacity import CLASSES as CAPACITY_CLASSES
from pulsar_ops.report.capacity import BookieCapacity, pinned_text
from pulsar_ops.report.capacity import bookie_line as capacity_bookie_line
from pulsar_ops.report.capacity import pct as live_pct
from pulsar_ops.report.model import GroupBytes, ReportModel
from pulsar_ops.report.plan_view import KindImpact, PlanView
from pulsar_ops.report.svg import Bar, StackRow, bar_chart, esc, histogram_chart, stacked_bar_chart, step_chart
from pulsar_ops.report.text import display, human_bytes, human_duration, iso_utc

DEFAULT_MAX_ROWS = 5000

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1d;
  background: #f6f7f9; }
header { background: #1f3b5a; color: #fff; padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; opacity: .9; }
main { padding: 18px 28px 40px; max-width: 1500px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 14px 18px;
  margin: 0 0 18px; }
h2 { font-size: 17px; margin: 0 0 10px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; background: none; border: 0; padding: 0; }
.card { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 10px 16px;
  min-width: 150px; }
.card b { display: block; font-size: 22px; }
.card.critical b { color: #b3261e; } .card.warning b { color: #9a6700; } .card.info b { color: #2f6fb0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 12px; }
.charts figure { margin: 0; overflow-x: auto; }
svg.chart { max-width: 100%; height: auto; display: block; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { border-bottom: 1px solid #e6e8eb; padding: 4px 8px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { overflow-wrap: anywhere; min-width: 120px; max-width: 380px; }
td.ev { max-width: 300px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
th button { font: inherit; font-weight: 600; background: none; border: 0; padding: 0; cursor: pointer; }
th[aria-sort="ascending"] button::after { content: " \\25B2"; }
th[aria-sort="descending"] button::after { content: " \\25BC"; }
td.nowrap { white-space: nowrap; }
td.reason { min-width: 200px; }
.sev-critical { color: #b3261e; font-weight: 600; }
.sev-warning { color: #9a6700; }
.sev-info { color: #2f6fb0; }
.muted { color: #666; }
.scroll { max-height: 70vh; overflow: auto; }
input[type=search] { font: inherit; padding: 4px 8px; width: 320px; margin: 0 0 8px; }
"""

_JS = """
(function () {
  "use strict";
  var table = document.getElementById("findings-table");
  if (!table || !table.tHead || !table.tBodies.length) { return; }
  var tbody = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  function cellKey(row, i, numeric) {
    var c = row.cells[i];
    var v = c.getAttribute("data-v");
    if (v === null) { v = c.textContent || ""; }
    return numeric ? Number(v) : v.toLowerCase();
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var numeric = th.getAttribute("data-type") === "num";
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(tbody.rows);
      rows.sort(function (a, b) {
        var x = cellKey(a, i, numeric), y = cellKey(b, i, numeric);
        var r = x < y ? -1 : (x > y ? 1 : 0);
        return asc ? r : -r;
      });
      var frag = document.createDocumentFragment();
      rows.forEach(function (r) { frag.appendChild(r); });
      tbody.appendChild(frag);
    });
  });
  var filter = document.getElementById("findings-filter");
  var shown = document.getElementById("findings-shown");
  if (filter) {
    filter.addEventListener("input", function () {
      var q = filter.value.toLowerCase();
      var n = 0;
      Array.prototype.forEach.call(tbody.rows, function (r) {
        var hit = !q || (r.textContent || "").toLowerCase().indexOf(q) >= 0;
        r.hidden = !hit;
        if (hit) { n += 1; }
      });
      if (shown) { shown.textContent = String(n); }
    });
  }
}());
"""


def _sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CONTENT_SECURITY_POLICY = (
    "default-src 'none'; "
    f"style-src {_sha256_source(_CSS)}; "
    f"script-src {_sha256_source(_JS)}; "
    "img-src 'none'; font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


def _loss(k: KindImpact) -> str:
    return f"{k.lost_entries} entries, {human_bytes(k.lost_bytes)}" if k.kind == "drop-missing-ledger" else ""


def _plan_section(view: PlanView | None) -> str:
    """What the plan frees, when: the cumulative GC curve and the per-kind table (``report --plan``)."""
    if view is None:
        return ""
    rows = "".join(
        f'<tr><td class="name">{esc(k.kind)}</td><td class="num">{k.actions}</td>'
        f'<td class="num">{k.metadata_ops}</td><td class="num">{k.znode_deletes}</td>'
        f'<td class="num">{k.rewrites}</td>'
        f'<td class="num" title="{k.bytes_on_disk} bytes">{human_bytes(k.bytes_on_disk)}</td>'
        f'<td class="num">{_loss(k)}</td></tr>'
        for k in view.kinds
    )
    chart = step_chart(
        "chart-plan-freed",
        "What the plan frees, when (bookie GC model)",
        f"Cumulative bytes reclaimed on all bookies after plan {view.plan_id} is applied: "
        + "; ".join(f"+{human_duration(t)} {human_bytes(b)}" for t, b in view.freed[:20]),
        view.freed,
        lambda x: human_duration(int(x)),
        lambda y: human_bytes(int(y)),
    )
    before = (
        f" Ledger bytes on bookies: {human_bytes(view.before)} before, {human_bytes(view.after)} after the simulated "
        "GC runs."
        if view.before is not None and view.after is not None
        else ""
    )
    return (
        f'<section><h2 id="plan">What plan {esc(view.plan_id)} frees, when</h2>'
        f'<p class="muted">{human_bytes(view.reclaimed)} reclaimed within the simulated horizon.{esc(before)}</p>'
        f"{chart}"
        '<table aria-labelledby="plan"><thead><tr><th>action kind</th><th class="num">actions</th>'
        '<th class="num">metadata ops</th><th class="num">znodes deleted</th><th class="num">rewrites</th>'
        '<th class="num">bookie bytes freed</th><th class="num">acknowledged loss</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>{_plan_bookies(view)}</section>"
    )


PLAN_STAGES = (
    ("log deletion", "#3b6ea8"),
    ("minor compaction", "#6f9bd1"),
    ("major compaction", "#9bb7d6"),
    ("stays on disk", "#c0504d"),
)


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:+.0%}"


def _plan_bookies(view: PlanView) -> str:
    """Per bookie: what the plan frees at each GC stage and what stays (a stacked bar and a table); measured
    layouts list the logs that stay and the live ledgers pinning them, and the estimate's error."""
    if not view.bookies:
        return ""
    bars = [
        StackRow(
            label=b.bookie + (" (measured)" if b.layout == "measured" else ""),
            values=(float(b.deletion), float(b.minor), float(b.major), float(b.stays)),
            tooltip=f"{b.bookie} ({b.layout} layout): garbage {human_bytes(b.garbage)}; freed by log deletion "
            f"{human_bytes(b.deletion)}, minor {human_bytes(b.minor)}, major {human_bytes(b.major)}; stays "
            f"{human_bytes(b.stays)}",
        )
        for b in view.bookies
    ]
    n_meas = sum(1 for b in view.bookies if b.layout == "measured")
    chart = stacked_bar_chart(
        "chart-plan-bookies",
        "What the plan frees per bookie, by GC stage",
        f"Per bookie, bytes freed by whole-log deletion, minor and major compaction, and garbage that stays; "
        f"{n_meas} of {len(view.bookies)} bookie layouts measured by scan-bookie, the rest estimated.",
        bars,
        PLAN_STAGES,
        lambda y: human_bytes(int(y)),
    )

    def cell(n: int) -> str:
        return f'<td class="num" title="{n} bytes">{human_bytes(n)}</td>'

    rows = []
    for b in view.bookies:
        scan = "" if b.complete is None else (" (scan complete)" if b.complete else " (INCOMPLETE scan)")
        est = "" if b.estimated_reclaim is None else human_bytes(b.estimated_reclaim)
        if b.reclaim_error is not None:
            est += f" ({_pct(b.reclaim_error)})"
        rows.append(
            f'<tr><td class="name">{esc(b.bookie)}</td><td>{esc(b.layout + scan)}</td>{cell(b.garbage)}'
            f"{cell(b.deletion)}{cell(b.minor)}{cell(b.major)}{cell(b.stays)}"
            f'<td class="num">{esc(est)}</td></tr>'
        )
    pinned = [
        f"<li>{esc(b.bookie)} log {s.log_id}"
        + (f" in {esc(s.ledger_dir)}" if s.ledger_dir else "")
        + f": {human_bytes(s.garbage_bytes)} stays ({esc(s.reason)}), pinned by "
        + esc(
            ", ".join(
                f"ledger {lid} ({human_bytes(n)}" + (f", {owner})" if owner else ")") for lid, n, owner in s.pinned_by
            )
        )
        + "</li>"
        for b in view.bookies
        for s in b.stuck[:5]
        if s.pinned_by
    ]
    return (
        f'<h2 id="plan-bookies">What plan {esc(view.plan_id)} frees per bookie</h2>{chart}'
        '<table aria-labelledby="plan-bookies"><thead><tr><th>bookie</th><th>layout</th>'
        '<th class="num">garbage</th><th class="num">log deletion</th><th class="num">minor</th>'
        '<th class="num">major</th><th class="num">stays</th><th class="num">estimate (error)</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        + (
            '<p class="muted">Logs that stay because live ledgers pin them (measured layouts):</p>'
            f"<ul>{''.join(pinned)}</ul>"
            if pinned
            else ""
        )
    )


def render_html(model: ReportModel, *, max_rows: int = DEFAULT_MAX_ROWS, plan: PlanView | None = None) -> str:
    s = model.snapshot
    cluster = s.cluster or "unknown cluster"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>pulsar-ops report: {esc(cluster)}</title>",
        f"<style>{_CSS}</style>",
        "</head><body>",
        "<header>",
        f"<h1>pulsar-ops audit report: {esc(cluster)}</h1>",
        f"<p>Snapshot {esc(s.snapshot_id or 'unknown')}, taken {esc(iso_utc(s.finished_at_ms))}; audited "
        f"{esc(iso_utc(model.audit.finished_at_ms))}"
        + (f" in {model.audit.wall_seconds:.1f} s" if model.audit.wall_seconds is not None else "")
        + f"; report generated {esc(iso_utc(model.generated_at_ms))} (snapshot age "
        f"{esc(human_duration(model.snapshot_age_ms))}).</p>",
        "</header><main>",
        _cards(model),
        _counts_section(model),
        _charts_section(model),
        _plan_section(plan),
        _groups_section("Worst tenants", "tenants", model.top_tenants, len(model.tenants)),
        _groups_section("Worst namespaces", "namespaces", model.top_namespaces, len(model.namespaces)),
        _bookies_section(model),
        _coverage_section(model),
        _bookie_scans_section(model),
        _capacity_section(model),
        _scopes_section(model),
        _findings_section(model, max_rows),
        "</main>",
        f"<script>{_JS}</script>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _cards(model: ReportModel) -> str:
    cards = [
        ("", "findings", str(model.total_findings)),
        ("critical", "critical", str(model.severity_totals.get("critical", 0))),
        ("warning", "warning", str(model.severity_totals.get("warning", 0))),
        ("info", "info", str(model.severity_totals.get("info", 0))),
        ("", "plannable", str(model.plannable_findings)),
        ("", "reclaimable", human_bytes(model.reclaimable_bytes)),
        ("", "incomplete scopes", str(len(model.incomplete_scopes))),
        ("", "exit status", str(model.exit_code)),
    ]
    body = "".join(
        f'<div class="card {cls}"><b>{esc(value)}</b><span>{esc(label)}</span></div>' for cls, label, value in cards
    )
    return f'<section class="cards" aria-label="Summary">{body}</section>'


def _counts_section(model: ReportModel) -> str:
    head = "".join(f'<th class="num">{x}</th>' for x in reversed(SEVERITIES))
    rows = []
    for c in model.counts:
        cells = "".join(f'<td class="num">{c.by_severity.get(x, 0)}</td>' for x in reversed(SEVERITIES))
        rows.append(
            f'<tr><td>{esc(c.detection)}</td>{cells}<td class="num">{c.plannable}</td>'
            f'<td class="num" title="{c.bytes} bytes">{human_bytes(c.bytes)}</td>'
            f'<td class="num" title="{c.reclaimable_bytes} bytes">{human_bytes(c.reclaimable_bytes)}</td>'
            "</tr>"
        )
    return (
        '<section><h2 id="by-detection">Findings by detection</h2><table aria-labelledby="by-detection">'
        f'<thead><tr><th>detection</th>{head}<th class="num">plannable</th><th class="num">bytes</th>'
        f'<th class="num">reclaimable</th></tr></thead><tbody>{"".join(rows)}</tbody></table></section>'
    )


def _top_with_others(items: Sequence[tuple[str, float, str]], n: int, other_label: str) -> list[Bar]:
    bars = [Bar(label, value, tooltip) for label, value, tooltip in items[:n]]
    rest = items[n:]
    if rest:
        total = sum(v for _, v, _ in rest)
        bars.append(Bar(f"{other_label} ({len(rest)})", total, f"{len(rest)} more: {human_bytes(total)}", True))
    return bars


def _charts_section(model: ReportModel) -> str:
    tenant_items = [
        (
            g.key,
            float(g.reclaimable_bytes),
            f"{display(g.key)}: {human_bytes(g.reclaimable_bytes)} reclaimable "
            f"({g.reclaimable_bytes} bytes), "
            f"{g.plannable} of {g.findings} findings plannable",
        )
        for g in model.tenants
        if g.reclaimable_bytes > 0
    ]
    bookie_items = [
        (
            b.bookie,
            float(b.reclaimable_bytes),
            f"{display(b.bookie)}: {human_bytes(b.reclaimable_bytes)} reclaimable of "
            f"{human_bytes(b.orphan_bytes)} in {b.orphan_ledgers} orphan ledgers",
        )
        for b in model.bookies
        if b.reclaimable_bytes > 0
    ]
    charts = [
        bar_chart(
            "chart-tenants",
            "Reclaimable bytes per tenant",
            "Sum of bytes of plannable findings per tenant, largest first; "
            + "; ".join(f"{display(k)} {human_bytes(v)}" for k, v, _ in tenant_items[: model.top_n]),
            _top_with_others(tenant_items, model.top_n, "other tenants"),
            human_bytes,
        ),
        bar_chart(
            "chart-bookies",
            "Reclaimable orphan-ledger bytes per bookie",
            "Bytes of plannable orphan ledgers attributed to each bookie (write quorum / ensemble size when "
            "known, else split evenly); "
            + "; ".join(f"{display(k)} {human_bytes(v)}" for k, v, _ in bookie_items[: model.top_n]),
            _top_with_others(bookie_items, model.top_n, "other bookies"),
            human_bytes,
        ),
    ]
    for cid, hist in (
        ("chart-ack-holes", model.ack_holes),
        ("chart-orphan-ages", model.orphan_ages),
        ("chart-inactive-ages", model.inactive_ages),
        ("chart-retention-ages", model.retention_ages),
    ):
        desc = (
            f"Histogram of {hist.short}: "
            + ", ".join(f"{b.label}: {b.count}" for b in hist.buckets)
            + f", unknown: {hist.unknown}"
        )
        charts.append(histogram_chart(cid, hist, desc))
    figures = "".join(f"<figure>{c}</figure>" for c in charts)
    return f'<section><h2>Charts</h2><div class="charts">{figures}</div></section>'


def _groups_section(title: str, anchor: str, groups: Sequence[GroupBytes], total: int) -> str:
    rows = "".join(
        f'<tr><td class="num">{i}</td><td class="name">{esc(g.key)}</td>'
        f'<td class="num" title="{g.reclaimable_bytes} bytes">{human_bytes(g.reclaimable_bytes)}</td>'
        f'<td class="num">{g.findings}</td><td class="num">{g.plannable}</td>'
        f'<td class="num" title="{g.bytes} bytes">{human_bytes(g.bytes)}</td>'
        f"<td>{esc(', '.join(f'{d} {n}' for d, n in sorted(g.by_detection.items())))}</td></tr>"
        for i, g in enumerate(groups, 1)
    )
    return (
        f'<section><h2 id="{anchor}">{esc(title)} (top {len(groups)} of {total}, by reclaimable bytes)</h2>'
        f'<table aria-labelledby="{anchor}"><thead><tr><th class="num">#</th><th>name</th>'
        '<th class="num">reclaimable</th><th class="num">findings</th><th class="num">plannable</th>'
        '<th class="num">bytes (all)</th><th>detections</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def _bookies_section(model: ReportModel) -> str:
    if not model.bookies:
        return '<section><h2>Orphan ledgers per bookie</h2><p class="muted">No orphan ledgers.</p></section>'
    rows = "".join(
        f'<tr><td class="name">{esc(b.bookie)}</td><td class="num">{b.orphan_ledgers}</td>'
        f'<td class="num" title="{b.orphan_bytes} bytes">{human_bytes(b.orphan_bytes)}</td>'
        f'<td class="num" title="{b.reclaimable_bytes} bytes">{human_bytes(b.reclaimable_bytes)}</td></tr>'
        for b in model.bookies
    )
    return (
        '<section><h2 id="bookies">Orphan ledgers per bookie</h2><p class="muted">Bytes per bookie: '
        "ledger bytes × write quorum / ensemble size when the quorum is in the evidence, else the ledger's "
        "bytes "
        'split evenly over its bookies.</p><table aria-labelledby="bookies"><thead><tr><th>bookie</th>'
        '<th class="num">orphan ledgers</th><th class="num">orphan bytes</th><th class="num">reclaimable</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _coverage_section(model: ReportModel) -> str:
    line = model.audit.coverage_line()
    return f"<section><h2>Coverage</h2><p>{esc(line)}</p></section>" if line else ""


def _bookie_scans_section(model: ReportModel) -> str:
    lines = model.audit.bookie_scan_lines()
    if not lines:
        return ""
    items = "".join(f"<li>{esc(x.strip())}</li>" for x in lines[1:])
    return (
        f"<section><h2>Bookie scans</h2><p>{esc(lines[0])}</p>" + (f"<ul>{items}</ul>" if items else "") + "</section>"
    )


CAPACITY_SERIES = (
    ("live", "#3b6ea8"),
    ("orphan", "#e0a030"),
    ("unreclaimed", "#c0504d"),
    ("unattributed", "#9a9a9a"),
    ("free", "#d8e6d0"),
)


def _capacity_section(model: ReportModel) -> str:
    """What holds each scanned bookie's disk: a stacked bar per bookie (live / orphan / unreclaimed /
    unattributed / free when known), the skew across bookies, and the oldest logs with what pins them."""
    cap = model.audit.storage
    if cap is None:
        return ""
    bars = [
        StackRow(
            label=b.bookie,
            values=(*(float(b.by_class[c]) for c in CAPACITY_CLASSES), float(b.free_bytes or 0)),
            tooltip=f"{b.bookie}: " + capacity_bookie_line(b).split(": ", 1)[1],
        )
        for b in cap.bookies
    ]
    chart = stacked_bar_chart(
        "chart-capacity",
        "What holds each bookie's disk",
        "Per scanned bookie, entry-log data bytes that are live, orphan (no owner), unreclaimed (metadata gone) "
        "and unattributed (owner unknown), then free disk where the snapshot knows it.",
        bars,
        CAPACITY_SERIES,
        lambda y: human_bytes(int(y)),
    )
    s = cap.skew
    skew = (
        f"<p>Skew: largest bookie {human_bytes(int(s.get('max_bytes') or 0))}, smallest "
        f"{human_bytes(int(s.get('min_bytes') or 0))}, max / mean {esc(s.get('max_over_mean'))}.</p>"
        if s.get("max_over_mean") is not None
        else ""
    )

    def cell(n: int | None) -> str:
        return (
            '<td class="num">unknown</td>' if n is None else f'<td class="num" title="{n} bytes">{human_bytes(n)}</td>'
        )

    def topics(b: BookieCapacity) -> str:
        return esc(", ".join(f"{display(t, limit=60)} {human_bytes(n)}" for t, n in b.top_topics[:3]))

    rows = "".join(
        f'<tr><td class="name">{esc(b.bookie)}</td>{cell(b.data_bytes)}'
        + "".join(cell(b.by_class[c]) for c in CAPACITY_CLASSES)
        + f"{cell(b.free_bytes)}<td>{topics(b)}</td></tr>"
        for b in cap.bookies
    )
    logs = "".join(
        f"<li>{esc(b.bookie)} log {esc(o.get('log_id'))} ({esc(o.get('ledger_dir'))}): "
        f"{human_bytes(int(o.get('data_bytes') or 0))}, live {live_pct(o.get('live_fraction'))}; "
        f"{esc(pinned_text(o))}</li>"
        for b in cap.bookies
        for o in b.oldest[:3]
    )
    return (
        f'<section><h2 id="capacity">Bookie capacity</h2>{chart}{skew}'
        '<table aria-labelledby="capacity"><thead><tr><th>bookie</th><th class="num">scanned</th>'
        + "".join(f'<th class="num">{c}</th>' for c in CAPACITY_CLASSES)
        + f'<th class="num">free</th><th>largest live topics (top {cap.top_n} in findings.json)</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        + (
            f'<p class="muted">Oldest entry logs and the live ledgers that keep them:</p><ul>{logs}</ul>'
            if logs
            else ""
        )
        + "</section>"
    )


def _scopes_section(model: ReportModel) -> str:
    if not model.incomplete_scopes:
        return ""
    items = "".join(f"<li>{esc(x)}</li>" for x in model.incomplete_scopes)
    return (
        "<section><h2>Incomplete scopes</h2><p>Findings that depend on these scopes are not plannable: "
        f"an error is never evidence of absence.</p><ul>{items}</ul></section>"
    )


_FINDING_COLS: tuple[tuple[str, str], ...] = (
    ("severity", "num"),
    ("detection", "text"),
    ("bytes", "num"),
    ("plannable", "text"),
    ("namespace", "text"),
    ("topic", "text"),
    ("subscription", "text"),
    ("ledger", "num"),
    ("path", "text"),
    ("reason", "text"),
    ("evidence", "text"),
)

_SEV_RANK = {"critical": 3, "warning": 2, "info": 1}


def _finding_row(f: Finding) -> str:
    evidence = json.dumps(dict(f.evidence), sort_keys=True, default=str, ensure_ascii=False)
    ledger = "" if f.ledger_id is None else str(f.ledger_id)
    return (
        f'<tr><td data-v="{_SEV_RANK.get(f.severity, 0)}" class="sev-{esc(f.severity)}">'
        f"{esc(f.severity)}</td>"
        f'<td class="nowrap">{esc(f.detection)}</td>'
        f'<td class="num" data-v="{f.bytes}" title="{f.bytes} bytes">{human_bytes(f.bytes)}</td>'
        f"<td>{'yes' if f.plannable else 'no'}</td>"
        f'<td class="name">{esc(f.namespace or "")}</td><td class="name">{esc(f.topic or "")}</td>'
        f'<td class="name">{esc(f.subscription or "")}</td>'
        f'<td class="num" data-v="{ledger or -1}">{ledger}</td><td class="name">{esc(f.path or "")}</td>'
        f'<td class="reason">{esc(display(f.reason, limit=300))}</td>'
        f'<td class="ev" title="{esc(display(evidence, limit=4000))}">'
        f"{esc(display(evidence, limit=160))}</td></tr>"
    )


def _findings_section(model: ReportModel, max_rows: int) -> str:
    total = len(model.findings)
    shown = heapq.nsmallest(max(max_rows, 0), model.findings, key=lambda f: (-_SEV_RANK.get(f.severity, 0), -f.bytes))
    note = (
        f"Showing the {len(shown)} most severe and largest of {total} findings; the full list is in findings.json."
        if len(shown) < total
        else f"All {total} findings."
    )
    num_class = ' class="num"'
    head = "".join(
        f'<th data-type="{typ}"{num_class if name in ("bytes", "ledger") else ""}>'
        f'<button type="button">{name}</button></th>'
        for name, typ in _FINDING_COLS
    )
    rows = "".join(_finding_row(f) for f in shown)
    return (
        '<section><h2 id="findings">Findings</h2>'
        f'<p class="muted">{esc(note)} Click a column header to sort; type to filter '
        f'(<span id="findings-shown">{len(shown)}</span> shown).</p>'
        '<input type="search" id="findings-filter" placeholder="filter findings" '
        'aria-label="Filter findings">'
        '<div class="scroll"><table id="findings-table" aria-labelledby="findings">'
        f"<thead><tr>{head}</tr></thead>"
        f"<tbody>{rows}</tbody></table></div></section>"
    )
