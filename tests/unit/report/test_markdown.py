"""Markdown report: GFM tables stay well-formed and hostile names are escaped."""

from __future__ import annotations

import html
import re
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.report.markdown import md, render_markdown
from pulsar_ops.report.model import ReportModel, build_report

from .conftest import NOW_MS


def split_row(line: str) -> list[str]:
    """Split a GFM table row into cells, honouring backslash escapes (as GFM does for `\\|`)."""
    assert line.startswith("|") and line.endswith("|"), line
    cells, cur, i = [], "", 1
    body = line[:-1]
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur += body[i : i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur.strip())
    return cells


def tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cells; asserts the delimiter row and equal cell counts."""
    out: list[list[list[str]]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(split_row(lines[i]))
                i += 1
            assert all(re.fullmatch(r"-{3}:?|:?-{3}", c) for c in block[1]), block[1]
            assert {len(r) for r in block} == {len(block[0])}, block
            out.append(block)
        else:
            i += 1
    return out


def unescape(cell: str) -> str:
    return html.unescape(re.sub(r"\\(.)", r"\1", cell))


def test_sections_and_tables(model: ReportModel) -> None:
    text = render_markdown(model)
    assert text.startswith("# pulsar-ops audit report: prod-eu-1\n")
    for title in (
        "## Findings by detection",
        "## Worst tenants (top 5 of 5)",
        "## Worst namespaces (top 6 of 6)",
        "## Orphan ledger bytes per bookie",
        "## Largest findings (top 10)",
        "## Ack-hole range counts",
        "## Ages",
        "## Incomplete scopes",
    ):
        assert title in text
    t = tables(text)
    assert len(t) == 7
    counts = t[0]
    assert counts[0] == ["detection", "critical", "warning", "info", "plannable", "bytes", "reclaimable"]
    assert counts[2] == ["orphan-ledger", "0", "4", "1", "3", "301 MB", "300 MB"]
    assert counts[3] == ["dangling-ledger", "1", "0", "0", "0", "4.10 kB", "0 B"]
    assert [unescape(r[1]) for r in t[1][2:]] == ["acme", "initech", "globex", "(none)", "oldco"]
    ack = {r[0]: r[1] for r in t[5][2:]}
    assert ack["1"] == "1" and ack["500–999"] == "1" and ack["unknown"] == "1" and ack["**total**"] == "**5**"
    ages = t[6]
    assert ages[0] == ["age", "orphan ledgers", "inactive subscriptions", "expired retention (oldest ledger)"]
    assert ages[-1] == ["**total**", "**5**", "**2**", "**2**"]


def test_hostile_names_do_not_break_tables_or_inject_html(model: ReportModel) -> None:
    text = render_markdown(model)
    assert "<script" not in text and "<img" not in text and "</td>" not in text
    largest = tables(text)[4]
    subjects = [unescape(r[6]) for r in largest[2:]]
    assert any(s.startswith('persistent://acme/orders/<script>alert("x")</script>\'&"') for s in subjects)


def test_pipes_newlines_and_markup_in_names() -> None:
    evil_ns = "t|x/n`*_[a](b)\n| injected | row |"
    doc = {
        "findings": [
            Finding(
                "znode-leak",
                "warning",
                namespace=evil_ns,
                path="/p|q`*_",  # ZooKeeper refuses control characters in paths; the namespace carries them
                plannable=True,
                bytes=5,
                reason="a\\|b",
            ).to_json()
        ]
    }
    text = render_markdown(build_report(doc, now_ms=NOW_MS))
    t = tables(text)  # equal cell counts in every table despite the pipes
    ns_rows = t[2][2:]
    assert len(ns_rows) == 1
    assert unescape(ns_rows[0][1]) == "t|x/n`*_[a](b)\\x0a| injected | row |"
    assert "\n| injected" not in text


def test_md_escape() -> None:
    assert md("a|b") == "a\\|b"
    assert md("<b>&") == "&lt;b&gt;&amp;"
    assert md("*x* _y_ `z` [l](u) ~s~") == "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\~s\\~"
    assert md("back\\slash") == "back\\\\slash"
    assert md("line\nbreak") == "line\\\\x0abreak"


def test_empty_report_renders(doc: dict[str, Any]) -> None:
    text = render_markdown(build_report({"findings": []}, now_ms=NOW_MS))
    assert "No orphan ledgers." in text and "No findings." in text
    tables(text)
