"""The report says where bundle ownership came from when it is not the modular load manager's /namespace znodes
(findings.json audit.ownership, issue 33)."""

from __future__ import annotations

from pulsar_ops.report.model import AuditInfo


def _line(ownership: dict[str, object]) -> str | None:
    return AuditInfo(params={}, counts={}, wall_seconds=None, finished_at_ms=None, ownership=ownership).ownership_line()


def test_modular_says_nothing() -> None:
    assert _line({}) is None
    assert _line({"load_manager": "modular", "in_zookeeper": True, "unknown_scope": False}) is None


def test_an_unknown_scope_says_why() -> None:
    line = _line(
        {
            "load_manager": "extensible",
            "unknown_scope": True,
            "service_unit_state": {"known": False, "why_not": "/service_unit_state was not read completely"},
        }
    )
    assert line is not None and "unknown scope" in line and "not read completely" in line and "--admin-url" in line


def test_service_unit_state_read() -> None:
    line = _line({"load_manager": "extensible", "unknown_scope": False, "service_unit_state": {"known": True}})
    assert line is not None and "read from /service_unit_state" in line
