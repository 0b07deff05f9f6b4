"""The HTML report in headless Chromium: charts render, the table sorts and filters, nothing is fetched,
nothing is logged. Skips when no Chromium is installed or it cannot start (`apt-get install chromium`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.findings import Finding
from pulsar_ops.report.html import render_html
from pulsar_ops.report.model import build_report

from .cdp import Browser, CdpError, find_chromium

pytestmark = pytest.mark.browser

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "findings.json"
NOW_MS = 1_714_564_800_000 + 7_200_000
CHARTS = [
    "chart-tenants",
    "chart-bookies",
    "chart-ack-holes",
    "chart-orphan-ages",
    "chart-inactive-ages",
    "chart-retention-ages",
]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    exe = find_chromium()
    if exe is None:
        pytest.skip("headless Chromium not installed (apt-get install -y chromium, or set PULSAR_OPS_CHROMIUM)")
    d = tmp_path_factory.mktemp("chromium")
    b = Browser(exe, d / "profile", d / "chromium.log")
    try:
        b.send("Browser.getVersion")
    except (CdpError, OSError) as e:
        b.close()
        pytest.skip(f"Chromium at {exe} could not be started: {e}")
    try:
        yield b
    finally:
        b.close()


def _report_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    # many tenants and bookies so the bar charts fold the tail into "other ..."
    for i in range(40):
        doc["findings"].append(
            Finding(
                "orphan-ledger",
                "warning",
                ledger_id=9000 + i,
                namespace=f"tenant-{i % 15}/ns-{i % 4}",
                topic=f"persistent://tenant-{i % 15}/ns-{i % 4}/t{i}\u202e<b>{i}</b>",
                plannable=i % 3 != 0,
                bytes=(i + 1) * 1_000_003,
                evidence={
                    "bookies": [f"bk-{i % 13}:3181", f"bk-{(i + 1) % 13}:3181"],
                    "age_ms": i * 3_600_000,
                    "ensemble_size": 2,
                    "write_quorum": 2,
                },
            ).to_json()
        )
    return doc


def _open(browser: Browser, path: Path) -> tuple[str, str]:
    session = browser.new_page()
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.send(f"{domain}.enable", {}, session)
    url = path.as_uri()
    browser.send("Page.navigate", {"url": url}, session)
    browser.wait_event("Page.loadEventFired", session)
    return session, url


def _problems(browser: Browser, session: str, url: str) -> tuple[list[str], list[str]]:
    browser.evaluate(session, "1")  # flush: events emitted so far arrive before this reply
    mine = [e for e in browser.events if e.get("sessionId") == session]
    console = []
    for e in mine:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            console.append(f"exception: {p.get('exceptionDetails')}")
        elif m == "Runtime.consoleAPICalled":
            console.append(f"console.{p.get('type')}: {p.get('args')}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            console.append(f"log {p['entry'].get('level')}: {p['entry'].get('text')}")
    requests = [
        e["params"]["request"]["url"]
        for e in mine
        if e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"] != url
    ]
    return console, requests


def test_report_renders_charts_without_errors_or_requests(browser: Browser, tmp_path: Path) -> None:
    model = build_report(_report_doc(), top_n=8, now_ms=NOW_MS)
    page = tmp_path / "report.html"
    page.write_text(render_html(model), encoding="utf-8")
    session, url = _open(browser, page)

    charts = browser.evaluate(
        session,
        """JSON.stringify(Array.from(document.querySelectorAll('svg.chart')).map(function (s) {
             var r = s.getBoundingClientRect();
             var bars = Array.from(s.querySelectorAll('rect')).filter(function (x) {
               var b = x.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
             return {id: s.id, w: r.width, h: r.height, bars: bars.length,
                     title: s.querySelector('title').textContent, role: s.getAttribute('role')};
           }))""",
    )
    rendered = json.loads(charts)
    assert [c["id"] for c in rendered] == CHARTS
    for c in rendered:
        assert c["w"] > 100 and c["h"] > 50, c
        assert c["bars"] > 0, c
        assert c["role"] == "img" and c["title"]
    tenants = next(c for c in rendered if c["id"] == "chart-tenants")
    assert tenants["bars"] == 9  # top 8 + "other tenants"

    # hostile names are text, not markup
    assert browser.evaluate(session, "document.querySelectorAll('script').length") == 1
    assert browser.evaluate(session, "document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert browser.evaluate(session, "document.querySelectorAll('#findings-table b').length") == 0

    # sorting by bytes (numeric), both directions
    click = "document.querySelectorAll('#findings-table thead button')[2].click()"
    read = (
        "JSON.stringify(Array.from(document.querySelectorAll('#findings-table tbody tr'))"
        ".map(function (r) { return Number(r.cells[2].getAttribute('data-v')); }))"
    )
    browser.evaluate(session, click)
    asc = json.loads(browser.evaluate(session, read))
    assert asc == sorted(asc) and len(asc) == 60
    browser.evaluate(session, click)
    desc = json.loads(browser.evaluate(session, read))
    assert desc == sorted(asc, reverse=True)
    assert (
        browser.evaluate(session, "document.querySelectorAll('#findings-table thead th')[2].getAttribute('aria-sort')")
        == "descending"
    )

    # filtering
    visible = browser.evaluate(
        session,
        """(function () { var f = document.getElementById('findings-filter'); f.value = 'globex';
             f.dispatchEvent(new Event('input'));
             return [Array.from(document.querySelectorAll('#findings-table tbody tr'))
                       .filter(function (r) { return !r.hidden; }).length,
                     document.getElementById('findings-shown').textContent]; })()""",
    )
    assert visible == [6, "6"]

    shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    (tmp_path / "report.png").write_bytes(png)

    console, requests = _problems(browser, session, url)
    assert console == []
    assert requests == []


def test_harness_detects_requests_and_console_errors(browser: Browser, tmp_path: Path) -> None:
    """Negative control: a page that fetches something and logs an error is caught by the same checks."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><img src="missing.png">'
        "<script>console.error('boom')</script></body></html>",
        encoding="utf-8",
    )
    session, url = _open(browser, page)
    console, requests = _problems(browser, session, url)
    assert any("boom" in c for c in console)
    assert any(r.endswith("/missing.png") for r in requests)


def test_capacity_section_renders_without_errors(browser: Browser, tmp_path: Path) -> None:
    """With bookie scans (audit.storage): the per-bookie stacked capacity bar is drawn, its segments visible."""
    from tests.unit.report.capacity_fixture import B1, B2, storage_doc

    doc = _report_doc()
    doc["audit"]["storage"] = storage_doc()
    page = tmp_path / "report.html"
    page.write_text(render_html(build_report(doc, top_n=8, now_ms=NOW_MS)), encoding="utf-8")
    session, url = _open(browser, page)
    got = json.loads(
        browser.evaluate(
            session,
            """JSON.stringify((function () { var s = document.getElementById('chart-capacity');
                 var r = s.getBoundingClientRect();
                 var segs = Array.from(s.querySelectorAll('g.bar rect')).filter(function (x) {
                   var b = x.getBoundingClientRect(); return b.width > 0 && b.height > 0; });
                 return {w: r.width, h: r.height, segs: segs.length,
                         rows: Array.from(s.querySelectorAll('g.bar > title')).map(function (t) {
                           return t.textContent.split(':')[0] + ':' + t.textContent.split(':')[1]; })};
               })())""",
        )
    )
    assert got["w"] > 100 and got["h"] > 50
    # bk-1: live, orphan, unreclaimed, unattributed, free; bk-2: live only (free unknown)
    assert got["segs"] == 6
    assert got["rows"] == [B1, B2]
    console, requests = _problems(browser, session, url)
    assert console == [] and requests == []
