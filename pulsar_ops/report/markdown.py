"""The Markdown report: GitHub-flavoured tables, safe to paste into an issue or a wiki.

Every string from the findings is escaped for a table cell: HTML-significant characters become entities
(Markdown renderers pass raw HTML through), Markdown punctuation is backslash-escaped, ``|`` cannot end a
cell and control characters cannot end a row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pulsar_ops.findings import SEVERITIES
from pulsar_ops.report.capacity import CLASSES, Capacity, capacity_lines
from pulsar_ops.report.model import GroupBytes, Histogram, ReportModel
from pulsar_ops.report.terminal import finding_subject
from pulsar_ops.report.text import display, human_bytes, human_duration, iso_utc

# Inline-significant punctuation (emphasis, code, links, tables, strike-through, math); ``-``, ``+``, ``#``
# and ``.`` only matter at the start of a line, which a cell or a list item's text never is.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~^$])")


def md(value: object, *, limit: int | None = None) -> str:
    """Escape one value for a GFM table cell (or inline text)."""
    s = display(value, limit=limit)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()) -> list[str]:
    """A GFM table; cells must already be escaped. Columns listed in ``right`` are right-aligned."""
    out = ["| " + " | ".join(headers) + " |"]
    out.append("|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|")
    for r in rows:
        out.append("| " + " | ".join(c if c else " " for c in r) + " |")
    return out


def render_markdown(model: ReportModel) -> str:
    s = model.snapshot
    lines: list[str] = [f"# pulsar-ops audit report: {md(s.cluster or 'unknown cluster')}", ""]
    lines += [
        f"- Snapshot: {md(s.snapshot_id or 'unknown')}, taken {iso_utc(s.finished_at_ms)}",
        f"- Audited: {iso_utc(model.audit.finished_at_ms)}"
        + (f" in {model.audit.wall_seconds:.1f} s" if model.audit.wall_seconds is not None else ""),
        f"- Report generated: {iso_utc(model.generated_at_ms)} (snapshot age {human_duration(model.snapshot_age_ms)})",
        f"- Findings: **{model.total_findings}** ("
        + ", ".join(f"{model.severity_totals.get(x, 0)} {x}" for x in reversed(SEVERITIES))
        + f"), {model.plannable_findings} plannable",
        f"- Reclaimable: **{human_bytes(model.reclaimable_bytes)}** ({model.reclaimable_bytes} bytes, "
        "sum over plannable findings)",
        f"- Exit status: {model.exit_code}",
        "",
    ]
    lines += _section("Findings by detection", _count_rows(model))
    lines += _section(
        f"Worst tenants (top {len(model.top_tenants)} of {len(model.tenants)})",
        _group_table(model.top_tenants),
    )
    lines += _section(
        f"Worst namespaces (top {len(model.top_namespaces)} of {len(model.namespaces)})",
        _group_table(model.top_namespaces),
    )
    lines += _section("Orphan ledger bytes per bookie", _bookie_table(model))
    lines += _section(f"Largest findings (top {len(model.largest_findings)})", _largest_table(model))
    coverage = model.audit.coverage_line()
    lines += _section(
        "Ack-hole range counts", _histogram_table([model.ack_holes], "ranges") + ([md(coverage)] if coverage else [])
    )
    ownership = model.audit.ownership_line()
    if ownership:
        lines += _section("Bundle ownership", [md(ownership)])
    lines += _section(
        "Ages",
        _histogram_table([model.orphan_ages, model.inactive_ages, model.retention_ages], "age"),
    )
    scans = model.audit.bookie_scan_lines()
    if scans:
        lines += _section("Bookie scans", [md(scans[0]), "", *[f"- {md(x.strip())}" for x in scans[1:]]])
    if model.audit.storage is not None:
        lines += _section("Bookie capacity", _capacity_md(model.audit.storage))
    if model.incomplete_scopes:
        body = [
            "Findings that depend on these scopes are not plannable (an error is never evidence of absence):",
            "",
            *[f"- {md(x)}" for x in model.incomplete_scopes],
        ]
        lines += _section("Incomplete scopes", body)
    return "\n".join(lines).rstrip("\n") + "\n"


def _section(title: str, body: list[str]) -> list[str]:
    return [f"## {title}", "", *body, ""]


def _count_rows(model: ReportModel) -> list[str]:
    rows = [
        [
            md(c.detection),
            *(str(c.by_severity.get(x, 0)) for x in reversed(SEVERITIES)),
            str(c.plannable),
            human_bytes(c.bytes),
            human_bytes(c.reclaimable_bytes),
        ]
        for c in model.counts
    ]
    headers = ["detection", *reversed(SEVERITIES), "plannable", "bytes", "reclaimable"]
    return table(headers, rows, right=range(1, 7))


def _group_table(groups: Sequence[GroupBytes]) -> list[str]:
    if not groups:
        return ["(none)"]
    rows = [
        [
            str(i),
            md(g.key),
            human_bytes(g.reclaimable_bytes),
            str(g.findings),
            str(g.plannable),
            human_bytes(g.bytes),
            md(", ".join(f"{d} {n}" for d, n in sorted(g.by_detection.items()))),
        ]
        for i, g in enumerate(groups, 1)
    ]
    headers = ["#", "name", "reclaimable", "findings", "plannable", "bytes (all)", "detections"]
    return table(headers, rows, right=(0, 2, 3, 4, 5))


def _bookie_table(model: ReportModel) -> list[str]:
    if not model.bookies:
        return ["No orphan ledgers."]
    rows = [
        [md(b.bookie), str(b.orphan_ledgers), human_bytes(b.orphan_bytes), human_bytes(b.reclaimable_bytes)]
        for b in model.bookies
    ]
    note = (
        "Per bookie: `bytes × write_quorum / ensemble_size` when the ledger's quorum is known, else the "
        "ledger's bytes split evenly over its bookies."
    )
    return [
        note,
        "",
        *table(["bookie", "orphan ledgers", "orphan bytes", "reclaimable"], rows, right=(1, 2, 3)),
    ]


def _largest_table(model: ReportModel) -> list[str]:
    if not model.largest_findings:
        return ["No findings."]
    rows = [
        [
            str(i),
            human_bytes(f.bytes),
            md(f.detection),
            f.severity,
            "yes" if f.plannable else "no",
            md(f.namespace or "-"),
            md(finding_subject(f, limit=160)),
            md(f.reason or "", limit=160),
        ]
        for i, f in enumerate(model.largest_findings, 1)
    ]
    headers = ["#", "bytes", "detection", "severity", "plannable", "namespace", "subject", "reason"]
    return table(headers, rows, right=(0, 1))


def _histogram_table(hists: Sequence[Histogram], what: str) -> list[str]:
    headers = [what, *(md(h.short) for h in hists)]
    rows = [[md(b.label), *(str(h.buckets[i].count) for h in hists)] for i, b in enumerate(hists[0].buckets)]
    rows.append(["unknown", *(str(h.unknown) for h in hists)])
    rows.append(["**total**", *(f"**{h.total}**" for h in hists)])
    return table(headers, rows, right=range(1, len(headers)))


def _capacity_md(cap: Capacity) -> list[str]:
    """Per bookie: the split of the scanned bytes (a table), then its largest live topics and oldest logs."""
    head = "| bookie | scanned | " + " | ".join(CLASSES) + " | free |"
    out = [
        f"What holds each scanned bookie's disk (top {cap.top_n} per bookie in findings.json `audit.storage`).",
        "",
        head,
        "|---|" + "---:|" * (len(CLASSES) + 2),
    ]
    for b in cap.bookies:
        cells = [human_bytes(b.data_bytes), *(human_bytes(b.by_class[c]) for c in CLASSES)]
        free = "unknown" if b.free_bytes is None else human_bytes(b.free_bytes)
        out.append(f"| {md(b.bookie)} | " + " | ".join(cells) + f" | {free} |")
    out.append("")
    for x in capacity_lines(cap)[1:]:  # a bookie's lines nest under it
        out.append(("  - " if x.startswith("    ") else "- ") + md(x.strip()))
    return out
