"""What Spark itself measured for each stage of an audit, grouped by the audit's steps.

Spark's driver keeps every stage's aggregated task metrics in its status store (the data behind the Spark UI's
stage pages and its REST API's ``/stages``; kept with the UI off too). The runner labels each step's jobs with a
job description (``pulsar-ops audit: materialise int_ledgers``, ``... detections``), and after the audit reads the
stages that step ran: how many, their tasks, the wall time they spanned, the tasks' run time, on-CPU time and GC,
and the bytes they read, shuffled and spilled (``findings.json`` ``audit.stages``, printed by ``pulsar-ops bench
audit``). With the step's own wall time beside it, the part spent outside any stage (analysis, optimisation,
code generation and scheduling on the driver) is the difference; task run time above on-CPU time is time the
tasks waited (for I/O, or for a core another thread had).

Read on the session's driver (in local mode and under ``spark-submit`` alike) as the JSON Spark's REST API serves
(``/stages``, ``/jobs``), in a few py4j calls; any failure gives no figures (``None``), never an error: these
are figures about the audit, not a reason for it to fail. This module imports no pyspark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

STEP_PREFIX = "pulsar-ops audit: "  # the runner's and etl's job descriptions start with this
UNLABELLED = "(unlabelled)"  # a stage whose job had no description


def storage_step(view: str | None = None) -> str:
    """The step name of the storage stage's statement for ``view`` (a ``storage/*.sql`` file's name), or of the
    storage detections' statement (``view`` None): how the runner and etl label those jobs (after
    :data:`STEP_PREFIX`) and how ``bench audit`` names DuckDB's time for the same SQL beside Spark's."""
    return "storage" if view is None else f"storage {view}"


@dataclass(frozen=True)
class StageRow:
    """One stage attempt as Spark's status store holds it (times in ms, bytes as counted)."""

    stage_id: int
    attempt: int
    status: str  # COMPLETE, SKIPPED, FAILED, ACTIVE, PENDING
    step: str  # the job description without STEP_PREFIX, or UNLABELLED
    call_site: str  # Spark's stage name: the action's call site
    tasks: int
    submitted_ms: int | None  # epoch ms; None for a skipped stage
    completed_ms: int | None
    run_ms: int  # executorRunTime, summed over the stage's tasks
    cpu_ms: float  # executorCpuTime (ns in Spark), summed over the tasks
    gc_ms: int
    deserialize_ms: int
    input_bytes: int
    output_bytes: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    spill_bytes: int  # memory + disk bytes spilled

    @property
    def wall_ms(self) -> int:
        if self.submitted_ms is None or self.completed_ms is None:
            return 0
        return max(0, self.completed_ms - self.submitted_ms)


def step_of(description: str | None) -> str:
    """The audit step a job description names (``materialise int_ledgers``), or :data:`UNLABELLED`."""
    if not description:
        return UNLABELLED
    return description[len(STEP_PREFIX) :] if description.startswith(STEP_PREFIX) else description


def union_ms(intervals: Iterable[tuple[int, int]]) -> int:
    """Milliseconds covered by the union of ``[start, end)`` intervals (overlapping stages count once)."""
    total = 0
    end_so_far: int | None = None
    for start, end in sorted(intervals):
        if end_so_far is None or start > end_so_far:
            total += end - start
            end_so_far = end
        elif end > end_so_far:
            total += end - end_so_far
            end_so_far = end
    return total


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _time_ms(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def rows_from_json(stages: Any, jobs: Any, after: int) -> tuple[StageRow, ...]:
    """Stage rows from Spark's status JSON (the shapes of its REST API's ``/stages`` and ``/jobs`` lists, dates as
    epoch ms) for the stages with an id above ``after``, oldest first. A skipped stage was never submitted and
    has no description of its own: the description of a job holding it names its step."""
    job_steps: dict[int, str] = {}
    for job in jobs if isinstance(jobs, list) else []:
        if isinstance(job, dict) and job.get("description"):
            for stage_id in job.get("stageIds") or []:
                job_steps.setdefault(_int(stage_id), step_of(str(job["description"])))
    rows = []
    for st in stages if isinstance(stages, list) else []:
        if not isinstance(st, dict) or _int(st.get("stageId", -1)) <= after:
            continue
        stage_id = _int(st.get("stageId"))
        description = st.get("description")
        rows.append(
            StageRow(
                stage_id=stage_id,
                attempt=_int(st.get("attemptId")),
                status=str(st.get("status") or "UNKNOWN"),
                step=job_steps.get(stage_id) or step_of(description if isinstance(description, str) else None),
                call_site=str(st.get("name") or ""),
                tasks=_int(st.get("numTasks")),
                submitted_ms=_time_ms(st.get("submissionTime")),
                completed_ms=_time_ms(st.get("completionTime")),
                run_ms=_int(st.get("executorRunTime")),
                cpu_ms=_int(st.get("executorCpuTime")) / 1e6,  # Spark counts nanoseconds
                gc_ms=_int(st.get("jvmGcTime")),
                deserialize_ms=_int(st.get("executorDeserializeTime")),
                input_bytes=_int(st.get("inputBytes")),
                output_bytes=_int(st.get("outputBytes")),
                shuffle_read_bytes=_int(st.get("shuffleReadBytes")),
                shuffle_write_bytes=_int(st.get("shuffleWriteBytes")),
                spill_bytes=_int(st.get("memoryBytesSpilled")) + _int(st.get("diskBytesSpilled")),
            )
        )
    return tuple(sorted(rows, key=lambda r: (r.stage_id, r.attempt)))


def status_json(spark: Any) -> tuple[Any, Any]:
    """The driver's stage and job lists as Spark's REST API would serve them, in two py4j calls: the status
    store's own objects written by Jackson (with its Scala module, as Spark's REST API does) inside the JVM."""
    sc = spark.sparkContext
    jvm = sc._jvm
    jsc = sc._jsc.sc()
    jsc.listenerBus().waitUntilEmpty()  # the store is filled by a listener: let it see every finished task
    store = jsc.statusStore()
    mapper = jvm.com.fasterxml.jackson.databind.ObjectMapper()
    mapper.registerModule(jvm.com.fasterxml.jackson.module.scala.DefaultScalaModule())
    no_quantiles = sc._gateway.new_array(jvm.double, 0)
    stages = store.stageList(None, False, False, no_quantiles, None)  # every status, no per-task details
    return json.loads(mapper.writeValueAsString(stages)), json.loads(mapper.writeValueAsString(store.jobsList(None)))


def last_stage_id(spark: Any) -> int | None:
    """The highest stage id this SparkContext has created so far (-1 before the first), or ``None``: the
    highest in the status store (0.1 s for the 900 stages a long-lived test session keeps)."""
    try:
        stages, _ = status_json(spark)
        return max((_int(s.get("stageId")) for s in stages if isinstance(s, dict)), default=-1)
    except Exception:  # py4j errors, another Spark's API: no figures, no failure
        return None


def read(spark: Any, after: int) -> tuple[StageRow, ...] | None:
    """The stages with an id above ``after`` (the audit's, when ``after`` is :func:`last_stage_id` before it),
    oldest first; ``None`` when the status store cannot be read. Spark's store keeps the newest
    ``spark.ui.retainedStages`` (1,000 by default): an audit runs about 120."""
    try:
        return rows_from_json(*status_json(spark), after)
    except Exception:
        return None


def _mb(n: int) -> float:
    return round(n / 1e6, 1)


def step_figures(rows: Iterable[StageRow], wall_s: float | None = None) -> dict[str, Any]:
    """Spark's figures for one step's stages; with the step's wall time, the part outside any stage."""
    rows = list(rows)
    ran = [r for r in rows if r.status != "SKIPPED"]
    in_stages = (
        union_ms(
            (r.submitted_ms, r.completed_ms) for r in ran if r.submitted_ms is not None and r.completed_ms is not None
        )
        / 1000
    )
    out: dict[str, Any] = {
        "stages": len(ran),
        "skipped": len(rows) - len(ran),
        "shuffles": sum(1 for r in ran if r.shuffle_write_bytes > 0),  # stages that wrote a shuffle (exchanges run)
        "tasks": sum(r.tasks for r in ran),
        "in_stages_s": round(in_stages, 2),
        "task_run_s": round(sum(r.run_ms for r in ran) / 1000, 2),
        "task_cpu_s": round(sum(r.cpu_ms for r in ran) / 1000, 2),
        "task_gc_s": round(sum(r.gc_ms for r in ran) / 1000, 2),
        "input_mb": _mb(sum(r.input_bytes for r in ran)),
        "output_mb": _mb(sum(r.output_bytes for r in ran)),
        "shuffle_read_mb": _mb(sum(r.shuffle_read_bytes for r in ran)),
        "shuffle_write_mb": _mb(sum(r.shuffle_write_bytes for r in ran)),
        "spill_mb": _mb(sum(r.spill_bytes for r in ran)),
    }
    if wall_s is not None:
        out["wall_s"] = round(wall_s, 2)
        out["outside_stages_s"] = round(max(0.0, wall_s - in_stages), 2)
    return out


def summary(
    rows: Iterable[StageRow],
    step_walls: Mapping[str, float] | None = None,
    total_wall_s: float | None = None,
    slowest: int = 5,
) -> dict[str, Any]:
    """``audit.stages``: per step in the order the steps ran, the whole audit, and its slowest stages."""
    rows = list(rows)
    walls = step_walls or {}
    steps: dict[str, list[StageRow]] = {}
    for r in rows:
        steps.setdefault(r.step, []).append(r)
    for name in walls:  # a step that ran no stage still shows its wall time
        steps.setdefault(name, [])
    by_step = {name: step_figures(rs, walls.get(name)) for name, rs in steps.items()}
    ran = sorted((r for r in rows if r.status != "SKIPPED"), key=lambda r: (-r.run_ms, r.stage_id))
    return {
        "by_step": by_step,
        "total": step_figures(rows, total_wall_s),
        "slowest": [
            {
                "stage": r.stage_id,
                "step": r.step,
                "call_site": r.call_site,
                "tasks": r.tasks,
                "wall_s": round(r.wall_ms / 1000, 2),
                "task_run_s": round(r.run_ms / 1000, 2),
                "task_cpu_s": round(r.cpu_ms / 1000, 2),
                "shuffle_read_mb": _mb(r.shuffle_read_bytes),
                "shuffle_write_mb": _mb(r.shuffle_write_bytes),
            }
            for r in ran[:slowest]
        ],
    }


_COLUMNS = (
    ("stages", "stages", "{:.0f}"),
    ("shuffles", "shuffles", "{:.0f}"),
    ("tasks", "tasks", "{:.0f}"),
    ("wall s", "wall_s", "{:.2f}"),
    ("in stages s", "in_stages_s", "{:.2f}"),
    ("outside s", "outside_stages_s", "{:.2f}"),
    ("task run s", "task_run_s", "{:.2f}"),
    ("task CPU s", "task_cpu_s", "{:.2f}"),
    ("GC s", "task_gc_s", "{:.2f}"),
    ("in MB", "input_mb", "{:.1f}"),
    ("shuffle MB", "shuffle_write_mb", "{:.1f}"),
    ("spill MB", "spill_mb", "{:.1f}"),
)


def table(doc: Mapping[str, Any]) -> list[str]:
    """``audit.stages`` as aligned text lines: one per step, then the total (``-`` where a figure is missing)."""
    by_step: Mapping[str, Mapping[str, Any]] = doc.get("by_step") or {}
    if not by_step:
        return []
    rows = [["step", *(title for title, _, _ in _COLUMNS)]]
    for name, fig in [*by_step.items(), ("total", doc.get("total") or {})]:
        cells = [name]
        for _, key, fmt in _COLUMNS:
            value = fig.get(key)
            cells.append(fmt.format(value) if isinstance(value, int | float) else "-")
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
