"""The four cache strategies (legacy, pip430, mark-delete, backlog) against hand-computed cases from the upstream
rules (ManagedLedgerImpl / ManagedCursorImpl / RangeEntryCacheImpl), and the rolling-restart scenario's events."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from pulsar_ops.model.cache import _Sim, compare
from pulsar_ops.model.cache_restart import (
    PUBLISHED_HIT_RATE,
    RestartScenario,
    _Run,
    compare_restart,
    policy_config,
)
from pulsar_ops.model.cache_workload import CacheConfig, CacheWorkload
from tests.unit.model.restart_scenarios import restart_scenario

KB = 1024


def sim(policy: str, tailing: int = 2, **cfg: Any) -> _Sim:
    w = CacheWorkload(
        topics=1,
        block_entries=1,
        entry_size=KB,
        cache_mb=1000 * KB / (1 << 20),
        tailing=tailing,
        publish_rate=1000,
        ack_lag_ms=5,  # 5 entries at 1000 entries/s
        config=CacheConfig(**cfg),
    )
    return _Sim(w, policy)


# -- legacy family: which reads are cached ----------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["legacy", "mark-delete"])
def test_storage_reads_are_never_cached_without_backlog_caching(policy: str) -> None:
    s = sim(policy)
    s.published[:] = 50.0
    s._read(0, 0, 10, 0.0, True)  # an active cursor misses entry 10
    assert s.res.misses == 1 and 10 not in s.cached[0]  # isCacheReadEntry() is false: not inserted
    s._read(1, 0, 10, 0.0, True)
    assert s.res.misses == 2  # the second subscription goes to BookKeeper again


def test_producer_adds_are_cached_only_with_an_active_cursor() -> None:
    s = sim("legacy", backlogged_threshold_entries=10)
    s.published[:] = 30.0
    s.next_ins[:] = 0
    s.pos[:] = [25.0, 28.0]  # backlogs 5 and 2 entries: both active
    active = s._active_mask()
    s._producer_inserts(0.0, np.bincount(s.cur_topic[active], minlength=1))
    assert sorted(s.cached[0]) == list(range(30))
    s2 = sim("legacy", backlogged_threshold_entries=10)
    s2.published[:] = 30.0
    s2.next_ins[:] = 0
    s2.pos[:] = [0.0, 5.0]  # backlogs 30 and 25 >= 10: no active cursor, nothing cached
    active = s2._active_mask()
    s2._producer_inserts(0.0, np.bincount(s2.cur_topic[active], minlength=1))
    assert s2.cached[0] == {}


# -- mark-delete: what is invalidated ----------------------------------------------------------------------------------


def test_invalidation_up_to_the_read_position_or_the_mark_delete_position() -> None:
    for policy, kept in (("legacy", list(range(12, 20))), ("mark-delete", list(range(7, 20)))):
        s = sim(policy)
        s.published[:] = 20.0
        for b in range(20):
            s._insert(0, b, 0.0, 0)
        s.pos[:] = [12.0, 15.0]  # read positions; mark-delete = read position - 5 entries of ack lag
        s._legacy_evict(0.0, s._active_mask())
        # legacy keeps from the slowest read position (12); mark-delete from the slowest mark-delete (12 - 5 = 7)
        assert sorted(s.cached[0]) == kept, policy
        assert s.res.evicted["invalidation"] == (20 - len(kept)) * KB


# -- backlog (#12258): checkCursorsToCacheEntries ---------------------------------------------------------------------


def test_check_cursors_to_cache_entries_hand_cases() -> None:
    s = sim("backlog", tailing=3)
    s.published[:] = 6000.0
    s.pos[:] = [4500.0, 4200.0, 1000.0]  # backlogs 1500, 1800 and 5000 entries
    s.check_cursors_to_cache_entries()
    # 1500 and 1800 are within 1000 of each other (one other cursor >= min 1); 5000 is 3500/3200 away from both
    assert s.cache_read.tolist() == [True, True, False]
    s = sim("backlog", tailing=3, min_backlog_entries_for_caching=2000)
    s.published[:] = 6000.0
    s.pos[:] = [4500.0, 4200.0, 1000.0]
    s.check_cursors_to_cache_entries()
    assert s.cache_read.tolist() == [False, False, False]  # under the entries minimum, or no cursor in range
    s = sim("backlog", tailing=3, min_backlog_cursors_for_caching=2, max_backlog_between_cursors_for_caching=4000)
    s.published[:] = 6000.0
    s.pos[:] = [4500.0, 4200.0, 1000.0]
    s.check_cursors_to_cache_entries()
    assert s.cache_read.tolist() == [True, True, True]  # every cursor has the two others within 4000
    s = sim("backlog", tailing=3, min_backlog_cursors_for_caching=0)
    s.published[:] = 6000.0
    s.check_cursors_to_cache_entries()
    assert not s.cache_read.any()  # 0 disables the feature (upstream default)


def test_backlog_caches_the_reads_of_flagged_cursors_only() -> None:
    s = sim("backlog", tailing=3)
    s.cache_read[:] = [True, False, False]
    s._read(1, 0, 40, 0.0, True)
    assert 40 not in s.cached[0]
    s._read(0, 0, 41, 0.0, True)
    assert 41 in s.cached[0] and s.cached[0][41].exp == 0
    s._read(2, 0, 41, 0.0, True)
    assert s.res.hits == 1 and s.res.misses == 2  # the third cursor reads the flagged cursor's entry from cache


def test_four_policies_run_on_a_workload() -> None:
    w = CacheWorkload(topics=10, duration_s=3, publish_rate=200, tailing=1, catchup=2, cache_mb=8)
    out = compare(w, ("legacy", "pip430", "mark-delete", "backlog"))
    assert set(out["hit_rate"]) == {"legacy", "pip430", "mark-delete", "backlog"}
    # two catch-up cursors at the same backlog: #12258 caches the first one's reads for the other
    assert out["hit_rate"]["backlog"] > out["hit_rate"]["legacy"] + 0.1


# -- rolling restart ------------------------------------------------------------------------------------------------


def tiny(**kw: Any) -> RestartScenario:
    return restart_scenario(**{"restarts": 1, **kw})


def test_policy_configs_follow_the_test_configurers() -> None:
    base = CacheConfig()
    pr = policy_config("backlog", base)
    assert (pr.min_backlog_cursors_for_caching, pr.min_backlog_entries_for_caching) == (1, 1)
    assert pr.max_backlog_between_cursors_for_caching == 2**31 - 1 and not pr.expected_read_count
    assert pr.backlogged_threshold_entries == 2**63 - 1
    assert policy_config("pip430", base).expected_read_count and policy_config("pip430", base).extend_ttl_on_access
    md = policy_config("mark-delete", base)
    assert not md.expected_read_count and not md.extend_ttl_on_access


def test_explicit_settings_override_the_configurations_own() -> None:
    run = _Run(tiny(settings=(("max_backlog_between_cursors_for_caching", 5),)), "backlog")
    assert run.cfg.max_backlog_between_cursors_for_caching == 5 and run.cfg.min_backlog_entries_for_caching == 1


def test_restart_moves_the_topics_with_an_empty_cache_and_rewinds_to_mark_delete() -> None:
    run = _Run(tiny(move_ms=200.0), "legacy")
    for p in range(2):
        run._produce(p, 0.0, 1.0)  # 100 blocks per partition, both cursors active: cached on their owner
    assert len(run.brokers[0].e.cached[0]) == 100 and len(run.brokers[1].e.cached[1]) == 100
    run.rd[0][0], run.md[0][0], run.queued[0][0] = 30, 25, list(range(25, 30))
    run._restart(0, 1000.0)
    assert run.owner == [1, 1]
    assert run.brokers[0].e.cached[0] == {}  # unloaded with the topic
    assert run.rd[0][0] == 25 and run.queued[0][0] == []  # re-read from the mark-delete position
    assert run.available_at[0] == 1200.0 and not run.active[0][0]
    assert 1220.0 <= run.connected_at[0][0] <= 1240.0
    assert run.owner[1] == 1 and run.available_at[1] == 0.0  # the other broker's topic does not move


def test_producer_adds_after_a_move_pip430_caches_in_the_load_window_legacy_needs_an_active_cursor() -> None:
    for policy, cached in (("pip430", True), ("legacy", False)):
        run = _Run(tiny(move_ms=100.0), policy)
        run._restart(0, 0.0)  # partition 0 moves to broker 1, loads at 100 ms
        run._produce(0, 50.0, 0.05)  # topic unavailable: the producer queues 5 blocks
        assert run.written[0] == 0
        run._produce(0, 100.0, 0.0)  # loaded: the queued messages are written, no consumer back yet
        assert run.written[0] == 5
        assert (len(run.brokers[1].e.cached[0]) == 5) is cached, policy
        if policy == "pip430":
            assert all(b.exp == 0 for b in run.brokers[1].e.cached[0].values())  # no active cursor to expect


def test_mark_delete_strategy_keeps_dispatched_unacked_entries() -> None:
    for policy, low in (("legacy", 10), ("mark-delete", 4)):
        run = _Run(tiny(), policy)
        run._produce(0, 0.0, 0.1)  # 10 blocks of partition 0 on broker 0
        for s in range(2):
            run.md[s][0] = 4  # acked up to block 4 (exclusive)
            run._dispatch(s, 0, 0.0)  # dispatches 5 blocks (receiver queue 50 entries) from 0
        run._produce(0, 10.0, 0.05)  # 5 more blocks
        for s in range(2):
            run.queued[s][0].clear()
            run.permits[s][0] = 5  # the consumer's FLOW for the 5 blocks it took
            run._dispatch(s, 0, 10.0)  # read positions 5 -> 10
        for s in range(2):
            run._consume(s, 0.0)  # no credit: nothing consumed, mark-delete stays 4
        run._invalidate(0)
        assert min(run.brokers[0].e.cached[0]) == low, policy


def test_rolling_restart_small_is_deterministic_and_pip430_leads() -> None:
    sc = tiny(duration_s=6.0, restarts=2, move_ms=300.0)
    a = compare_restart(sc)
    b = compare_restart(sc)
    for doc in (a, b):
        for p in doc["policies"].values():
            p.pop("wall_seconds")
    assert a == b
    assert a["policies"]["pip430"]["topic_moves"] == 1 + 2 and a["policies"]["pip430"]["restarts"] == 2
    assert a["hit_rate"]["pip430"] >= max(v for k, v in a["hit_rate"].items() if k != "pip430")
    assert set(a["published"]) == set(PUBLISHED_HIT_RATE)
    c = compare_restart(dataclasses.replace(sc, seed=7), ("legacy",))
    assert c["policies"]["legacy"]["consumed"] > 0


def test_layout_error_plot(tmp_path: Any) -> None:
    from pulsar_ops.model.plot import plot_gc, plot_layout_error

    rows = [
        {"bookie": "b1", "reclaim_err": 0.03, "garbage_est": 105, "garbage_meas": 100, "bytes_err": 0.001},
        {"bookie": "b2", "reclaim_err": None, "garbage_est": 0, "garbage_meas": 0, "bytes_err": -0.002},
    ]
    png = tmp_path / "err.png"
    plot_layout_error(rows, png, "t")
    assert png.read_bytes()[:4] == b"\x89PNG"
    doc = {
        "start_ms": 0,
        "horizon_ms": 3_600_000,
        "bookies": {"b1": {"used_bytes_before": 10**9, "timeline": []}},
        "total": {"timeline": []},
        "estimate_vs_measured": {
            "b1": {k: {"error": 0.1} for k in ("predicted_reclaim", "garbage_bytes", "total_bytes")}
        },
    }
    svg = tmp_path / "gc.svg"
    plot_gc(doc, svg)
    assert "estimate error" in svg.read_text()


# -- layout estimate: entries per ensemble segment ---------------------------------------------------------------


def test_estimate_places_each_segments_entries_on_its_ensemble() -> None:
    from pulsar_ops.model.facts import LedgerFacts
    from pulsar_ops.model.layout import ENTRY_OVERHEAD_BYTES, estimate_layout, placements
    from pulsar_ops.repair.snapshot_facts import _segments

    segs = _segments('{"0": ["a", "b", "c"], "600": ["a", "b", "d"]}')
    assert segs == ((0, ("a", "b", "c")), (600, ("a", "b", "d")))
    assert _segments("not json") is None and _segments(None) is None
    f = LedgerFacts(1, 1000 * 960, ("a", "b", "c", "d"), 3, 2, 0, "CLOSED", closed_ms=1000, entries=1000, segments=segs)
    per_entry = 960 + ENTRY_OVERHEAD_BYTES
    got = {bk: (s, e, round(b)) for bk, s, e, b in placements(f, 0.0, 1000.0)}
    # 600 entries x 2 copies over a, b, c during the first 60 % of the span; 400 x 2 over a, b, d after
    assert got["c"] == (0.0, 600.0, round(600 * per_entry * 2 / 3))
    assert got["d"] == (600.0, 1000.0, round(400 * per_entry * 2 / 3))
    lay = estimate_layout([f], {}, now_ms=2000, log_size_limit=1 << 30)
    by = {b: int(lay.bookies[b].totals.sum()) for b in lay.bookies}
    assert by["a"] == by["b"] == round(1000 * per_entry * 2 / 3)
    assert by["c"] == round(600 * per_entry * 2 / 3) and by["d"] == round(400 * per_entry * 2 / 3)
    one = LedgerFacts(2, 9000, ("a", "b", "c", "d"), 3, 2, 0, "CLOSED", closed_ms=1000)  # no segments: even spread
    assert {bk for bk, *_ in placements(one, 0.0, 1000.0)} == {"a", "b", "c", "d"}
