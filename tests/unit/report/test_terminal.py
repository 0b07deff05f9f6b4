"""Terminal summary lines and the text helpers: content, and hostile names neutralised."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.findings import Finding
from pulsar_ops.report.model import build_report
from pulsar_ops.report.terminal import summary_lines
from pulsar_ops.report.text import display, human_bytes, human_duration, iso_utc, utf8_safe

from .conftest import NOW_MS


def test_summary_lines_content(doc: dict[str, Any]) -> None:
    lines = summary_lines(build_report(doc, top_n=3, now_ms=NOW_MS))
    text = "\n".join(lines)
    assert lines[0] == "Snapshot snap-20240501T120000Z-7f3a of prod-eu-1, taken 2024-05-01 12:00:00Z"
    assert "audited 2024-05-01 13:00:00Z, in 12.5s, snapshot age 2h" in lines[1]
    assert "Findings: 20 (1 critical, 14 warning, 5 info); 5 plannable, reclaimable 300 MB (300093434 bytes)" in text
    orphan = next(line for line in lines if line.startswith("orphan-ledger "))
    assert orphan.split() == ["orphan-ledger", "0", "4", "1", "3", "300", "MB"]
    assert "Worst tenants by reclaimable bytes (top 3 of 5):" in lines
    tenants = lines[lines.index("Worst tenants by reclaimable bytes (top 3 of 5):") + 1 :][:3]
    assert [t.split()[1] for t in tenants] == ["acme", "initech", "globex"]
    assert "Worst namespaces by reclaimable bytes (top 3 of 6):" in lines
    assert any("/managed-ledgers/oldco/us-west/ns1" in line for line in lines)
    assert "Ack-hole range counts: 1: 1, 2–4: 1, 10–49: 1, 500–999: 1, unknown: 1" in lines
    assert lines[-1] == "Status: exit 2 = critical findings"
    assert all("\n" not in line for line in lines)


def test_hostile_names_cannot_reach_the_terminal_raw() -> None:
    evil = "persistent://t/n/\x1b[2J\x1b[31mred\nFAKE LINE\r\ud800\u009b"
    doc = {
        "snapshot": {"cluster": "c\x1b]0;title\x07"},
        "findings": [
            Finding("orphan-ledger", "warning", topic=evil, namespace="t/\x1bn", bytes=10**9).to_json(),
            Finding("scrape-incomplete", "warning", path="/x\n/y").to_json(),
        ],
    }
    lines = summary_lines(build_report(doc, top_n=5, now_ms=NOW_MS))
    for line in lines:
        assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in line), repr(line)
        line.encode("utf-8")  # no lone surrogate survives
    text = "\n".join(lines)
    assert "\\x1b[2J" in text and "\\x0aFAKE LINE" in text and "\\ud800" in text


def test_no_findings_summary() -> None:
    lines = summary_lines(build_report({"findings": []}, now_ms=NOW_MS))
    assert "(no findings)" in lines
    assert lines[-1] == "Status: exit 0 = clean (nothing above info)"
    assert lines[0] == "Snapshot unknown of unknown cluster, taken unknown"


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\u202e", "\x1b", "\x85", "\n"])),
        max_size=40,
    ),
    st.integers(1, 50),
)
def test_display_is_always_printable(s: str, limit: int) -> None:
    for out in (display(s), display(s, limit=limit)):
        out.encode("utf-8")
        assert not any(unicodedata.category(ch) in ("Cc", "Cs") for ch in out)
        assert "\u202e" not in out
    assert display(display(s)) == display(s)
    assert len(display(s, limit=limit)) <= limit


def test_display() -> None:
    assert display("plain ß 💥") == "plain ß 💥"
    assert display("a\tb\nc\x00\x7f\x85") == "a\\x09b\\x0ac\\x00\\x7f\\x85"
    assert display("x\udcff") == "x\\udcff"
    assert display("abc\u202edef\u2066") == "abc\\u202edef\\u2066"  # bidi controls cannot reorder text
    assert display("👩\u200d💻") == "👩\u200d💻"  # other format characters (emoji ZWJ) are kept
    assert display(None) == ""
    assert display("abcdef", limit=4) == "abc…"
    assert display(display("\x1b")) == display("\x1b")  # idempotent
    assert utf8_safe("ok\ud800") == "ok\\ud800" and utf8_safe("a\nb") == "a\nb"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1.00 kB"),
        (1500, "1.50 kB"),
        (184_700_000, "185 MB"),
        (12_340_000_000, "12.3 GB"),
        (99_999, "100 kB"),
        (10**21, "1000 EB"),
        (-2000, "-2.00 kB"),
    ],
)
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "?"),
        (0, "0ms"),
        (999, "999ms"),
        (1000, "1s"),
        (61_000, "1m 1s"),
        (3_600_000, "1h"),
        (90_061_000, "1d 1h"),
        (400 * 86_400_000, "1y 35d"),
        (-5000, "-5s"),
    ],
)
def test_human_duration(ms: int | None, text: str) -> None:
    assert human_duration(ms) == text


def test_iso_utc() -> None:
    assert iso_utc(0) == "1970-01-01 00:00:00Z"
    assert iso_utc(None) == "unknown"
    assert iso_utc(10**20) == f"{10**20} ms"
