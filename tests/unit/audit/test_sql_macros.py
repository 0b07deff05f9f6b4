"""``${broadcast_if_small:ALIAS:VIEW}``: a broadcast hint only for an intermediate view, a shared storage view or a
table counted small."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pulsar_ops.audit.etl import BROADCAST_MAX_ROWS, small_tables
from pulsar_ops.audit.sql_files import (
    SqlFile,
    detect_files,
    expand_macros,
    intermediate_files,
    storage_files,
    strip_comments,
)

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
    for f in [*intermediate_files(), *detect_files(), *storage_files()]:
        raw = strip_comments(f.path.read_text())  # a macro named in a comment is no macro
        if "${storage_top_n}" in raw:  # owners, oldest_logs: their top N is rendered by storage_sql (below)
            continue
        views = set(re.findall(r"\$\{broadcast_if_small:[A-Za-z_0-9]+:([A-Za-z_0-9]+)\}", raw))
        named |= views
        rendered = f.render(views)
        assert "${" not in rendered and "${" not in f.text, f.name
        macros = raw.count("${broadcast_if_small:")
        assert rendered.count("/*+ BROADCAST(") - f.text.count("/*+ BROADCAST(") == macros, f.name
    # what the audit measures (etl.broadcastable, etl.storage_stage, etl.small_tables): three intermediate views,
    # six shared storage views and two tables
    assert named == {
        "int_unmatched_ledgers",
        "int_range_ledgers",
        "int_unloaded_retention",
        "byte_gaps",
        "indexed",
        "ledger_gaps",
        "log_ledgers",
        "stale_keepers",
        "stale_logs",
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


def test_the_storage_top_n_is_rendered_as_a_literal_bound() -> None:
    """owners.sql keeps each group's top N with ``min_by(x, key, ${storage_top_n})``: rendered as an integer literal
    (Spark takes only a constant N, from 1 to 100,000), never left in the SQL, and nothing else is taken."""
    from pulsar_ops.audit.sql_files import STORAGE_TOP_N_MAX, storage_files, storage_sql
    from pulsar_ops.errors import AuditError

    owners = next(f for f in storage_files() if f.name == "owners")
    assert "${storage_top_n}" in owners.path.read_text()
    assert re.search(r",\s+7\s+\) AS top\b", storage_sql(owners, 7))
    oldest = next(f for f in storage_files() if f.name == "oldest_logs")  # its window's bound: the oldest N per bookie
    assert re.search(r"WHERE x\.rank <= 7\n", storage_sql(oldest, 7))
    for f in storage_files():
        assert "${" not in storage_sql(f, 3), f.name
    assert storage_sql(owners, STORAGE_TOP_N_MAX)
    for bad in (0, -1, True, 2.5, STORAGE_TOP_N_MAX + 1):
        with pytest.raises(AuditError) as e:
            storage_sql(owners, bad)  # type: ignore[arg-type]
        assert e.value.code == "config-invalid" and "--storage-top" in e.value.hint
