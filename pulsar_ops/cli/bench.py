"""`pulsar-ops bench ...` command group (being built)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


@app.command("model")
def bench_model(
    cache_topics: int = typer.Option(200, "--cache-topics", help="Topics in the cache workload."),
    cache_seconds: float = typer.Option(5.0, "--cache-seconds", help="Simulated seconds of cache workload."),
    block_entries: int = typer.Option(10, "--block-entries", help="Entries per simulated cache block."),
    gc_logs: int = typer.Option(10_000, "--gc-logs", help="Entry logs in the GC model benchmark."),
    impact_ledgers: int = typer.Option(100_000, "--impact-ledgers", help="Ledgers in the plan-impact benchmark."),
    as_json: bool = typer.Option(False, "--json", help="Write the figures as JSON to stdout."),
) -> None:
    """Reference models: simulated cache operations/s, GC model time for N entry logs, plan-impact time."""
    from pulsar_ops.bench.model import run
    from pulsar_ops.cli.common import emit_json, guarded, info

    def _go(as_json: bool = as_json) -> None:
        doc = run(
            cache_topics=cache_topics,
            cache_seconds=cache_seconds,
            block_entries=block_entries,
            gc_logs=gc_logs,
            impact_ledgers=impact_ledgers,
        )
        m = doc["machine"]
        info(f"machine: {m['cpus']} cpu(s), load {m['load_1min']} (shared machine: figures are lower bounds)")
        for p in ("legacy", "pip430"):
            c = doc["cache"][p]
            info(
                f"cache {p:7s}: {c['entry_ops_per_s']:>12,} simulated entry ops/s "
                f"({c['block_ops_per_s']:,} block ops/s, {block_entries} entries/block), hit rate {c['hit_rate']:.1%}"
            )
        g = doc["gc"]
        info(f"gc model: {g['entry_logs']:,} entry logs in {g['wall_s']:.3f} s ({g['gc_runs']} GC runs)")
        i = doc["impact"]
        info(
            f"plan impact: {i['ledgers']:,} ledgers ({i['deleted']:,} deleted, {i['bookies']} bookies) "
            f"in {i['wall_s']:.3f} s"
        )
        info(f"nack model: 10,000 nacks/s x 1 h in {doc['nack']['wall_s']:.3f} s")
        if as_json:
            emit_json(doc)

    guarded(_go)(as_json=as_json)


def _data_dir_bench(
    directory: Path, topics: int, seed: int, batch: int | None, workers: int | None, *, as_json: bool
) -> None:
    """`bench scrape --zk-data-dir --keep-data-dir DIR`: offline vs live, side by side."""
    from pulsar_ops.bench.scrape import run_data_dir
    from pulsar_ops.cli.common import emit_json, info

    # the server holds the tree in its heap: ~1.3 KB per znode (7 znodes a topic), 3 GB at least
    heap_mb = max(3072, topics // 75)
    doc = run_data_dir(directory, topics=topics, seed=seed, batch=batch, workers=workers, heap_mb=heap_mb, info=info)
    m = doc["machine"]
    info(f"machine: {m['cpus']} cpu(s), load {m['load_1min']} (shared machine: figures are lower bounds)")
    o, s = doc["offline"], doc["scraper"]
    info(f"{'':9s} {'znodes':>10s} {'wall s':>8s} {'znodes/s':>9s} {'cpu s':>7s} {'+workers':>8s} {'peak RSS':>9s}")
    for label, c in (("offline", o), ("live", s)):
        info(
            f"{label:9s} {c['znodes']:>10,} {c['seconds']:>8.1f} {c['znodes_per_s']:>9,} {c['cpu_seconds']:>7.1f} "
            f"{c['workers_cpu_seconds']:>8.1f} {c['peak_rss_mb']:>6,.0f} MB  (load after: {c['load_1min_after']})"
        )
    info(
        f"offline: snapshot read once and handed to the decoders {o['read_seconds']:.1f} s, then the last tables "
        f"{o['write_seconds']:.1f} s "
        f"({o['snapshot']} + {o['replayed_txns']} txns, {o['data_dir_bytes'] / 2**20:,.0f} MB on disk; peak RSS = "
        f"process {o['parent_peak_rss_mb']:,.0f} MB + {o['workers']} x largest worker "
        f"{o['worker_peak_rss_mb']:,.0f} MB)"
    )
    diff = doc["row_count_differences"]
    info(f"row counts {'equal, table by table' if doc['row_counts_equal'] else f'DIFFER: {diff}'}")
    info("targets: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in doc["targets"].items()))
    if as_json:
        emit_json(doc)


@app.command("scrape")
def bench_scrape(
    topics: int = typer.Option(100_000, "--topics", min=1, help="Topics to seed into the embedded ZooKeeper."),
    seed: int = typer.Option(1, "--seed", help="Seeder random seed."),
    batch: int = typer.Option(None, "--batch", min=1, help="Reads per multiRead batch (default: the scraper's)."),
    workers: int = typer.Option(None, "--workers", min=0, help="Decode worker processes (default: the scraper's)."),
    naive_max_seconds: float = typer.Option(
        120.0, "--naive-max-seconds", min=1.0, help="Stop the naive walk after this long (rate over what it read)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Write the figures as JSON to stdout."),
    zk_data_dir: bool = typer.Option(
        False,
        "--zk-data-dir",
        help="Then stop the server and `scrape --zk-data-dir` its data directory (a snapshot plus logs): figures "
        "side by side with the live scrape.",
    ),
    keep_data_dir: Path | None = typer.Option(
        None,
        "--keep-data-dir",
        help="With --zk-data-dir: the server's directory, built once (seeded, snapshotted, stopped) and reused by "
        "later runs of the same --topics/--seed; the offline and the live scrape of it side by side (no naive walk). "
        "Each live run's server start snapshots the tree; the 3 newest snapshots and their logs are kept.",
    ),
) -> None:
    """Scraper (multiRead, pipelined) vs a naive synchronous kazoo walk of the same seeded tree; peak RSS."""
    from pulsar_ops.bench.scrape import run
    from pulsar_ops.cli.common import emit_json, guarded, info

    def _go(as_json: bool = as_json) -> None:
        if keep_data_dir is not None:
            _data_dir_bench(keep_data_dir, topics, seed, batch, workers, as_json=as_json)
            return
        doc = run(
            topics=topics,
            seed=seed,
            batch=batch,
            workers=workers,
            naive_max_seconds=naive_max_seconds,
            info=info,
            zk_data_dir=zk_data_dir,
        )
        m = doc["machine"]
        info(f"machine: {m['cpus']} cpu(s), load {m['load_1min']} (shared machine: figures are lower bounds)")
        s, n = doc["scraper"], doc["naive"]
        info(
            f"scraper : {s['znodes']:>9,} znodes in {s['seconds']:8.2f} s = {s['znodes_per_s']:>8,} znodes/s "
            f"(multiRead {'on' if s['multiread'] else 'off'}, {s['workers']} decode workers, decoders {s['native']}, "
            f"cpu {s['cpu_seconds']:.1f} s + workers {s['workers_cpu_seconds']:.1f} s)"
        )
        info(
            f"peak RSS: {s['peak_rss_mb']:,.0f} MB (scrape process {s['parent_peak_rss_mb']:,.0f} MB + "
            f"{s['workers']} x largest worker {s['worker_peak_rss_mb']:,.0f} MB; ru_maxrss, child process)"
        )
        w = doc["walk_only"]
        info(
            f"walk only: {w['znodes']:>8,} znodes in {w['seconds']:8.2f} s = {w['znodes_per_s']:>8,} znodes/s "
            "(multiRead reads without decoding: the read path)"
        )
        sampled = "" if n["finished"] else " (stopped early: rate over the znodes read)"
        info(f"naive   : {n['znodes']:>9,} znodes in {n['seconds']:8.2f} s = {n['znodes_per_s']:>8,} znodes/s{sampled}")
        o = doc.get("offline")
        if o is not None:
            info(
                f"data dir: {o['znodes']:>9,} znodes in {o['seconds']:8.2f} s = {o['znodes_per_s']:>8,} znodes/s "
                f"(read {o['read_seconds']:.2f} s = {o['read_znodes_per_s']:,} znodes/s: {o['snapshot']} + "
                f"{o['replayed_txns']} txns, {o['data_dir_bytes'] / 2**20:,.0f} MB; tables {o['write_seconds']:.2f} s "
                f"with {o['workers']} decode workers) vs live {s['seconds']:.2f} s"
            )
            info(
                f"data dir peak RSS: {o['peak_rss_mb']:,.0f} MB (process {o['parent_peak_rss_mb']:,.0f} MB + "
                f"{o['workers']} x largest worker {o['worker_peak_rss_mb']:,.0f} MB) vs live {s['peak_rss_mb']:,.0f} MB"
            )
        info(
            f"ratio   : {doc['ratio']}x; targets: "
            + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in doc["targets"].items())
        )
        if as_json:
            emit_json(doc)

    guarded(_go)(as_json=as_json)


def stage_lines(r: dict[str, Any]) -> list[str]:
    """Per stage (metadata audit, storage stage): Spark cold, Spark warm (the last repeat), DuckDB, the ratios,
    and Spark's stages, shuffles, generated classes and JIT seconds of the cold run."""
    audits = r.get("audits") or []
    sc = r.get("scans")
    if not audits or not sc:
        return []

    def figs(stage: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
        cold = audits[0][stage]
        warm = audits[-1][stage] if len(audits) > 1 else None
        return cold, warm

    out = [
        f"  {sc['bookies']} bookie scans, {sc['pairs'] or '-':,} (ledger, log) pairs"
        if isinstance(sc.get("pairs"), int)
        else f"  {sc['bookies']} bookie scans",
        f"  {'stage':<9} {'spark cold s':>12} {'warm s':>7} {'duckdb s':>8} {'cold/duck':>9} {'warm/duck':>9} "
        f"{'stages':>6} {'shuffles':>8} {'classes':>7} {'JIT s':>6} {'task CPU s':>10} {'JVM CPU s':>9}",
    ]
    for stage, duck in (("metadata", r["duckdb_s"]), ("storage", sc["storage_duckdb_s"])):
        cold, warm = figs(stage)
        jvm = cold.get("jvm") or {}

        def ratio(x: float | None, duck: float = duck) -> str:
            return f"{x / duck:.2f}" if x is not None and duck else "-"

        warm_s = warm["wall_s"] if warm else None
        out.append(
            f"  {stage:<9} {cold['wall_s']:>12} {warm_s if warm_s is not None else '-':>7} {duck:>8} "
            f"{ratio(cold['wall_s']):>9} {ratio(warm_s):>9} {cold.get('stages') or '-':>6} "
            f"{cold.get('shuffles') if cold.get('shuffles') is not None else '-':>8} "
            f"{jvm.get('codegen_classes') if jvm.get('codegen_classes') is not None else '-':>7} "
            f"{jvm.get('jit_s') if jvm.get('jit_s') is not None else '-':>6} {cold.get('task_cpu_s') or '-':>10} "
            f"{jvm.get('cpu_s') if jvm.get('cpu_s') is not None else '-':>9}"
        )
    storage_cold = audits[0]["storage"]["wall_s"]
    out.append(
        f"  storage/metadata (cold) {sc['ratio_storage_over_metadata']}, storage spark/duckdb (cold) "
        f"{sc['ratio_storage_spark_over_duckdb']} (targets: <= 0.5 and <= 3); storage findings "
        f"{'equal' if sc['same_counts'] else 'DIFFER'}: spark {sc['findings_spark']}"
        + ("" if sc["same_counts"] else f" duckdb {sc['findings_duckdb']}")
    )
    queries = sc.get("queries") or []
    if queries:
        out.append(
            "  storage by query (cold; Spark task CPU s / DuckDB s; the other driver thread's tasks run beside a "
            "query's stages, so task CPU, not their seconds, is its cost): "
            + ", ".join(
                f"{q['query']} {q['spark_task_cpu_s'] if q['spark_task_cpu_s'] is not None else '-'}/{q['duckdb_s']}"
                for q in queries
            )
        )
    out.append(
        "  (storage: the storage detections' and the capacity view's steps of an audit over only them, "
        f"{storage_cold} s; its JVM figures count that audit's intermediates too)"
    )
    return out


@app.command("audit")
def bench_audit(
    topics: str = typer.Option(
        "10000",
        "--topics",
        help="Healthy topics to seed and scrape (defects come on top); a comma list runs each size, e.g. "
        "10000,100000,600000.",
    ),
    snapshot: Path | None = typer.Option(None, "--snapshot", help="Audit this snapshot instead of seeding one."),
    master: str = typer.Option("local[*]", "--master", help="Spark master."),
    as_json: bool = typer.Option(False, "--json", help="Write the figures as JSON to stdout."),
    keep: bool = typer.Option(
        False, "--keep", help="Keep the seeded snapshots and audit outputs (their directory is printed)."
    ),
    repeat: int = typer.Option(
        1,
        "--repeat",
        min=1,
        help="Audit each snapshot this many times in the same Spark session: the first is the figure, the others "
        "show what a driver that outlives one audit takes.",
    ),
    scans: bool = typer.Option(
        False,
        "--scans",
        help="Also seed the six bookies' directories, scan them, and time the storage stage (storage detections "
        "and capacity view) apart from the metadata audit, on Spark and DuckDB (seeding takes about twice as long).",
    ),
    bookie_scan: list[Path] = typer.Option(
        [], "--bookie-scan", help="With --snapshot: a scan-bookie output of that cluster (repeatable)."
    ),
    now_ms: int | None = typer.Option(
        None, "--now-ms", help="With --snapshot: the audit's clock (default: the snapshot's finished_at_ms)."
    ),
    spark_conf: list[str] = typer.Option(
        [],
        "--spark-conf",
        help="A Spark setting KEY=VALUE (repeatable), over the defaults sized from the machine and the snapshot, "
        "as `audit --spark-conf` sets it: to time a setting against the defaults.",
    ),
) -> None:
    """Spark audit wall time vs the same SQL on DuckDB over the same Parquet, and the ratio."""
    from pulsar_ops.audit import jvm_metrics, stage_metrics
    from pulsar_ops.bench.audit import run
    from pulsar_ops.cli.common import emit_json, guarded, info

    def _go(as_json: bool = as_json) -> None:
        from pulsar_ops.errors import ConfigError

        try:
            sizes = [int(x) for x in topics.replace("_", "").split(",") if x.strip()]
        except ValueError:
            raise ConfigError(
                f"--topics {topics!r} is not a comma list of integers", hint="e.g. --topics 10000,100000"
            ) from None
        if not sizes or min(sizes) < 1:
            raise ConfigError(f"--topics {topics!r}: sizes must be >= 1", hint="e.g. --topics 10000,100000")
        from pulsar_ops.audit.sizing import parse_spark_conf

        given = parse_spark_conf(spark_conf)  # before seeding anything or starting a JVM
        if (bookie_scan or now_ms is not None) and snapshot is None:
            raise ConfigError(
                "--bookie-scan and --now-ms go with --snapshot",
                hint="pass --snapshot DIR with them, or --scans to seed and scan bookies",
            )
        doc = run(
            topics=sizes,
            snapshot=snapshot,
            master=master,
            info=info,
            keep=keep,
            repeat=repeat,
            scans=scans,
            bookie_scans=list(bookie_scan),
            now_ms=now_ms,
            spark_conf=given,
        )
        if doc.get("work_dir"):
            info(f"snapshots and audit outputs kept in {doc['work_dir']}")
        info(f"machine: {doc['cpus']} cpu(s), load {doc['load_1min']} (shared machine: figures are upper bounds)")
        info(f"spark ({master}): session start {doc['spark_startup_s']} s with {doc['spark_conf']}")
        info(
            f"{'topics':>8} {'znodes':>10} {'spark s':>8} {'duckdb s':>8} {'ratio':>6} {'spark s/Mz':>10} "
            f"{'duck s/Mz':>9} {'peak MB':>8} same"
        )

        def jvm_line(jvm: dict[str, Any]) -> str:
            line = jvm_metrics.summary(jvm, jvm.get("wall_s") or 0.0, doc["cpus"] or 1)
            cache = jvm.get("class_cache")  # audit/class_cache.py: used, building or off
            return f"{line}, class-data archive {cache}" if cache else line

        for r in doc["runs"]:
            shown = {
                k: "-" if r[k] is None else r[k]
                for k in ("ratio_spark_over_duckdb", "spark_s_per_million_znodes", "duckdb_s_per_million_znodes")
            }
            info(  # a figure that cannot be computed (no znodes, DuckDB in 0 s) prints as '-'
                f"{r['topics'] or '-':>8} {r['znodes']:>10,} {r['spark_audit_s']:>8} {r['duckdb_s']:>8} "
                f"{shown['ratio_spark_over_duckdb']:>6} {shown['spark_s_per_million_znodes']:>10} "
                f"{shown['duckdb_s_per_million_znodes']:>9} {r['driver_peak_rss_mb'] or '-':>8} {r['same_counts']}"
            )
            if r.get("jvm"):
                info(f"  {jvm_line(r['jvm'])}")
            for line in stage_metrics.table(r.get("stages") or {}):  # Spark's own metrics, per audit step
                info(f"  {line}")
            for i, a in enumerate(r.get("again") or [], start=2):
                same = "same findings" if a["same_findings"] else "FINDINGS DIFFER"
                peak = a.get("driver_peak_rss_mb") or "-"
                info(f"  audit {i} in the same session: {a['spark_audit_s']} s, {same}, driver peak {peak} MB so far")
                if a.get("jvm"):
                    info(f"    {jvm_line(a['jvm'])}")
            if not r["same_counts"]:
                info(f"  spark {r['findings_spark']}\n  duckdb {r['findings_duckdb']}")
            for line in stage_lines(r):
                info(line)
        if as_json:
            emit_json(doc)

    guarded(_go)(as_json=as_json)


@app.command("scan-bookie")
def bench_scan_bookie(
    logs: int = typer.Option(2000, "--logs", min=1, help="Entry logs in the generated bookie."),
    ledgers: int = typer.Option(200_000, "--ledgers", min=1, help="Distinct ledgers across the logs."),
    ledgers_per_log: int = typer.Option(1000, "--ledgers-per-log", min=1, help="Ledgers in each log's map."),
    log_mb: int = typer.Option(1024, "--log-mb", min=1, help="Logical size of each (sparse) log in MiB."),
    dense_mb: int = typer.Option(
        256, "--dense-mb", min=0, help="Size of one dense active log scanned record by record (0: skip)."
    ),
    big_map_mb: int = typer.Option(
        1024, "--big-map-mb", min=0, help="Size of one log's ledgers map, scanned in a child process (0: skip)."
    ),
    dense_small_mb: int = typer.Option(
        1024, "--dense-small-mb", min=0, help="Size of one active log of 16-byte records, in a child (0: skip)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Write the figures as JSON to stdout."),
) -> None:
    """scan-bookie on a generated bookie: pairs/s, logs/s and MB/s by map and by scanning, peak RSS."""
    from pulsar_ops.bench.scan_bookie import run
    from pulsar_ops.cli.common import emit_json, guarded, info

    def _go(as_json: bool = as_json) -> None:
        doc = run(
            logs=logs,
            ledgers=ledgers,
            ledgers_per_log=ledgers_per_log,
            log_mb=log_mb,
            dense_mb=dense_mb,
            big_map_mb=big_map_mb,
            dense_small_mb=dense_small_mb,
            info=info,
        )
        m = doc["machine"]
        info(f"machine: {m['cpus']} cpu(s), load {m['load_1min']} (shared machine: figures are lower bounds)")
        g = doc["generated"]
        info(
            f"bookie: {g['logs']:,} logs x {g['log_mb']:,} MiB logical ({g['logical_bytes'] / 2**40:.2f} TiB), "
            f"{g['ledgers']:,} ledgers, {g['pairs']:,} (ledger, log) pairs, {g['disk_bytes'] / 1e6:,.0f} MB on disk, "
            f"generated in {g['seconds']} s"
        )
        info(
            f"{'path':<8} {'seconds':>8} {'pairs/s':>12} {'logs/s':>9} {'MB read':>9} {'MB/s':>9} "
            f"{'logical GB/s':>13} {'cpu s':>7} {'pairs/cpu-s':>12}"
        )
        for name in ("map_path", "scan_path"):
            p = doc[name]
            info(
                f"{name.split('_')[0]:<8} {p['seconds']:>8} {p['pairs_per_s']:>12,} {p['logs_per_s']:>9,} "
                f"{p['read_mb']:>9,} {p['mb_per_s']:>9,} {p['logical_gb_per_s']:>13,} {p['cpu_seconds']:>7} "
                f"{p['pairs_per_cpu_s']:>12,}"
            )
        dense = doc["dense_scan"]
        if dense:
            info(
                f"dense active log, scanned: {dense['log_mb']:,} MiB, {dense['entries']:,} entries of "
                f"{dense['entry_bytes']:,} B in {dense['seconds']} s = {dense['mb_per_s']:,} MB/s "
                f"({dense['entries_per_s']:,} entries/s; {dense['mb_per_cpu_s']:,} MB per CPU-s)"
            )
        big = doc["big_map"]
        if big:
            info(
                f"big map ({big['map_mb']:,} MiB, {big['pairs']:,} pairs), scan-bookie child: {big['seconds']} s = "
                f"{big['pairs_per_s']:,} pairs/s, peak RSS {big['peak_rss_mb']:,} MB"
            )
        small = doc["dense_small"]
        if small:
            info(
                f"dense 16-byte records ({small['log_mb']:,} MiB, {small['entries']:,} entries, "
                f"{small['ledgers']:,} ledgers), scan-bookie child: {small['seconds']} s = "
                f"{small['entries_per_s']:,} entries/s, {small['mb_per_s']:,} MB/s, "
                f"peak RSS {small['peak_rss_mb']:,} MB"
            )
        info(f"same pairs by map and by scan: {doc['same_pairs']}; peak RSS {doc['peak_rss_mb']:,} MB (ru_maxrss)")
        info("targets: " + ", ".join(f"{k} {'met' if v else 'MISSED'}" for k, v in doc["targets"].items()))
        if as_json:
            emit_json(doc)

    guarded(_go)(as_json=as_json)


@app.command("synth-scans")
def bench_synth_scans(
    snapshot: Path = typer.Option(..., "--snapshot", help="The snapshot whose ledgers the scans hold."),
    out: Path = typer.Option(..., "--out", help="Directory to write one scan per bookie into (out/<bookie>)."),
    bookies: int | None = typer.Option(
        None, "--bookies", min=1, help="Scan only the first N bookies by id (default: every bookie of bk_ledgers)."
    ),
    missing: int = typer.Option(3, "--missing", min=0, help="Closed ledgers left out of each bookie (planted)."),
    as_json: bool = typer.Option(False, "--json", help="Write what was planted as JSON to stdout."),
) -> None:
    """SYNTHETIC bookie scans of a snapshot, for `bench audit --snapshot S --bookie-scan ...` at scale.

    Writes what `scan-bookie` of each bookie holding the snapshot's ledgers would have written (same tables and
    manifest, marked synthetic), with planted unreclaimed ledgers, stale entry logs and missing ledger data,
    without seeding or reading any bookie directory. Never a substitute for `scan-bookie` on a real cluster.
    """
    from pulsar_ops.bench.synth_scans import synthesize
    from pulsar_ops.cli.common import emit_json, guarded, info

    def _go(as_json: bool = as_json) -> None:
        r = synthesize(snapshot, out, bookies, missing=missing)
        info(
            f"synthetic scans of {len(r.scans)} bookie(s): {r.pairs:,} (ledger, log) pairs in {r.logs:,} entry logs, "
            f"written in {r.seconds} s under {out}"
        )
        info("audit them with: pulsar-ops bench audit --snapshot " + f"{snapshot} " + " ".join(
            f"--bookie-scan {s}" for s in r.scans))  # fmt: skip
        if as_json:
            emit_json({"scans": [str(s) for s in r.scans], "pairs": r.pairs, "logs": r.logs, "seconds": r.seconds,
                       "planted": r.planted.to_json()})  # fmt: skip

    guarded(_go)(as_json=as_json)
