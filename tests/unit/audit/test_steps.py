"""audit/steps.py (how the storage stage's statements run from several threads) and the storage stage's order
(etl.reads over the shipped SQL): each statement after what it reads, an error the first failed step's, as a
sequential run's."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pulsar_ops.audit.etl import SHARED_VIEW_CONF, reads, shared_storage_files
from pulsar_ops.audit.sql_files import storage_files
from pulsar_ops.audit.steps import Step, run_steps
from pulsar_ops.errors import AuditError


class Log:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []
        self.running: set[str] = set()
        self.overlaps: set[frozenset[str]] = set()

    def step(self, name: str, seconds: float = 0.02, fail: BaseException | None = None) -> Any:
        def run(before: dict[str, Any]) -> Any:
            with self.lock:
                self.events.append(("start", name))
                self.overlaps.update(frozenset({name, o}) for o in self.running)
                self.running.add(name)
            time.sleep(seconds)
            with self.lock:
                self.running.discard(name)
                self.events.append(("end", name))
            if fail is not None:
                raise fail
            return (name, sorted(before))

        return run

    def order(self, kind: str) -> list[str]:
        return [n for k, n in self.events if k == kind]


def chain(log: Log, fail: dict[str, BaseException] | None = None) -> list[Step]:
    fail = fail or {}
    return [
        Step("a", log.step("a", fail=fail.get("a")), exclusive=True),
        Step("b1", log.step("b1", 0.1, fail.get("b1")), frozenset({"a"})),
        Step("b2", log.step("b2", 0.05, fail.get("b2")), frozenset({"a"})),
        Step("c", log.step("c", fail=fail.get("c")), frozenset({"b1", "b2"})),
        Step("q", log.step("q", 0.15, fail.get("q")), frozenset({"a"})),
    ]


def test_one_thread_runs_the_steps_in_the_order_given() -> None:
    log = Log()
    got = run_steps(chain(log), threads=1)
    assert log.order("start") == ["a", "b1", "b2", "c", "q"] and not log.overlaps
    assert got["c"] == ("c", ["b1", "b2"]) and got["q"] == ("q", ["a"])  # each given what it runs after


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_overlap_independent_steps_never_before_what_they_read(threads: int) -> None:
    log = Log()
    got = run_steps(chain(log), threads=threads)
    assert got == run_steps(chain(Log()), threads=1)  # the same results
    ends = log.order("end")
    for s in chain(Log()):
        start = log.events.index(("start", s.name))
        assert all(log.events.index(("end", n)) < start for n in s.after), (s.name, log.events)
    assert ends[0] == "a" and not any("a" in o for o in log.overlaps)  # the exclusive step ran alone
    assert frozenset({"b1", "b2"}) in log.overlaps  # independent steps did overlap
    assert max(len(o) for o in log.overlaps) <= threads


def test_an_exclusive_step_waits_for_the_running_ones_and_runs_alone() -> None:
    log = Log()
    steps = [
        Step("x", log.step("x", 0.1)),
        Step("y", log.step("y", 0.02)),
        Step("conf", log.step("conf", 0.05), exclusive=True),
        Step("z", log.step("z", 0.02)),
    ]
    run_steps(steps, threads=2)
    assert not any("conf" in o for o in log.overlaps)
    assert log.order("start").index("conf") < log.order("start").index("z")  # its turn came before later steps


@pytest.mark.parametrize("threads", [1, 2])
def test_an_error_is_the_first_failed_steps_after_the_running_ones_end(threads: int) -> None:
    """The error a step raises surfaces as that same object (an AuditError naming its file stays one), once the
    steps running beside it finished; nothing starts after it; with two failing, the earlier step's in the order
    given, whichever failed first."""
    log = Log()
    broken = AuditError("sql/storage/2_log_ledgers.sql: [TABLE_OR_VIEW_NOT_FOUND] ...", hint="fix 2_log_ledgers.sql")
    with pytest.raises(AuditError) as raised:
        run_steps(chain(log, {"b2": broken}), threads=threads)
    assert raised.value is broken
    assert "c" not in log.order("start")  # what reads it never starts
    assert set(log.order("start")) == set(log.order("end"))  # nothing left running
    log2 = Log()
    late, early = AuditError("q failed"), AuditError("b1 failed")
    with pytest.raises(AuditError) as raised:
        run_steps(chain(log2, {"q": late, "b1": early}), threads=threads)
    assert raised.value is early


def test_a_later_step_failing_first_still_lets_the_earlier_ones_run() -> None:
    """q (last in order) fails while b runs; c (after b, before q in order) still starts and fails: the error is c's,
    as a sequential run's, and nothing after c in order that had not started runs."""
    log = Log()
    first, later = AuditError("c failed"), AuditError("q failed")
    steps = [
        Step("a", log.step("a")),
        Step("b", log.step("b", 0.15), frozenset({"a"})),
        Step("c", log.step("c", fail=first), frozenset({"b"})),
        Step("q", log.step("q", 0.01, later), frozenset({"a"})),
    ]
    with pytest.raises(AuditError) as raised:
        run_steps(steps, threads=2)
    assert raised.value is first
    assert log.order("end").index("q") < log.order("start").index("c")  # q had failed before c started
    with pytest.raises(AuditError) as raised:
        run_steps(steps, threads=1)
    assert raised.value is first


def test_steps_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="runs after"):
        run_steps([Step("b", lambda _: None, frozenset({"a"})), Step("a", lambda _: None)], threads=2)


def test_the_storage_stage_reads_in_file_order() -> None:
    """The shipped storage SQL: each shared view reads only views before it in file order, and the capacity queries
    read storage_ledgers or storage_groups alone (so they overlap the chain of the other shared views and the
    detections); a view with settings of its own (SHARED_VIEW_CONF) reads no shared view and runs alone."""
    shared = shared_storage_files()
    names = [f.name for f in shared]
    for i, f in enumerate(shared):
        assert reads(f, names) <= set(names[:i]), f.name
    assert reads(shared[names.index("stale_keepers")], names) == {"log_ledgers", "stale_logs"}
    queries = [f for f in storage_files() if f.path.stem == f.name]
    assert {f.name for f in queries} == {"bookies", "oldest_logs", "owners"}
    assert {f.name: reads(f, names) for f in queries} == {
        "bookies": {"storage_ledgers"},
        "oldest_logs": {"storage_ledgers"},
        "owners": {"storage_groups"},
    }
    assert set(SHARED_VIEW_CONF) <= set(names)
