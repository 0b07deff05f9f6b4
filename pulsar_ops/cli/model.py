"""`pulsar-ops model gc|cache|nack`: the reference models. ``--json`` to stdout, human output on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.cli.common import emit_json, guarded, info
from pulsar_ops.errors import ModelError

app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Reference models: bookie GC, broker entry cache, nack tracker."
)

_GC_HELP = """Predict when bookie disk space comes back after ledgers are deleted.

Input, either --layout FILE.json:
{"bookies": {"<id>": {"disk_bytes": N, "other_bytes": N, "entry_logs": [{"id": 1, "ledgers": {"<ledgerId>": bytes},
"active": false}]}}, "delete_ledgers": [id, ... or {"id": N, "at_ms": T}], "entry_size": bytes,
"config": {BookKeeper keys: gcWaitTime, minorCompactionThreshold, minorCompactionInterval, majorCompactionThreshold,
majorCompactionInterval, *CompactionMaxTimeMillis, isThrottleByBytes, compactionRateByEntries, compactionRateByBytes,
forceAllowCompaction, isForceGCAllowWhenNoSpace, diskUsageThreshold, diskUsageWarnThreshold, diskUsageLwmThreshold,
logSizeLimit, useTargetEntryLogSizeForGc}};

or --snapshot DIR --delete IDS: the layout is estimated from the snapshot's ledger metadata alone, except for
the bookies given a --bookie-scan OUT (a `pulsar-ops scan-bookie` output): their layout is the measured one (every
entry log per ledger directory and the bytes of each ledger in it), and the output puts the estimate next to it.
"""


def _load_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text()
    except OSError as e:
        raise ModelError(
            f"cannot read the {what} file {path}: {e.strerror or e}", hint=f"check the path given to --{what}"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ModelError(
            f"{path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}",
            hint=f"fix the --{what} file; see `pulsar-ops model --help`",
        ) from None


def _parse_ids(text: str) -> list[int]:
    raw: Any
    if text.startswith("@"):
        raw = _load_json(Path(text[1:]), "delete")
        if not isinstance(raw, list):
            raise ModelError("the --delete file must hold a JSON list of ledger ids", hint="e.g. [12, 13, 14]")
    else:
        raw = [t for t in text.replace(" ", "").split(",") if t]
    try:
        return [int(x) for x in raw]
    except (TypeError, ValueError):
        raise ModelError(
            f"--delete: not a list of ledger ids: {text[:80]!r}", hint="pass --delete 12,13,14 or --delete @ids.json"
        ) from None


def _config_overrides(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ModelError(f"--set {item!r}: expected KEY=VALUE", hint="e.g. --set majorCompactionThreshold=0.5")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


@app.command("gc", help=_GC_HELP)
@guarded
def gc_cmd(
    layout: Path | None = typer.Option(None, "--layout", help="Per-bookie entry-log layout (JSON, see above)."),
    snapshot: Path | None = typer.Option(None, "--snapshot", help="Estimate the layout from this snapshot."),
    delete: str = typer.Option("", "--delete", help="With --snapshot: ledger ids, '1,2,3' or '@ids.json'."),
    bookie_scan: list[Path] = typer.Option(
        [],
        "--bookie-scan",
        help="With --snapshot: a `scan-bookie` output directory (repeat, one per bookie); that bookie's layout is "
        "measured instead of estimated.",
    ),
    pulsar_conf: bool = typer.Option(False, "--pulsar-conf", help="Start from Pulsar's shipped bookkeeper.conf."),
    settings: list[str] = typer.Option([], "--set", help="Override a GC setting: KEY=VALUE (BookKeeper name)."),
    horizon: str = typer.Option(
        "",
        "--horizon",
        help="Simulated time after the start, e.g. 3d (default: last deletion + 2 x majorCompactionInterval).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Write the JSON document to stdout."),
    plot: Path | None = typer.Option(None, "--plot", help="Draw disk usage and reclaim over time (.png/.svg)."),
) -> None:
    from pulsar_ops.model.gc import GcOptions, simulate
    from pulsar_ops.model.gc_config import gc_config
    from pulsar_ops.model.layout import layout_from_json, parse_delete_schedule
    from pulsar_ops.model.units import parse_duration_ms

    if (layout is None) == (snapshot is None):
        raise ModelError(
            "give exactly one of --layout FILE.json or --snapshot DIR",
            hint="`pulsar-ops model gc --help` shows both inputs",
        )
    if bookie_scan and snapshot is None:
        raise ModelError(
            "--bookie-scan needs --snapshot DIR (the ledger metadata that says what is deleted and what stays)",
            hint="pulsar-ops model gc --snapshot DIR --delete IDS --bookie-scan OUT",
        )
    start = 0
    ids: list[int] = []
    known = None
    measured: dict[str, Any] | None = None
    layouts: list[Any] = []
    if layout is not None:
        doc = _load_json(layout, "layout")
        if not isinstance(doc, dict):
            raise ModelError("the layout must be a JSON object", hint="see `pulsar-ops model gc --help`")
        cfg_raw = doc.get("config", {})
        if not isinstance(cfg_raw, dict):
            raise ModelError('"config" must be an object of BookKeeper settings', hint="see --help")
        cfg = gc_config({**cfg_raw, **_config_overrides(settings)}, pulsar_conf=pulsar_conf)
        entry_size = doc.get("entry_size", 1024)
        if isinstance(entry_size, bool) or not isinstance(entry_size, int) or entry_size <= 0:
            raise ModelError('"entry_size" must be a positive integer (bytes)', hint="see --help")
        lay = layout_from_json(doc, parse_delete_schedule(doc.get("delete_ledgers", [])), entry_size)
    else:
        assert snapshot is not None
        from pulsar_ops.cli._model_snapshot import snapshot_layouts
        from pulsar_ops.model.reclaim_band import DEFAULT_PHASES, phases

        cfg = gc_config(_config_overrides(settings), pulsar_conf=pulsar_conf)
        ids = _parse_ids(delete)
        layouts, start, known = snapshot_layouts(snapshot, ids, cfg, phases(DEFAULT_PHASES))
        lay = layouts[0]
    horizon_ms = start + int(parse_duration_ms(horizon, flag="--horizon")) if horizon else None
    opts = GcOptions(start_ms=start, horizon_ms=horizon_ms)
    if bookie_scan:
        from pulsar_ops.model.measured_gc import gc_with_scans
        from pulsar_ops.model.scan_layout import read_scans

        m = gc_with_scans(
            lay, read_scans(bookie_scan), dict.fromkeys(ids, start), cfg, opts, known_ledgers=known, snapshot_ms=start
        )
        result = {**m.result.to_json(), **m.to_json()}
        measured = result
    else:
        result = simulate(lay, cfg, opts).to_json()
        if layout is None:
            result["layout_sources"] = {b: {"source": "estimated"} for b in result["bookies"]}
    band_lines = _add_band(result, layouts, cfg, start) if layouts else []
    _gc_human(result, start)
    for line in band_lines:
        info(line)
    if measured is not None:
        _measured_human(measured)
    if plot is not None:
        from pulsar_ops.model.plot import plot_gc

        plot_gc(result, plot)
        info(f"picture written to {plot}")
    if as_json:
        emit_json(result)


def _add_band(result: dict[str, Any], layouts: list[Any], cfg: Any, start: int) -> list[str]:
    """The estimate's reclaim over the log-boundary phases (``model.reclaim_band``): ``reclaim_range`` on each
    estimated bookie, ``estimated_range`` / ``measured_in_range`` in each scanned one's ``estimate_vs_measured``."""
    from pulsar_ops.model.gc import GcOptions
    from pulsar_ops.model.reclaim_band import annotate_accuracy, range_json, reclaim_band
    from pulsar_ops.model.units import fmt_bytes

    band = reclaim_band(layouts, cfg, GcOptions(start_ms=start, horizon_ms=result["horizon_ms"]))
    annotate_accuracy(result.get("estimate_vs_measured") or {}, band)
    sources = result.get("layout_sources") or {}
    lines: list[str] = []
    for bid, b in sorted(band.items()):
        if bid in result["bookies"] and sources.get(bid, {}).get("source", "estimated") == "estimated":
            result["bookies"][bid]["reclaim_range"] = range_json(b)
            if b["high"] > 0:
                low, high, est = (fmt_bytes(b[k]) for k in ("low", "high", "estimate"))
                lines.append(f"  {bid}: {low} to {high} (estimate {est})")
    if lines:
        lines.insert(
            0,
            "estimated layouts (no scan): a bookie's reclaim depends on where its entry-log boundaries fall, which "
            f"only a scan shows; over {len(layouts)} boundary phases:",
        )
    return lines


def _gc_human(doc: dict[str, Any], start: int) -> None:
    from pulsar_ops.model.units import fmt_bytes, fmt_duration_ms

    t = doc["total"]
    rec = t["reclaimed_bytes"]
    info(f"garbage after the deletions: {fmt_bytes(t['garbage_bytes'])} on {len(doc['bookies'])} bookie(s)")
    for kind in ("deletion", "minor", "major"):
        evs = [ev for ev in t["timeline"] if ev["reclaimed_by"].get(kind)]
        if evs:
            info(
                f"  {kind:8s} {fmt_bytes(rec[kind]):>10s}  from +{fmt_duration_ms(evs[0]['t_ms'] - start)}"
                f" to +{fmt_duration_ms(max(e['end_ms'] for e in evs) - start)}"
            )
    info(
        f"  rewritten {fmt_bytes(t['rewrite_bytes'])} in {fmt_duration_ms(t['compaction_seconds'] * 1000)} "
        "of throttled compaction"
    )
    for reason, n in t["unreclaimable_by_reason"].items():
        info(f"  stays: {fmt_bytes(n)} ({reason})")


def _measured_human(doc: dict[str, Any]) -> None:
    from pulsar_ops.model.measured_gc import accuracy_lines
    from pulsar_ops.model.units import fmt_bytes

    sources = doc["layout_sources"]
    measured = sorted(b for b, s in sources.items() if s["source"] == "measured")
    estimated = sorted(b for b, s in sources.items() if s["source"] != "measured")
    info(f"layouts: measured (scan) for {len(measured)} bookie(s), estimated for {len(estimated)}")
    for b in measured:
        s = sources[b]
        r = doc["bookies"][b]["reclaimed_bytes"]
        info(
            f"  {b}: measured, {s['entry_logs']} logs in {len(s['ledger_dirs'])} dir(s)"
            + ("" if s["complete"] else " (INCOMPLETE scan)")
            + f"; frees deletion {fmt_bytes(r['deletion'])}, minor {fmt_bytes(r['minor'])}, "
            f"major {fmt_bytes(r['major'])}"
        )
        for note in [*s["notes"], *doc["bookies"][b]["notes"]]:
            if not note.startswith("measured: scan "):
                info(f"    {note}")
    for b in estimated:
        info(f"  {b}: estimated from ledger metadata (no scan)")
    info("estimate vs measured (estimate / measured, error):")
    for line in accuracy_lines(doc["estimate_vs_measured"]):
        info(line)


_CACHE_HELP = """Simulate the broker entry cache under each strategy on a workload.

Strategies (--policy): legacy (per-topic caches, the default before PIP-430), pip430 (global removal queue,
expected reads), mark-delete (legacy with cacheEvictionByMarkDeletedPosition=true), backlog (legacy with the
#12258 managedLedgerMinimumBacklog*/MaxBacklogBetweenCursorsForCaching settings); all; both = legacy + pip430.

--workload F.json: a workload (keys: pulsar_ops/model/cache_workload.py, all optional), or
--scenario rolling-restart: the PIP-430 rolling-restart experiment (BrokerEntryCacheRollingRestartTest: 2 brokers
restarted 3 times in 30 s, 10 partitions, 50,000 msg/s, 10 Shared subscriptions, 250 MB cache, 8 KB entries),
printed next to the published hit rates (PR #24623).
"""


@app.command("cache", help=_CACHE_HELP)
@guarded
def cache_cmd(
    workload: Path | None = typer.Option(
        None, "--workload", help="Workload JSON (keys: see pulsar_ops/model/cache_workload.py; all optional)."
    ),
    scenario: str | None = typer.Option(None, "--scenario", help="rolling-restart: the PIP-430 experiment."),
    policy: str = typer.Option("both", "--policy", help="legacy | pip430 | mark-delete | backlog | all | both"),
    min_backlog_cursors: int | None = typer.Option(
        None, "--min-backlog-cursors", help="managedLedgerMinimumBacklogCursorsForCaching (backlog policy)."
    ),
    min_backlog_entries: int | None = typer.Option(
        None, "--min-backlog-entries", help="managedLedgerMinimumBacklogEntriesForCaching (backlog policy)."
    ),
    max_backlog_between: int | None = typer.Option(
        None, "--max-backlog-between", help="managedLedgerMaxBacklogBetweenCursorsForCaching (backlog policy)."
    ),
    backlog_check_ms: float | None = typer.Option(
        None, "--backlog-check-ms", help="How often the model runs checkCursorsToCacheEntries (backlog policy)."
    ),
    consumer_rate: float | None = typer.Option(
        None, "--consumer-rate", help="rolling-restart: msg/s one subscription's consumer processes (50000)."
    ),
    move_ms: float | None = typer.Option(
        None, "--move-ms", help="rolling-restart: ms a moving topic is unavailable (500)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Write the JSON document to stdout."),
    plot: Path | None = typer.Option(None, "--plot", help="Draw hit rate per policy over time (.png/.svg)."),
) -> None:
    import dataclasses

    from pulsar_ops.model.cache import POLICIES, compare
    from pulsar_ops.model.cache_workload import workload_from_json

    names = {"both": ("legacy", "pip430"), "all": POLICIES}
    if policy not in (*POLICIES, *names):
        raise ModelError(
            f"--policy {policy!r} is not one of {', '.join((*POLICIES, *names))}", hint="e.g. --policy all"
        )
    policies = names.get(policy, (policy,))
    if (workload is None) == (scenario is None):
        raise ModelError(
            "give exactly one of --workload FILE.json and --scenario rolling-restart",
            hint="e.g. pulsar-ops model cache --scenario rolling-restart --policy all",
        )
    if scenario is None and (consumer_rate is not None or move_ms is not None):
        raise ModelError(
            "--consumer-rate and --move-ms are settings of --scenario rolling-restart",
            hint="set the workload's own rates in its JSON file, or use --scenario rolling-restart",
        )
    overrides: dict[str, Any] = {
        k: v
        for k, v in (
            ("min_backlog_cursors_for_caching", min_backlog_cursors),
            ("min_backlog_entries_for_caching", min_backlog_entries),
            ("max_backlog_between_cursors_for_caching", max_backlog_between),
            ("backlog_check_ms", backlog_check_ms),
        )
        if v is not None
    }
    if any(v < 0 for v in overrides.values()) or overrides.get("backlog_check_ms", 1) <= 0:
        raise ModelError(
            "the backlog settings must be >= 0 (--backlog-check-ms > 0)", hint="e.g. --min-backlog-cursors 1"
        )
    if scenario is not None:
        from pulsar_ops.model.cache_restart import RestartScenario, compare_restart

        if scenario != "rolling-restart":
            raise ModelError(f"--scenario {scenario!r} is unknown", hint="the one scenario is rolling-restart")
        sc = RestartScenario(settings=tuple(sorted(overrides.items())))
        if consumer_rate is not None:
            sc = dataclasses.replace(sc, consumer_rate=consumer_rate)
        if move_ms is not None:
            sc = dataclasses.replace(sc, move_ms=move_ms)
        doc = compare_restart(sc, policies)
        info("rolling restart (BrokerEntryCacheRollingRestartTest setup): hit rate, model vs published (PR #24623)")
        for name, r in doc["policies"].items():
            pub = r["published_hit_rate"]
            info(
                f"  {name:12s} model {r['hit_rate']:7.2%}  published {pub:7.2%}  "
                f"({100 * (r['hit_rate'] - pub):+.2f} points; {doc['published_names'][name]})  "
                f"BookKeeper entries {r['bk_read_entries']:,} of {r['consumed']:,} consumed"
            )
            causes = ", ".join(f"{k} {v:,}" for k, v in r["miss_causes"].items()) or "none"
            info(
                f"    misses by cause: {causes}; same-tick duplicate reads {r['pending_read_merges']:,} "
                f"(hit rate {r['hit_rate_if_pending_reads_merged']:.2%} if PendingReadsManager shared them all); "
                f"checkCursorsToCacheEntries runs {r['cursors_to_cache_checks']}"
            )
        info(f"  order: model {doc['model_order_text']}; published {' > '.join(doc['published_order'])}")
    else:
        assert workload is not None
        w = workload_from_json(_load_json(workload, "workload"))
        w = dataclasses.replace(w, config=dataclasses.replace(w.config, **overrides)).validate()
        doc = compare(w, policies)
        for name, r in doc["policies"].items():
            info(
                f"{name:12s} hit rate {r['hit_rate']:.1%}  BookKeeper reads {r['bookkeeper_reads_per_s']:.0f}/s  "
                f"evicted {r['evicted_bytes']}  {r['operations_per_second'] or 0:,.0f} simulated ops/s"
            )
    if plot is not None:
        from pulsar_ops.model.plot import plot_cache

        plot_cache(doc, plot)
        info(f"picture written to {plot}")
    if as_json:
        emit_json(doc)


@app.command("nack")
@guarded
def nack_cmd(
    rate: float = typer.Option(..., "--rate", help="Negative acks per second (messages)."),
    delay: str = typer.Option(..., "--delay", help="Redelivery delay, e.g. 1m, 30s, 1h."),
    precision_bits: int = typer.Option(8, "--precision-bits", help="negativeAckPrecisionBitCnt."),
    entries_per_ledger: int = typer.Option(50_000, "--entries-per-ledger", help="managedLedgerMaxEntriesPerLedger."),
    batch_size: int = typer.Option(1, "--batch-size", help="Messages per entry (batching)."),
    consume_rate: float | None = typer.Option(
        None, "--consume-rate", help="Messages read per second (default: --rate, every message nacked)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed for sparse nack positions."),
    as_json: bool = typer.Option(False, "--json", help="Write the JSON document to stdout."),
    plot: Path | None = typer.Option(None, "--plot", help="Draw memory vs delay for both designs (.png/.svg)."),
) -> None:
    """Memory and timing of the client NegativeAcksTracker, before and after PIP-393."""
    from pulsar_ops.model.nack import NackInput, model_nack, sweep_delays
    from pulsar_ops.model.units import fmt_bytes, parse_duration_ms

    inp = NackInput(
        rate=rate,
        delay_ms=parse_duration_ms(delay, flag="--delay"),
        precision_bits=precision_bits,
        entries_per_ledger=entries_per_ledger,
        batch_size=batch_size,
        consume_rate=consume_rate,
        seed=seed,
    )
    doc = model_nack(inp).to_json()
    info(f"tracked entries: {doc['entries']:,}")
    for key in ("old", "new"):
        d = doc[key]
        info(
            f"  {key}: {fmt_bytes(d['bytes'])} ({d['bytes_per_entry']} B/entry), redelivery "
            f"{d['max_early_ms']} ms early .. {d['max_late_ms']} ms late  [{d['design']}]"
        )
    if plot is not None:
        from pulsar_ops.model.plot import plot_nack

        delays = [1_000.0, 10_000.0, 60_000.0, 600_000.0, 3_600_000.0, 18_000_000.0]
        plot_nack([r.to_json() for r in sweep_delays(inp, delays)], plot)
        info(f"picture written to {plot}")
    if as_json:
        emit_json(doc)
