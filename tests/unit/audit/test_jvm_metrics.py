"""The JVM counters an audit reports: deltas, /proc parsing, the printed line (pure; the read is tested in
tests/spark/test_plan_shape.py against a real session)."""

from __future__ import annotations

import os
from pathlib import Path

from pulsar_ops.audit.jvm_metrics import JvmCounters, delta, proc_cpu_seconds, read, summary


def test_delta_is_per_counter_and_none_where_either_reading_lacks_it() -> None:
    before = JvmCounters(cpu_s=10.0, jit_s=2.5, gc_s=0.5, gc_collections=3, codegen_classes=10, codegen_s=0.4, jobs=7)
    after = JvmCounters(cpu_s=62.125, jit_s=29.0, gc_s=2.5, gc_collections=38, codegen_classes=373, codegen_s=None)
    d = delta(before, after)
    assert d == {
        "cpu_s": 52.12,
        "jit_s": 26.5,
        "gc_s": 2.0,
        "gc_collections": 35,
        "codegen_classes": 363,
        "codegen_s": None,
        "jobs": None,
    }


def test_proc_cpu_seconds_reads_utime_and_stime_after_a_hostile_command_name(tmp_path: Path) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    # the command name may hold spaces and parentheses; utime and stime are fields 14 and 15 of the line
    fields = ["S", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", str(30 * tick), str(4 * tick), "0", "0"]
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "stat").write_text(f"4242 (java (x) 1) {' '.join(fields)} 20 0\n")
    assert proc_cpu_seconds(4242, proc=tmp_path) == 34.0


def test_proc_cpu_seconds_is_none_for_a_gone_or_garbled_process(tmp_path: Path) -> None:
    assert proc_cpu_seconds(1, proc=tmp_path) is None
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_text("7 (java) S 1 2\n")
    assert proc_cpu_seconds(7, proc=tmp_path) is None


def test_this_process_cpu_is_read_from_proc() -> None:
    sum(i * i for i in range(200_000))  # some CPU of our own
    cpu = proc_cpu_seconds(os.getpid())
    assert cpu is not None and cpu > 0


def test_read_without_a_jvm_gives_no_figures_and_no_error() -> None:
    class NotASession:
        _jvm = None

    assert read(NotASession()) == JvmCounters()


def test_summary_names_each_figure_and_leaves_out_missing_ones() -> None:
    d = {"cpu_s": 52.1, "jit_s": 27.2, "gc_s": 2.0, "gc_collections": 35, "codegen_classes": 363, "codegen_s": 12.0}
    line = summary({**d, "jobs": 107}, 27.04, 2)
    assert line == (
        "jvm: 52.1 s CPU on 2 cores in 27.0 s (JIT 27.2 s, Spark codegen 12.0 s for 363 classes, "
        "GC 2.0 s in 35 collections), 107 Spark jobs"
    )
    assert summary({"cpu_s": None, "jit_s": 3.0, "jobs": None}, 5.0, 2) == "jvm: 5.0 s (JIT 3.0 s)"
    assert summary({}, 5.0, 2) == "jvm: 5.0 s"
