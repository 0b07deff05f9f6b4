"""``scrape(config) -> Manifest``: walk both metadata stores into a snapshot directory, manifest last.

The CLI, the demo and the benchmark call this. HTTP scrapers (admin REST, bookie HTTP) plug in through
``ScrapeConfig.extra``: a callable returning ``ExtraTables`` (rows for ``loaded_topics`` / ``bookies`` and
whether each source was scraped completely).
"""

from __future__ import annotations

import gc
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops import __version__
from pulsar_ops.errors import ConfigError
from pulsar_ops.scrape import zk
from pulsar_ops.scrape.classify import CONFIG, LOCAL, MANAGED_LEDGERS, POLICIES, classify, roots_for
from pulsar_ops.scrape.decode_pool import CHUNK as DECODE_CHUNK
from pulsar_ops.scrape.decode_pool import PoolSink, WorkerSummary, merge_summaries
from pulsar_ops.scrape.extract import DEFAULT_MAX_ZNODE_BYTES, ExtractConfig
from pulsar_ops.scrape.sink import SnapshotSink
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.manifest import MANIFEST_NAME, IncompleteScope, Manifest, write_manifest
from pulsar_ops.snapshot.writer import DEFAULT_BATCH_ROWS, SnapshotWriter
from pulsar_ops.zkconn import NO_SECURITY, ZkSecurity


@dataclass(frozen=True)
class ExtraTables:
    """What an HTTP scraper contributes. ``bookies`` rows are merged over the /ledgers/available rows."""

    loaded_topics: Sequence[Mapping[str, Any]] = ()
    bookies: Sequence[Mapping[str, Any]] = ()
    admin_scraped: bool = False
    bookie_scraped: bool = False
    # (source, scope, code, error) of every part that could not be read, e.g. ("admin", "broker-stats", ...)
    incomplete: Sequence[tuple[str, str, str, str]] = ()
    # {bookie_id: {"url": the HTTP URL used or None, "source": "published" | "bookie-url-port" | "none"}}
    bookie_endpoints: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    # (source, scope, rows) of every part read completely, e.g. one broker's loaded-topic listing
    complete: Sequence[tuple[str, str, int]] = ()
    # {bookie_id: {"ledger_dirs": [...], "index_dirs": [...] or None}} from each bookie's server_config
    bookie_dirs: Mapping[str, Mapping[str, list[str] | None]] = field(default_factory=dict)
    # {bookie_id: {GC key: value}} the GC keys set in each bookie's server_config (bookie_conf.gc_keys)
    bookie_gc: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ScrapeProgress:
    store: str
    znodes: int
    errors: int
    seconds: float


@dataclass(frozen=True)
class ScrapeConfig:
    zookeeper: str
    out: Path
    config_zookeeper: str | None = None
    ledgers_root: str = "/ledgers"
    security: ZkSecurity = field(default=NO_SECURITY, repr=False)
    cluster: str | None = None
    batch: int | None = None
    window: int | None = None
    # None: decide per connected server (its srvr version; ZUNIMPLEMENTED turns it off for that server);
    # True: force multiRead (a server without it is an error); False: single reads only
    multiread: bool | None = None
    max_znode_bytes: int = DEFAULT_MAX_ZNODE_BYTES
    batch_rows: int = DEFAULT_BATCH_ROWS
    retry_seconds: float = zk.DEFAULT_RETRY_SECONDS
    connect_timeout: float = 30.0
    # Decode worker processes (0 = decode in the walking process). None: 2 when the machine has >= 2 CPUs.
    workers: int | None = None
    decode_chunk: int = DECODE_CHUNK  # reads per chunk sent to a worker (workers start with the first chunk)
    extra: Callable[[], ExtraTables] | None = None
    progress: Callable[[ScrapeProgress], None] | None = None
    # called inside the walk after each processed read batch with the store's batch count (tests: act mid-walk)
    on_batch: Callable[[int], None] | None = None


ROOT_MISSING = "zookeeper-root-missing"
IDENTITY_READ_TIMEOUT = 10.0  # seconds for each identity read after the walk (scrape/zk.py: bounded reads)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a directory", hint="pass --out NEW_DIR")
    if (out / MANIFEST_NAME).exists():
        raise ConfigError(
            f"--out {out} already holds a snapshot", hint="pass --out NEW_DIR (snapshots are never overwritten)"
        )
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(
            f"--out {out} is not empty", hint=f"pass --out NEW_DIR, or remove the unfinished snapshot {out}"
        )


def _ledgers_root(value: str) -> str:
    root = "/" + value.strip().strip("/")
    if root == "/":
        raise ConfigError("--ledgers-root must not be /", hint="pass --ledgers-root /ledgers")
    return root


def _workers(requested: int | None) -> int:
    if requested is not None:
        if requested < 0:
            raise ConfigError("--workers must be >= 0", hint="pass --workers 0 to decode in-process")
        return requested
    return 2 if (os.cpu_count() or 1) >= 2 else 0


def _pick_cluster(flag: str | None, seen: list[str]) -> str | None:
    if flag:
        return flag
    real = sorted({c for c in seen if c != "global"})
    return real[0] if len(real) == 1 else None


def _guard_missing_roots(sink: SnapshotSink, ledgers_root: str) -> None:
    """A missing root is normally just absence, except where absence would make everything else look leaked:
    ledgers without /managed-ledgers (every ledger an orphan) or managed ledgers without /admin/policies
    (every namespace a leak) almost always mean a wrong --zookeeper / --config-zookeeper / chroot."""
    if sink.scope_znodes(LOCAL, MANAGED_LEDGERS) == 0 and sink.scope_znodes(LOCAL, ledgers_root) > 1:
        sink.mark_incomplete(
            LOCAL,
            MANAGED_LEDGERS,
            ROOT_MISSING,
            f"{MANAGED_LEDGERS} does not exist while {ledgers_root} holds znodes: wrong --zookeeper or chroot?",
        )
    ml_znodes = sum(st.znodes for (store, scope), st in sink.scopes.items() if scope.startswith(MANAGED_LEDGERS))
    if sink.scope_znodes(CONFIG, POLICIES) == 0 and ml_znodes > 1:
        sink.mark_incomplete(
            CONFIG,
            POLICIES,
            ROOT_MISSING,
            f"{POLICIES} does not exist while {MANAGED_LEDGERS} holds znodes: wrong --config-zookeeper?",
        )


def scrape(config: ScrapeConfig) -> Manifest:
    """Walk the stores into ``config.out`` and write the manifest last. Incomplete scopes do not raise: the
    manifest then says ``"complete": false`` and lists them (ZooKeeper, admin and bookie scopes alike), and the
    CLI exits non-zero.

    The cyclic garbage collector is paused while scraping (the rows are acyclic tuples and dicts; collecting
    the row buffers over and over cost a third of the CPU) and restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _scrape(config)
    finally:
        if was_enabled:
            gc.enable()


def _scrape(config: ScrapeConfig) -> Manifest:
    out = Path(config.out)
    _check_out_dir(out)
    ledgers_root = _ledgers_root(config.ledgers_root)
    local_t = zk.ZkTarget.parse(config.zookeeper, flag="--zookeeper")
    config_t = (
        zk.ZkTarget.parse(config.config_zookeeper, flag="--config-zookeeper") if config.config_zookeeper else local_t
    )
    separate = config_t != local_t
    started_ms = _now_ms()
    t0 = time.monotonic()

    clients: dict[str, Any] = {}
    pool: PoolSink | None = None
    summaries: list[WorkerSummary] = []
    try:
        clients[LOCAL] = zk.connect(local_t, config.security, timeout=config.connect_timeout)
        clients[CONFIG] = (
            zk.connect(config_t, config.security, timeout=config.connect_timeout) if separate else clients[LOCAL]
        )
        writer = SnapshotWriter(out, batch_rows=config.batch_rows)
        sink = SnapshotSink(writer, ExtractConfig(ledgers_root=ledgers_root, max_znode_bytes=config.max_znode_bytes))
        n_workers = _workers(config.workers)
        pool = (
            PoolSink(sink, out, n_workers, batch_rows=config.batch_rows, chunk=config.decode_chunk)
            if n_workers
            else None
        )
        walk_sink: PoolSink | SnapshotSink = pool if pool is not None else sink
        walked = 0
        versions: dict[str, str] = {}
        multiread_used: dict[str, bool] = {}
        servers: dict[str, dict[str, dict[str, Any]]] = {}
        known: dict[int, dict[str, zk.ServerInfo]] = {}  # per client: what each server can do
        gave_up: set[int] = set()  # clients whose walk gave up: no connection within retry_seconds
        for store, target in ((CONFIG, config_t), (LOCAL, local_t)):
            client = clients[store]
            roots = roots_for(store, ledgers_root, separate_config=separate)
            walk_sink.store = store
            for r in roots:
                sink.ensure_scope(store, classify(r, ledgers_root).scope)

            def _progress(n: int, store: str = store, base: int = walked) -> None:
                if config.progress is not None:
                    config.progress(ScrapeProgress(store, base + n, sink.counters.errors, time.monotonic() - t0))

            # multiRead is decided per connected server inside the walk (mixed ensembles, reconnects)
            walker = zk.ZkWalker(
                client,
                multiread=config.multiread,
                batch=config.batch,
                window=config.window,
                retry_seconds=config.retry_seconds,
                progress=_progress,
                on_batch=config.on_batch,
                known=known.setdefault(id(client), {}),
            )
            stats = walker.walk(roots, walk_sink)
            if stats.aborted:
                gave_up.add(id(client))
            walked += stats.znodes
            seen = sorted({i.version for i in walker.servers.values() if i.version != "unknown"})
            versions[store] = ",".join(seen) or (zk.server_version(target) or "unknown")
            multiread_used[store] = stats.single_batches == 0 and stats.multiread_batches > 0
            servers[store] = {name: info.to_json() for name, info in sorted(walker.servers.items())}
        # A client whose walk gave up and is still not connected fails these reads at once (unread: unknown, as
        # when they time out) instead of queueing each one for its 10 s bound.
        bound = {s: 0.0 if id(c) in gave_up and not c.connected else IDENTITY_READ_TIMEOUT for s, c in clients.items()}
        identity: dict[str, Any] = {
            "instance_id": zk.read_instance_id(clients[LOCAL], ledgers_root, timeout=bound[LOCAL]),
            "clusters": zk.cluster_names(clients[CONFIG], timeout=bound[CONFIG]),
        }
        load_manager = zk.read_load_manager(clients[LOCAL], timeout=bound[LOCAL])
        layout = zk.read_ledger_layout(clients[LOCAL], ledgers_root, timeout=bound[LOCAL])
        if layout is not None:
            identity["ledger_layout"] = layout
        summaries = pool.close() if pool is not None else []
    finally:
        for c in {id(c): c for c in clients.values()}.values():
            zk.close(c)
        if pool is not None:
            pool.terminate()
    return finish_snapshot(
        out,
        writer,
        sink,
        summaries,
        config.extra,
        ledgers_root=ledgers_root,
        cluster_flag=config.cluster,
        started_ms=started_ms,
        t0=t0,
        stores={LOCAL: local_t.describe(), CONFIG: config_t.describe()},
        multiread=all(multiread_used.values()),
        server_versions=versions,
        zookeeper_servers=servers,
        identity=identity,
        load_manager=load_manager,
    )


def finish_snapshot(
    out: Path,
    writer: SnapshotWriter,
    sink: SnapshotSink,
    summaries: list[WorkerSummary],
    extra_fn: Callable[[], ExtraTables] | None,
    *,
    ledgers_root: str,
    cluster_flag: str | None,
    started_ms: int,
    t0: float,
    stores: dict[str, dict[str, str]],
    multiread: bool,
    server_versions: dict[str, str],
    zookeeper_servers: dict[str, dict[str, dict[str, Any]]],
    identity: dict[str, Any],
    zxid: int | None = None,
    last_txn_time_ms: int | None = None,
    zk_data_dirs: dict[str, dict[str, Any]] | None = None,
    finished_ms: int | None = None,
    load_manager: dict[str, Any],
) -> Manifest:
    """The end of every scrape, live or from a data directory: merge the decode workers' summaries, guard the
    missing roots, add the HTTP tables, write the scopes table, close the writer, and write the manifest last."""
    merge_summaries(sink, summaries)
    _guard_missing_roots(sink, ledgers_root)

    extra = extra_fn() if extra_fn is not None else ExtraTables()
    for row in extra.loaded_topics:
        writer.add("loaded_topics", row)
    bookies = dict(sink.bookies)
    for row in extra.bookies:
        bookies[str(row["bookie_id"])] = {**bookies.get(str(row["bookie_id"]), {}), **row}
    for _bid, row in sorted(bookies.items()):
        writer.add("bookies", row)
    scope_rows = sink.scope_rows()
    for source, scope, rows in extra.complete:
        scope_rows.append(
            {"store": source, "scope": scope, "complete": True, "znodes": rows, "error_code": None, "error": None}
        )
    for source, scope, code, error in extra.incomplete:
        scope_rows.append(
            {"store": source, "scope": scope, "complete": False, "znodes": 0, "error_code": code, "error": error}
        )
    for row in scope_rows:
        writer.add("scopes", row)
    row_counts = writer.close()
    for s in summaries:
        for table, n in s.row_counts.items():
            row_counts[table] = row_counts.get(table, 0) + n
    seconds = time.monotonic() - t0
    incomplete = tuple(
        IncompleteScope(r["store"], r["scope"], r["error_code"] or "", r["error"] or "")
        for r in scope_rows
        if not r["complete"]
    )
    manifest = Manifest(
        snapshot_id=str(uuid.uuid4()),
        cluster=_pick_cluster(cluster_flag, sink.clusters),
        tool_version=__version__,
        schema_version=schema.SCHEMA_VERSION,
        complete=not incomplete,
        finished=True,
        started_at_ms=started_ms,
        finished_at_ms=finished_ms if finished_ms is not None else _now_ms(),
        zxid_range={
            s: {"min": sink.zxid[s][0], "max": sink.zxid[s][1]} if s in sink.zxid else {"min": None, "max": None}
            for s in (LOCAL, CONFIG)
        },
        stores=stores,
        ledgers_root=ledgers_root,
        row_counts=row_counts,
        incomplete_scopes=incomplete,
        errors_count=sink.counters.errors,
        admin_scraped=extra.admin_scraped,
        bookie_scraped=extra.bookie_scraped,
        bookie_endpoints={k: dict(v) for k, v in sorted(extra.bookie_endpoints.items())},
        bookie_dirs={k: dict(v) for k, v in sorted(extra.bookie_dirs.items())},
        bookie_gc={k: dict(v) for k, v in sorted(extra.bookie_gc.items())},
        multiread=multiread,
        server_versions=server_versions,
        zookeeper_servers=zookeeper_servers,
        znodes_per_second=round(sink.counters.znodes / seconds, 1) if seconds > 0 else None,
        identity=identity,
        load_manager=load_manager,
        zxid=zxid,
        last_txn_time_ms=last_txn_time_ms,
        zk_data_dirs=zk_data_dirs or {},
    )
    write_manifest(out, manifest)
    return manifest
