"""`pulsar-ops bench scrape`: this scraper vs a naive synchronous kazoo walk of the same seeded tree.

Starts an embedded ZooKeeper, seeds N topics with the synthetic-cluster seeder, then in the same run:

1. runs ``scrape()`` in a CHILD process (``python -m pulsar_ops.bench.scrape --child ...``), which reports its
   own peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) and that of its decode workers
   (``RUSAGE_CHILDREN``, the largest one); ``peak_rss_mb`` = parent + workers x largest worker, an upper bound
   of the scrape's total, never the benchmark's or the seeder's memory;
2. walks the same roots with a naive synchronous recursive walk (``get`` + ``get_children`` per znode, one
   request at a time). At 1-4K znodes/s a full naive walk of 600K znodes takes minutes, so it stops after
   ``naive_max_seconds`` and its rate is measured over the znodes it read (the figures say so).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient  # noqa: TID251 - the naive baseline walk is raw kazoo
from kazoo.exceptions import NoNodeError  # noqa: TID251 - the naive baseline walk is raw kazoo

from pulsar_ops import zkconn
from pulsar_ops.errors import PulsarOpsError
from pulsar_ops.scrape.classify import CONFIG, LOCAL, roots_for
from pulsar_ops.testing.seeder import SeedOptions, seed_cluster
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkdata.snapshot import zxid_from_name

Info = Callable[[str], None]


def _machine() -> dict[str, Any]:
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:
        load = None
    return {"cpus": os.cpu_count(), "load_1min": load, "python": platform.python_version()}


def naive_walk(client: KazooClient, roots: list[str], max_seconds: float) -> tuple[int, float, bool]:
    """Synchronous recursive get + get_children. Returns (znodes, seconds, finished)."""
    started = time.monotonic()
    deadline = started + max_seconds
    count = 0
    stack = list(reversed(roots))
    while stack:
        if time.monotonic() > deadline:
            return count, time.monotonic() - started, False
        path = stack.pop()
        try:
            _data, stat = client.get(path)
            count += 1
            if stat.numChildren:
                for child in client.get_children(path):
                    stack.append(f"{path}/{child}")
        except NoNodeError:
            continue
    return count, time.monotonic() - started, True


class _CountingSink:
    def __init__(self) -> None:
        self.znodes = 0

    def node(self, path: str, data: bytes, stat: tuple[int, ...]) -> None:
        self.znodes += 1

    def error(self, path: str, code: str, reason: str) -> None:
        pass


def walk_only(hosts: str, roots: list[str]) -> dict[str, Any]:
    """The read path alone (pipelined multiRead + response parsing), to show what decoding costs."""
    from pulsar_ops.scrape.zk import ZkTarget, ZkWalker, close, connect

    client = connect(ZkTarget.parse(hosts))
    try:
        sink = _CountingSink()
        t0 = time.monotonic()
        ZkWalker(client, multiread=True).walk(roots, sink)
        secs = time.monotonic() - t0
    finally:
        close(client)
    return {"znodes": sink.znodes, "seconds": round(secs, 3), "znodes_per_s": round(sink.znodes / secs)}


def _child_scrape(hosts: str, out: str, batch: int | None, workers: int | None) -> dict[str, Any]:
    from pulsar_ops import native
    from pulsar_ops.scrape.run import ScrapeConfig, _workers, scrape

    cpu0 = time.process_time()
    t0 = time.monotonic()
    m = scrape(ScrapeConfig(zookeeper=hosts, out=Path(out), batch=batch, workers=workers))
    seconds = time.monotonic() - t0
    parent_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_mb = kids.ru_maxrss / 1024  # the largest decode worker (ru_maxrss of reaped children is a max)
    n_workers = _workers(workers)
    return {
        "znodes": m.row_counts["znodes"],
        "seconds": round(seconds, 3),
        "cpu_seconds": round(time.process_time() - cpu0, 3),
        "workers": n_workers,
        "workers_cpu_seconds": round(kids.ru_utime + kids.ru_stime, 3),
        "parent_peak_rss_mb": round(parent_mb, 1),
        "worker_peak_rss_mb": round(worker_mb, 1),
        # upper bound of the scrape's total: parent peak + every worker at the largest worker's peak
        "peak_rss_mb": round(parent_mb + n_workers * worker_mb, 1),
        "multiread": m.multiread,
        "native": native.STATUS,  # "native", or why the pure-Python decoders ran
        "incomplete_scopes": len(m.incomplete_scopes),
        "row_counts": m.row_counts,
    }


def _child_offline(data_dir: str, out: str, workers: int | None) -> dict[str, Any]:
    """`scrape --zk-data-dir` of a stopped server's dataDir: stage times (read = the snapshot read once, its nodes
    handed to the decode workers meanwhile, and replayed; write = the workers finishing, the last tables, the
    manifest: ``OfflineScrapeConfig.timings``) and peak RSS, measured like the live child."""
    from pulsar_ops.scrape.offline import OfflineScrapeConfig, scrape_data_dir
    from pulsar_ops.scrape.run import _workers
    from pulsar_ops.zkdata.datadir import describe_size

    cpu0 = time.process_time()
    t0 = time.monotonic()
    cfg = OfflineScrapeConfig(out=Path(out), zk_data_dir=Path(data_dir), workers=workers)
    m = scrape_data_dir(cfg)
    seconds = time.monotonic() - t0
    parent_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    n_workers = _workers(workers)
    local = m.zk_data_dirs["local"]
    return {
        "znodes": m.row_counts["znodes"],
        "seconds": round(seconds, 3),
        "read_seconds": round(cfg.timings.get("read", 0.0), 3),
        "write_seconds": round(cfg.timings.get("write", 0.0), 3),
        "cpu_seconds": round(time.process_time() - cpu0, 3),
        "workers": n_workers,
        "workers_cpu_seconds": round(kids.ru_utime + kids.ru_stime, 3),
        "parent_peak_rss_mb": round(parent_mb, 1),
        "worker_peak_rss_mb": round(kids.ru_maxrss / 1024, 1),
        "peak_rss_mb": round(parent_mb + n_workers * kids.ru_maxrss / 1024, 1),
        "data_dir_bytes": describe_size(Path(data_dir)),
        "snapshot": local["snapshot"],
        "replayed_txns": local["replayed_txns"],
        "zxid": m.zxid,
        "row_counts": m.row_counts,
    }


def run_offline_child(data_dir: Path, out: Path, workers: int | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pulsar_ops.bench.scrape", "--child", "--zk-data-dir", str(data_dir)]
    cmd += ["--out", str(out)] + (["--workers", str(workers)] if workers is not None else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PulsarOpsError(
            f"the offline scrape child process failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}",
            hint="run `pulsar-ops scrape --zk-data-dir DIR` on the same directory with --debug",
            code="bench-failed",
        )
    doc: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


def run_scrape_child(hosts: str, out: Path, batch: int | None, workers: int | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pulsar_ops.bench.scrape", "--child", "--hosts", hosts, "--out", str(out)]
    if batch:
        cmd += ["--batch", str(batch)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PulsarOpsError(
            f"the scrape child process failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}",
            hint="run `pulsar-ops scrape` against the same tree with --debug",
            code="bench-failed",
        )
    doc: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return doc


def run(
    *,
    topics: int = 100_000,
    seed: int = 1,
    batch: int | None = None,
    workers: int | None = None,
    naive_max_seconds: float = 120.0,
    heap_mb: int = 3072,
    info: Info = lambda _s: None,
    zk_data_dir: bool = False,
) -> dict[str, Any]:
    """``zk_data_dir``: restart the server after seeding (ZooKeeper snapshots its tree when it starts:
    ``ZooKeeperServer.loadData`` -> ``takeSnapshot``), so its data directory is a snapshot of the seeded tree plus
    a log tail, as in production; after the live scrape, stop it and scrape that directory offline."""
    doc: dict[str, Any] = {"machine": _machine(), "topics": topics, "seed": seed}
    with (
        tempfile.TemporaryDirectory(prefix="pulsar-ops-bench-") as tmp,
        EmbeddedZooKeeper(data_dir=Path(tmp) / "zk", heap_mb=heap_mb) as zk,
    ):
        doc["zookeeper_version"] = zk.version()
        client = zkconn.connect(zk.hosts, timeout=60)
        try:
            info(f"seeding {topics:,} topics (seed {seed}) into ZooKeeper {doc['zookeeper_version']}...")
            res = seed_cluster(
                client,
                None,
                SeedOptions(topics=topics, seed=seed, persistent_ownership=True),
                progress=None,
            )
            doc["seed"] = {"znodes": res.znodes_written, "seconds": round(res.seconds, 2)}
            info(f"seeded {res.znodes_written:,} znodes in {res.seconds:.1f} s")
            if zk_data_dir:
                info("restarting the server (it snapshots the seeded tree as it starts)...")
                zkconn.close(client)
                zk.restart()
                client = zkconn.connect(zk.hosts, timeout=60)

            roots = list(roots_for(CONFIG, "/ledgers", separate_config=False)) + list(
                roots_for(LOCAL, "/ledgers", separate_config=False)
            )
            # The read path alone runs first: it also warms the server's read path (JIT), so the scraper and the
            # naive walk after it both meet a warm server, as they would in production.
            info("walk only (multiRead reads, no decoding, no Parquet)...")
            doc["walk_only"] = walk_only(zk.hosts, roots)

            info("scraping (child process)...")
            doc["scraper"] = run_scrape_child(zk.hosts, Path(tmp) / "snap", batch, workers)
            s = doc["scraper"]
            s["znodes_per_s"] = round(s["znodes"] / s["seconds"]) if s["seconds"] else None
            info(f"naive synchronous walk (at most {naive_max_seconds:.0f} s)...")
            n, secs, finished = naive_walk(client, roots, naive_max_seconds)
            doc["naive"] = {
                "znodes": n,
                "seconds": round(secs, 3),
                "finished": finished,
                "znodes_per_s": round(n / secs) if secs else None,
            }
        finally:
            zkconn.close(client)
        if zk_data_dir:
            assert zk.data_dir is not None
            zk.stop()
            info("scrape --zk-data-dir of the stopped server's data directory (child process)...")
            off = run_offline_child(zk.data_dir / "data", Path(tmp) / "offline", workers)
            off["znodes_per_s"] = round(off["znodes"] / off["seconds"]) if off["seconds"] else None
            off["read_znodes_per_s"] = round(off["znodes"] / off["read_seconds"]) if off["read_seconds"] else None
            doc["offline"] = off
    s, nv = doc["scraper"], doc["naive"]
    doc["ratio"] = round(s["znodes_per_s"] / nv["znodes_per_s"], 1) if nv["znodes_per_s"] else None
    doc["targets"] = {
        "znodes_per_s>=50000": bool(s["znodes_per_s"] and s["znodes_per_s"] >= 50_000),
        "ratio>=20": bool(doc["ratio"] and doc["ratio"] >= 20),
        "rss<1GB": s["peak_rss_mb"] < 1024,
    }
    if "offline" in doc:
        o = doc["offline"]
        doc["targets"]["offline_znodes_per_s>=500000"] = bool(o["znodes_per_s"] and o["znodes_per_s"] >= 500_000)
        doc["targets"]["offline_rss<1.5GB"] = o["peak_rss_mb"] < 1536
    return doc


BUILT = "BUILT.json"
VERSION_DIR = "version-2"


def build_data_dir(
    directory: Path, *, topics: int, seed: int, heap_mb: int, info: Info = lambda _s: None
) -> dict[str, Any]:
    """The seeded tree written by a real server into ``directory`` (``zoo.cfg`` and ``data/``), once: seeded, then
    the server restarted (``ZooKeeperServer.loadData`` snapshots the tree it loads) and stopped cleanly. A
    directory already built for the same topics and seed is reused (``BUILT.json`` records what it holds)."""
    marker = directory / BUILT
    if marker.is_file():
        doc: dict[str, Any] = json.loads(marker.read_text())
        if doc.get("topics") == topics and doc.get("seed") == seed:
            info(f"reusing the data directory {directory} ({doc['znodes']:,} znodes seeded, {doc['topics']:,} topics)")
            return doc
        raise PulsarOpsError(
            f"{directory} holds another tree ({doc.get('topics')} topics, seed {doc.get('seed')})",
            hint="pass another --keep-data-dir, or the same --topics/--seed as when it was built",
            code="bench-failed",
        )
    if directory.exists() and any(directory.iterdir()):
        raise PulsarOpsError(
            f"{directory} is not empty and holds no {BUILT}", hint="pass an empty or new directory", code="bench-failed"
        )
    directory.mkdir(parents=True, exist_ok=True)
    zk = EmbeddedZooKeeper(data_dir=directory, heap_mb=heap_mb, startup_timeout=1800.0)
    try:
        zk.start()
        client = zkconn.connect(zk.hosts, timeout=120)
        try:
            info(f"seeding {topics:,} topics (seed {seed}) into ZooKeeper {zk.version()} at {directory}...")
            res = seed_cluster(client, None, SeedOptions(topics=topics, seed=seed, persistent_ownership=True))
        finally:
            zkconn.close(client)
        info(f"seeded {res.znodes_written:,} znodes in {res.seconds:.1f} s; restarting (the server snapshots it)")
        zk.restart()
    finally:
        zk.stop()
    doc = {"topics": topics, "seed": seed, "znodes": res.znodes_written, "seed_seconds": round(res.seconds, 1)}
    marker.write_text(json.dumps(doc))
    return doc


RETAIN_SNAPSHOTS = 3  # upstream PurgeTxnLog's minimum snapRetainCount


def purge_kept(data_dir: Path, retain: int = RETAIN_SNAPSHOTS) -> list[str]:
    """What ZooKeeper's ``server/PurgeTxnLog.purge`` does with ``retain`` snapshots, for the bench's own kept
    directory: every start of the server on it writes a new snapshot (``ZooKeeperServer.loadData``), 1.2 GB at
    600,000 topics. The ``retain`` newest snapshots are kept (by the zxid in their names), with every log
    ``FileTxnLog.getLogFiles`` names for the oldest of them (the log starting at or before its zxid, and every
    later one); older snapshots and logs are removed. Returns the names removed."""
    d = data_dir / VERSION_DIR
    snaps = sorted(_named(d, "snapshot"), reverse=True)
    if len(snaps) <= retain:
        return []
    least = snaps[retain - 1][0]
    logs = sorted(_named(d, "log"))
    starts_before = [z for z, _p in logs if z <= least]
    keep_from = starts_before[-1] if starts_before else least
    doomed = [p for z, p in snaps[retain:] if z < least] + [p for z, p in logs if z < keep_from]
    for p in doomed:
        p.unlink()
    return sorted(p.name for p in doomed)


def _named(d: Path, prefix: str) -> list[tuple[int, Path]]:
    named = [(zxid_from_name(p.name, prefix), p) for p in d.iterdir()]
    return [(z, p) for z, p in named if z >= 0 and p.is_file()]


def _rss_total(c: dict[str, Any]) -> float:
    return float(c["peak_rss_mb"])


def run_data_dir(
    directory: Path,
    *,
    topics: int,
    seed: int = 1,
    batch: int | None = None,
    workers: int | None = None,
    heap_mb: int = 3072,
    info: Info = lambda _s: None,
) -> dict[str, Any]:
    """``bench scrape --zk-data-dir --keep-data-dir DIR``: the offline scrape of a stopped server's data directory
    and the live scrape of the same tree (the server started again on that directory: the sessions it logs
    change no znode), side by side, each in a child process; the two snapshots' row counts compared table by
    table (full equality is tested at small sizes: tests/zk/test_scrape_zk_data_dir.py)."""
    doc: dict[str, Any] = {"machine": _machine(), "topics": topics, "seed": seed}
    doc["data_dir"] = build_data_dir(directory, topics=topics, seed=seed, heap_mb=heap_mb, info=info)
    with tempfile.TemporaryDirectory(prefix="pulsar-ops-bench-") as tmp:
        info("scrape --zk-data-dir of the stopped server's data directory (child process)...")
        off = run_offline_child(directory / "data", Path(tmp) / "offline", workers)
        off["znodes_per_s"] = round(off["znodes"] / off["seconds"]) if off["seconds"] else None
        off["read_znodes_per_s"] = round(off["znodes"] / off["read_seconds"]) if off["read_seconds"] else None
        off["load_1min_after"] = _machine()["load_1min"]
        doc["offline"] = off
        info(f"offline: {json.dumps({k: v for k, v in off.items() if k != 'row_counts'})}")
        shutil.rmtree(Path(tmp) / "offline", ignore_errors=True)
        # the server loads (and snapshots) the whole tree before it serves: minutes at 4M znodes on a busy machine
        with EmbeddedZooKeeper(data_dir=directory, heap_mb=heap_mb, startup_timeout=1800.0) as zk:
            doc["zookeeper_version"] = zk.version()
            info(f"live scrape of the same tree (ZooKeeper {doc['zookeeper_version']}, child process)...")
            live = run_scrape_child(zk.hosts, Path(tmp) / "live", batch, workers)
        doc["purged"] = purge_kept(directory / "data")
        live["znodes_per_s"] = round(live["znodes"] / live["seconds"]) if live["seconds"] else None
        live["load_1min_after"] = _machine()["load_1min"]
        doc["scraper"] = live
    a, b = off["row_counts"], live["row_counts"]
    doc["row_counts_equal"] = a == b
    doc["row_count_differences"] = {t: [a.get(t), b.get(t)] for t in sorted(set(a) | set(b)) if a.get(t) != b.get(t)}
    doc["speedup"] = round(off["znodes_per_s"] / live["znodes_per_s"], 2) if live["znodes_per_s"] else None
    doc["targets"] = {
        "offline_znodes_per_s>=500000": bool(off["znodes_per_s"] and off["znodes_per_s"] >= 500_000),
        "offline_rss<1.5GB": _rss_total(off) < 1536,
        "same_row_counts": doc["row_counts_equal"],
    }
    return doc


def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="internal: the scrape half of `pulsar-ops bench scrape`")
    p.add_argument("--child", action="store_true", required=True)
    p.add_argument("--hosts", default=None)
    p.add_argument("--zk-data-dir", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--workers", type=int, default=None)
    a = p.parse_args(argv)
    if a.zk_data_dir:
        print(json.dumps(_child_offline(a.zk_data_dir, a.out, a.workers)))
    else:
        print(json.dumps(_child_scrape(a.hosts, a.out, a.batch, a.workers)))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
