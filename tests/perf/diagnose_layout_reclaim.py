"""Why is the per-bookie reclaim of the layout estimate off while the total is close? Isolates each cause.

Takes the work directory of ``measure_layout_estimate.py`` (a snapshot, and ``plan.json`` or ``ground-truth.json``
for the deleted ledgers). Keeps the estimate's entry-log boundaries per bookie (its cumulative write curve: the
total bytes and log count are within 0.7 % of the generated directories) and replaces only the deleted ledgers'
bytes per log by what each of the generator's departures from the estimator's assumptions would put there, then
runs the GC model on both and prints the estimate's reclaim error per bookie:

* ``span``: a CLOSED ledger without a close time (every orphan ledger: no managed ledger records when it closed)
  written for a random 10 min-8 h, where the estimator assumes 240 min;
* ``diurnal``: entries arriving at 1 + 0.8 sin(2 pi t / 1 day) with a random phase, not at a constant rate;
(entries are placed per ensemble segment in both, as BookKeeper does: ``layout.placements``);
* ``truth-vs-truth``: two draws of the same generator against each other, the spread no estimator that does not
  know each ledger's write span can get under; ``mixture``: the estimator spreading each unknown-span ledger by
  its expected density under the generator's own span distribution instead of the 240 min point.

Usage: python tests/perf/diagnose_layout_reclaim.py --demo DIR [--seeds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pulsar_ops.model.gc import GcOptions, simulate
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import DEFAULT_LEDGER_SPAN_MS, Layout, _span, estimate_layout, placements
from pulsar_ops.repair.snapshot_facts import load_ledgers
from pulsar_ops.snapshot.reader import open_snapshot

DAY_MS = 86_400_000
F = np.ndarray[Any, np.dtype[np.float64]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, required=True)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    _f, facts = load_ledgers(open_snapshot(args.demo / "snapshot"))
    if (args.demo / "plan.json").exists():
        from measure_layout_estimate import plan_deletions  # type: ignore[import-not-found]

        dele = plan_deletions(json.loads((args.demo / "plan.json").read_text()))
    else:
        truth = json.loads((args.demo / "ground-truth.json").read_text())
        dele = {int(x["ledger_id"]) for x in truth["expected"]["orphan-ledger"] if x.get("plannable")}
    now_ms = max(max(f.ctime_ms for f in facts), max(f.closed_ms or 0 for f in facts)) + 60_000
    cfg = GcConfig()
    limit = cfg.log_size_limit
    est = estimate_layout(facts, dict.fromkeys(dele, now_ms), now_ms=now_ms, log_size_limit=limit)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    for f in facts:
        s, e = _span(f, now_ms, DEFAULT_LEDGER_SPAN_MS)
        for bk, ps, pe, per in placements(f, s, e):
            if per > 0:
                rows.setdefault(bk, []).append((ps, pe, per))
    taus: dict[str, F] = {}
    for bk, r in rows.items():  # the estimate's log boundaries in time (as layout._estimate_bookie)
        a = np.asarray(r)
        rate = a[:, 2] / (a[:, 1] - a[:, 0])
        t = np.concatenate([a[:, 0], a[:, 1]])
        order = np.argsort(t, kind="stable")
        t = t[order]
        slope = np.cumsum(np.concatenate([rate, -rate])[order])[:-1]
        w = np.concatenate([[0.0], np.cumsum(slope * np.diff(t))])
        marks = np.minimum(np.arange(est.bookies[bk].n_logs + 1) * float(limit), w[-1])
        taus[bk] = np.interp(marks, w, t)
    by = {f.ledger_id: f for f in facts}
    deleted = [by[i] for i in sorted(dele) if i in by]

    def groups(variant: str, rng: np.random.Generator, spans: Callable[[], F] | None = None) -> dict[str, F]:
        out = {bk: np.zeros(b.n_logs) for bk, b in est.bookies.items()}
        for f in deleted:
            s, e = _span(f, now_ms, DEFAULT_LEDGER_SPAN_MS)
            unknown = not f.is_open and not f.closed_ms
            if "span" in variant and unknown:
                e = min(s + rng.uniform(10 * 60_000, 8 * 3_600_000), float(now_ms))
            phase = rng.uniform(0, 2 * math.pi)
            for bk, ps, pe, share in placements(f, s, e):
                tau = taus[bk]
                if spans is not None and unknown:
                    sp = spans()  # expected fraction written by each boundary over the span distribution
                    frac = np.clip((tau[None, :] - s) / sp[:, None], 0.0, 1.0).mean(axis=0)
                else:
                    grid = np.linspace(ps, pe, 512)
                    rate = np.ones_like(grid)
                    if "diurnal" in variant:
                        rate = 1.0 + 0.8 * np.sin(2 * math.pi * grid / DAY_MS + phase)
                    cum = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2 * np.diff(grid))])
                    cum /= cum[-1]
                    frac = np.interp(tau, grid, cum, left=0.0, right=1.0)
                out[bk] += share * np.diff(frac)
        return out

    def reclaim(g: dict[str, F]) -> dict[str, int]:
        bks = {
            bk: dataclasses.replace(b, group_bytes=np.minimum(np.rint(g[bk]).astype(np.int64), b.totals)[:, None])
            for bk, b in est.bookies.items()
        }
        res = simulate(Layout(bks, [now_ms], 1024, True), cfg, GcOptions(start_ms=now_ms)).to_json()
        return {bk: sum(b["reclaimed_bytes"].values()) for bk, b in res["bookies"].items()}

    def line(name: str, est_r: dict[str, int], true_r: dict[str, int]) -> None:
        errs = [(est_r[b] - true_r[b]) / true_r[b] if true_r[b] else math.nan for b in sorted(true_r)]
        tot = (sum(est_r.values()) - sum(true_r.values())) / max(sum(true_r.values()), 1)
        print(
            f"{name:28s} per bookie " + " ".join(f"{e:+6.1%}" for e in errs) + f"  max {np.nanmax(np.abs(errs)):.1%}"
            f"  total {tot:+.1%}"
        )

    base = reclaim(groups("uniform", np.random.default_rng(0)))
    print(f"{len(facts):,} ledgers, {len(deleted)} deleted, bookies {', '.join(sorted(base))}")
    print("estimate reclaim (GB): " + " ".join(f"{base[b] / 1e9:.2f}" for b in sorted(base)))
    mix_rng = np.random.default_rng(99)
    mix = reclaim(groups("mixture", mix_rng, spans=lambda: mix_rng.uniform(10 * 60_000, 8 * 3_600_000, 64)))
    for seed in range(1, args.seeds + 1):
        truths = {}
        for v in ("span", "diurnal", "span-diurnal"):
            truths[v] = reclaim(groups(v, np.random.default_rng(seed)))
            line(f"seed {seed} {v}", base, truths[v])
        other = reclaim(groups("span-diurnal", np.random.default_rng(seed + 1000)))
        line(f"seed {seed} truth-vs-truth", other, truths["span-diurnal"])
        line(f"seed {seed} mixture estimate", mix, truths["span-diurnal"])


if __name__ == "__main__":
    main()
