"""How good is the metadata-only entry-log layout estimate? Measured against generated bookie directories.

Takes a `pulsar-ops demo --out DIR` work directory (its snapshot and plan), writes every bookie's ledger directory
with the testing entry-log writer from the snapshot's ledger metadata, scans each with the real `scan-bookie`
code, and runs the plan's predicted impact twice per bookie: on the estimate (``model.layout``) and on the
measured layout (``model.scan_layout``). Prints, per bookie, the estimate next to the measurement and the error.

How the directories are written (the ground truth), deliberately *not* the estimator's own assumptions:
* each ledger's entries are striped over its ensemble as BookKeeper's RoundRobinDistributionSchedule does (entry
  e goes to the write_quorum bookies from position e mod ensemble_size), not spread evenly; a ledger with several
  ensembles (an ensemble change) writes each segment's entries to that segment's ensemble (the estimator does
  the same since 2026-11-28: it used to spread them over every bookie named, and this generator to put them all
  on the first ensemble: ``--first-ensemble-only``);
* entries arrive with a diurnal rate (1 + 0.8 sin(2 pi t / 1 day), a random phase per topic) between the ledger's
  creation and its close, not at a constant rate; a CLOSED ledger without a close time in the snapshot was
  written for a random 10 min to 8 h (the estimator assumes 4 h); an OPEN ledger is written until now;
* each bookie writes one interleaved log rolled before an entry would cross logSizeLimit (DefaultEntryLogger
  ``shouldCreateNewEntryLog``), the newest log is active (no ledgers map); every entry counts payload + 40 bytes.

Disk space: bytes are divided by --scale on disk (one record stands for a chunk of consecutive entries, sizes and
logSizeLimit scaled alike) and multiplied back after the scan; rounding is reported. The scaling keeps the bytes
exact in expectation (a piece smaller than one record is written with probability size / record, never rounded
up) and a record crossing logSizeLimit - 1 KiB (the header) is split there, as ~1 KiB entries would be: both used
to shift every later log boundary (+0.17 % bytes at 100,000 topics), which moved per-bookie reclaim by up to 43 %.

Each bookie's line also gives the estimate's reclaim range over 8 log-boundary phases (``model.reclaim_band``)
relative to the measured reclaim, and whether the measured value is inside it.

Usage: python tests/perf/measure_layout_estimate.py --demo DIR [--scale 1000] [--log-size-limit 1073741824]
       python tests/perf/measure_layout_estimate.py --demo DIR --seed-topics 100000 --scale 100000
(``--seed-topics N`` seeds N topics into an embedded ZooKeeper and scrapes them into DIR/snapshot first, as
``bench audit`` does; without a plan the deleted ledgers are the ground truth's plannable orphan ledgers.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pulsar_ops.bookiescan.run import ScanConfig, scan
from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.impact import plan_impact
from pulsar_ops.model.layout import ENTRY_OVERHEAD_BYTES
from pulsar_ops.model.scan_layout import read_scans
from pulsar_ops.repair.snapshot_facts import load_ledgers
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.testing.entrylog_writer import LOGFILE_HEADER_SIZE, entry_log_path, write_entry_log, write_last_id

DAY_MS = 86_400_000
RECORD_SCALED = 400  # target scaled bytes per record (a chunk of consecutive entries)
MIN_RECORD = 20  # the smallest record the testing writer writes: length prefix + 16-byte header + 0 body + CRC


def _times(rng: np.random.Generator, n: int, start: float, end: float) -> np.ndarray[Any, Any]:
    """n arrival times in [start, end] with a diurnal rate: inverse of the cumulative rate on a fine grid."""
    phase = rng.uniform(0, 2 * math.pi)
    grid = np.linspace(start, end, 512)
    rate = 1.0 + 0.8 * np.sin(2 * math.pi * grid / DAY_MS + phase)
    cum = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2 * np.diff(grid))])
    u = np.sort(rng.uniform(0, cum[-1], n))
    return np.interp(u, cum, grid)


def generate(
    facts: Sequence[LedgerFacts],
    root: Path,
    *,
    now_ms: int,
    scale: int,
    limit: int,
    seed: int,
    unknown_span_ms: float | None = None,
    uniform_arrivals: bool = False,
    legacy_placement: bool = False,
) -> dict[str, int]:
    """Write every bookie's ledger directory; returns bookie -> true bytes (unscaled) written to it."""
    rng = np.random.default_rng(seed)
    per_bookie: dict[str, list[tuple[float, int, int]]] = {}
    true_bytes: dict[str, int] = {}
    for f in facts:
        entries = f.entries if f.entries is not None else (max(1, f.length // 1024) if f.length > 0 else 0)
        if entries <= 0 or not f.bookies:
            continue
        ens = list(f.bookies)[: max(f.ensemble_size, 1)]
        payload = f.length / entries
        if f.is_open:
            end = float(now_ms)
        elif f.closed_ms:
            end = float(f.closed_ms)
        elif unknown_span_ms is not None:  # diagnosis: the estimator's own assumption
            end = f.ctime_ms + unknown_span_ms
        else:
            end = f.ctime_ms + rng.uniform(10 * 60_000, 8 * 3_600_000)
        end = max(min(end, float(now_ms)), f.ctime_ms + 1.0)
        # entries per bookie under round-robin striping: bookie at position p of a segment's ensemble gets the
        # segment's entries e with (p - e) mod E < wq; a ledger with several ensembles (segments) writes entry e
        # to the last segment starting at or before e
        segs = [(0, tuple(ens))]
        if f.segments and len(f.segments) > 1 and not legacy_placement:
            segs = [(max(0, first), tuple(m)) for first, m in f.segments]
        pieces: list[tuple[str, int, float, float]] = []  # bookie, entries, start, end
        for si, (first, members) in enumerate(segs):
            lo = min(first, entries)
            hi = min(segs[si + 1][0], entries) if si + 1 < len(segs) else entries
            n = hi - lo
            E = len(members)
            if n <= 0 or E == 0:
                continue
            wq_s = min(max(f.write_quorum, 1), E)
            s0 = f.ctime_ms + (end - f.ctime_ms) * lo / entries
            s1 = max(f.ctime_ms + (end - f.ctime_ms) * hi / entries, s0 + 1.0)
            for p, bk in enumerate(members):
                count = sum(1 for r in range(E) if (p - r - lo) % E < wq_s) * (n // E)
                count += sum(1 for r in range(n % E) if (p - r - lo) % E < wq_s)
                if count:
                    pieces.append((bk, count, s0, s1))
        for bk, count, s0, s1 in pieces:
            real = count * (payload + ENTRY_OVERHEAD_BYTES)
            true_bytes[bk] = true_bytes.get(bk, 0) + round(real)
            scaled = real / scale
            if scaled < MIN_RECORD:
                # a piece smaller than the smallest record the writer can write: one record with probability
                # scaled / MIN_RECORD, so the expected bytes stay exact (rounding it up to a record inflated the
                # scanned bytes by 0.16-0.19 % per bookie at 100,000 topics and moved every later log boundary)
                if rng.uniform(0.0, MIN_RECORD) >= scaled:
                    continue
                scaled = float(MIN_RECORD)
            n_rec = max(1, round(scaled / RECORD_SCALED))
            size = scaled / n_rec
            if size < MIN_RECORD:
                n_rec = max(1, int(scaled // MIN_RECORD))
                size = max(scaled / n_rec, float(MIN_RECORD))
            # diagnosis (--uniform-arrivals): a constant rate, as the estimator assumes
            ts = np.sort(rng.uniform(s0, s1, n_rec)) if uniform_arrivals else _times(rng, n_rec, s0, s1)
            recs = per_bookie.setdefault(bk, [])
            acc = 0.0
            written = 0
            for t in ts:
                acc += size
                b = max(MIN_RECORD, round(acc) - written)
                written += b
                recs.append((float(t), f.ledger_id, b))
    # DefaultEntryLogger rolls before an entry would cross logSizeLimit counting the file position, which starts
    # after the 1 KiB header (EntryLogManagerBase.reachEntryLogLimit: position + entry size > logSizeLimit), so a
    # log holds at most logSizeLimit - 1024 bytes of entries. A record here is a chunk of consecutive entries: it
    # is split at the boundary (its first entries fill this log, the rest open the next), as entries of ~1 KiB
    # would be; rolling the whole chunk over left ~0.2 % of every log empty, a scaling artefact.
    cap = max(float(MIN_RECORD), (limit - LOGFILE_HEADER_SIZE) / scale)
    for bk, recs in sorted(per_bookie.items()):
        recs.sort()
        d = root / bk.replace(":", "_") / "ledgers"
        logs = roll_logs(recs, cap)
        for i, entries_ in enumerate(logs):
            path = entry_log_path(d, i)
            write_entry_log(path, i, entries_, with_map=i < len(logs) - 1)
            os.utime(path, ns=((1_000_000 + i) * 10**9, (1_000_000 + i) * 10**9))
        write_last_id(d, len(logs) - 1)
    return true_bytes


def roll_logs(recs: Sequence[tuple[float, int, int]], cap: float) -> list[list[tuple[int, int, int]]]:
    """Records (time, ledger, bytes) in write order -> entry logs of (ledger, entry id, body bytes), rolled at
    ``cap`` bytes; a record crossing the boundary is split there (its first entries here, the rest in the next)."""
    logs: list[list[tuple[int, int, int]]] = [[]]
    cur = 0.0
    next_entry: dict[int, int] = {}

    def put(lid: int, b: int) -> None:
        nonlocal cur
        e = next_entry.get(lid, 0)
        next_entry[lid] = e + 1
        logs[-1].append((lid, e, b - MIN_RECORD))  # the writer's record counts L + 4 = 16 + body + 4
        cur += b

    for _t, lid, b in recs:
        room = cap - cur
        if b > room:
            if room >= MIN_RECORD and b - room >= MIN_RECORD:
                first = int(room)
                put(lid, first)
                b -= first
            elif b - room < MIN_RECORD and room >= b / 2:
                put(lid, b)  # over by less than a record: this log, then roll
                b = 0
            logs.append([])
            cur = 0.0
        if b:
            put(lid, b)
    return logs


def seed_and_scrape(work: Path, topics: int) -> None:
    """Seed ``topics`` topics (and every injected defect) and scrape them: DIR/snapshot, DIR/ground-truth.json."""
    from pulsar_ops import zkconn
    from pulsar_ops.scrape.run import ScrapeConfig, scrape
    from pulsar_ops.testing.model_spec import SeedOptions
    from pulsar_ops.testing.seeder import seed_cluster
    from pulsar_ops.testing.zk_server import EmbeddedZooKeeper

    work.mkdir(parents=True, exist_ok=True)
    with EmbeddedZooKeeper(data_dir=work / "zk", heap_mb=3072) as zk:
        client = zkconn.connect(zk.hosts, timeout=60)
        try:
            res = seed_cluster(client, None, SeedOptions(topics=topics, seed=1, persistent_ownership=True))
        finally:
            zkconn.close(client)
        scrape(ScrapeConfig(zookeeper=zk.hosts, out=work / "snapshot"))
    (work / "ground-truth.json").write_text(json.dumps(res.ground_truth))
    shutil.rmtree(work / "zk", ignore_errors=True)


def plan_deletions(plan: dict[str, Any]) -> set[int]:
    """The ledgers whose metadata the plan deletes (as plan_builder.compute_impact collects them)."""
    out: set[int] = set()
    for a in plan.get("actions") or ():
        if a.get("kind") == "delete-ledger-metadata" and a.get("ledger_id") is not None:
            out.add(int(a["ledger_id"]))
        for lid in (a.get("impact") or {}).get("ledgers") or {}:
            out.add(int(lid))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, required=True, help="a `pulsar-ops demo --out DIR` work directory")
    ap.add_argument("--scale", type=int, default=1000)
    ap.add_argument("--log-size-limit", type=int, default=1 << 30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the generated bookie directories and scans")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--seed-topics", type=int, default=0, help="seed and scrape this many topics into --demo first")
    ap.add_argument(
        "--unknown-span-min",
        type=float,
        default=None,
        help="diagnosis: write CLOSED ledgers without a close time for exactly this long (the estimator's 240)",
    )
    ap.add_argument("--uniform-arrivals", action="store_true", help="diagnosis: constant rate instead of diurnal")
    ap.add_argument(
        "--first-ensemble-only",
        action="store_true",
        help="the generator before 2026-11-28: every entry on the first ensemble, whatever the segments say",
    )
    ap.add_argument("--plot", type=Path, default=None, help="draw the per-bookie errors (.png/.svg)")
    args = ap.parse_args()
    if args.seed_topics:
        t = time.monotonic()
        seed_and_scrape(args.demo, args.seed_topics)
        print(f"seeded and scraped {args.seed_topics} topics in {time.monotonic() - t:.0f} s")
    snap = open_snapshot(args.demo / "snapshot")
    _f, facts = load_ledgers(snap)
    now_ms = max(max(f.ctime_ms for f in facts), max(f.closed_ms or 0 for f in facts)) + 60_000
    if (args.demo / "plan.json").exists():
        delete_ids = plan_deletions(json.loads((args.demo / "plan.json").read_text()))
    else:
        truth = json.loads((args.demo / "ground-truth.json").read_text())
        delete_ids = {int(x["ledger_id"]) for x in truth["expected"]["orphan-ledger"] if x.get("plannable")}
    by_id = {f.ledger_id: f for f in facts}
    delete = [by_id[i] for i in sorted(delete_ids) if i in by_id]
    work = args.demo / "layout-measure"
    shutil.rmtree(work, ignore_errors=True)
    t0 = time.monotonic()
    true_bytes = generate(
        facts,
        work / "bookies",
        now_ms=now_ms,
        scale=args.scale,
        limit=args.log_size_limit,
        seed=args.seed,
        unknown_span_ms=None if args.unknown_span_min is None else args.unknown_span_min * 60_000,
        uniform_arrivals=args.uniform_arrivals,
        legacy_placement=args.first_ensemble_only,
    )
    t1 = time.monotonic()
    scan_dirs = []
    for d in sorted((work / "bookies").iterdir()):
        out = work / "scans" / d.name
        scan(ScanConfig(ledger_dirs=[d / "ledgers"], bookie_id=d.name.replace("_", ":"), out=out))
        scan_dirs.append(out)
    scans = read_scans(scan_dirs)
    for sc in scans.values():  # back to real bytes
        sc.data_bytes = sc.data_bytes * args.scale
        sc.pair_bytes = sc.pair_bytes * args.scale
    t2 = time.monotonic()
    cfg = GcConfig(log_size_limit=args.log_size_limit)
    rep = plan_impact(delete, facts, now_ms=now_ms, config=cfg, scans=scans)
    acc = rep.measured.accuracy if rep.measured is not None else {}
    print(
        f"{len(facts)} ledgers, {len(delete)} deleted by the plan, {len(scans)} bookies; generated in {t1 - t0:.1f} s, "
        f"scanned in {t2 - t1:.1f} s; scale 1/{args.scale}, logSizeLimit {args.log_size_limit}"
    )
    rows = []
    for bid, a in acc.items():
        scanned = int(scans[bid].data_bytes.sum())
        rounding = (scanned - true_bytes[bid]) / true_bytes[bid]
        rows.append(
            {
                "bookie": bid,
                "bytes_est": a["total_bytes"]["estimated"],
                "bytes_meas": a["total_bytes"]["measured"],
                "bytes_err": a["total_bytes"]["error"],
                "logs_est": a["entry_logs"]["estimated"],
                "logs_meas": a["entry_logs"]["measured"],
                "live_est": a["live_fraction"]["estimated"]["byte_weighted"],
                "live_meas": a["live_fraction"]["measured"]["byte_weighted"],
                "live_p50_est": a["live_fraction"]["estimated"]["p50"],
                "live_p50_meas": a["live_fraction"]["measured"]["p50"],
                "reclaim_est": a["predicted_reclaim"]["estimated"]["total"],
                "reclaim_meas": a["predicted_reclaim"]["measured"]["total"],
                "reclaim_err": a["predicted_reclaim"]["error"],
                "garbage_est": a["garbage_bytes"]["estimated"],
                "garbage_meas": a["garbage_bytes"]["measured"],
                "scale_rounding": round(rounding, 6),
                "reclaim_range": a["predicted_reclaim"].get("estimated_range"),
                "in_range": a["predicted_reclaim"].get("measured_in_range"),
            }
        )
        r = rows[-1]
        print(
            f"{bid}: bytes {r['bytes_est']:,} / {r['bytes_meas']:,} ({r['bytes_err']:+.2%}); logs {r['logs_est']} / "
            f"{r['logs_meas']}; live fraction {r['live_est']:.3f} / {r['live_meas']:.3f} (p50 {r['live_p50_est']} / "
            f"{r['live_p50_meas']}); garbage {r['garbage_est']:,} / {r['garbage_meas']:,}; reclaim "
            f"{r['reclaim_est']:,} / {r['reclaim_meas']:,} ("
            + ("n/a" if r["reclaim_err"] is None else f"{r['reclaim_err']:+.1%}")
            + f"); scaling rounding {rounding:+.4%}"
            + (
                ""
                if not r["reclaim_range"] or not r["reclaim_meas"]
                else f"; reclaim range over boundary phases "
                f"{(r['reclaim_range']['low'] - r['reclaim_meas']) / r['reclaim_meas']:+.1%}.."
                f"{(r['reclaim_range']['high'] - r['reclaim_meas']) / r['reclaim_meas']:+.1%}"
                + (" (measured inside)" if r["in_range"] else " (measured OUTSIDE)")
            )
        )
    errs = [abs(r["bytes_err"]) for r in rows if r["bytes_err"] is not None]
    rerrs = [abs(r["reclaim_err"]) for r in rows if r["reclaim_err"] is not None]
    summary = {
        "bookies": len(rows),
        "median_abs_bytes_error": statistics.median(errs) if errs else None,
        "max_abs_bytes_error": max(errs) if errs else None,
        "median_abs_reclaim_error": statistics.median(rerrs) if rerrs else None,
        "max_abs_reclaim_error": max(rerrs) if rerrs else None,
        "reclaim_est_total": sum(r["reclaim_est"] for r in rows),
        "reclaim_meas_total": sum(r["reclaim_meas"] for r in rows),
    }
    print(json.dumps(summary))
    if args.plot is not None:
        from pulsar_ops.model.plot import plot_layout_error

        plot_layout_error(rows, args.plot, f"Layout estimate vs generated bookie directories ({len(facts):,} ledgers)")
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary, "args": vars(args)}, default=str, indent=1))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
