"""Reports name the bookie scans an audit joined and what a partial one withheld (findings.json audit.bookie_scans)."""

from __future__ import annotations

from typing import Any

from pulsar_ops.report.html import render_html
from pulsar_ops.report.markdown import render_markdown
from pulsar_ops.report.model import build_report
from pulsar_ops.report.terminal import summary_lines

from .conftest import FIXTURE, NOW_MS


def test_partial_bookie_scans_are_reported(doc: dict[str, Any]) -> None:
    doc["audit"]["bookie_scans"] = [
        {"bookie": "b1:3181", "partial": False, "partial_reasons": [], "not_claimed": []},
        {
            "bookie": "b2:3181",
            "partial": True,
            "partial_reasons": ["scan incomplete (1 log(s) skipped for an error)"],
            "not_claimed": ["ledger-data-missing"],
        },
    ]
    model = build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))
    text = "\n".join(summary_lines(model))
    assert "Bookie scans: 2 (1 partial: no absence claim from them)" in text
    assert "b2:3181: scan incomplete (1 log(s) skipped for an error) (not claimed: ledger-data-missing)" in text
    assert "## Bookie scans" in render_markdown(model)
    html = render_html(model)
    assert "<h2>Bookie scans</h2>" in html and "not claimed: ledger-data-missing" in html


def test_no_scans_no_line(doc: dict[str, Any]) -> None:
    model = build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))
    assert "Bookie scans" not in "\n".join(summary_lines(model)) and "Bookie scans" not in render_markdown(model)
    assert "Bookie scans" not in render_html(model)
