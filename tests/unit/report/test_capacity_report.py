"""The capacity view (findings.json audit.storage) in every report: terminal, Markdown, HTML, Prometheus."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit.storage_view import storage_summary
from pulsar_ops.report.html import render_html
from pulsar_ops.report.markdown import render_markdown
from pulsar_ops.report.model import build_report
from pulsar_ops.report.prometheus import render_prometheus
from pulsar_ops.report.terminal import summary_lines

from .capacity_fixture import B1, B2, GIB, storage_doc
from .conftest import FIXTURE, NOW_MS


def _model(doc: dict[str, Any]) -> Any:
    doc["audit"]["storage"] = storage_doc()
    return build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))


def test_storage_summary_shapes_each_bookie() -> None:
    s = storage_doc()
    assert s["top_n"] == 10 and [b["bookie_id"] for b in s["bookies"]] == [B1, B2]
    b1 = s["bookies"][0]
    assert b1["data_bytes"] == 7 * GIB + 5
    assert b1["top"]["live"]["topic"]["of"] == 2 and len(b1["top"]["live"]["topic"]["rows"]) == 2
    assert b1["top"]["orphan"]["topic"] == {"of": 0, "rows": []}
    log = b1["oldest_logs"][0]
    assert log["live_fraction"] == 0.1 and "neg_bytes" not in log["pinned_by"][0]
    assert s["skew"]["bookies"] == 2 and s["skew"]["max_bytes"] == 7 * GIB + 5
    assert storage_summary({}, 5)["bookies"] == [] and storage_summary({}, 5)["skew"]["max_over_mean"] is None


def test_terminal_and_markdown(doc: dict[str, Any]) -> None:
    model = _model(doc)
    text = "\n".join(summary_lines(model))
    assert "Bookie capacity (2 scanned bookie(s); per bookie top 10 in findings.json):" in text
    assert f"{B1}: 7.52 GB scanned: live 4.29 GB (57.1 %), orphan 1.07 GB (14.3 %), unreclaimed 2.15 GB" in text
    assert "unattributed 5 B (0.0 %); free 3.22 GB" in text
    assert "old log 3 (/data/bk): 1.00 kB, live 10.0 %, pinned by ledger 7 (100 B, data of" in text
    assert "namespace retention 10080 min" in text
    md = render_markdown(model)
    assert "## Bookie capacity" in md and f"| {B2} | 1.07 GB | 1.07 GB | 0 B | 0 B | 0 B | unknown |" in md


def test_html_has_the_capacity_chart(doc: dict[str, Any]) -> None:
    html = render_html(_model(doc))
    assert 'id="chart-capacity"' in html and '<h2 id="capacity">Bookie capacity</h2>' in html
    assert "<b>x</b>" not in html  # names are text
    assert "Oldest entry logs and the live ledgers that keep them" in html and "max / mean 1.75" in html


def test_no_scans_no_capacity(doc: dict[str, Any]) -> None:
    model = build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))
    assert "Bookie capacity" not in "\n".join(summary_lines(model)) and "Bookie capacity" not in render_html(model)
    assert "pulsar_ops_bookie_" not in render_prometheus(model)


def test_prometheus_capacity_metrics_parse(doc: dict[str, Any]) -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    text = render_prometheus(_model(doc))
    got = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in parser.text_string_to_metric_families(text)
        for s in family.samples
    }
    assert got[("pulsar_ops_bookie_scanned_bytes", (("bookie", B1),))] == 7 * GIB + 5
    by_class = {k[1][1][1]: v for k, v in got.items() if k[0] == "pulsar_ops_bookie_data_bytes" and k[1][0][1] == B1}
    assert by_class == {"live": 4 * GIB, "orphan": GIB, "unreclaimed": 2 * GIB, "unattributed": 5}
    assert got[("pulsar_ops_bookie_free_bytes", (("bookie", B1),))] == 3 * GIB
    assert ("pulsar_ops_bookie_free_bytes", (("bookie", B2),)) not in got  # unknown: no sample, not 0
    assert got[("pulsar_ops_bookie_oldest_log_live_ratio", (("bookie", B1),))] == 0.1


def test_pinning_retention_says_infinite_for_minus_one() -> None:
    from pulsar_ops.report.capacity import pinned_text

    log = {
        "pinned_by": [
            {
                "ledger_id": 7,
                "bytes": 10,
                "kind": "data",
                "topic": "persistent://t/n/a",
                "topic_retention_minutes": -1,
                "topic_retention_mb": 500,
            },
        ],
        "live_ledgers": 3,
    }
    text = pinned_text(log)
    assert "topic retention infinite / 500 MB" in text and "-1" not in text
    assert text.endswith("2 more")
