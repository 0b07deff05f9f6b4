"""`pulsar-ops bench ...` command group (being built)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True)


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

    def _go() -> None:
        doc = run(cache_topics=cache_topics, cache_seconds=cache_seconds, block_entries=block_entries,
                  gc_logs=gc_logs, impact_ledgers=impact_ledgers)
        m = doc["machine"]
        info(f"machine: {m['cpus']} cpu(s), load {m['load_1min']} (shared machine: figures are lower bounds)")
        for p in ("legacy", "pip430"):
            c = doc["cache"][p]
            info(f"cache {p:7s}: {c['entry_ops_per_s']:>12,} simulated entry ops/s "
                 f"({c['block_ops_per_s']:,} block ops/s, {block_entries} entries/block), hit rate {c['hit_rate']:.1%}")
        g = doc["gc"]
        info(f"gc model: {g['entry_logs']:,} entry logs in {g['wall_s']:.3f} s ({g['gc_runs']} GC runs)")
        i = doc["impact"]
        info(f"plan impact: {i['ledgers']:,} ledgers ({i['deleted']:,} deleted, {i['bookies']} bookies) "
             f"in {i['wall_s']:.3f} s")
        info(f"nack model: 10,000 nacks/s x 1 h in {doc['nack']['wall_s']:.3f} s")
        if as_json:
            emit_json(doc)

    guarded(_go)()
