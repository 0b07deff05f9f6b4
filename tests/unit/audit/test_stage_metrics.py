"""Spark's per-stage figures grouped by audit step: Spark's status JSON, step names, interval unions, the summary
and the printed table (pure; the read from a real session's status store is tested in
tests/spark/test_plan_shape.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.audit.stage_metrics import (
    UNLABELLED,
    StageRow,
    last_stage_id,
    read,
    rows_from_json,
    step_of,
    summary,
    table,
    union_ms,
)

MB = 1_000_000


def stage(stage_id: int, step: str, start: int | None, end: int | None, **kw: Any) -> StageRow:
    base: dict[str, Any] = {
        "attempt": 0,
        "status": "COMPLETE" if start is not None else "SKIPPED",
        "call_site": "parquet at etl.py:190",
        "tasks": 2,
        "run_ms": 0,
        "cpu_ms": 0.0,
        "gc_ms": 0,
        "deserialize_ms": 0,
        "input_bytes": 0,
        "output_bytes": 0,
        "shuffle_read_bytes": 0,
        "shuffle_write_bytes": 0,
        "spill_bytes": 0,
    }
    base.update(kw)
    return StageRow(stage_id=stage_id, step=step, submitted_ms=start, completed_ms=end, **base)


def test_step_of_strips_the_prefix_and_names_unlabelled_jobs() -> None:
    assert step_of("pulsar-ops audit: materialise int_ledgers") == "materialise int_ledgers"
    assert step_of("someone else's job") == "someone else's job"
    assert step_of(None) == UNLABELLED
    assert step_of("") == UNLABELLED


def test_union_counts_overlapping_stages_once() -> None:
    assert union_ms([]) == 0
    assert union_ms([(0, 10), (5, 20), (30, 40), (32, 35)]) == 30
    assert union_ms([(30, 40), (0, 10)]) == 20


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 200)), max_size=30))
def test_union_equals_the_count_of_covered_milliseconds(spans: list[tuple[int, int]]) -> None:
    intervals = [(a, a + n) for a, n in spans]
    covered = {ms for a, b in intervals for ms in range(a, b)}
    assert union_ms(intervals) == len(covered)


def test_summary_groups_by_step_in_run_order_and_splits_wall_time_into_inside_and_outside_stages() -> None:
    rows = [
        stage(5, "materialise int_ledgers", 1_000, 3_000, run_ms=3_000, cpu_ms=2_500.0, gc_ms=100, input_bytes=5 * MB),
        stage(6, "materialise int_ledgers", 2_000, 4_000, run_ms=1_000, cpu_ms=900.0, shuffle_write_bytes=2 * MB),
        stage(7, "materialise int_ledgers", None, None),  # skipped: reused shuffle output
        stage(8, "detections", 10_000, 11_500, run_ms=2_500, cpu_ms=2_000.0, spill_bytes=1_500_000),
        stage(9, UNLABELLED, 12_000, 12_100, tasks=1, run_ms=50, cpu_ms=40.0),
    ]
    walls = {"register": 0.4, "materialise int_ledgers": 4.25, "detections": 2.0}
    doc = summary(rows, walls, total_wall_s=9.0, slowest=2)
    assert list(doc["by_step"]) == ["materialise int_ledgers", "detections", UNLABELLED, "register"]
    led = doc["by_step"]["materialise int_ledgers"]
    assert led["stages"] == 2 and led["skipped"] == 1 and led["tasks"] == 4
    assert led["shuffles"] == 1 and doc["by_step"]["detections"]["shuffles"] == 0  # stages that wrote a shuffle
    assert led["in_stages_s"] == 3.0  # 1.0-4.0 s: the two stages overlap for a second
    assert led["wall_s"] == 4.25 and led["outside_stages_s"] == 1.25
    assert (led["task_run_s"], led["task_cpu_s"], led["task_gc_s"]) == (4.0, 3.4, 0.1)
    assert (led["input_mb"], led["shuffle_write_mb"], led["spill_mb"]) == (5.0, 2.0, 0.0)
    assert doc["by_step"]["detections"]["spill_mb"] == 1.5
    assert "wall_s" not in doc["by_step"][UNLABELLED]  # no wall time known for it: no outside-stages figure
    assert doc["by_step"]["register"]["stages"] == 0 and doc["by_step"]["register"]["outside_stages_s"] == 0.4
    assert doc["total"]["stages"] == 4 and doc["total"]["in_stages_s"] == 4.6
    assert doc["total"]["outside_stages_s"] == 4.4
    assert [s["stage"] for s in doc["slowest"]] == [5, 8]
    assert doc["slowest"][0]["wall_s"] == 2.0 and doc["slowest"][0]["step"] == "materialise int_ledgers"


def test_outside_stages_is_never_negative() -> None:
    doc = summary([stage(1, "coverage", 0, 2_000)], {"coverage": 1.5})
    assert doc["by_step"]["coverage"]["outside_stages_s"] == 0.0


def test_table_aligns_one_line_per_step_and_a_total() -> None:
    doc = summary(
        [stage(1, "detections", 0, 1_500, run_ms=2_500, cpu_ms=2_000.0, shuffle_write_bytes=12_300_000)],
        {"detections": 2.0},
        total_wall_s=2.0,
    )
    lines = table(doc)
    assert len(lines) == 3 and len({len(line) for line in lines}) == 1
    assert lines[0].split()[:4] == ["step", "stages", "shuffles", "tasks"]
    figures = ["1", "1", "2", "2.00", "1.50", "0.50", "2.50", "2.00", "0.00", "0.0", "12.3", "0.0"]
    assert lines[1].split() == ["detections", *figures]
    assert lines[2].split()[0] == "total"
    assert table({}) == [] and table({"by_step": {}}) == []


def test_a_missing_figure_prints_as_a_dash() -> None:
    lines = table({"by_step": {"detections": {"stages": 3}}, "total": {}})
    assert lines[1].split()[:3] == ["detections", "3", "-"]
    # a count read back from JSON as a float (or written by another tool) still prints
    odd = table({"by_step": {"detections": {"stages": 3.0, "tasks": "n/a"}}})
    assert odd[1].split()[:3] == ["detections", "3", "-"]


def test_no_status_store_gives_no_figures_and_no_error() -> None:
    class NotASession:
        sparkContext = None

    assert last_stage_id(NotASession()) is None
    assert read(NotASession(), -1) is None


RECORDED = Path(__file__).parents[2] / "fixtures" / "spark" / "status_store.json"


def test_rows_from_spark_status_json_as_recorded_from_spark_4() -> None:
    # recorded from a real audit's session (Spark 4.3, local mode): the stage and job lists as Jackson writes the
    # status store's objects, the shapes of Spark's REST API; stage 118 was skipped and has no description
    doc = json.loads(RECORDED.read_text())
    rows = rows_from_json(doc["stages"], doc["jobs"], after=100)
    assert [(r.stage_id, r.status, r.step) for r in rows] == [
        (109, "COMPLETE", "detections"),
        (118, "SKIPPED", "coverage"),  # its job's description names the step
        (119, "COMPLETE", "coverage"),
    ]
    det = rows[0]
    assert (det.tasks, det.submitted_ms, det.completed_ms, det.wall_ms) == (8, 1795680338189, 1795680338547, 358)
    assert (det.run_ms, det.cpu_ms, det.gc_ms) == (413, 201.261356, 54)
    assert (det.input_bytes, det.shuffle_write_bytes, det.shuffle_read_bytes, det.spill_bytes) == (16165, 920, 261, 0)
    assert rows[1].submitted_ms is None and rows[1].wall_ms == 0
    assert rows[2].call_site.startswith("collect at ")
    assert rows_from_json(doc["stages"], doc["jobs"], after=109) == rows[1:]


def test_rows_from_json_tolerates_missing_and_odd_fields() -> None:
    stages: list[Any] = [
        {"stageId": 3, "status": "COMPLETE", "executorRunTime": "12", "submissionTime": 5, "completionTime": True},
        "not a stage",
        {"stageId": 2},
    ]
    rows = rows_from_json(stages, {"jobs": "not a list"}, after=-1)
    assert [(r.stage_id, r.status, r.step, r.run_ms, r.completed_ms) for r in rows] == [
        (2, "UNKNOWN", UNLABELLED, 0, None),
        (3, "COMPLETE", UNLABELLED, 0, None),
    ]
    assert rows_from_json(None, None, after=-1) == ()
