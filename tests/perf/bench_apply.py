"""Print plan / mark / delete / restore rates against an embedded ZooKeeper (no assertions: figures only).

Builds the repair test cluster with N extra orphan ledgers of one topic (every action re-reads the owner's
managed-ledger znode and its cursors), then times each phase in-process. Wall-clock figures on a shared machine.

Usage: python tests/perf/bench_apply.py [--orphans N] [--batch-size B]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kazoo.client import KazooClient

from pulsar_ops.repair import journal as J
from pulsar_ops.repair.backup import BackupStore
from pulsar_ops.repair.executor import run_delete, run_mark
from pulsar_ops.repair.plan_builder import build_plan
from pulsar_ops.repair.planner import PlanParams
from pulsar_ops.repair.restore import run_restore
from pulsar_ops.repair.zk_writer import ZkSession
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from tests.zk.repair_cluster import build_cluster, findings_for, write_audit, write_snapshot


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--orphans", type=int, default=500)
    ap.add_argument("--batch-size", type=int, default=100)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-apply-"))
    server = EmbeddedZooKeeper(data_dir=tmp / "zk")
    server.start()
    try:
        root = KazooClient(hosts=server.hosts)
        root.start(timeout=30)
        root.ensure_path("/bench")
        root.stop()
        hosts = server.hosts + "/bench"
        zk = KazooClient(hosts=hosts)
        zk.start(timeout=30)
        s = build_cluster(zk, extra_orphans=args.orphans)
        snap = write_snapshot(zk, tmp / "snap")
        audit = write_audit(tmp / "audit", snap, findings_for(s))
        t0 = time.perf_counter()
        built = build_plan(audit, tmp / "plan.json", PlanParams())
        t_plan = time.perf_counter() - t0
        plan = built.plan
        n = len(plan.actions)
        backups = BackupStore.open(tmp / "plan.json.backup", create=True)
        with (
            J.Journal.open(
                tmp / "j.jsonl",
                plan_checksum=plan.checksum,
                plan_id=plan.plan_id,
                actions=n,
                backup_dir=str(backups.root),
            ) as journal,
            ZkSession(hosts) as session,
        ):
            t0 = time.perf_counter()
            run_mark(plan, session, journal, backups, batch_size=args.batch_size)
            t_mark = time.perf_counter() - t0
            t0 = time.perf_counter()
            rep = run_delete(
                plan, session, journal, backups, quarantine_ms=0, now_ms=J.now_ms(), batch_size=args.batch_size
            )
            t_delete = time.perf_counter() - t0
            assert rep.counts() == {"committed": n}, rep.counts()
            t0 = time.perf_counter()
            run_restore(BackupStore.open(backups.root, create=False), session, only=None, apply=True)
            t_restore = time.perf_counter() - t0
        zk.stop()
        print(f"actions={n} (ledger orphans={len(s.orphans)}, subtrees={len(s.leaks)}), batch={args.batch_size}")
        for label, secs in (("plan", t_plan), ("mark", t_mark), ("delete", t_delete), ("restore", t_restore)):
            print(f"{label:<8} {secs:8.2f} s  {n / secs:9.0f} actions/s")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
