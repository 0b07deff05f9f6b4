"""Print the reference models' speed (no assertions: figures only; the machine is shared, so they are lower bounds).

Usage: python tests/perf/bench_model.py [--cache-topics N] [--cache-seconds S] [--gc-logs N] [--impact-ledgers N]
Same figures as `pulsar-ops bench model`.
"""

from __future__ import annotations

import argparse
import json

from pulsar_ops.bench.model import run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache-topics", type=int, default=200)
    parser.add_argument("--cache-seconds", type=float, default=5.0)
    parser.add_argument("--block-entries", type=int, default=10)
    parser.add_argument("--gc-logs", type=int, default=10_000)
    parser.add_argument("--impact-ledgers", type=int, default=100_000)
    a = parser.parse_args()
    doc = run(
        cache_topics=a.cache_topics,
        cache_seconds=a.cache_seconds,
        block_entries=a.block_entries,
        gc_logs=a.gc_logs,
        impact_ledgers=a.impact_ledgers,
    )
    for policy in ("legacy", "pip430"):
        c = doc["cache"][policy]
        print(
            f"cache {policy:<7} {c['entry_ops_per_s']:>12,} simulated entry ops/s  "
            f"({c['block_ops_per_s']:,} block ops/s)  hit rate {c['hit_rate']:.1%}"
        )
    print(f"gc model     {doc['gc']['entry_logs']:,} entry logs in {doc['gc']['wall_s']:.3f} s")
    print(f"plan impact  {doc['impact']['ledgers']:,} ledgers in {doc['impact']['wall_s']:.3f} s")
    print(json.dumps(doc["machine"]))


if __name__ == "__main__":
    main()
