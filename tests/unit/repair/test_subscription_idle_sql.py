"""A subscription's idleness has one definition (issue 34): :func:`pulsar_ops.repair.rules.subscription_active_ms`
and :func:`~pulsar_ops.repair.rules.is_subscription_idle`, which ``subscription_rule`` calls at plan and apply and
inactive_subscription.sql renders (``${subscription_active:ROW}``, ``${subscription_idle:ROW:PARAMS}``). Here the
audit's SQL (DuckDB) and the rule agree on generated cursors, a ``lastActive`` of 0 (not recorded) included."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.repair.rules import (
    subscription_active_ms,
    subscription_active_sql,
    subscription_idle_sql,
    subscription_rule,
)
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

HOUR = 3_600_000
AFTER = 7 * DAY


def test_a_last_active_of_zero_is_not_recorded() -> None:
    assert subscription_active_ms(0, NOW - DAY) is None  # upstream keeps its own (the cursor's open time)
    assert subscription_active_ms(None, NOW - DAY) == NOW - DAY  # no lastActive: the znode's mtime
    assert subscription_active_ms(NOW - HOUR, NOW - DAY) == NOW - HOUR
    why = subscription_rule("s", 0, NOW - 30 * DAY, inactive_after_ms=AFTER, now_ms=NOW, cursor_path="/m/t/ns/p/x/s")
    assert why is not None and "unknown" in why


def test_the_audit_sql_is_rendered_from_the_rule() -> None:
    (f,) = [f for f in detect_files() if f.name == "inactive-subscription"]
    rendered = f.render(())
    assert subscription_active_sql("c") in rendered and subscription_idle_sql("u", "p") in rendered
    assert "${" not in rendered


def _detect(con: Any, name: str) -> list[dict[str, Any]]:
    f = next(f for f in detect_files() if f.name == name)
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


_AGES = (-HOUR, 0, HOUR, AFTER - 1, AFTER, AFTER + 1, 30 * DAY)
cursor_st = st.tuples(
    st.one_of(st.none(), st.just(0), st.sampled_from(_AGES)),  # lastActive: absent, 0, or an age
    st.sampled_from(_AGES),  # the znode's mtime, as an age
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cursors=st.lists(cursor_st, min_size=8, max_size=30))
def test_the_audit_sql_and_the_rule_agree_on_idleness(cursors: list[tuple[int | None, int]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sub-idle-"))
    try:
        b = SnapshotBuilder()
        b.namespace("t/ns")
        b.topic("t/ns", "x", ledgers=[(10, 1, 5, NOW - 3 * DAY)])
        b.bk_ledger(10, owner="t/ns/persistent/x")
        values: dict[str, tuple[int | None, int]] = {}
        for i, (la, mt) in enumerate(cursors):
            last_active = None if la is None else (0 if la == 0 else NOW - la)
            mtime = NOW - mt
            sub = f"sub-{i}"
            values[sub] = (last_active, mtime)
            b.cursor("t/ns", "x", sub, md=(10, 0), last_active_ms=last_active, mtime_ms=mtime)
        con = connect(b.write(tmp / "snap"), AuditParams(now_ms=NOW, inactive_after_ms=AFTER), admin_scraped=False)
        reported = {str(r["subscription"]) for r in _detect(con, "inactive-subscription")}
        for sub, (last_active, mtime) in values.items():
            why = subscription_rule(
                sub, last_active, mtime, inactive_after_ms=AFTER, now_ms=NOW,
                cursor_path=f"/managed-ledgers/t/ns/persistent/x/{sub}",
            )  # fmt: skip
            assert (sub in reported) is (why is None), (sub, last_active, mtime, why)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
