"""The report model: exact aggregates over the hand-written fixture, bookie shares, histograms, errors."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import FindingsError
from pulsar_ops.findings import DETECTIONS, SEVERITIES, Finding
from pulsar_ops.report.model import (
    AGE_BUCKETS_MS,
    RANGE_BUCKETS,
    UNKNOWN_BOOKIE,
    AuditInfo,
    ReportModel,
    SnapshotInfo,
    aggregate,
    bookie_shares,
    build_report,
    load_report,
)

from .conftest import FIXTURE, NOW_MS, SNAPSHOT_MS

B1, B2, B3, B4 = (f"bookie-{i}.pulsar.svc:3181" for i in range(1, 5))


def _hist(h: Any) -> dict[str, int]:
    return {b.label: b.count for b in h.buckets if b.count}


def test_counts_per_detection_and_severity(model: ReportModel) -> None:
    assert model.total_findings == 20
    assert dict(model.severity_totals) == {"critical": 1, "warning": 14, "info": 5}
    assert [c.detection for c in model.counts] == list(DETECTIONS)
    assert model.count("orphan-ledger", "warning") == 4
    assert model.count("orphan-ledger", "info") == 1
    assert model.count("dangling-ledger", "critical") == 1
    assert model.count("ack-holes", "info") == 4
    assert model.count("ack-holes", "warning") == 1
    assert model.count("znode-leak", "warning") == 3
    assert model.exit_code == 2
    orphan = next(c for c in model.counts if c.detection == "orphan-ledger")
    assert (orphan.plannable, orphan.reclaimable_bytes) == (3, 300_092_000)


def test_reclaimable_bytes_are_plannable_findings_bytes(model: ReportModel) -> None:
    # orphans 1001 (300 MB), 1002 (90 kB), 1005 (2000) + znode leaks 1234 and 200
    assert model.reclaimable_bytes == 300_000_000 + 90_000 + 2_000 + 1_234 + 200
    assert model.plannable_findings == 5


def test_tenants_ranked_by_reclaimable_then_total_bytes(model: ReportModel) -> None:
    rows = [(g.key, g.reclaimable_bytes, g.bytes, g.findings, g.plannable) for g in model.tenants]
    assert rows == [
        ("acme", 300_090_000, 300_864_552, 6, 2),
        ("initech", 3_234, 3_234, 4, 2),
        ("globex", 200, 51_001_200, 6, 1),
        ("(none)", 0, 5_000, 1, 0),
        ("oldco", 0, 2_098, 3, 0),
    ]
    assert dict(model.tenants[0].by_detection) == {
        "orphan-ledger": 2,
        "dangling-ledger": 1,
        "expired-retention-unloaded": 1,
        "ack-holes": 1,
        "inactive-subscription": 1,
    }


def test_namespaces_and_top_n(doc: dict[str, Any]) -> None:
    m = build_report(doc, top_n=2, now_ms=NOW_MS)
    assert [g.key for g in m.namespaces] == [
        "acme/orders",
        "acme/billing",
        "initech/legacy",
        "globex/events",
        "(none)",
        "oldco/us-west/ns1",
    ]
    assert [g.key for g in m.top_namespaces] == ["acme/orders", "acme/billing"]
    assert [g.key for g in m.top_tenants] == ["acme", "initech"]
    assert [f.ledger_id for f in m.largest_findings] == [1001, None]
    assert m.largest_findings[1].detection == "expired-retention-unloaded"


def test_bookie_bytes_use_write_quorum_over_ensemble(model: ReportModel) -> None:
    rows = {b.bookie: (b.orphan_ledgers, b.orphan_bytes, b.reclaimable_bytes) for b in model.bookies}
    assert rows == {
        # 1001: 300 MB x 2/3 on each of B1..B3 (plannable); 1002: 90 kB split over B1, B2 (plannable);
        # 1003: 1 MB x 3/3 on B2..B4 (not plannable); 1004: 5000 on B4 (info); 1005: no bookies.
        B1: (2, 200_045_000, 200_045_000),
        B2: (3, 201_045_000, 200_045_000),
        B3: (2, 201_000_000, 200_000_000),
        B4: (2, 1_005_000, 0),
        UNKNOWN_BOOKIE: (1, 2_000, 2_000),
    }
    assert [b.bookie for b in model.bookies] == [B2, B1, B3, UNKNOWN_BOOKIE, B4]


def _orphan(nbytes: int, **evidence: Any) -> Finding:
    return Finding("orphan-ledger", "warning", ledger_id=1, bytes=nbytes, evidence=evidence)


def test_bookie_shares_rules() -> None:
    assert bookie_shares(_orphan(900, bookies=[B1, B2, B3], ensemble_size=3, write_quorum=2)) == {
        B1: 600.0,
        B2: 600.0,
        B3: 600.0,
    }
    # no quorum in evidence: logical bytes split evenly
    assert bookie_shares(_orphan(900, bookies=[B1, B2, B3])) == {B1: 300.0, B2: 300.0, B3: 300.0}
    # duplicates count once
    assert bookie_shares(_orphan(100, bookies=[B1, B1, B2])) == {B1: 50.0, B2: 50.0}
    # ensemble changes: more distinct bookies than the ensemble size -> denominator is the bookie count
    shares = bookie_shares(_orphan(1000, bookies=[B1, B2, B3, B4], ensemble_size=2, write_quorum=2))
    assert shares == {B1: 500.0, B2: 500.0, B3: 500.0, B4: 500.0}
    assert sum(shares.values()) <= 1000 * 2
    # nonsense quorum (write quorum above ensemble, zero, bool) -> even split
    assert bookie_shares(_orphan(100, bookies=[B1, B2], ensemble_size=1, write_quorum=2)) == {
        B1: 50.0,
        B2: 50.0,
    }
    assert bookie_shares(_orphan(100, bookies=[B1, B2], ensemble_size=0, write_quorum=0)) == {
        B1: 50.0,
        B2: 50.0,
    }
    assert bookie_shares(_orphan(100, bookies=[B1, B2], ensemble_size=True, write_quorum=True)) == {
        B1: 50.0,
        B2: 50.0,
    }
    # no bookies, or not a list of strings -> the unknown bookie carries the bytes
    assert bookie_shares(_orphan(7)) == {UNKNOWN_BOOKIE: 7.0}
    assert bookie_shares(_orphan(7, bookies="b1")) == {UNKNOWN_BOOKIE: 7.0}
    assert bookie_shares(_orphan(7, bookies=[None, 3, ""])) == {UNKNOWN_BOOKIE: 7.0}


def test_ack_hole_histogram_counts_unknown_apart(model: ReportModel) -> None:
    assert _hist(model.ack_holes) == {"1": 1, "2–4": 1, "10–49": 1, "500–999": 1}
    assert model.ack_holes.unknown == 1
    assert model.ack_holes.total == 5


def test_age_histograms(model: ReportModel) -> None:
    assert _hist(model.orphan_ages) == {"< 1h": 1, "1h–6h": 1, "7d–30d": 1, "≥ 1y": 1}
    assert model.orphan_ages.unknown == 1  # ledger 1005 has no age_ms
    assert _hist(model.inactive_ages) == {"7d–30d": 1, "90d–1y": 1}
    assert _hist(model.retention_ages) == {"1d–7d": 1, "30d–90d": 1}
    assert model.inactive_ages.unknown == model.retention_ages.unknown == 0


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (1, "1"),
        (2, "2–4"),
        (4, "2–4"),
        (5, "5–9"),
        (999, "500–999"),
        (1000, "1000–4999"),
        (10_000, "≥ 10000"),
        (10**12, "≥ 10000"),
        (0, None),
        (-3, None),
        ("unknown", None),
        (None, None),
        (True, None),
        (float("nan"), None),
        ("12", None),
    ],
)
def test_range_bucket_edges(value: Any, label: str | None) -> None:
    f = Finding("ack-holes", "info", evidence={"range_count": value})
    m = aggregate([f], snapshot=SnapshotInfo(None, None, None, None), audit=_audit(), top_n=5, now_ms=0)
    if label is None:
        assert m.ack_holes.unknown == 1 and m.ack_holes.known == 0
    else:
        assert _hist(m.ack_holes) == {label: 1} and m.ack_holes.unknown == 0


def test_age_bucket_edges() -> None:
    hour, day = 3_600_000, 86_400_000
    values = [0, hour - 1, hour, day - 1, day, 7 * day, 365 * day - 1, 365 * day, -1]
    fs = [Finding("orphan-ledger", "warning", evidence={"age_ms": v}) for v in values]
    m = aggregate(fs, snapshot=SnapshotInfo(None, None, None, None), audit=_audit(), top_n=5, now_ms=0)
    assert _hist(m.orphan_ages) == {
        "< 1h": 2,
        "1h–6h": 1,
        "6h–1d": 1,
        "1d–7d": 1,
        "7d–30d": 1,
        "90d–1y": 1,
        "≥ 1y": 1,
    }
    assert m.orphan_ages.unknown == 1


def test_snapshot_and_audit_times(model: ReportModel) -> None:
    assert model.snapshot.finished_at_ms == SNAPSHOT_MS
    assert model.snapshot.cluster == "prod-eu-1"
    assert model.snapshot_age_ms == NOW_MS - SNAPSHOT_MS
    assert model.audit.finished_at_ms == SNAPSHOT_MS + 3_600_000
    assert model.audit.wall_seconds == 12.5
    assert model.incomplete_scopes == ("/managed-ledgers/oldco/us-west/ns1",)


def test_audit_time_falls_back_to_start_plus_wall_then_file_mtime(doc: dict[str, Any], tmp_path: Path) -> None:
    del doc["audit"]["finished_at_ms"]
    m = build_report(doc, now_ms=NOW_MS)
    assert m.audit.finished_at_ms == SNAPSHOT_MS + 3_600_000  # started_at_ms + 12.5 s
    del doc["audit"]["started_at_ms"]
    assert build_report(doc, now_ms=NOW_MS).audit.finished_at_ms is None
    assert build_report(doc, now_ms=NOW_MS, file_mtime_ms=123).audit.finished_at_ms == 123
    (tmp_path / "findings.json").write_text(json.dumps(doc))
    loaded = load_report(tmp_path, now_ms=NOW_MS)
    assert loaded.audit.finished_at_ms is not None and loaded.audit.finished_at_ms > SNAPSHOT_MS


def test_load_report_from_dir_or_file() -> None:
    a = load_report(FIXTURE.parent, now_ms=NOW_MS)
    b = load_report(FIXTURE, now_ms=NOW_MS)
    assert a.total_findings == b.total_findings == 20
    assert a.source == str(FIXTURE)


def test_evidence_as_json_string_is_accepted(doc: dict[str, Any]) -> None:
    for f in doc["findings"]:
        f["evidence"] = json.dumps(f["evidence"])
    m = build_report(doc, now_ms=NOW_MS)
    assert m.ack_holes.total == 5 and len(m.bookies) == 5


def test_unknown_detection_is_kept_and_counted(doc: dict[str, Any]) -> None:
    doc["findings"].append({"detection": "future-thing", "severity": "warning", "bytes": 5})
    m = build_report(doc, now_ms=NOW_MS)
    assert m.counts[-1].detection == "future-thing"
    assert m.count("future-thing", "warning") == 1


def test_empty_findings() -> None:
    m = build_report({"snapshot": {}, "audit": {}, "findings": []}, now_ms=NOW_MS)
    assert m.total_findings == 0 and m.reclaimable_bytes == 0 and m.exit_code == 0
    assert m.tenants == () and m.bookies == () and m.snapshot_age_ms is None


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: [], "not a findings document"),
        (lambda d: {**d, "findings": {"a": 1}}, "not a list"),
        (lambda d: {k: v for k, v in d.items() if k != "findings"}, "not a list"),
        (lambda d: {**d, "findings": [*d["findings"], 3]}, "findings[20]: is not an object"),
        (lambda d: {**d, "findings": [{"severity": "info"}]}, "findings[0].detection: is missing"),
        (lambda d: {**d, "findings": [{"detection": "x", "severity": "fatal"}]}, "severity: 'fatal'"),
        (
            lambda d: {**d, "findings": [{"detection": "x", "severity": "info", "bytes": "lots"}]},
            "bytes: must be an integer, not str 'lots'",
        ),
        (
            lambda d: {**d, "findings": [{"detection": "x", "severity": "info", "evidence": "{bad"}]},
            "evidence: not a JSON object",
        ),
        (lambda d: {**d, "findings": [{"detection": "x", "severity": "info", "evidence": [1]}]}, "evidence"),
        (lambda d: {**d, "findings": [{"detection": "x", "severity": "info", "topic": 5}]}, "topic"),
    ],
)
def test_malformed_documents_raise_findings_error(doc: dict[str, Any], mutate: Any, needle: str) -> None:
    with pytest.raises(FindingsError) as e:
        build_report(mutate(doc), now_ms=NOW_MS)
    assert needle in e.value.message
    assert e.value.code == "findings-invalid"
    assert "pulsar-ops audit" in e.value.hint


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(FindingsError) as e:
        load_report(tmp_path)
    assert e.value.code == "findings-missing" and "pulsar-ops audit" in e.value.hint
    (tmp_path / "findings.json").write_bytes(b"{not json")
    with pytest.raises(FindingsError) as e2:
        load_report(tmp_path)
    assert e2.value.code == "findings-invalid"
    (tmp_path / "findings.json").write_bytes(b"\xff\xfe")
    with pytest.raises(FindingsError):
        load_report(tmp_path)


def test_top_n_must_be_positive(doc: dict[str, Any]) -> None:
    with pytest.raises(FindingsError):
        build_report(doc, top_n=0, now_ms=NOW_MS)


def _audit() -> AuditInfo:
    return AuditInfo(params={}, counts={}, wall_seconds=None, finished_at_ms=None)


# ------------------------------------------------------------------------------------------ properties

_names = st.one_of(st.none(), st.sampled_from(["a/x", "a/y", "b/z", "c/u/v"]))
_bookies = st.lists(st.sampled_from([B1, B2, B3, B4]), max_size=4)
_finding = st.builds(
    lambda det, sev, ns, plannable, nbytes, bookies, quorum, age: Finding(
        detection=det,
        severity=sev,
        namespace=ns,
        plannable=plannable,
        bytes=nbytes,
        evidence={
            "bookies": bookies,
            "age_ms": age,
            "range_count": age,
            "inactive_ms": age,
            "oldest_age_ms": age,
            **({"ensemble_size": quorum[0], "write_quorum": quorum[1]} if quorum else {}),
        },
    ),
    st.sampled_from(DETECTIONS),
    st.sampled_from(SEVERITIES),
    _names,
    st.booleans(),
    st.integers(min_value=0, max_value=10**13),
    _bookies,
    st.one_of(st.none(), st.tuples(st.integers(1, 5), st.integers(1, 5))),
    st.one_of(st.none(), st.integers(-5, 10**12), st.just("unknown")),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_finding, max_size=40))
def test_aggregates_are_consistent(findings: list[Finding]) -> None:
    m = aggregate(findings, snapshot=SnapshotInfo(None, None, None, None), audit=_audit(), top_n=3, now_ms=0)
    assert sum(g.reclaimable_bytes for g in m.tenants) == m.reclaimable_bytes
    assert sum(g.reclaimable_bytes for g in m.namespaces) == m.reclaimable_bytes
    assert sum(g.findings for g in m.tenants) == sum(g.findings for g in m.namespaces) == len(findings)
    assert sum(c.findings for c in m.counts) == len(findings)
    assert sum(m.severity_totals.values()) == len(findings)
    for detection, hist in (
        ("ack-holes", m.ack_holes),
        ("orphan-ledger", m.orphan_ages),
        ("inactive-subscription", m.inactive_ages),
        ("expired-retention-unloaded", m.retention_ages),
    ):
        assert hist.total == sum(1 for f in findings if f.detection == detection)
    orphans = [f for f in findings if f.detection == "orphan-ledger"]
    # per-bookie bytes never exceed each ledger's bytes x its write quorum (or x 1 when split evenly)
    ceiling = sum(f.bytes * max(int(f.evidence.get("write_quorum", 1) or 1), 1) for f in orphans)
    assert sum(b.orphan_bytes for b in m.bookies) <= ceiling + len(m.bookies)
    assert all(b.reclaimable_bytes <= b.orphan_bytes for b in m.bookies)
    keys = [(-g.reclaimable_bytes, -g.bytes) for g in m.tenants]
    assert keys == sorted(keys)
    assert len(m.largest_findings) == min(3, len(findings))
    if findings:
        assert m.largest_findings[0].bytes == max(f.bytes for f in findings)


def test_bucket_specs_are_contiguous() -> None:
    for spec in (AGE_BUCKETS_MS, RANGE_BUCKETS):
        for (_, _, hi), (_, lo, _) in itertools.pairwise(spec):
            assert hi == lo
        assert spec[-1][2] is None


def test_ack_hole_coverage_is_one_line_in_every_renderer() -> None:
    from pulsar_ops.report.html import render_html
    from pulsar_ops.report.markdown import render_markdown
    from pulsar_ops.report.terminal import summary_lines

    cov = {
        "ack-ranges-in-cursor-ledgers": {
            "namespaces": 2,
            "cursors": 7,
            "backlog_entries": 900,
            "backlog_bytes": 3 * 1024 * 1024,
            "by_namespace": [],
        }
    }
    doc = {"snapshot": {}, "audit": {"coverage": cov}, "findings": []}
    m = build_report(doc, now_ms=0)
    line = m.audit.coverage_line()
    assert line is not None and "7 cursor(s) in 2 namespace(s)" in line and "3.15 MB (900 entries)" in line
    assert line in summary_lines(m)
    assert line in render_markdown(m)
    assert "7 cursor(s) in 2 namespace(s)" in render_html(m)
    # no such cursors (or an older findings.json without coverage): no line
    assert build_report({"snapshot": {}, "audit": {}, "findings": []}, now_ms=0).audit.coverage_line() is None
    zero = {"ack-ranges-in-cursor-ledgers": {"cursors": 0, "namespaces": 0}}
    assert build_report({"audit": {"coverage": zero}, "findings": []}, now_ms=0).audit.coverage_line() is None
