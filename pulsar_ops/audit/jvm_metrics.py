"""Where an audit's time goes inside the JVM: CPU, JIT compilation, Spark's code generation, GC, Spark jobs.

Read before and after the audit's steps (``findings.json`` ``audit.jvm``, printed by ``pulsar-ops bench audit``),
so a slow audit shows whether the JVM was working on the data or on itself. On this 2-core machine the demo's
cold audit spent 27 s of JIT compilation and 12 s of Spark's Janino compiles (363 generated classes) in a 27 s
audit: the JVM compiling its own code, not reading 2,000 znodes.

Sources, all the JVM's or Spark's own: the process CPU time of a local driver JVM (``/proc/<pid>/stat``, the JVM
this process launched), ``CompilationMXBean.getTotalCompilationTime``, every ``GarbageCollectorMXBean``, Spark's
``CodegenMetrics`` compilation-time histogram (count exact; seconds are count x the histogram's mean, exact up to
its 1,028-sample reservoir) and the status tracker's job ids. A source that is unavailable (a cluster's driver
JVM is not ours to read from /proc; a Spark without the metric) is ``None``, never an error: these are figures
about the audit, never a reason for it to fail.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class JvmCounters:
    """Cumulative counters of the driver JVM at one moment (``None``: not available here)."""

    cpu_s: float | None = None  # user + system CPU of the whole JVM process (driver and, in local mode, tasks)
    jit_s: float | None = None  # HotSpot's JIT compilers (C1 + C2), all threads
    gc_s: float | None = None
    gc_collections: int | None = None
    codegen_classes: int | None = None  # Spark's generated-code compilations (Janino)
    codegen_s: float | None = None
    jobs: int | None = None  # Spark jobs started in this SparkContext


def _sub(after: float | int | None, before: float | int | None) -> float | int | None:
    if after is None or before is None:
        return None
    d = after - before
    return round(d, 2) if isinstance(d, float) else d


def delta(before: JvmCounters, after: JvmCounters) -> dict[str, float | int | None]:
    """What happened between two readings, per counter (``None`` where either reading lacks it)."""
    a, b = asdict(after), asdict(before)
    return {k: _sub(a[k], b[k]) for k in a}


def proc_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat`` fields 14 and 15), or ``None``."""
    try:
        text = (proc / str(pid) / "stat").read_text()
        # the command name (field 2) is parenthesised and may hold spaces or parentheses: split after the last ')'
        fields = text[text.rindex(")") + 2 :].split()
        ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of the whole line
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def driver_pid(spark: Any) -> int | None:
    """The pid of the driver JVM when this process launched it (local mode from the CLI), else ``None``."""
    proc = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    pid = getattr(proc, "pid", None)
    return pid if isinstance(pid, int) else None


def _safe(read: Callable[[], T]) -> T | None:
    try:
        return read()
    except Exception:  # py4j errors, a metric renamed in another Spark: the figure is missing, the audit is not
        return None


def _gc(jvm: Any) -> tuple[float, int]:
    ms = count = 0
    for bean in jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans():
        ms += max(0, int(bean.getCollectionTime()))
        count += max(0, int(bean.getCollectionCount()))
    return ms / 1000, count


def _jit(jvm: Any) -> float:
    return int(jvm.java.lang.management.ManagementFactory.getCompilationMXBean().getTotalCompilationTime()) / 1000


def _codegen(jvm: Any) -> tuple[int, float]:
    # how many classes: the compile-time histogram's count (exact); how long: the code generator's own running
    # sum in nanoseconds. The histogram's mean is over a decaying sample, so count x mean was an estimate that
    # went negative between two readings of a warm session (-1.6 s for 68 classes in a second audit).
    count = int(jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())
    return count, int(jvm.org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator.compileTime()) / 1e9


def _jobs_started(spark: Any) -> int:
    # job ids count up from 0 per SparkContext; the tracker keeps only the newest (spark.ui.retainedJobs), so the
    # highest id, not how many it lists, says how many have started
    ids = spark.sparkContext.statusTracker().getJobIdsForGroup(None)
    return max(ids) + 1 if ids else 0


def read(spark: Any) -> JvmCounters:
    """The driver JVM's counters now; any that cannot be read are ``None``."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return JvmCounters()
    pid = driver_pid(spark)
    gc = _safe(lambda: _gc(jvm))
    codegen = _safe(lambda: _codegen(jvm))
    jit = _safe(lambda: _jit(jvm))
    jobs = _safe(lambda: _jobs_started(spark))
    return JvmCounters(
        cpu_s=proc_cpu_seconds(pid) if pid is not None else None,
        jit_s=jit,
        gc_s=gc[0] if gc else None,
        gc_collections=gc[1] if gc else None,
        codegen_classes=codegen[0] if codegen else None,
        codegen_s=codegen[1] if codegen else None,
        jobs=jobs,
    )


def summary(d: Mapping[str, float | int | None], wall_s: float, cores: int) -> str:
    """One line: ``jvm: 52.1 s CPU on 2 cores in 27.0 s (JIT 27.2 s, Spark codegen 12.0 s for 363 classes,
    GC 2.0 s in 35 collections), 107 Spark jobs``; missing figures are left out."""
    parts = []
    if d.get("jit_s") is not None:
        parts.append(f"JIT {d['jit_s']:.1f} s")
    if d.get("codegen_s") is not None:
        parts.append(f"Spark codegen {d['codegen_s']:.1f} s for {d['codegen_classes']} classes")
    if d.get("gc_s") is not None:
        parts.append(f"GC {d['gc_s']:.1f} s in {d['gc_collections']} collections")
    head = f"{d['cpu_s']:.1f} s CPU on {cores} cores in {wall_s:.1f} s" if d.get("cpu_s") is not None else ""
    head = head or f"{wall_s:.1f} s"
    jobs = f", {d['jobs']} Spark jobs" if d.get("jobs") is not None else ""
    return f"jvm: {head} ({', '.join(parts)}){jobs}" if parts else f"jvm: {head}{jobs}"
