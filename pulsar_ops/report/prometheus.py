"""Prometheus text exposition (format 0.0.4) for node_exporter's textfile collector.

``write(path, model)`` writes atomically (a temporary file in the same directory, fsync, rename), so the
collector never reads half a file; the temporary name does not end in ``.prom`` so the collector ignores it.

Metrics (all gauges):

- ``pulsar_ops_findings{detection,severity}``: every known detection x severity, zeros included;
- ``pulsar_ops_reclaimable_bytes{tenant}``: bytes of plannable findings per tenant (``(none)``: no namespace);
- ``pulsar_ops_orphan_ledgers_bytes{bookie}``: bytes of all orphan ledgers (plannable or not) per bookie,
  attributed as described in :mod:`pulsar_ops.report.model`;
- ``pulsar_ops_audit_timestamp_seconds``: when the audit finished (omitted when unknown);
- ``pulsar_ops_snapshot_timestamp_seconds``: when the snapshot finished (omitted when unknown);
- ``pulsar_ops_snapshot_age_seconds``: snapshot age when this file was generated (omitted when unknown);
  for a live age use ``time() - pulsar_ops_snapshot_timestamp_seconds``;
- ``pulsar_ops_scrape_incomplete_scopes``: number of scopes the scrape could not read completely;
- ``pulsar_ops_audit_duration_seconds``: the audit's wall time (omitted when unknown).

With bookie scans (``audit --bookie-scan``; the families are absent without them), per scanned bookie:

- ``pulsar_ops_bookie_scanned_bytes{bookie}``: data bytes of its non-compacting entry logs;
- ``pulsar_ops_bookie_data_bytes{bookie,class}``: those bytes by class (``live``, ``orphan``, ``unreclaimed``,
  ``unattributed``; they sum to ``pulsar_ops_bookie_scanned_bytes``);
- ``pulsar_ops_bookie_free_bytes{bookie}``: free disk from the snapshot's bookie info (omitted when unknown);
- ``pulsar_ops_bookie_oldest_log_live_ratio{bookie}``: live fraction of its oldest entry log (omitted when
  it has no data);
- ``pulsar_ops_bookie_oldest_log_timestamp_seconds{bookie}``: that log's modification time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

from pulsar_ops.findings import SEVERITIES
from pulsar_ops.report.capacity import CLASSES as CAPACITY_CLASSES
from pulsar_ops.report.capacity import Capacity
from pulsar_ops.report.files import write_atomic
from pulsar_ops.report.model import ReportModel
from pulsar_ops.report.text import utf8_safe

Sample = tuple[Sequence[tuple[str, str]], float]


def escape_label_value(value: str) -> str:
    """Escape a label value: backslash, double quote and line feed, as the exposition format requires."""
    return utf8_safe(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def format_value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if float(v).is_integer() and abs(v) < 2**63:
        return str(int(v))
    return repr(float(v))


def metric_lines(name: str, help_text: str, samples: Iterable[Sample]) -> list[str]:
    """HELP and TYPE lines (gauge) followed by one line per sample."""
    help_escaped = help_text.replace("\\", "\\\\").replace("\n", "\\n")
    out = [f"# HELP {name} {help_escaped}", f"# TYPE {name} gauge"]
    for labels, value in samples:
        if labels:
            body = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels)
            out.append(f"{name}{{{body}}} {format_value(value)}")
        else:
            out.append(f"{name} {format_value(value)}")
    return out


def render_prometheus(model: ReportModel) -> str:
    lines: list[str] = []
    findings_samples: list[Sample] = []
    for c in model.counts:
        for sev in SEVERITIES:
            findings_samples.append(((("detection", c.detection), ("severity", sev)), c.by_severity.get(sev, 0)))
    lines += metric_lines(
        "pulsar_ops_findings", "Findings of the last audit per detection and severity.", findings_samples
    )
    lines += metric_lines(
        "pulsar_ops_reclaimable_bytes",
        "Bytes of plannable findings per tenant (orphan-ledger lengths plus leaked znode data).",
        [((("tenant", g.key),), g.reclaimable_bytes) for g in model.tenants],
    )
    lines += metric_lines(
        "pulsar_ops_orphan_ledgers_bytes",
        "Bytes of orphan ledgers attributed to each bookie (x write quorum / ensemble size when known).",
        [((("bookie", b.bookie),), b.orphan_bytes) for b in model.bookies],
    )
    if model.audit.finished_at_ms is not None:
        lines += metric_lines(
            "pulsar_ops_audit_timestamp_seconds",
            "Unix time at which the audit finished.",
            [((), model.audit.finished_at_ms / 1000)],
        )
    if model.snapshot.finished_at_ms is not None:
        lines += metric_lines(
            "pulsar_ops_snapshot_timestamp_seconds",
            "Unix time at which the audited snapshot finished.",
            [((), model.snapshot.finished_at_ms / 1000)],
        )
    if model.snapshot_age_ms is not None:
        lines += metric_lines(
            "pulsar_ops_snapshot_age_seconds",
            "Age of the audited snapshot when this file was written.",
            [((), model.snapshot_age_ms / 1000)],
        )
    lines += metric_lines(
        "pulsar_ops_scrape_incomplete_scopes",
        "Scopes the scrape could not read completely (their findings are not plannable).",
        [((), len(model.incomplete_scopes))],
    )
    if model.audit.wall_seconds is not None:
        lines += metric_lines(
            "pulsar_ops_audit_duration_seconds", "Wall time of the audit.", [((), model.audit.wall_seconds)]
        )
    if model.audit.storage is not None:
        lines += _storage_lines(model.audit.storage)
    return "\n".join(lines) + "\n"


def _storage_lines(cap: Capacity) -> list[str]:
    """The per-bookie capacity families (``audit.storage``)."""
    lines = metric_lines(
        "pulsar_ops_bookie_scanned_bytes",
        "Data bytes of the scanned bookie's non-compacting entry logs (scan-bookie).",
        [((("bookie", b.bookie),), b.data_bytes) for b in cap.bookies],
    )
    lines += metric_lines(
        "pulsar_ops_bookie_data_bytes",
        "Scanned data bytes per bookie by class: live, orphan (no owner), unreclaimed (metadata gone), "
        "unattributed (owner unknown).",
        [((("bookie", b.bookie), ("class", c)), b.by_class[c]) for b in cap.bookies for c in CAPACITY_CLASSES],
    )
    lines += metric_lines(
        "pulsar_ops_bookie_free_bytes",
        "Free disk bytes of the bookie from the snapshot's bookie info.",
        [((("bookie", b.bookie),), b.free_bytes) for b in cap.bookies if b.free_bytes is not None],
    )
    first = [(b.bookie, b.oldest[0]) for b in cap.bookies if b.oldest]
    lines += metric_lines(
        "pulsar_ops_bookie_oldest_log_live_ratio",
        "Live fraction of the bookie's oldest entry log (what compaction or log deletion could free there).",
        [((("bookie", bid),), float(o["live_fraction"])) for bid, o in first if o.get("live_fraction") is not None],
    )
    lines += metric_lines(
        "pulsar_ops_bookie_oldest_log_timestamp_seconds",
        "Modification time of the bookie's oldest entry log.",
        [((("bookie", bid),), int(o.get("mtime_ms") or 0) / 1000) for bid, o in first],
    )
    return lines


def write(path: Path | str, model: ReportModel) -> Path:
    """Write the metrics atomically to ``path`` (tmp + fsync + rename in the same directory)."""
    return write_atomic(path, render_prometheus(model))
