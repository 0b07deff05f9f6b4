"""`pulsar-ops bench model`: simulated cache operations per second, GC model time for N entry logs, impact time."""

from __future__ import annotations

import platform
import random
import time
from typing import Any

import numpy as np

from pulsar_ops.model.cache import POLICIES, simulate_cache
from pulsar_ops.model.cache_workload import CacheWorkload
from pulsar_ops.model.gc import GcOptions, simulate
from pulsar_ops.model.gc_config import gc_config
from pulsar_ops.model.impact import LedgerFacts, plan_impact
from pulsar_ops.model.layout import BookieLayout, Layout
from pulsar_ops.model.nack import NackInput, model_nack

GIB = 1 << 30


def bench_cache(topics: int, seconds: float, block_entries: int) -> dict[str, Any]:
    w = CacheWorkload(
        topics=topics,
        duration_s=seconds,
        publish_rate=100,
        block_entries=block_entries,
        tailing=2,
        catchup=1,
        key_shared=1,
        cache_mb=64,
        reloads_per_s=1.0,
        seed=1,
    )
    out: dict[str, Any] = {
        "workload": {
            "topics": topics,
            "simulated_s": seconds,
            "block_entries": block_entries,
            "subscriptions": "2 tailing + 1 catch-up + 1 key_shared per topic",
        }
    }
    for p in POLICIES:
        r = simulate_cache(w, p)
        out[p] = {
            "entry_ops": r.entry_ops,
            "block_ops": r.block_ops,
            "wall_s": round(r.wall_s, 3),
            "entry_ops_per_s": round(r.entry_ops / r.wall_s),
            "block_ops_per_s": round(r.block_ops / r.wall_s),
            "hit_rate": round(r.hit_rate, 4),
        }
    return out


def bench_gc(n_logs: int, seed: int = 1) -> dict[str, Any]:
    """One bookie with ``n_logs`` full 1 GiB logs; a third of the ledgers deleted; Pulsar's settings."""
    rng = np.random.default_rng(seed)
    totals = np.full(n_logs, GIB, dtype=np.int64)
    dead = (rng.random(n_logs) * GIB).astype(np.int64)  # usage spread over all ten buckets
    dead[rng.random(n_logs) < 0.1] = GIB  # some logs fully garbage
    layout = Layout(
        bookies={
            "bk-0": BookieLayout(
                "bk-0",
                None,
                np.arange(n_logs, dtype=np.int64),
                totals,
                np.zeros(n_logs, dtype=np.bool_),
                dead.reshape(n_logs, 1),
            )
        },
        group_times_ms=[0],
        entry_size=4096,
    )
    cfg = gc_config({"isThrottleByBytes": True, "compactionRateByBytes": 100_000_000}, pulsar_conf=True)
    t0 = time.perf_counter()
    res = simulate(layout, cfg, GcOptions())
    wall = time.perf_counter() - t0
    total = res.total()
    return {
        "entry_logs": n_logs,
        "wall_s": round(wall, 4),
        "gc_runs": res.bookies["bk-0"].runs,
        "reclaimed_bytes": total["reclaimed_bytes"],
        "unreclaimable_bytes": total["unreclaimable_bytes"],
    }


def bench_impact(n_ledgers: int, n_bookies: int = 12, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    bookies = [f"bookie-{i}:3181" for i in range(n_bookies)]
    now = 30 * 86_400_000
    facts = []
    for i in range(n_ledgers):
        c = rng.randrange(0, now - 3_600_000)
        facts.append(
            LedgerFacts(
                i,
                rng.randrange(1, 500_000_000),
                tuple(rng.sample(bookies, 3)),
                3,
                2,
                c,
                "OPEN" if rng.random() < 0.01 else "CLOSED",
                closed_ms=c + rng.randrange(600_000, 14_400_000),
                entries=rng.randrange(1, 50_000),
            )
        )
    delete = [f for f in facts if f.state == "CLOSED" and rng.random() < 0.3]
    t0 = time.perf_counter()
    rep = plan_impact(delete, facts, now_ms=now, config=gc_config(pulsar_conf=True))
    wall = time.perf_counter() - t0
    t = rep.to_json()["total"]
    return {
        "ledgers": n_ledgers,
        "deleted": len(delete),
        "bookies": n_bookies,
        "wall_s": round(wall, 3),
        "reclaimed_bytes": t["reclaimed_bytes"],
        "unreclaimable_bytes": t["unreclaimable_bytes"],
    }


def bench_nack() -> dict[str, Any]:
    t0 = time.perf_counter()
    r = model_nack(NackInput(rate=10_000, delay_ms=3_600_000)).to_json()
    return {
        "rate": 10_000,
        "delay": "1h",
        "wall_s": round(time.perf_counter() - t0, 3),
        "old_bytes": r["old"]["bytes"],
        "new_bytes": r["new"]["bytes"],
    }


def run(
    *,
    cache_topics: int = 200,
    cache_seconds: float = 5.0,
    block_entries: int = 10,
    gc_logs: int = 10_000,
    impact_ledgers: int = 100_000,
) -> dict[str, Any]:
    try:
        import os

        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        load = -1.0
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_1min": round(load, 2)},
        "cache": bench_cache(cache_topics, cache_seconds, block_entries),
        "gc": bench_gc(gc_logs),
        "impact": bench_impact(impact_ledgers),
        "nack": bench_nack(),
    }
