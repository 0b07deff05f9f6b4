"""HTML report: self-contained (no external reference, CSP hashes match), escaped, charts present."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.report.html import render_html
from pulsar_ops.report.model import ReportModel, build_report

from .conftest import HOSTILE_TOPIC, NOW_MS

VOID = {"meta", "input", "br", "hr", "img", "link"}
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "main", "section", "div",
    "b", "span", "table", "thead", "tbody", "tr", "th", "td", "button", "figure", "svg", "desc", "g", "rect",
    "line", "text", "ul", "li", "input", "script", "path", "circle",
}  # fmt: skip
URL_ATTRS = {"src", "href", "xlink:href", "srcset", "action", "formaction", "poster", "data", "background"}


class Collector(HTMLParser):
    """Collects tags, attributes and text, and checks that every element is closed in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.raw: dict[str, list[str]] = {"script": [], "style": []}
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] in self.raw:
            self.raw[self.stack[-1]].append(data)
        else:
            self.text.append(data)


def parse(doc: str) -> Collector:
    c = Collector()
    c.feed(doc)
    c.close()
    assert c.errors == [] and c.stack == []
    return c


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_self_contained_with_matching_csp_hashes(model: ReportModel) -> None:
    doc = render_html(model)
    c = parse(doc)
    assert {t for t, _ in c.tags} <= ALLOWED_TAGS
    assert [t for t, _ in c.tags].count("script") == 1 and [t for t, _ in c.tags].count("style") == 1
    for tag, attrs in c.tags:
        assert not (set(attrs) & URL_ATTRS), (tag, attrs)
        assert "style" not in attrs and not any(a.startswith("on") for a in attrs), (tag, attrs)
    csp = next(a["content"] for t, a in c.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp is not None
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["style-src"] == _sha("".join(c.raw["style"]))
    assert directives["script-src"] == _sha("".join(c.raw["script"]))
    assert "url(" not in "".join(c.raw["style"]) and "@import" not in "".join(c.raw["style"])
    assert "fetch(" not in "".join(c.raw["script"]) and "XMLHttpRequest" not in "".join(c.raw["script"])


def test_hostile_names_are_escaped_text(model: ReportModel) -> None:
    doc = render_html(model)
    c = parse(doc)  # a raw <script> or </td> in a name would add a tag or break nesting
    text = "".join(c.text)
    assert HOSTILE_TOPIC in text
    assert 'sub-"ß"-💥</td><img src=x onerror=alert(1)>\\' in text
    assert "<script>alert" not in doc and "<img" not in doc
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#x27;&amp;&quot;" in doc


def test_hostile_names_in_attributes_and_unicode() -> None:
    evil = 't/"\' onmouseover=alert(1) x="<svg/onload=alert(2)>\u202e\ud800\n'
    doc_in = {
        "snapshot": {"cluster": "</title><script>alert(3)</script>"},
        "findings": [
            Finding(
                "orphan-ledger",
                "warning",
                namespace=evil,
                topic=evil,
                subscription=evil,
                plannable=True,
                bytes=10,
                evidence={"bookies": [evil], "note": evil},
            ).to_json()
        ],
    }
    doc = render_html(build_report(doc_in, now_ms=NOW_MS))
    doc.encode("utf-8")  # lone surrogates were made printable
    c = parse(doc)
    assert {t for t, _ in c.tags} <= ALLOWED_TAGS
    for _, attrs in c.tags:
        assert not any(a.startswith("on") for a in attrs)
    assert [t for t, _ in c.tags].count("script") == 1
    assert "</title><script>alert(3)</script>" in "".join(c.text)


def test_charts_are_accessible_svgs(model: ReportModel) -> None:
    doc = render_html(model)
    c = parse(doc)
    svgs = [a for t, a in c.tags if t == "svg"]
    assert [a["id"] for a in svgs] == [
        "chart-tenants",
        "chart-bookies",
        "chart-ack-holes",
        "chart-orphan-ages",
        "chart-inactive-ages",
        "chart-retention-ages",
    ]
    ids = {a.get("id") for _, a in c.tags}
    for a in svgs:
        assert a["role"] == "img"
        labelled = (a["aria-labelledby"] or "").split()
        assert labelled == [f"{a['id']}-title", f"{a['id']}-desc"] and set(labelled) <= ids
        assert int(a["width"] or 0) > 0 and int(a["height"] or 0) > 0


def _bar_widths(doc: str, chart_id: str) -> list[float]:
    svg = re.search(rf'<svg id="{chart_id}".*?</svg>', doc, re.S)
    assert svg
    return [float(w) for w in re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg.group(0))]


def test_bar_lengths_follow_the_data(model: ReportModel) -> None:
    doc = render_html(model)
    tenants = _bar_widths(doc, "chart-tenants")
    assert len(tenants) == 3  # only tenants with reclaimable bytes: acme, initech, globex
    assert tenants[0] > tenants[1] >= tenants[2] > 0
    assert abs(tenants[1] / tenants[0] - 3_234 / 300_090_000) < 0.01
    bookies = _bar_widths(doc, "chart-bookies")
    assert len(bookies) == 4  # bookie-4 reclaims nothing
    hist = re.search(r'<svg id="chart-ack-holes".*?</svg>', doc, re.S)
    assert hist and hist.group(0).count("<rect") == 11  # 10 buckets + unknown


def test_findings_table_rows_and_cap(model: ReportModel) -> None:
    doc = render_html(model)
    body = re.search(r'<table id="findings-table".*?<tbody>(.*?)</tbody>', doc, re.S)
    assert body and body.group(1).count("<tr>") == 20
    assert "All 20 findings." in doc
    first = re.search(r"<tr><td[^>]*>(\w+)</td>", body.group(1))
    assert first and first.group(1) == "critical"  # most severe first
    capped = render_html(model, max_rows=4)
    body4 = re.search(r'<table id="findings-table".*?<tbody>(.*?)</tbody>', capped, re.S)
    assert body4 and body4.group(1).count("<tr>") == 4
    assert "Showing the 4 most severe and largest of 20 findings" in capped


def test_empty_report(doc: dict[str, Any]) -> None:
    html_doc = render_html(build_report({"findings": []}, now_ms=NOW_MS))
    c = parse(html_doc)
    assert "no data" in "".join(c.text)
    assert "No orphan ledgers." in "".join(c.text)
