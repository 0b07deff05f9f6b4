"""Prometheus textfile: valid exposition format (strict parser below), escaping, values, atomic write."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import ReportError
from pulsar_ops.findings import DETECTIONS, SEVERITIES, Finding
from pulsar_ops.report import prometheus
from pulsar_ops.report.model import ReportModel, build_report

from .conftest import NOW_MS, SNAPSHOT_MS

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
VALUE = r"(?:[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|[+-]Inf|NaN)"

Series = tuple[str, tuple[tuple[str, str], ...]]


class ExpositionError(AssertionError):
    pass


def _label_value(s: str, i: int) -> tuple[str, int]:
    """Parse a quoted label value starting at s[i] == '"'; returns (value, index after closing quote)."""
    if s[i] != '"':
        raise ExpositionError(f"expected '\"' at {i}: {s!r}")
    i += 1
    out = []
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            nxt = s[i + 1 : i + 2]
            if nxt not in ("\\", '"', "n"):
                raise ExpositionError(f"bad escape \\{nxt} in {s!r}")
            out.append("\n" if nxt == "n" else nxt)
            i += 2
        elif ch == '"':
            return "".join(out), i + 1
        elif ch == "\n":
            raise ExpositionError("raw newline in a label value")
        else:
            out.append(ch)
            i += 1
    raise ExpositionError(f"unterminated label value in {s!r}")


def parse_exposition(text: str) -> tuple[dict[Series, float], dict[str, str], dict[str, str]]:
    """A strict parser of the text format 0.0.4: returns samples, TYPE and HELP per family."""
    if not text.endswith("\n"):
        raise ExpositionError("the last line must end with a line feed")
    samples: dict[Series, float] = {}
    types: dict[str, str] = {}
    helps: dict[str, str] = {}
    seen_families: list[str] = []
    for line in text[:-1].split("\n"):
        if line.startswith("#"):
            m = re.fullmatch(rf"# (HELP|TYPE) ({NAME}) ?(.*)", line)
            if not m:
                continue  # a plain comment
            kind, name, rest = m.groups()
            if kind == "TYPE":
                if rest not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise ExpositionError(f"bad type {rest!r}")
                if name in types or name in seen_families:
                    raise ExpositionError(f"TYPE for {name} repeated or after its samples")
                types[name] = rest
            else:
                if name in helps:
                    raise ExpositionError(f"HELP for {name} repeated")
                if re.search(r"\\[^\\n]", rest):
                    raise ExpositionError(f"bad escape in HELP {rest!r}")
                helps[name] = rest
            continue
        if not line.strip():
            raise ExpositionError("blank line")
        m = re.match(NAME, line)
        if not m:
            raise ExpositionError(f"bad metric name in {line!r}")
        name, i = m.group(0), m.end()
        labels: list[tuple[str, str]] = []
        if line[i : i + 1] == "{":
            i += 1
            while line[i] != "}":
                lm = re.match(LABEL, line[i:])
                if not lm:
                    raise ExpositionError(f"bad label name in {line!r}")
                lname = lm.group(0)
                i += lm.end()
                if line[i] != "=":
                    raise ExpositionError(f"expected '=' in {line!r}")
                value, i = _label_value(line, i + 1)
                if lname in dict(labels):
                    raise ExpositionError(f"duplicate label {lname}")
                labels.append((lname, value))
                if line[i] == ",":
                    i += 1
                elif line[i] != "}":
                    raise ExpositionError(f"expected ',' or '}}' in {line!r}")
            i += 1
        rest = line[i:]
        vm = re.fullmatch(rf" ({VALUE})(?: (-?\d+))?", rest)
        if not vm:
            raise ExpositionError(f"bad value in {line!r}")
        if not seen_families or seen_families[-1] != name:
            if name in seen_families:
                raise ExpositionError(f"samples of {name} are not contiguous")
            seen_families.append(name)
        key = (name, tuple(sorted(labels)))
        if key in samples:
            raise ExpositionError(f"duplicate series {key}")
        samples[key] = float(vm.group(1))
    return samples, types, helps


def test_render_is_valid_and_complete(model: ReportModel) -> None:
    samples, types, helps = parse_exposition(prometheus.render_prometheus(model))
    families = {
        "pulsar_ops_findings",
        "pulsar_ops_reclaimable_bytes",
        "pulsar_ops_orphan_ledgers_bytes",
        "pulsar_ops_audit_timestamp_seconds",
        "pulsar_ops_snapshot_timestamp_seconds",
        "pulsar_ops_snapshot_age_seconds",
        "pulsar_ops_scrape_incomplete_scopes",
        "pulsar_ops_audit_duration_seconds",
    }
    assert set(types) == set(helps) == families
    assert set(types.values()) == {"gauge"}
    findings = {
        dict(k[1])["detection"] + "/" + dict(k[1])["severity"]: v
        for k, v in samples.items()
        if k[0] == "pulsar_ops_findings"
    }
    assert len(findings) == len(DETECTIONS) * len(SEVERITIES)  # zeros included
    assert findings["orphan-ledger/warning"] == 4 and findings["dangling-ledger/critical"] == 1
    assert findings["ack-holes/info"] == 4 and findings["ttl-expires-delayed/critical"] == 0
    assert samples[("pulsar_ops_reclaimable_bytes", (("tenant", "acme"),))] == 300_090_000
    assert samples[("pulsar_ops_reclaimable_bytes", (("tenant", "(none)"),))] == 0
    assert samples[("pulsar_ops_orphan_ledgers_bytes", (("bookie", "bookie-2.pulsar.svc:3181"),))] == 201_045_000
    assert samples[("pulsar_ops_orphan_ledgers_bytes", (("bookie", "(unknown)"),))] == 2000
    assert samples[("pulsar_ops_audit_timestamp_seconds", ())] == (SNAPSHOT_MS + 3_600_000) / 1000
    assert samples[("pulsar_ops_snapshot_timestamp_seconds", ())] == SNAPSHOT_MS / 1000
    assert samples[("pulsar_ops_snapshot_age_seconds", ())] == (NOW_MS - SNAPSHOT_MS) / 1000
    assert samples[("pulsar_ops_scrape_incomplete_scopes", ())] == 1
    assert samples[("pulsar_ops_audit_duration_seconds", ())] == 12.5


def test_unknown_times_are_omitted_not_zero() -> None:
    samples, types, _ = parse_exposition(prometheus.render_prometheus(build_report({"findings": []}, now_ms=1)))
    assert "pulsar_ops_audit_timestamp_seconds" not in types
    assert "pulsar_ops_snapshot_age_seconds" not in types
    assert "pulsar_ops_audit_duration_seconds" not in types
    assert samples[("pulsar_ops_scrape_incomplete_scopes", ())] == 0


def test_label_escaping() -> None:
    assert prometheus.escape_label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert prometheus.escape_label_value("x\ud800") == "x\\\\ud800"
    assert prometheus.escape_label_value("ß💥{}=,") == "ß💥{}=,"


HOSTILE_TENANTS = ['te"n', "te\\n", "te\nnant", "}{=,", 'a\\"b', "ß💥\u202e", "\\", '"', "x\ud800y"]


def _hostile_model(tenants: list[str]) -> dict[str, Any]:
    return {
        "findings": [
            Finding(
                "orphan-ledger",
                "warning",
                namespace=f"{t}/ns",
                plannable=True,
                bytes=i + 1,
                evidence={"bookies": [f"{t}:3181"]},
            ).to_json()
            for i, t in enumerate(tenants)
        ]
    }


def test_hostile_label_values_round_trip() -> None:
    text = prometheus.render_prometheus(build_report(_hostile_model(HOSTILE_TENANTS), now_ms=NOW_MS))
    text.encode("utf-8")
    samples, _, _ = parse_exposition(text)
    got = {dict(k[1])["tenant"]: v for k, v in samples.items() if k[0] == "pulsar_ops_reclaimable_bytes"}
    expected = {t.replace("\ud800", "\\ud800"): float(i + 1) for i, t in enumerate(HOSTILE_TENANTS)}
    assert got == expected
    bookies = {dict(k[1])["bookie"] for k in samples if k[0] == "pulsar_ops_orphan_ledgers_bytes"}
    assert "te\nnant:3181" in bookies


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s), min_size=1, max_size=6, unique=True))
def test_any_tenant_name_gives_a_parseable_file(tenants: list[str]) -> None:
    text = prometheus.render_prometheus(build_report(_hostile_model(tenants), now_ms=NOW_MS))
    samples, _, _ = parse_exposition(text)
    got = {dict(k[1])["tenant"] for k in samples if k[0] == "pulsar_ops_reclaimable_bytes"}
    assert len(got) == len(tenants)


def test_format_value() -> None:
    assert prometheus.format_value(3.0) == "3"
    assert prometheus.format_value(12.5) == "12.5"
    assert prometheus.format_value(math.nan) == "NaN"
    assert prometheus.format_value(-math.inf) == "-Inf"
    assert prometheus.format_value(1e300) == "1e+300"


def test_parser_rejects_bad_input() -> None:  # the strict parser itself must be able to fail
    for bad in (
        'm{a="x\ny"} 1\n',
        'm{a="x\\q"} 1\n',
        "m 1",
        "m one\n",
        "# TYPE m gauge\nm 1\n# TYPE m gauge\n",
        "m 1\nn 1\nm 2\n",
        'm{a="1",a="2"} 1\n',
        "m 1\nm 2\n",
    ):
        with pytest.raises(ExpositionError):
            parse_exposition(bad)


def test_prometheus_client_parser_agrees(model: ReportModel) -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    for m in (model, build_report(_hostile_model(HOSTILE_TENANTS), now_ms=NOW_MS)):
        text = prometheus.render_prometheus(m)
        ours, _, _ = parse_exposition(text)
        theirs = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples
        }
        assert theirs == ours


def test_write_is_atomic_and_replaces(model: ReportModel, tmp_path: Path) -> None:
    target = tmp_path / "pulsar_ops.prom"
    target.write_text("old content\n")
    inode_before = os.stat(target).st_ino
    prometheus.write(target, model)
    text = target.read_text(encoding="utf-8")
    assert text == prometheus.render_prometheus(model)
    assert os.stat(target).st_ino != inode_before  # renamed over, never rewritten in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pulsar_ops.prom"]  # no temporary left behind
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o644)


def test_write_into_missing_directory_fails_cleanly(model: ReportModel, tmp_path: Path) -> None:
    with pytest.raises(ReportError) as e:
        prometheus.write(tmp_path / "nope" / "x.prom", model)
    assert e.value.code == "report-write-failed" and "pulsar-ops report" in e.value.hint
    with pytest.raises(ReportError):
        prometheus.write(tmp_path, model)  # a directory is not a file name
    assert list(tmp_path.iterdir()) == []


def test_write_failure_leaves_old_file_and_no_temporary(
    model: ReportModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "m.prom"
    target.write_text("old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(ReportError) as e:
        prometheus.write(target, model)
    assert "disk full" in e.value.message
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.prom"]
