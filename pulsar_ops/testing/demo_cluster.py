"""The demo's embedded cluster: a real ZooKeeper, seeded with a synthetic Pulsar cluster and its ground truth.

The seeding client stays connected for the cluster's lifetime because bundle ownership znodes are ephemeral,
as on a real cluster. The seeded clock runs ``clock_ahead_ms`` ahead of the wall clock (and the demo audits with
that ``now``) so that leaked znodes and orphan ledgers, stamped by ZooKeeper at seeding time, are old enough to
plan, while the seeder's "young" orphans (a metadata ctime 1 h old, later than their znode's) stay young.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from kazoo.client import KazooClient

from pulsar_ops.testing.model_spec import DEFAULT_DEFECTS, SeedOptions
from pulsar_ops.testing.seeder import SeedResult, seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkconn import close, connect, connected

CLOCK_AHEAD_MS = 25 * 3600 * 1000
CHROOT = "/pulsar"


@dataclass
class DemoCluster:
    work_dir: Path
    topics: int = 200
    seed: int = 1
    defects: frozenset[str] = DEFAULT_DEFECTS
    clock_ahead_ms: int = CLOCK_AHEAD_MS
    progress: Callable[[int], None] | None = None
    bookie_dirs: bool = True  # also write every bookie's ledger directories under work_dir/bookies
    zk: EmbeddedZooKeeper | None = field(default=None, init=False)
    client: KazooClient | None = field(default=None, init=False)
    result: SeedResult | None = field(default=None, init=False)
    now_ms: int = field(default=0, init=False)

    @property
    def hosts(self) -> str:
        assert self.zk is not None
        return f"{self.zk.hosts}{CHROOT}"

    @property
    def bookies_dir(self) -> Path:
        return self.work_dir / "bookies"

    @property
    def ground_truth(self) -> dict[str, Any]:
        assert self.result is not None
        return self.result.ground_truth

    def start(self) -> DemoCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.zk = EmbeddedZooKeeper(data_dir=self.work_dir / "zookeeper").start()
        with connected(self.zk.hosts) as root:
            root.ensure_path(CHROOT)
        self.client = connect(self.hosts)
        self.now_ms = int(time.time() * 1000) + self.clock_ahead_ms
        options = SeedOptions(
            topics=self.topics,
            seed=self.seed,
            defects=self.defects,
            now_ms=self.now_ms,
            bookie_dirs=str(self.bookies_dir) if self.bookie_dirs else None,
        )
        self.result = seed_cluster(self.client, None, options)
        (self.work_dir / "ground-truth.json").write_text(json.dumps(self.ground_truth, indent=2, sort_keys=True))
        return self

    def stop(self) -> None:
        if self.client is not None:
            close(self.client)
            self.client = None
        if self.zk is not None:
            self.zk.stop()
            self.zk = None

    def __enter__(self) -> DemoCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
