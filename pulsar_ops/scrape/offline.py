"""``scrape --zk-data-dir DIR`` / ``--zk-snapshot FILE``: the snapshot tables of a ZooKeeper data directory, a
copy or a backup of one, without a connection to anything.

The tree comes from ``pulsar_ops.zkdata`` (the newest valid snapshot, the logs replayed after it); it is then
handed, znode by znode, to the *same* sink a live scrape uses (``SnapshotSink`` / the decode ``PoolSink``: the
same extract, classify and Parquet writer), root by root in the order the live walk reads them, with the stat a
client's ``getData`` would return (``DataNode.copyStat``: the client-visible cversion, numChildren,
dataLength). So the tables equal a live scrape of the same tree, and the manifest adds the point in time:
``zxid`` and ``last_txn_time_ms``. No kazoo, no sockets.
"""

from __future__ import annotations

import gc
import operator
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops import pulsar_names as pn
from pulsar_ops.errors import ConfigError
from pulsar_ops.identity import instance_id_from_bytes, layout_from_bytes
from pulsar_ops.scrape.classify import CLUSTERS, CONFIG, LOCAL, classify, roots_for
from pulsar_ops.scrape.decode_pool import CHUNK as DECODE_CHUNK
from pulsar_ops.scrape.decode_pool import PoolSink, WorkerSummary
from pulsar_ops.scrape.extract import DEFAULT_MAX_ZNODE_BYTES, ExtractConfig
from pulsar_ops.scrape.run import (
    ScrapeProgress,
    _check_out_dir,
    _ledgers_root,
    _now_ms,
    _workers,
    finish_snapshot,
)
from pulsar_ops.scrape.sink import SnapshotSink
from pulsar_ops.snapshot.manifest import Manifest
from pulsar_ops.snapshot.writer import DEFAULT_BATCH_ROWS, TABLES_DIR, SnapshotWriter
from pulsar_ops.zkdata.datadir import DataDirState, OnePass, Streamed, stream_data_dir, stream_snapshot_only
from pulsar_ops.zkdata.stream import PartlyEmitted, SnapshotFile, emit_final
from pulsar_ops.zkdata.tree import DataTree

PROGRESS_EVERY = 50_000
_STAT, _MTIME = operator.itemgetter(2), operator.itemgetter(3)  # a read's client stat, a stat's mtime


@dataclass(frozen=True)
class OfflineScrapeConfig:
    out: Path
    zk_data_dir: Path | None = None  # the local store's dataDir (or a copy / backup)
    zk_snapshot: Path | None = None  # or one snapshot file, no logs
    config_zk_data_dir: Path | None = None  # the configuration store's, when it is another ensemble
    zk_data_log_dir: Path | None = None  # the local store's dataLogDir, when its logs are kept apart
    chroot: str = ""  # the cluster's subtree (what a live scrape puts after --zookeeper HOST:PORT)
    config_chroot: str | None = None  # default: the same chroot
    # the ensemble the data directory belongs to (HOST:PORT[,...]): recorded, never contacted, so that `apply`
    # can check it is run against the ZooKeeper this snapshot describes ("" : apply refuses, target-unverifiable)
    ensemble: str = ""
    config_ensemble: str | None = None  # default: the same ensemble
    ledgers_root: str = "/ledgers"
    cluster: str | None = None
    max_znode_bytes: int = DEFAULT_MAX_ZNODE_BYTES
    batch_rows: int = DEFAULT_BATCH_ROWS
    workers: int | None = 0
    decode_chunk: int = DECODE_CHUNK
    progress: Callable[[ScrapeProgress], None] | None = None
    # stage timings (seconds) filled in for the bench: "read" (the snapshot read and replayed; in one pass its nodes
    # handed to the decoders meanwhile), "write" (the rest: the decoders finish, the last tables, the manifest)
    timings: dict[str, float] = field(default_factory=dict)


def _chroot(value: str | None, flag: str) -> str:
    if not value:
        return ""
    c = "/" + value.strip().strip("/")
    if c == "/":
        return ""
    if "//" in c:
        raise ConfigError(f"{flag} {value!r} is not a ZooKeeper path", hint=f"pass {flag} /pulsar")
    return c


def _ensemble(value: str | None, flag: str) -> str:
    if not value:
        return ""
    hosts = [h.strip() for h in value.split(",") if h.strip()]
    for hp in hosts:
        host, _, port = hp.rpartition(":")
        if not host or not port.isdigit() or "/" in hp or "@" in hp:
            raise ConfigError(
                f"{flag}: {hp!r} is not HOST:PORT",
                hint=f"pass {flag} zk1:2181,zk2:2181 (the chroot goes in --zk-chroot)",
            )
    return ",".join(hosts)


def _keep(chroot: str, ledgers_root: str, *, local: bool, config: bool) -> tuple[set[str], set[str]]:
    """What the manifest reads from the replayed tree besides the walked roots (snapshot paths, the root ``""``):
    the chroot (it must exist), the bookie identity znodes, the load manager's znodes, the clusters' names."""
    keep, children = {chroot}, set()
    if local:
        keep |= {f"{chroot}{ledgers_root}/INSTANCEID", f"{chroot}{ledgers_root}/LAYOUT"}
        keep |= {f"{chroot}/loadbalance/brokers", chroot + pn.ELM_LEADER_PATH, chroot + pn.SERVICE_UNIT_STATE_ROOT}
        children.add(f"{chroot}/loadbalance/brokers")
    if config:
        keep.add(chroot + CLUSTERS)
        children.add(chroot + CLUSTERS)
    return keep, children


def _read(
    cfg: OfflineScrapeConfig,
    chroot: str,
    config_chroot: str,
    ledgers_root: str,
    emitting: tuple[_Emitter, dict[str, str], dict[str, str]] | None = None,
) -> tuple[Streamed, Streamed | None]:
    """Each store's replayed partial tree; with ``emitting`` (the emitter, the local and the configuration
    store's walked roots, as snapshot paths), in one pass: the nodes are emitted as the snapshot is read."""
    if (cfg.zk_data_dir is None) == (cfg.zk_snapshot is None):
        raise ConfigError(
            "pass exactly one of --zk-data-dir DIR and --zk-snapshot FILE",
            hint="pulsar-ops scrape --zk-data-dir /var/lib/zookeeper --out SNAPSHOT",
        )
    separate = cfg.config_zk_data_dir is not None
    keep, children = _keep(chroot, ledgers_root, local=True, config=not separate)
    if not separate:
        k2, c2 = _keep(config_chroot, ledgers_root, local=False, config=True)
        keep |= k2
        children |= c2
    one: OnePass | None = None
    if emitting is not None:
        em, local_roots, config_roots = emitting
        em.cut, em.store = len(chroot), ""
        roots = local_roots if separate else {**config_roots, **local_roots}
        one = OnePass(roots, em.emit, em.emit_many, em.chunk, em.emit_packed, em.cut)
    if cfg.zk_data_dir is not None:
        local = stream_data_dir(cfg.zk_data_dir, keep, children, cfg.zk_data_log_dir, one)
    else:
        assert cfg.zk_snapshot is not None
        local = stream_snapshot_only(cfg.zk_snapshot, keep, children, one)
    config = None
    if cfg.config_zk_data_dir is not None:
        if emitting is not None:
            em.flush()
            em.cut, em.store = len(config_chroot), ""
            one = OnePass(emitting[2], em.emit, em.emit_many, em.chunk, em.emit_packed, em.cut)
        k, c = _keep(config_chroot, ledgers_root, local=False, config=True)
        config = stream_data_dir(cfg.config_zk_data_dir, k, c, None, one)
    return local, config


def _data(tree: DataTree, path: str) -> bytes | None:
    node = tree.get(path)
    return None if node is None else bytes(node[0])


def _load_manager(tree: DataTree, root: str) -> dict[str, Any]:
    """The manifest's ``load_manager`` read from the replayed tree, as :func:`pulsar_ops.scrape.zk.read_load_manager`
    reads it live: the registrations under ``/loadbalance/brokers`` (ephemeral znodes of sessions alive at the
    snapshot's point in time), ``/loadbalance/extension/leader`` and ``/service_unit_state``. Without it an
    extensible-load-manager cluster's snapshot would read as modular, and its absent ``/namespace`` ownership
    znodes as unowned bundles."""
    brokers = tree.get(f"{root}/loadbalance/brokers")
    ids = sorted(brokers[2] or {}) if brokers is not None else []
    regs = {b: pn.registration_class(_data(tree, f"{root}/loadbalance/brokers/{b}")) for b in ids}
    leader = tree.get(root + pn.ELM_LEADER_PATH) is not None
    sus = tree.get(root + pn.SERVICE_UNIT_STATE_ROOT) is not None
    return {
        "kind": pn.load_manager_kind(regs, leader or sus),
        "registrations": regs,
        "extension_leader": leader,
        "service_unit_state": sus,
        "error": None,
    }


class _Emitter:
    """Hands the streamed nodes to the sink a chunk at a time (the store switched when a root of the other store
    begins), drops the chroot from each path, and keeps the newest mtime and the progress count. One list
    append per node: the mtime, the count and the progress are taken per chunk."""

    def __init__(
        self,
        walk_sink: PoolSink | SnapshotSink,
        sink: SnapshotSink,
        progress: Callable[[ScrapeProgress], None] | None,
        t0: float,
        chunk: int = DECODE_CHUNK,
    ) -> None:
        self.walk_sink, self.sink, self.progress, self.t0 = walk_sink, sink, progress, t0
        self.chunk = max(1, chunk)
        self.buf: list[tuple[str, bytes, Any]] = []  # (path, data, client stat)
        self.cut = 0
        self.store = ""
        self.walked = 0
        self.max_mtime = 0

    def flush(self) -> None:
        reads = self.buf
        if not reads:
            return
        self.buf = []
        mtime = max(map(_MTIME, map(_STAT, reads)))
        if mtime > self.max_mtime:
            self.max_mtime = mtime
        before = self.walked
        self.walked += len(reads)
        ws = self.walk_sink
        if isinstance(ws, PoolSink):
            ws.chunk_of(reads)
        else:
            ws.nodes(reads)  # in-process decoding takes a chunk at a time too (the native batch)
        if self.progress is not None and self.walked // PROGRESS_EVERY != before // PROGRESS_EVERY:
            self.progress(
                ScrapeProgress(self.store, self.walked, self.sink.counters.errors, time.monotonic() - self.t0)
            )

    def emit_many(self, store: str, reads: list[tuple[str, bytes, Any]]) -> None:
        """A list of one store's nodes (``load_partial``'s batches): handed over as one chunk."""
        self.flush()
        if store != self.store:
            self.walk_sink.store = self.store = store
        cut = self.cut
        self.buf = [(p[cut:], d, s) for p, d, s in reads] if cut else reads
        self.flush()

    def emit_packed(self, store: str, raw: bytes, count: int, max_mtime: int) -> None:
        """A packed chunk of one store's nodes (the native walk's: ``scrape.packed``'s layout, the chroot already cut
        from the paths, ``max_mtime`` their newest mtime): written to a worker's pipe as it is."""
        self.flush()
        if store != self.store:
            self.walk_sink.store = self.store = store
        if max_mtime > self.max_mtime:
            self.max_mtime = max_mtime
        before = self.walked
        self.walked += count
        ws = self.walk_sink
        if isinstance(ws, PoolSink):
            ws.packed_chunk(raw, count)
        else:
            ws.nodes(raw)
        if self.progress is not None and self.walked // PROGRESS_EVERY != before // PROGRESS_EVERY:
            self.progress(
                ScrapeProgress(self.store, self.walked, self.sink.counters.errors, time.monotonic() - self.t0)
            )

    def emit(self, store: str, path: str, data: bytes, stat: tuple[int, ...]) -> None:
        if store != self.store:
            self.flush()
            self.walk_sink.store = self.store = store
        buf = self.buf
        buf.append((path[self.cut :] if self.cut else path, data, stat))
        if len(buf) >= self.chunk:
            self.flush()


def scrape_data_dir(cfg: OfflineScrapeConfig) -> Manifest:
    """Read the data directory (or snapshot file) and write the snapshot; the manifest last. Like the live
    scrape, the cyclic garbage collector is paused meanwhile.

    The snapshot is read once, its nodes handed to the decoding as they are read (``zkdata.stream``'s one-pass
    mode); a newest snapshot found corrupt only after that began makes the scrape start over in two passes
    (verify, replay, then emit), which falls back to the previous snapshot as ``stream_data_dir`` does."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            return _scrape(cfg, one_pass=True)
        except PartlyEmitted:
            return _scrape(cfg, one_pass=False)  # what was written is gone (``_scrape`` removes it)
    finally:
        if was_enabled:
            gc.enable()


def _scrape(cfg: OfflineScrapeConfig, *, one_pass: bool) -> Manifest:
    out = Path(cfg.out)
    if cfg.zk_data_log_dir is not None and cfg.zk_data_dir is None:
        raise ConfigError(
            "--zk-data-log-dir goes with --zk-data-dir (a snapshot file alone is read without logs)",
            hint="pulsar-ops scrape --zk-data-dir DATADIR --zk-data-log-dir DATALOGDIR --out SNAPSHOT",
        )
    _check_out_dir(out)
    ledgers_root = _ledgers_root(cfg.ledgers_root)
    chroot = _chroot(cfg.chroot, "--zk-chroot")
    config_chroot = _chroot(cfg.config_chroot, "--config-zk-chroot") if cfg.config_chroot is not None else chroot
    if cfg.config_zk_data_dir is None:
        config_chroot = chroot  # one tree: the configuration store's roots sit under the same chroot
    ensemble = _ensemble(cfg.ensemble, "--zk-ensemble")
    config_ensemble = (
        _ensemble(cfg.config_ensemble, "--config-zk-ensemble") if cfg.config_ensemble is not None else ensemble
    )
    started_ms = _now_ms()
    t0 = time.monotonic()
    # The decode workers start before the tree is loaded: a worker forked from a parent holding a large tree is
    # charged that parent's size (ru_maxrss at fork) for nothing. A read failure then removes what was created.
    existed = out.exists()
    writer = SnapshotWriter(out, batch_rows=cfg.batch_rows)
    sink = SnapshotSink(writer, ExtractConfig(ledgers_root=ledgers_root, max_znode_bytes=cfg.max_znode_bytes))
    n_workers = _workers(cfg.workers)
    # Each worker writes parts of batch_rows rows, as one writer does (not the live scrape's halves): at 600K topics
    # the workers' CPU 13.50-14.03 -> 13.23-13.40 s (fewer, larger parts), each worker's peak RSS ~175 -> ~240 MB.
    pool = (
        PoolSink(
            sink, out, n_workers, batch_rows=cfg.batch_rows, chunk=cfg.decode_chunk, worker_batch_rows=cfg.batch_rows
        )
        if n_workers
        else None
    )
    separate = cfg.config_zk_data_dir is not None
    # each store's walked roots, as snapshot paths (the chroot in front) -> the store
    local_roots = {chroot + r: LOCAL for r in roots_for(LOCAL, ledgers_root, separate_config=separate)}
    config_roots = {config_chroot + r: CONFIG for r in roots_for(CONFIG, ledgers_root, separate_config=separate)}
    for store, roots, root in ((CONFIG, config_roots, config_chroot), (LOCAL, local_roots, chroot)):
        for r in roots:
            sink.ensure_scope(store, classify(r[len(root) :], ledgers_root).scope)
    walk_sink: PoolSink | SnapshotSink = pool if pool is not None else sink
    em = _Emitter(walk_sink, sink, cfg.progress, t0, cfg.decode_chunk)
    summaries: list[WorkerSummary] = []
    try:
        if pool is not None:
            pool.start()
        emitting = (em, local_roots, config_roots) if one_pass else None
        local_read, config_read = _read(cfg, chroot, config_chroot, ledgers_root, emitting)
        em.flush()
        local_state = local_read.state
        config_state = config_read.state if config_read is not None else None
        trees: dict[str, tuple[DataTree, str]] = {LOCAL: (local_state.tree, chroot)}
        trees[CONFIG] = (config_state.tree, config_chroot) if config_state is not None else (local_state.tree, chroot)
        for store, (tree, root) in trees.items():
            if root and tree.get(root) is None:
                raise ConfigError(
                    f"the chroot {root} does not exist in the {store} store's tree (zxid {tree.zxid:#x})",
                    hint="check --zk-chroot (the /chroot part of the cluster's --zookeeper HOST:PORT/chroot)",
                )
        cfg.timings["read"] = time.monotonic() - t0
        t1 = time.monotonic()
        passes: list[tuple[Streamed, dict[str, str], int]] = []
        if config_read is not None:
            passes = [(config_read, config_roots, len(config_chroot)), (local_read, local_roots, len(chroot))]
        else:
            passes = [(local_read, {**config_roots, **local_roots}, len(chroot))]
        for streamed, roots, cut in passes:
            if streamed.emitted:
                continue  # one pass: emitted while read
            em.cut, em.store = cut, ""
            with SnapshotFile(streamed.snapshot_file) as snap:
                emit_final(snap, streamed.part, roots, em.emit)
            em.flush()
        max_mtime = em.max_mtime
        summaries = pool.close() if pool is not None else []
    except BaseException:
        if pool is not None:
            pool.terminate()
        # nothing is left behind: the same --out works once the directory is fixed
        shutil.rmtree(out if not existed else out / TABLES_DIR, ignore_errors=True)
        raise
    finally:
        if pool is not None:
            pool.terminate()
    local_tree, config_tree = trees[LOCAL], trees[CONFIG]
    identity: dict[str, Any] = {
        "instance_id": instance_id_from_bytes(_data(local_tree[0], f"{local_tree[1]}{ledgers_root}/INSTANCEID")),
        "clusters": sorted((config_tree[0].get(config_tree[1] + CLUSTERS) or [b"", b"", None])[2] or {}),
    }
    layout = _data(local_tree[0], f"{local_tree[1]}{ledgers_root}/LAYOUT")
    identity["ledger_layout"] = layout_from_bytes(layout)

    def describe(state: DataDirState, root: str, hosts: str) -> dict[str, str]:
        return {"hosts": hosts, "chroot": root, "zk_data_dir": state.directory, "snapshot": state.snapshot}

    # The snapshot's point in time is its clock: the audit ages things by finished_at_ms and the plan records
    # it, so both are the time of the last replayed transaction (or, with none, the newest mtime read: earlier
    # than the true point in time, so everything looks younger -- the safe side of every age margin), never the
    # wall clock of this run (a week-old backup would make every ledger a week older than it was).
    pit = local_state.last_txn_time_ms if local_state.last_txn_time_ms is not None else max_mtime or started_ms
    read_at = {"read_started_at_ms": started_ms, "read_finished_at_ms": _now_ms(), "point_in_time_ms": pit}
    dirs = {LOCAL: {**local_state.to_json(), "chroot": chroot, **read_at}}
    dirs[CONFIG] = {**config_state.to_json(), "chroot": config_chroot} if config_state is not None else dirs[LOCAL]
    manifest = finish_snapshot(
        out,
        writer,
        sink,
        summaries,
        None,
        ledgers_root=ledgers_root,
        cluster_flag=cfg.cluster,
        started_ms=pit,
        finished_ms=pit,
        t0=t0,
        stores={
            LOCAL: describe(local_state, chroot, ensemble),
            CONFIG: describe(config_state, config_chroot, config_ensemble)
            if config_state is not None
            else describe(local_state, chroot, config_ensemble),
        },
        multiread=False,
        server_versions={LOCAL: "data-dir", CONFIG: "data-dir"},
        zookeeper_servers={},
        identity=identity,
        zxid=local_state.zxid,
        last_txn_time_ms=local_state.last_txn_time_ms,
        zk_data_dirs=dirs,
        load_manager=_load_manager(*local_tree),
    )
    cfg.timings["write"] = time.monotonic() - t1
    return manifest


__all__ = ["OfflineScrapeConfig", "scrape_data_dir"]
