"""The leak's min-age rule (issue 34): one definition, called by plan and apply, rendered into the audit's SQL."""

from __future__ import annotations

from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.repair.rules import leak_age_rule, leak_too_young_sql

HOUR = 3_600_000
NOW = 1_700_000_000_000


def test_the_rule_refuses_a_subtree_modified_within_min_age() -> None:
    assert leak_age_rule("/r", NOW - HOUR + 1, min_age_ms=HOUR, now_ms=NOW) is not None
    assert leak_age_rule("/r", NOW - HOUR, min_age_ms=HOUR, now_ms=NOW) is None  # exactly min-age: old enough
    assert "unknown" in (leak_age_rule("/r", None, min_age_ms=HOUR, now_ms=NOW) or "")
    assert "unknown" in (leak_age_rule("/r", 0, min_age_ms=HOUR, now_ms=NOW) or "")
    assert "no min-age" in (leak_age_rule("/r", NOW - 9 * HOUR, min_age_ms=None, now_ms=NOW) or "")


def test_the_audit_sql_is_rendered_from_the_rule() -> None:
    (leak,) = [f for f in detect_files() if "znode_leak" in str(f.path)]
    assert "${leak_too_young:m}" in leak.path.read_text()
    rendered = leak.render(())
    assert f"WHEN {leak_too_young_sql('m')}\n" in rendered and "${" not in rendered
