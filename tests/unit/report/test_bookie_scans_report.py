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


def test_scans_before_the_scrape_are_named_with_the_order(doc: dict[str, Any]) -> None:
    """A scan that started before the scrape finished: every unreclaimed-ledger-data claim from it is withheld; the
    terminal, Markdown and HTML reports name it, what it withheld, and the order to use (scrape, then scan)."""
    doc["audit"]["bookie_scans"] = [
        {"bookie": "b1:3181", "partial": False, "partial_reasons": [], "before_scrape": False, "not_claimed": []},
        {
            "bookie": "b2:3181",
            "partial": False,
            "partial_reasons": [],
            "before_scrape": True,
            "started_at_ms": NOW_MS - 3_600_000,
            "not_claimed": ["ledger-data-missing", "unreclaimed-ledger-data"],
        },
    ]
    doc["audit"]["storage"] = {
        "bookies": [{"bookie_id": "b2:3181", "complete": True, "data_bytes": 1000, "unattributed_bytes": 400}]
    }
    model = build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))
    text = "\n".join(summary_lines(model))
    assert "1 taken before the scrape: no unreclaimed-ledger-data or ledger-data-missing claim from them" in text
    assert "b2:3181: scan started before the scrape finished" in text
    assert "its 400 B unattributed bytes include any ledger deleted since" in text
    assert "(not claimed: ledger-data-missing, unreclaimed-ledger-data)" in text and "b1:3181" not in text
    assert "lacks entries written or re-replicated onto the bookie since." in text
    assert "Order to use: scrape, then scan-bookie on each bookie" in text
    markdown = render_markdown(model)
    assert "scan started before the scrape finished" in markdown and "Order to use: scrape" in markdown
    html = render_html(model)
    assert "scan started before the scrape finished" in html and "Order to use: scrape" in html


def test_scans_after_the_scrape_say_nothing_of_order(doc: dict[str, Any]) -> None:
    doc["audit"]["bookie_scans"] = [
        {"bookie": "b1:3181", "partial": False, "partial_reasons": [], "before_scrape": False, "not_claimed": []}
    ]
    model = build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))
    text = "\n".join(summary_lines(model))
    assert "Bookie scans: 1 (0 partial: no absence claim from them)" in text
    assert "before the scrape" not in text and "Order to use" not in text
