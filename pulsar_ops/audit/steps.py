"""Run a few dependent statements from several driver threads at once, deterministically.

The storage stage (etl.storage_stage) is a dozen statements: the shared views, each reading some written before it,
the storage detections reading them all, and the capacity queries reading storage_ledgers alone. Most of the small
ones run one-task stages and spend as long again on the driver (analysis, planning, commits), each leaving a core
idle; Spark runs the jobs of several driver threads at once (PySpark's pinned thread mode: each Python thread its
own JVM thread, with its own job description). This module only orders the calls: pure, no pyspark.

What stays as in a sequential run: every step starts after the steps it reads (``after``) finished, so a step
sees exactly what it would have seen in file order; with ``threads=1`` the steps run one at a time in the order
given (the order they ran in before). An ``exclusive`` step (one that changes session-wide settings for its own
query) runs with nothing else running. An error is raised once every running step has finished; after a failure
only the steps before the failed one in the order given still start, so the error raised is the first failed
step's in that order: the error a sequential run raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    """One statement to run: ``run`` is called with the results of the steps named in ``after`` (by name)."""

    name: str
    run: Callable[[dict[str, Any]], Any]
    after: frozenset[str] = frozenset()
    exclusive: bool = False


def run_steps(
    steps: Sequence[Step],
    threads: int = 1,
    wrap: Callable[[Callable[[], Any]], Callable[[], Any]] = lambda f: f,
) -> dict[str, Any]:
    """Run ``steps`` (in a topological order: each step's ``after`` names steps before it) from up to ``threads``
    threads, each started as soon as the steps it names finished, in the order given among those ready; returns
    each step's result by name. ``wrap``: applied to each call before a worker thread runs it (PySpark's
    ``inheritable_thread_target``: the job properties of the thread calling this)."""
    names = [s.name for s in steps]
    if len(set(names)) != len(names):
        raise ValueError(f"step names repeat: {names}")
    seen: set[str] = set()
    for s in steps:
        if not s.after <= seen:
            raise ValueError(f"step {s.name!r} runs after {sorted(s.after - seen)}, not before it")
        seen.add(s.name)
    results: dict[str, Any] = {}
    if threads <= 1:
        for s in steps:
            results[s.name] = s.run({n: results[n] for n in s.after})
        return results
    position = {n: i for i, n in enumerate(names)}
    pending = list(steps)
    running: dict[Future[Any], Step] = {}
    failed: dict[str, BaseException] = {}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pulsar-ops-step") as pool:
        while pending or running:
            # after a failure only the steps before it in the order given start: a sequential run ran them all
            limit = min((position[n] for n in failed), default=len(names))
            for s in list(pending):
                if position[s.name] >= limit:
                    pending.remove(s)
                    continue
                if len(running) >= threads or any(r.exclusive for r in running.values()):
                    break
                ready = s.after <= results.keys()
                if s.exclusive and running and ready:
                    break  # its turn next: nothing else starts before it
                if not ready:
                    continue
                pending.remove(s)
                inputs = {n: results[n] for n in s.after}
                running[pool.submit(wrap(_call(s, inputs)))] = s
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                s = running.pop(fut)
                error = fut.exception()
                if error is not None:
                    failed[s.name] = error
                else:
                    results[s.name] = fut.result()
    if failed:
        raise failed[min(failed, key=position.__getitem__)]
    return results


def _call(step: Step, inputs: dict[str, Any]) -> Callable[[], Any]:
    return lambda: step.run(inputs)
