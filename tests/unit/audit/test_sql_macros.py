"""``${broadcast_if_small:ALIAS:VIEW}``: a broadcast hint only for an intermediate view or a table counted small."""

from __future__ import annotations

import re
from pathlib import Path

from pulsar_ops.audit.etl import BROADCAST_MAX_ROWS, small_tables
from pulsar_ops.audit.sql_files import SqlFile, detect_files, expand_macros, intermediate_files, strip_comments

SQL = "SELECT ${broadcast_if_small:u:int_unmatched_ledgers} 1 FROM int_unmatched_ledgers u"


def test_the_hint_appears_only_for_a_view_counted_small() -> None:
    assert expand_macros(SQL, {"int_unmatched_ledgers"}) == (
        "SELECT /*+ BROADCAST(u) */ 1 FROM int_unmatched_ledgers u"
    )
    assert expand_macros(SQL) == "SELECT  1 FROM int_unmatched_ledgers u"
    assert expand_macros(SQL, {"int_ledgers"}) == "SELECT  1 FROM int_unmatched_ledgers u"


def test_render_expands_and_text_is_the_unmeasured_rendering(tmp_path: Path) -> None:
    p = tmp_path / "x.sql"
    p.write_text("-- a comment\n" + SQL + ";\n")
    f = SqlFile("detect", "x", p)
    assert f.text == "SELECT  1 FROM int_unmatched_ledgers u"
    assert "/*+ BROADCAST(u) */" in f.render(["int_unmatched_ledgers"])


def test_every_macro_in_the_shipped_sql_is_expanded_into_one_hint() -> None:
    named: set[str] = set()
    for f in [*intermediate_files(), *detect_files()]:
        raw = strip_comments(f.path.read_text())  # a macro named in a comment is no macro
        views = set(re.findall(r"\$\{broadcast_if_small:[A-Za-z_0-9]+:([A-Za-z_0-9]+)\}", raw))
        named |= views
        rendered = f.render(views)
        assert "${" not in rendered and "${" not in f.text, f.name
        macros = raw.count("${broadcast_if_small:")
        assert rendered.count("/*+ BROADCAST(") - f.text.count("/*+ BROADCAST(") == macros, f.name
    # what the audit measures (etl.broadcastable, etl.small_tables): three intermediate views and two tables
    assert named == {
        "int_unmatched_ledgers",
        "int_range_ledgers",
        "int_unloaded_retention",
        "stg_loaded_topics",
        "stg_topic_policies",
    }


def test_the_tables_the_manifest_counts_small_are_their_staging_views() -> None:
    counts = {"loaded_topics": 0, "topic_policies": BROADCAST_MAX_ROWS, "managed_ledgers": BROADCAST_MAX_ROWS + 1}
    assert small_tables(counts) == {"stg_loaded_topics", "stg_topic_policies"}
    assert small_tables({"loaded_topics": None, "scopes": True, "tenants": -1}) == frozenset()  # not counts
    assert small_tables({}) == frozenset()  # a manifest without row counts: nothing is known small


def test_the_first_trim_rule_s_predicates_are_rendered_from_the_repair_rules() -> None:
    """expired-retention-unloaded writes the rule's predicates as macros: the SQL holds exactly what
    pulsar_ops.repair.rules renders (the definition the planner and apply call), nothing is left unexpanded."""
    from pulsar_ops.audit.sql_files import detect_files
    from pulsar_ops.repair import rules

    f = next(f for f in detect_files() if f.name == "expired-retention-unloaded")
    raw = f.path.read_text()
    for macro in ("${trim_candidate:l:s}", "${retention_expired:s:p}", "${at_first_trim:s}"):
        assert macro in raw
    text = f.text
    assert "${" not in text
    assert rules.trim_candidate_sql("l", "s") in text
    assert rules.retention_expired_sql("s", "p") in text
    assert rules.at_first_trim_sql("s") in text
