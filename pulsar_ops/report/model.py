"""The report model: ``findings.json`` folded into frozen aggregates that every renderer reads.

Pure: no kazoo, httpx, pyspark, rich or typer. :func:`build_report` works on the parsed document;
:func:`load_report` reads ``AUDIT_DIR/findings.json`` (or a ``findings.json`` path) and calls it.

Definitions (the renderers and the Prometheus metrics rely on them):

- **reclaimable bytes** = the sum of ``bytes`` over *plannable* findings (orphan ledgers: BookKeeper ledger
  length; znode leaks: summed znode data length). Findings without a namespace are grouped under ``(none)``.
- **per-bookie bytes** (orphan-ledger findings only): when the finding's evidence holds ``write_quorum`` and
  ``ensemble_size`` (the ``bk_ledgers`` columns), each bookie in ``evidence.bookies`` is attributed
  ``bytes * write_quorum / max(ensemble_size, len(bookies))``: the *replicated* bytes stored on it, with
  entries striped evenly over the ensemble (when ensemble changes put more distinct bookies than
  ``ensemble_size`` in the list, the denominator is the number of bookies so that the total never exceeds
  ``bytes * write_quorum``). Otherwise each bookie gets ``bytes / len(bookies)`` (the logical bytes split
  evenly). A finding without bookies is attributed to the bookie ``(unknown)``.
- **histograms** use fixed, roughly logarithmic buckets so reports of different audits compare; a value
  that is missing, not a number or negative is counted as ``unknown``, apart from the buckets.
"""

from __future__ import annotations

import heapq
import math
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import FindingsError
from pulsar_ops.findings import DETECTIONS, SEVERITIES, Finding, exit_code, parse_findings_document, read_findings
from pulsar_ops.report.capacity import Capacity, capacity_of
from pulsar_ops.report.text import iso_utc
from pulsar_ops.units import human_bytes

_SEV_ORDER = {"critical": 0, "warning": 1, "info": 2}
NO_NAMESPACE = "(none)"
UNKNOWN_BOOKIE = "(unknown)"
FINDINGS_FILE = "findings.json"
DEFAULT_TOP_N = 10

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

# (label, lower bound inclusive, upper bound exclusive or None)
AGE_BUCKETS_MS: tuple[tuple[str, int, int | None], ...] = (
    ("< 1h", 0, HOUR_MS),
    ("1h–6h", HOUR_MS, 6 * HOUR_MS),
    ("6h–1d", 6 * HOUR_MS, DAY_MS),
    ("1d–7d", DAY_MS, 7 * DAY_MS),
    ("7d–30d", 7 * DAY_MS, 30 * DAY_MS),
    ("30d–90d", 30 * DAY_MS, 90 * DAY_MS),
    ("90d–1y", 90 * DAY_MS, 365 * DAY_MS),
    ("≥ 1y", 365 * DAY_MS, None),
)

# Ack-hole range counts; 1000 and 10000 are the broker's default caps (metadata store / cursor ledger).
RANGE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1", 1, 2),
    ("2–4", 2, 5),
    ("5–9", 5, 10),
    ("10–49", 10, 50),
    ("50–99", 50, 100),
    ("100–499", 100, 500),
    ("500–999", 500, 1000),
    ("1000–4999", 1000, 5000),
    ("5000–9999", 5000, 10000),
    ("≥ 10000", 10000, None),
)


@dataclass(frozen=True)
class SnapshotInfo:
    snapshot_id: str | None
    cluster: str | None
    finished_at_ms: int | None
    path: str | None
    incomplete_scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuditInfo:
    params: Mapping[str, Any]
    counts: Mapping[str, Any]
    wall_seconds: float | None
    # When the audit finished (``audit.finished_at_ms``, else ``started_at_ms + wall``, else the mtime of
    # findings.json when loaded from disk); None when nothing tells.
    finished_at_ms: int | None
    # ``audit.coverage`` of findings.json: what the audit could not see into, counted (e.g. the cursors whose
    # acknowledged ranges live in cursor ledgers); empty for documents written before it existed.
    coverage: Mapping[str, Any] = field(default_factory=dict)
    # ``audit.ownership`` of findings.json: where bundle ownership was read from (issue 33); empty before it existed
    ownership: Mapping[str, Any] = field(default_factory=dict)
    # ``audit.bookie_scans`` of findings.json: one object per --bookie-scan (its bookie, whether its scope was
    # partial and what that withheld); empty without scans.
    bookie_scans: tuple[Mapping[str, Any], ...] = ()
    # ``audit.storage`` of findings.json: the capacity view of the scanned bookies (report/capacity.py); None
    # without scans.
    storage: Capacity | None = None

    def bookie_scan_lines(self) -> list[str]:
        """The bookie scans the audit joined, each partial one with what it withheld, and each one taken before the
        scrape with the claims that withholds and the order to use (none: no line)."""
        if not self.bookie_scans:
            return []
        partial = [s for s in self.bookie_scans if s.get("partial")]
        early = [s for s in self.bookie_scans if s.get("before_scrape")]
        head = f"Bookie scans: {len(self.bookie_scans)} ({len(partial)} partial: no absence claim from them"
        if early:
            head += (
                f"; {len(early)} taken before the scrape: no unreclaimed-ledger-data or ledger-data-missing claim "
                "from them"
            )
        lines = [head + ")"]
        for s in self.bookie_scans:
            if not s.get("partial") and not s.get("before_scrape"):
                continue
            why = [str(r) for r in s.get("partial_reasons") or []]
            if s.get("before_scrape"):
                why.append(self._early_reason(s))
            withheld = ", ".join(str(w) for w in s.get("not_claimed") or [])
            lines.append(f"  {s.get('bookie')}: {'; '.join(why)}" + (f" (not claimed: {withheld})" if withheld else ""))
        if early:
            lines.append(
                "  Order to use: scrape, then scan-bookie on each bookie (each scan starting after the scrape "
                "finished), then audit; an earlier scan still holds ledgers deleted since (unattributed bytes) and "
                "lacks entries written or re-replicated onto the bookie since."
            )
        return lines

    def _early_reason(self, scan: Mapping[str, Any]) -> str:
        started = _opt_int(scan.get("started_at_ms"))
        text = "scan started before the scrape finished" + (f" (at {iso_utc(started)})" if started else "")
        cap = self.storage
        if cap is not None:
            for b in cap.bookies:
                if b.bookie == scan.get("bookie") and b.data_bytes:
                    text += (
                        f": its {human_bytes(b.by_class.get('unattributed', 0))} unattributed bytes include any "
                        "ledger deleted since"
                    )
        return text

    def ownership_line(self) -> str | None:
        """One line when bundle ownership was not fully known (an unknown scope: no unloaded finding there), or was
        read from /service_unit_state; None for the modular load manager's /namespace znodes."""
        o = self.ownership
        if not o:
            return None
        sus = o.get("service_unit_state")
        if isinstance(sus, Mapping) and sus.get("known"):
            return (
                "Bundle ownership read from /service_unit_state (the extensible load manager's metadata-store table "
                "view): Owned bundles owned, Free or absent ones unowned, in-flight ones unknown; no offline trim. "
                "Details: findings.json audit.ownership."
            )
        if o.get("unknown_scope"):
            why = sus.get("why_not") if isinstance(sus, Mapping) else None
            return (
                f"Bundle ownership is an unknown scope (load manager {o.get('load_manager')}"
                + (f"; /service_unit_state not read: {why}" if why else "")
                + "): no topic is called unloaded without every broker's listing (scrape with --admin-url)."
            )
        return None

    def coverage_line(self) -> str | None:
        """One line on the ack-hole coverage, or None when every cursor's ranges were in the snapshot."""
        c = self.coverage.get("ack-ranges-in-cursor-ledgers")
        if not isinstance(c, Mapping) or not _opt_int(c.get("cursors")):
            return None
        cursors, namespaces = _opt_int(c.get("cursors")) or 0, _opt_int(c.get("namespaces")) or 0
        backlog = _opt_int(c.get("backlog_bytes")) or 0
        entries = _opt_int(c.get("backlog_entries")) or 0
        return (
            f"Ack holes not audited for {cursors} cursor(s) in {namespaces} namespace(s): their acknowledged "
            f"ranges live in cursor ledgers (normal in a running cluster); they sit on a backlog of "
            f"{human_bytes(backlog)} ({entries} entries). Per namespace: findings.json audit.coverage."
        )


@dataclass(frozen=True)
class DetectionCounts:
    detection: str
    by_severity: Mapping[str, int]
    findings: int
    plannable: int
    bytes: int
    reclaimable_bytes: int


@dataclass(frozen=True)
class GroupBytes:
    """One tenant or namespace: all its findings, and the plannable part of them."""

    key: str
    findings: int
    plannable: int
    bytes: int
    reclaimable_bytes: int
    by_detection: Mapping[str, int]


@dataclass(frozen=True)
class BookieBytes:
    bookie: str
    orphan_ledgers: int
    orphan_bytes: int
    reclaimable_bytes: int


@dataclass(frozen=True)
class Bucket:
    label: str
    lo: int
    hi: int | None
    count: int


@dataclass(frozen=True)
class Histogram:
    title: str
    short: str
    unit: str
    buckets: tuple[Bucket, ...]
    unknown: int

    @property
    def known(self) -> int:
        return sum(b.count for b in self.buckets)

    @property
    def total(self) -> int:
        return self.known + self.unknown


@dataclass(frozen=True)
class ReportModel:
    snapshot: SnapshotInfo
    audit: AuditInfo
    generated_at_ms: int
    top_n: int
    findings: tuple[Finding, ...]
    counts: tuple[DetectionCounts, ...]
    severity_totals: Mapping[str, int]
    plannable_findings: int
    reclaimable_bytes: int
    tenants: tuple[GroupBytes, ...]
    namespaces: tuple[GroupBytes, ...]
    bookies: tuple[BookieBytes, ...]
    largest_findings: tuple[Finding, ...]
    ack_holes: Histogram
    orphan_ages: Histogram
    inactive_ages: Histogram
    retention_ages: Histogram
    incomplete_scopes: tuple[str, ...]
    exit_code: int
    source: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def total_findings(self) -> int:
        return len(self.findings)

    @property
    def top_tenants(self) -> tuple[GroupBytes, ...]:
        return self.tenants[: self.top_n]

    @property
    def top_namespaces(self) -> tuple[GroupBytes, ...]:
        return self.namespaces[: self.top_n]

    @property
    def snapshot_age_ms(self) -> int | None:
        """Age of the snapshot when this report was generated."""
        if self.snapshot.finished_at_ms is None:
            return None
        return self.generated_at_ms - self.snapshot.finished_at_ms

    def count(self, detection: str, severity: str) -> int:
        for c in self.counts:
            if c.detection == detection:
                return int(c.by_severity.get(severity, 0))
        return 0


# ----------------------------------------------------------------------------------------------- loading


def load_report(path: Path | str, *, top_n: int = DEFAULT_TOP_N, now_ms: int | None = None) -> ReportModel:
    """Read ``AUDIT_DIR/findings.json`` (``path`` may be the directory or the file) into a report model."""
    doc = read_findings(path)
    file = Path(doc.source)
    try:
        mtime_ms: int | None = int(os.stat(file).st_mtime * 1000)
    except OSError:
        mtime_ms = None
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return build_report(doc.raw, top_n=top_n, now_ms=now, source=str(file), file_mtime_ms=mtime_ms)


def build_report(
    doc: Any,
    *,
    top_n: int = DEFAULT_TOP_N,
    now_ms: int,
    source: str | None = None,
    file_mtime_ms: int | None = None,
) -> ReportModel:
    """Fold a parsed findings document into a :class:`ReportModel`. ``now_ms`` stamps the report."""
    where = source or FINDINGS_FILE
    if not isinstance(doc, Mapping):
        raise FindingsError(f"{where}: not a findings document (expected a JSON object)")
    if top_n < 1:
        raise FindingsError(f"top N must be at least 1, got {top_n}", hint="pass --top 10", code="config-invalid")
    findings = parse_findings_document(doc, where).findings
    snapshot = _snapshot_info(doc.get("snapshot"))
    audit = _audit_info(doc.get("audit"), file_mtime_ms)
    return aggregate(findings, snapshot=snapshot, audit=audit, top_n=top_n, now_ms=now_ms, source=source)


def aggregate(
    findings: Sequence[Finding],
    *,
    snapshot: SnapshotInfo,
    audit: AuditInfo,
    top_n: int,
    now_ms: int,
    source: str | None = None,
) -> ReportModel:
    """The aggregates over already-parsed findings (used by :func:`build_report` and by tests)."""
    findings = tuple(findings)
    reclaimable = sum(f.bytes for f in findings if f.plannable)
    incomplete = sorted(
        {f.path for f in findings if f.detection == "scrape-incomplete" and f.path} | set(snapshot.incomplete_scopes)
    )
    return ReportModel(
        snapshot=snapshot,
        audit=audit,
        generated_at_ms=now_ms,
        top_n=top_n,
        findings=findings,
        counts=_detection_counts(findings),
        severity_totals={s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES},
        plannable_findings=sum(1 for f in findings if f.plannable),
        reclaimable_bytes=reclaimable,
        tenants=_groups(findings, lambda f: f.tenant or NO_NAMESPACE),
        namespaces=_groups(findings, lambda f: f.namespace or NO_NAMESPACE),
        bookies=bookie_bytes(findings),
        largest_findings=tuple(heapq.nsmallest(top_n, findings, key=_size_order)),
        ack_holes=_histogram(
            "Ack-hole range counts",
            "ack holes",
            "ranges",
            RANGE_BUCKETS,
            (f.evidence.get("range_count") for f in findings if f.detection == "ack-holes"),
        ),
        orphan_ages=_histogram(
            "Orphan ledger ages",
            "orphan ledgers",
            "ms",
            AGE_BUCKETS_MS,
            (f.evidence.get("age_ms") for f in findings if f.detection == "orphan-ledger"),
        ),
        inactive_ages=_histogram(
            "Inactive subscriptions: time since last activity",
            "inactive subscriptions",
            "ms",
            AGE_BUCKETS_MS,
            (f.evidence.get("inactive_ms") for f in findings if f.detection == "inactive-subscription"),
        ),
        retention_ages=_histogram(
            "Expired retention: age of the oldest trimmable ledger",
            "expired retention (oldest ledger)",
            "ms",
            AGE_BUCKETS_MS,
            (f.evidence.get("oldest_age_ms") for f in findings if f.detection == "expired-retention-unloaded"),
        ),
        incomplete_scopes=tuple(incomplete),
        exit_code=exit_code(findings),
        source=source,
    )


# ------------------------------------------------------------------------------------------- aggregates


def bookie_shares(f: Finding) -> dict[str, float]:
    """Bytes of one orphan-ledger finding attributed to each bookie (see the module docstring)."""
    raw = f.evidence.get("bookies")
    bookies: list[str] = []
    if isinstance(raw, list):
        for b in raw:
            if isinstance(b, str) and b and b not in bookies:
                bookies.append(b)
    if not bookies:
        return {UNKNOWN_BOOKIE: float(f.bytes)}
    wq = _positive_int(f.evidence.get("write_quorum"))
    es = _positive_int(f.evidence.get("ensemble_size"))
    if wq is not None and es is not None and wq <= es:
        share = f.bytes * wq / max(es, len(bookies))
    else:
        share = f.bytes / len(bookies)
    return {b: share for b in bookies}


def bookie_bytes(findings: Iterable[Finding]) -> tuple[BookieBytes, ...]:
    orphan: dict[str, float] = defaultdict(float)
    reclaim: dict[str, float] = defaultdict(float)
    ledgers: dict[str, int] = defaultdict(int)
    for f in findings:
        if f.detection != "orphan-ledger":
            continue
        for bookie, share in bookie_shares(f).items():
            orphan[bookie] += share
            ledgers[bookie] += 1
            if f.plannable:
                reclaim[bookie] += share
    rows = [BookieBytes(b, ledgers[b], round(orphan[b]), round(reclaim.get(b, 0.0))) for b in orphan]
    rows.sort(key=lambda r: (-r.reclaimable_bytes, -r.orphan_bytes, r.bookie))
    return tuple(rows)


def _detection_counts(findings: Sequence[Finding]) -> tuple[DetectionCounts, ...]:
    order = list(DETECTIONS) + sorted({f.detection for f in findings} - set(DETECTIONS))
    rows = []
    for d in order:
        mine = [f for f in findings if f.detection == d]
        rows.append(
            DetectionCounts(
                detection=d,
                by_severity={s: sum(1 for f in mine if f.severity == s) for s in SEVERITIES},
                findings=len(mine),
                plannable=sum(1 for f in mine if f.plannable),
                bytes=sum(f.bytes for f in mine),
                reclaimable_bytes=sum(f.bytes for f in mine if f.plannable),
            )
        )
    return tuple(rows)


def _groups(findings: Sequence[Finding], key_of: Callable[[Finding], str]) -> tuple[GroupBytes, ...]:
    acc: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        acc[key_of(f)].append(f)
    rows = []
    for key, mine in acc.items():
        by_det: dict[str, int] = defaultdict(int)
        for f in mine:
            by_det[f.detection] += 1
        rows.append(
            GroupBytes(
                key=key,
                findings=len(mine),
                plannable=sum(1 for f in mine if f.plannable),
                bytes=sum(f.bytes for f in mine),
                reclaimable_bytes=sum(f.bytes for f in mine if f.plannable),
                by_detection=dict(by_det),
            )
        )
    rows.sort(key=lambda g: (-g.reclaimable_bytes, -g.bytes, -g.findings, g.key))
    return tuple(rows)


def _size_order(f: Finding) -> tuple[int, int]:
    """Largest first, then most severe; ties keep the input (audit) order, as heapq.nsmallest is stable."""
    return (-f.bytes, _SEV_ORDER.get(f.severity, 3))


def _histogram(
    title: str, short: str, unit: str, spec: Sequence[tuple[str, int, int | None]], values: Iterable[Any]
) -> Histogram:
    counts = [0] * len(spec)
    unknown = 0
    for v in values:
        n = _number(v)
        if n is None or n < spec[0][1]:
            unknown += 1
            continue
        for i, (_, lo, hi) in enumerate(spec):
            if n >= lo and (hi is None or n < hi):
                counts[i] += 1
                break
    buckets = tuple(Bucket(label, lo, hi, c) for (label, lo, hi), c in zip(spec, counts, strict=True))
    return Histogram(title, short, unit, buckets, unknown)


# -------------------------------------------------------------------------------------------- parsing


def _snapshot_info(raw: Any) -> SnapshotInfo:
    s = raw if isinstance(raw, Mapping) else {}
    scopes: list[str] = []
    for sc in s.get("incomplete_scopes") or ():
        if isinstance(sc, Mapping) and isinstance(sc.get("scope"), str):
            scopes.append(sc["scope"])
        elif isinstance(sc, str):
            scopes.append(sc)
    return SnapshotInfo(
        snapshot_id=_opt_str(s.get("snapshot_id")),
        cluster=_opt_str(s.get("cluster")),
        finished_at_ms=_opt_int(s.get("finished_at_ms")),
        path=_opt_str(s.get("path")),
        incomplete_scopes=tuple(scopes),
    )


def _audit_info(raw: Any, file_mtime_ms: int | None) -> AuditInfo:
    a = raw if isinstance(raw, Mapping) else {}
    wall = _number(a.get("wall_seconds"))
    finished = _opt_int(a.get("finished_at_ms"))
    if finished is None:
        started = _opt_int(a.get("started_at_ms"))
        if started is not None:
            finished = started + int((wall or 0.0) * 1000)
    if finished is None:
        finished = file_mtime_ms
    params = a.get("params")
    counts = a.get("counts")
    coverage = a.get("coverage")
    scans = a.get("bookie_scans")
    return AuditInfo(
        params=dict(params) if isinstance(params, Mapping) else {},
        counts=dict(counts) if isinstance(counts, Mapping) else {},
        wall_seconds=wall,
        finished_at_ms=finished,
        coverage=dict(coverage) if isinstance(coverage, Mapping) else {},
        ownership=dict(a["ownership"]) if isinstance(a.get("ownership"), Mapping) else {},
        bookie_scans=tuple(x for x in scans if isinstance(x, Mapping)) if isinstance(scans, list) else (),
        storage=capacity_of(a.get("storage")),
    )


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return float(v)


def _opt_int(v: Any) -> int | None:
    n = _number(v)
    return None if n is None else int(n)


def _positive_int(v: Any) -> int | None:
    n = _opt_int(v)
    return n if n is not None and n > 0 else None


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None
