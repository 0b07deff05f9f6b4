"""The terminal summary: plain text lines (no colour, no markup), printed on stderr by the CLI.

``summary_lines(model)`` is called by ``pulsar-ops audit`` and ``pulsar-ops report``; the CLI may colour the
lines but must print them without markup interpretation. Every name from the cluster goes through
:func:`pulsar_ops.report.text.display`, so a hostile topic name cannot move the cursor or forge lines.
"""

from __future__ import annotations

from pulsar_ops.findings import EXIT_CLEAN, EXIT_CRITICAL, EXIT_WARNINGS, SEVERITIES, Finding
from pulsar_ops.report.capacity import capacity_lines
from pulsar_ops.report.model import GroupBytes, Histogram, ReportModel
from pulsar_ops.report.text import display, human_bytes, human_duration, iso_utc

NAME_WIDTH = 48

_EXIT_MEANING = {
    EXIT_CLEAN: "clean (nothing above info)",
    EXIT_WARNINGS: "warnings",
    EXIT_CRITICAL: "critical findings",
}


def summary_lines(model: ReportModel) -> list[str]:
    """The whole summary: header, counts, reclaimable bytes, worst offenders, incomplete scopes."""
    lines = header_lines(model)
    lines.append("")
    lines.extend(count_lines(model))
    if model.total_findings:
        lines.append("")
        lines.extend(_group_lines("Worst tenants", model.top_tenants, len(model.tenants)))
        lines.append("")
        lines.extend(_group_lines("Worst namespaces", model.top_namespaces, len(model.namespaces)))
        lines.append("")
        lines.extend(largest_lines(model))
        if model.ack_holes.total:
            lines.append("")
            lines.append(_histogram_line(model.ack_holes))
    coverage = model.audit.coverage_line()
    if coverage:
        lines.append("")
        lines.append(coverage)
    ownership = model.audit.ownership_line()
    if ownership:
        lines.append("")
        lines.append(ownership)
    scans = model.audit.bookie_scan_lines()
    if scans:
        lines.append("")
        lines.extend(display(x, limit=300) for x in scans)
    if model.audit.storage is not None:
        lines.append("")
        lines.extend(display(x, limit=400) for x in capacity_lines(model.audit.storage))
    if model.incomplete_scopes:
        lines.append("")
        lines.append(
            f"Incomplete scopes ({len(model.incomplete_scopes)}): findings that depend on them are not "
            "plannable; an error is never evidence of absence:"
        )
        for scope in model.incomplete_scopes[: model.top_n]:
            lines.append(f"  {display(scope, limit=100)}")
        if len(model.incomplete_scopes) > model.top_n:
            lines.append(f"  … and {len(model.incomplete_scopes) - model.top_n} more")
    lines.append("")
    lines.append(f"Status: exit {model.exit_code} = {_EXIT_MEANING.get(model.exit_code, '?')}")
    return lines


def header_lines(model: ReportModel) -> list[str]:
    s = model.snapshot
    cluster = display(s.cluster, limit=60) if s.cluster else "unknown cluster"
    sid = display(s.snapshot_id, limit=60) if s.snapshot_id else "unknown"
    lines = [f"Snapshot {sid} of {cluster}, taken {iso_utc(s.finished_at_ms)}"]
    extra = []
    if model.audit.finished_at_ms is not None:
        extra.append(f"audited {iso_utc(model.audit.finished_at_ms)}")
    if model.audit.wall_seconds is not None:
        extra.append(f"in {model.audit.wall_seconds:.1f}s")
    if model.snapshot_age_ms is not None:
        extra.append(f"snapshot age {human_duration(model.snapshot_age_ms)}")
    if extra:
        lines.append("  " + ", ".join(extra))
    sev = ", ".join(f"{model.severity_totals.get(x, 0)} {x}" for x in reversed(SEVERITIES))
    lines.append(
        f"Findings: {model.total_findings} ({sev}); {model.plannable_findings} plannable, "
        f"reclaimable {human_bytes(model.reclaimable_bytes)} ({model.reclaimable_bytes} bytes)"
    )
    return lines


def count_lines(model: ReportModel) -> list[str]:
    head = f"{'detection':<28} {'critical':>8} {'warning':>8} {'info':>6} {'plannable':>9} {'reclaimable':>12}"
    lines = [head, "-" * len(head)]
    for c in model.counts:
        if not c.findings:
            continue
        lines.append(
            f"{display(c.detection, limit=28):<28} {c.by_severity.get('critical', 0):>8} "
            f"{c.by_severity.get('warning', 0):>8} {c.by_severity.get('info', 0):>6} {c.plannable:>9} "
            f"{human_bytes(c.reclaimable_bytes):>12}"
        )
    if len(lines) == 2:
        lines.append("(no findings)")
    return lines


def _group_lines(title: str, rows: tuple[GroupBytes, ...], total: int) -> list[str]:
    shown = f"top {len(rows)} of {total}" if total > len(rows) else f"{total}"
    lines = [f"{title} by reclaimable bytes ({shown}):"]
    names = [display(g.key, limit=NAME_WIDTH) for g in rows]
    width = max((len(n) for n in names), default=0)
    for i, (g, name) in enumerate(zip(rows, names, strict=True), 1):
        lines.append(
            f"  {i:>2}. {name:<{width}} {human_bytes(g.reclaimable_bytes):>10} reclaimable, "
            f"{plural(g.findings, 'finding')} ({g.plannable} plannable, {human_bytes(g.bytes)} in all)"
        )
    return lines


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def largest_lines(model: ReportModel) -> list[str]:
    lines = [f"Largest findings (top {len(model.largest_findings)} by bytes):"]
    for i, f in enumerate(model.largest_findings, 1):
        flag = "plannable" if f.plannable else "not plannable"
        lines.append(
            f"  {i:>2}. {human_bytes(f.bytes):>10} {display(f.detection, limit=26):<26} {f.severity:<8} "
            f"{flag:<13} {finding_subject(f, limit=80)}"
        )
    return lines


def finding_subject(f: Finding, *, limit: int | None = None) -> str:
    """What a finding is about, for one line: topic [subscription], else path, else namespace, ledger."""
    parts: list[str] = []
    if f.topic:
        parts.append(f.topic)
        if f.subscription:
            parts.append(f"sub={f.subscription}")
    elif f.path:
        parts.append(f.path)
    elif f.namespace:
        parts.append(f.namespace)
    if f.ledger_id is not None:
        parts.append(f"ledger {f.ledger_id}")
    return display(" ".join(parts) or "-", limit=limit)


def _histogram_line(h: Histogram) -> str:
    cells = [f"{b.label}: {b.count}" for b in h.buckets if b.count]
    if h.unknown:
        cells.append(f"unknown: {h.unknown}")
    return f"{h.title}: " + ", ".join(cells)
