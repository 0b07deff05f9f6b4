"""Print znodes/s for seeding N topics into an embedded ZooKeeper (and for generating them alone).

    python tests/perf/bench_seed.py [--topics 20000] [--seed 1] [--batch 1000]

Not a test: figures depend on machine load; the script prints them side by side with the load average.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from pulsar_ops.testing.cluster_model import ClusterModel
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topics", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    opts = SeedOptions(topics=args.topics, seed=args.seed, batch_size=args.batch, persistent_ownership=True)

    t0 = time.perf_counter()
    generated = sum(1 for _ in ClusterModel(opts).znodes())
    gen_s = time.perf_counter() - t0

    with EmbeddedZooKeeper(data_dir=Path(tempfile.mkdtemp(prefix="bench-seed-"))) as zk:
        client = KazooClient(hosts=zk.hosts)
        client.start(timeout=30)
        try:
            result = seed_cluster(client, None, opts)
        finally:
            client.stop()
            client.close()
    load = os.getloadavg()[0]
    print(f"topics={args.topics} seed={args.seed} batch={args.batch} cpus={os.cpu_count()} load1={load:.1f}")
    print(f"generate only : {generated:>10,} znodes {gen_s:8.2f} s {generated / gen_s:>10,.0f} znodes/s")
    print(
        f"seed into ZK  : {result.znodes_written:>10,} znodes {result.seconds:8.2f} s "
        f"{result.znodes_per_second:>10,.0f} znodes/s"
    )


if __name__ == "__main__":
    main()
