"""The estimate's uncertainty: where a bookie's entry-log boundaries fall is not in the metadata (hand-computed).

One bookie, logSizeLimit 100 bytes, three CLOSED ledgers written one after another at a constant rate: A (live)
100 bytes over [0, 100] ms, B (deleted) 24 bytes over [100, 124], C (live) 76 bytes over [124, 200].

* phase 0 (the plain estimate): logs [A] and [B, C]; the second is 24 % garbage, usage 0.76 < 0.8 (BookKeeper's
  default majorCompactionThreshold), so major compaction frees B's 24 bytes;
* phase p puts round(p x 100) unlisted live bytes ahead of A, so every boundary moves back by as much; at p = 7/8
  (88 bytes) the boundary falls at W = 112, inside B: log [88 unlisted, A 0..12] (100), log [A 12..100, B 0..12]
  (100, 12 % garbage, usage 0.88) and log [B 12..24, C] (88, 12/88 = 13.6 % garbage, usage 0.86): both stay at
  or above 0.8 and nothing is freed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc import GcOptions
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.impact import plan_impact
from pulsar_ops.model.layout import estimate_layout, estimate_layouts
from pulsar_ops.model.reclaim_band import phases, reclaim_band

CFG = GcConfig(log_size_limit=100)


def lf(lid: int, length: int, start: int, end: int) -> LedgerFacts:
    return LedgerFacts(lid, length, ("b1",), 1, 1, start, "CLOSED", closed_ms=end)


FACTS = [lf(1, 100, 0, 100), lf(2, 24, 100, 124), lf(3, 76, 124, 200)]
DELETE = {2: 1000}


def test_phase_zero_is_the_plain_estimate() -> None:
    b = estimate_layout(FACTS, DELETE, now_ms=1000, log_size_limit=100).bookies["b1"]
    assert b.totals.tolist() == [100, 100]
    assert b.group_bytes[:, 0].tolist() == [0, 24]


def test_a_phase_moves_every_boundary_and_adds_unlisted_live_bytes_to_the_first_log() -> None:
    b = estimate_layout(FACTS, DELETE, now_ms=1000, log_size_limit=100, phase=7 / 8).bookies["b1"]
    assert b.totals.tolist() == [100, 100, 88]  # 88 unlisted + 12 of A; A 12..100 + B 0..12; B 12..24 + C
    assert b.group_bytes[:, 0].tolist() == [0, 12, 12]  # the unlisted bytes are live, B is split at W = 112
    half = estimate_layout(FACTS, DELETE, now_ms=1000, log_size_limit=100, phase=0.5).bookies["b1"]
    assert half.totals.tolist() == [100, 100, 50]  # boundaries at W = 50 and 150
    assert half.group_bytes[:, 0].tolist() == [0, 24, 0]


def test_phases_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError):
        estimate_layouts(FACTS, DELETE, now_ms=1000, log_size_limit=100, phases=(1.0,))


def test_band_spans_the_threshold_flip() -> None:
    assert phases(8) == (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875)
    assert phases(1) == (0.0,)
    lays = estimate_layouts(FACTS, DELETE, now_ms=1000, log_size_limit=100, phases=phases(8))
    band = reclaim_band(lays, CFG, GcOptions(start_ms=1000))["b1"]
    # B lies inside one log (24 % garbage) unless a boundary falls inside it, W in (100, 124): only p = 7/8
    assert band["by_phase"] == [24, 24, 24, 24, 24, 24, 24, 0]
    assert (band["low"], band["high"], band["estimate"], band["phases"]) == (0, 24, 24, 8)


def test_plan_impact_reports_the_range_for_estimated_bookies_only_when_asked() -> None:
    dele = [FACTS[1]]
    rep = plan_impact(dele, FACTS, now_ms=1000, config=CFG)
    doc = rep.to_json()["total"]["per_bookie"]["b1"]
    assert doc["reclaim_range"]["low"] == 0 and doc["reclaim_range"]["high"] == 24
    assert sum(doc["reclaimed_bytes"].values()) == 24  # the prediction itself is still phase 0
    assert any("0 B to 24 B" in line for line in rep.summary_lines())
    plain = plan_impact(dele, FACTS, now_ms=1000, config=CFG, band_phases=1)
    assert "reclaim_range" not in plain.to_json()["total"]["per_bookie"]["b1"]
    assert plain.band is None


def test_plot_draws_the_range_as_a_whisker(tmp_path: Path) -> None:
    from pulsar_ops.model.plot import plot_layout_error

    band = {"low": 80, "high": 130, "phases": 8}
    rows = [
        {
            "bookie": "b1",
            "reclaim_err": 0.1,
            "reclaim_meas": 100,
            "reclaim_range": band,
            "garbage_est": 1,
            "garbage_meas": 1,
            "bytes_err": 0.0,
        },
        {"bookie": "b2", "reclaim_err": None, "garbage_est": 0, "garbage_meas": 0, "bytes_err": 0.0},
    ]
    with_band, without = tmp_path / "band.svg", tmp_path / "plain.svg"
    plot_layout_error(rows, with_band, "t")
    plot_layout_error([{k: v for k, v in r.items() if k != "reclaim_range"} for r in rows], without, "t")
    assert "reclaim range over boundary phases" in with_band.read_text()
    assert "reclaim range over boundary phases" not in without.read_text()
