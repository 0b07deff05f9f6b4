"""What a plan frees, when: the per-kind figures and the cumulative GC curve of `report --plan`."""

from __future__ import annotations

import re
from typing import Any

from pulsar_ops.report.html import render_html
from pulsar_ops.report.model import ReportModel
from pulsar_ops.report.plan_view import freed_over_time, kinds_of, plan_view

from .test_html import parse

NOW = 1_000_000


def _ev(end: int, got: int, bookie: str = "b1") -> dict[str, Any]:
    return {"bookie": bookie, "t_ms": end - 10, "end_ms": end, "reclaimed_bytes": got}


PLAN: dict[str, Any] = {
    "plan_id": "p-1",
    "created_at_ms": NOW,
    "impact": {
        "now_ms": NOW,
        "timeline": [_ev(NOW + 5000, 0), _ev(NOW + 7000, 300, "b2"), _ev(NOW + 5000, 100), _ev(NOW + 9000, 50)],
        "before_after": {"ledger_bytes_on_bookies_before": 2000, "after_gc": 1550},
    },
    "actions": [
        {"kind": "delete-ledger-metadata", "znodes": 1, "impact": {"metadata_ops": 1, "bytes_on_disk": 400}},
        {
            "kind": "trim-unloaded",
            "znodes": 3,
            "rewrite": {"removed": [{"ledger_id": 5}, {"ledger_id": 6}]},
            "impact": {"metadata_ops": 3, "ledgers": {"5": {"bytes_on_disk": 30}, "6": {"bytes_on_disk": 20}}},
        },
        {
            "kind": "drop-missing-ledger",
            "znodes": 1,
            "rewrite": {"removed": [{"ledger_id": 7, "entries": 10, "bytes": 999}]},
            "impact": {"metadata_ops": 1, "bytes_on_disk": 0},
        },
    ],
}


def test_freed_over_time_accumulates_runs_that_reclaim_in_order_of_their_end() -> None:
    assert freed_over_time(PLAN["impact"]["timeline"], NOW) == ((5000, 100), (7000, 400), (9000, 450))
    assert freed_over_time([], NOW) == ()


def test_kinds_count_deletes_rewrites_bytes_and_the_acknowledged_loss() -> None:
    by = {k.kind: k for k in kinds_of(PLAN["actions"])}
    assert (by["delete-ledger-metadata"].znode_deletes, by["delete-ledger-metadata"].bytes_on_disk) == (1, 400)
    trim = by["trim-unloaded"]
    assert (trim.znode_deletes, trim.rewrites, trim.bytes_on_disk, trim.metadata_ops) == (2, 1, 50, 3)
    drop = by["drop-missing-ledger"]
    assert (drop.znode_deletes, drop.rewrites, drop.lost_entries, drop.lost_bytes) == (0, 1, 10, 999)


def test_html_section_has_the_curve_and_the_table(model: ReportModel) -> None:
    out = render_html(model, plan=plan_view(PLAN))
    parse(out)  # well formed, allowed tags only
    section = re.search(r'<section><h2 id="plan">.*?</section>', out, re.S)
    assert section is not None
    text = section.group(0)
    assert text.count("<circle") == 3 and "450 B reclaimed" in text
    assert "10 entries, 999 B" in text and "trim-unloaded" in text
    assert '<section><h2 id="plan">' not in render_html(model)  # only with --plan


def _bookie(layout: str, **extra: Any) -> dict[str, Any]:
    return {
        "layout": layout,
        "garbage_bytes": 1000,
        "reclaimed_bytes": {"deletion": 600, "minor": 100, "major": 0},
        "unreclaimable_bytes": 300,
        "rewrite_bytes": 50,
        **extra,
    }


MEASURED_PLAN: dict[str, Any] = {
    **PLAN,
    "impact": {
        **PLAN["impact"],
        "layout_sources": {
            "bk-a:3181": {"source": "measured", "complete": False},
            "bk-b:3181": {"source": "estimated"},
        },
        "per_bookie": {
            "bk-a:3181": _bookie(
                "measured",
                stuck_logs=[
                    {
                        "log_id": 7,
                        "ledger_dir": "/data/bk0",
                        "garbage_bytes": 300,
                        "reason": "usage-at-or-above-compaction-threshold",
                        "pinned_by": [{"ledger_id": 42, "bytes": 2700, "owner": "t/ns/persistent/x"}],
                    }
                ],
                estimate_vs_measured={
                    "predicted_reclaim": {"estimated": {"total": 1400}, "measured": {"total": 700}, "error": 1.0}
                },
            ),
            "bk-b:3181": _bookie("estimated"),
        },
    },
}


def test_per_bookie_impact_by_gc_stage_with_pinned_logs_and_the_estimates_error(model: ReportModel) -> None:
    view = plan_view(MEASURED_PLAN)
    a, b = view.bookies
    assert (a.bookie, a.layout, a.complete, a.deletion, a.minor, a.stays) == (
        "bk-a:3181",
        "measured",
        False,
        600,
        100,
        300,
    )
    assert a.stuck[0].pinned_by == ((42, 2700, "t/ns/persistent/x"),) and (a.estimated_reclaim, a.reclaim_error) == (
        1400,
        1.0,
    )
    assert (b.layout, b.complete, b.estimated_reclaim) == ("estimated", None, None)
    out = render_html(model, plan=view)
    parse(out)
    section = re.search(r'<h2 id="plan-bookies">.*?</section>', out, re.S)
    assert section is not None
    text = section.group(0)
    assert (
        'id="chart-plan-bookies"' in text and text.count("<title>bk-a:3181 (measured): ") == 3
    )  # deletion, minor, stays
    assert "measured (INCOMPLETE scan)" in text and "+100%" in text
    assert (
        "log 7 in /data/bk0: 300 B stays (usage-at-or-above-compaction-threshold), pinned by ledger 42 "
        "(2.70 kB, t/ns/persistent/x)" in text
    )
    assert plan_view(PLAN).bookies == () and 'id="plan-bookies"' not in render_html(model, plan=plan_view(PLAN))
