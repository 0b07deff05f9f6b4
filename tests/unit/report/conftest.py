"""Fixtures for the report tests: the hand-written findings.json (every detection, hostile names)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.report.model import ReportModel, build_report

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "report" / "findings.json"
SNAPSHOT_MS = 1_714_564_800_000  # 2024-05-01 12:00:00Z, the fixture's snapshot finished_at_ms
NOW_MS = SNAPSHOT_MS + 2 * 3_600_000  # the report is generated two hours later
HOSTILE_TOPIC = 'persistent://acme/orders/<script>alert("x")</script>\'&"'


@pytest.fixture
def doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def model(doc: dict[str, Any]) -> ReportModel:
    return build_report(doc, top_n=10, now_ms=NOW_MS, source=str(FIXTURE))
