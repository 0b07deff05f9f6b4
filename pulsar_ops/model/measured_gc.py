"""GC model runs on measured layouts, and how far the metadata-only estimate was from them. Pure.

:func:`gc_with_scans` runs the bookie GC model (``model.gc``) on the estimated layout with every scanned bookie's
layout replaced by its scan (``model.scan_layout``), and, for the scanned bookies only, on the estimate too, so
that :func:`compare_layouts` can put the estimate next to the measurement: total bytes, entry logs, the
live-fraction distribution of the logs after the deletions, and the predicted reclaim, each with its error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from pulsar_ops.model.gc import BookieGcResult, GcOptions, GcResult, simulate
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import BookieLayout, Layout
from pulsar_ops.model.scan_layout import BookieScan, pinning_ledgers, with_measured
from pulsar_ops.model.units import fmt_bytes

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
QUANTILES = (0.1, 0.5, 0.9)


@dataclass(frozen=True)
class MeasuredGc:
    result: GcResult  # every bookie: measured where scanned, estimated elsewhere
    sources: dict[str, dict[str, Any]]  # bookie -> {"source": "measured" | "estimated", ...}
    accuracy: dict[str, dict[str, Any]]  # scanned bookie -> estimate vs measurement

    def to_json(self) -> dict[str, Any]:
        return {"layout_sources": self.sources, "estimate_vs_measured": self.accuracy}


def live_fractions(bl: BookieLayout) -> F64:
    """Per log with data: the fraction of its bytes that belong to ledgers no deletion group removes."""
    tot = bl.totals.astype(np.float64)
    dead = np.minimum(bl.group_bytes.sum(axis=1), bl.totals).astype(np.float64) if bl.group_bytes.size else 0.0
    m = tot > 0
    out: F64 = ((tot - dead) / np.where(m, tot, 1.0))[m]
    return out


def _dist(bl: BookieLayout | None) -> dict[str, Any]:
    if bl is None or bl.n_logs == 0:
        return {"logs": 0, "byte_weighted": None, **{f"p{round(q * 100)}": None for q in QUANTILES}}
    lf = live_fractions(bl)
    tot = int(bl.totals.sum())
    dead = int(np.minimum(bl.group_bytes.sum(axis=1), bl.totals).sum()) if bl.group_bytes.size else 0
    qs = np.quantile(lf, QUANTILES) if lf.size else [None] * len(QUANTILES)
    return {
        "logs": int(lf.size),
        "byte_weighted": round((tot - dead) / tot, 6) if tot else None,
        **{f"p{round(q * 100)}": None if v is None else round(float(v), 6) for q, v in zip(QUANTILES, qs, strict=True)},
        "histogram": np.histogram(lf, bins=10, range=(0.0, 1.0))[0].astype(int).tolist(),
    }


def _err(est: float | None, meas: float | None) -> float | None:
    """Relative error of the estimate, (estimate - measured) / measured; None when nothing was measured."""
    if est is None or meas is None or meas == 0:
        return None
    return round((est - meas) / meas, 6)


def _reclaim(r: BookieGcResult | None) -> dict[str, int]:
    rec = dict(r.reclaimed) if r is not None else {"deletion": 0, "minor": 0, "major": 0}
    return {**rec, "total": sum(rec.values())}


def compare_layouts(
    est: BookieLayout | None, meas: BookieLayout, est_gc: BookieGcResult | None, meas_gc: BookieGcResult
) -> dict[str, Any]:
    """The metadata-only estimate next to the measured layout of one bookie, with the estimate's error."""
    e_tot = int(est.totals.sum()) if est is not None else 0
    m_tot = int(meas.totals.sum())
    e_logs = est.n_logs if est is not None else 0
    e_d, m_d = _dist(est), _dist(meas)
    e_rec, m_rec = _reclaim(est_gc), _reclaim(meas_gc)
    return {
        "total_bytes": {"estimated": e_tot, "measured": m_tot, "error": _err(e_tot, m_tot)},
        "entry_logs": {"estimated": e_logs, "measured": meas.n_logs, "error": _err(e_logs, meas.n_logs)},
        "live_fraction": {
            "estimated": e_d,
            "measured": m_d,
            "error": None
            if e_d["byte_weighted"] is None or m_d["byte_weighted"] is None
            else round(e_d["byte_weighted"] - m_d["byte_weighted"], 6),
            "error_note": "estimated minus measured byte-weighted live fraction (absolute)",
        },
        "predicted_reclaim": {
            "estimated": e_rec,
            "measured": m_rec,
            "error": _err(e_rec["total"], m_rec["total"]),
            "difference": e_rec["total"] - m_rec["total"],
        },
        "garbage_bytes": {
            "estimated": est_gc.deleted_bytes if est_gc is not None else 0,
            "measured": meas_gc.deleted_bytes,
            "error": _err(est_gc.deleted_bytes if est_gc is not None else 0, meas_gc.deleted_bytes),
        },
    }


def gc_with_scans(
    estimated: Layout,
    scans: Mapping[str, BookieScan],
    delete_at: Mapping[int, int],
    cfg: GcConfig,
    opts: GcOptions,
    *,
    known_ledgers: I64 | None = None,
    pins: int = 5,
    snapshot_ms: int | None = None,
) -> MeasuredGc:
    """The GC model on the measured layouts (estimate elsewhere) and the estimate's error per scanned bookie.

    Both runs share one horizon (the default is derived from the deletion times, the same for both). Stuck logs of
    a measured layout list the live ledgers that pin them (``pinned_by``, the ``pins`` largest)."""
    layout, sources = with_measured(estimated, scans, delete_at, known_ledgers=known_ledgers, snapshot_ms=snapshot_ms)
    result = simulate(layout, cfg, opts)
    scanned_est = Layout(
        bookies={b: bl for b, bl in estimated.bookies.items() if b in scans},
        group_times_ms=estimated.group_times_ms,
        entry_size=estimated.entry_size,
        estimated=True,
    )
    est_result = simulate(scanned_est, cfg, replace(opts, horizon_ms=result.horizon_ms))
    accuracy: dict[str, dict[str, Any]] = {}
    for bid, sc in sorted(scans.items()):
        r = result.bookies[bid]
        for entry in r.stuck:
            if not entry.get("compaction_output") and "ledger_dir" in entry:
                entry["pinned_by"] = pinning_ledgers(sc, entry["ledger_dir"], entry["log_id"], delete_at, top=pins)
        accuracy[bid] = compare_layouts(estimated.bookies.get(bid), layout.bookies[bid], est_result.bookies.get(bid), r)
    return MeasuredGc(result=result, sources=sources, accuracy=accuracy)


def accuracy_lines(accuracy: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One human line per scanned bookie: the estimate next to the measurement."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:+.0%}"

    lines = []
    for bid, a in accuracy.items():
        tb, lg, lf, rc = a["total_bytes"], a["entry_logs"], a["live_fraction"], a["predicted_reclaim"]
        e_lf, m_lf = lf["estimated"]["byte_weighted"], lf["measured"]["byte_weighted"]
        rc_err = pct(rc["error"]) if rc["error"] is not None or not rc["difference"] else "measured none"
        band = rc.get("estimated_range")
        if band is not None:
            rc_err += (
                f"; estimate over the log-boundary phases {fmt_bytes(band['low'])} to {fmt_bytes(band['high'])}, "
                + ("measured inside" if rc.get("measured_in_range") else "measured OUTSIDE")
            )
        lines.append(
            f"  {bid}: bytes est {fmt_bytes(tb['estimated'])} / measured {fmt_bytes(tb['measured'])} "
            f"({pct(tb['error'])}); logs {lg['estimated']} / {lg['measured']} ({pct(lg['error'])}); live fraction "
            f"{'n/a' if e_lf is None else f'{e_lf:.2f}'} / {'n/a' if m_lf is None else f'{m_lf:.2f}'}; "
            f"reclaim {fmt_bytes(rc['estimated']['total'])} / {fmt_bytes(rc['measured']['total'])} ({rc_err})"
        )
    return lines
