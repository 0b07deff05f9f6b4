"""Print the audit benchmark figures: Spark audit vs the same SQL on DuckDB over one seeded and scraped snapshot.

    python tests/perf/bench_audit.py [TOPICS]      (default 10,000; the README figures use 100,000)

Same code as `pulsar-ops bench audit --topics N`. Prints figures only; asserts nothing about speed.
"""

from __future__ import annotations

import json
import sys

from pulsar_ops.bench.audit import run

if __name__ == "__main__":
    topics = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(json.dumps(run(topics=topics), indent=2))
