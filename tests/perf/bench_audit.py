"""Print the audit benchmark figures: Spark audit vs the same SQL on DuckDB over seeded and scraped snapshots.

    python tests/perf/bench_audit.py [TOPICS[,TOPICS...]]      (default 10,000)

Same code as `pulsar-ops bench audit --topics N,M`. Prints figures only; asserts nothing about speed.
"""

from __future__ import annotations

import json
import sys

from pulsar_ops.bench.audit import run

if __name__ == "__main__":
    sizes = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "10000").split(",")]
    print(json.dumps(run(topics=sizes), indent=2))
