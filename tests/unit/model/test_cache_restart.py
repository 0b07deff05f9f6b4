"""The rolling-restart scenario's upstream behaviours, each against a hand-computed small case: when the periodic
cursor checks run (PulsarStats.updateStats, from each broker's start), the test's end of run (producer stops,
consumers drain up to 5 s, a consumer thread ends after a 2 s receive timeout), and why each miss happened."""

from __future__ import annotations

from typing import Any

from pulsar_ops.model.cache_restart import RestartScenario, _Run, order_text, simulate_restart
from tests.unit.model.restart_scenarios import restart_scenario


def small(**kw: Any) -> RestartScenario:
    return restart_scenario(**{"restarts": 0, "drain_s": 0.0, **kw})


# -- checkCursorsToCacheEntries / checkBackloggedCursors: PulsarStats.updateStats ---------------------------------


def test_stats_updater_runs_per_broker_from_its_start() -> None:
    # initial delay 1 s, period 1 s; 2 brokers, one partition each; 4 s run: checks at 1, 2, 3 s on each broker
    r = simulate_restart(small(stats_update_initial_delay_s=1.0, stats_update_frequency_s=1.0), "backlog")
    assert r.cursors_to_cache_checks == 3 * 2
    # broker 0 restarts at 2 s (4 s / (1 + 1)): its partition 0 moves to broker 1 and loads at 2.5 s; broker 0
    # checks at 1 s (p0), then at 2 + 1 = 3 s (owns nothing); broker 1 at 1 s (p1), 2 s (p1; p0 not loaded yet),
    # 3 s (p0, p1)
    sc = small(restarts=1, move_ms=500.0, stats_update_initial_delay_s=1.0, stats_update_frequency_s=1.0)
    assert simulate_restart(sc, "backlog").cursors_to_cache_checks == 1 + 0 + 1 + 1 + 2


def test_upstream_defaults_never_check_within_the_experiment() -> None:
    # statsUpdateInitialDelayInSecs = 60: brokers set up just before a 4 s run never run the check, so #12258 never
    # marks a cursor cacheReadEntry and the backlog settings cache nothing a legacy broker would not
    sc = small(restarts=1, move_ms=300.0, publish_rate=4000.0, consumer_rate=3000.0)
    backlog, legacy = simulate_restart(sc, "backlog"), simulate_restart(sc, "legacy")
    assert backlog.cursors_to_cache_checks == 0
    assert (backlog.hits, backlog.bk_entries) == (legacy.hits, legacy.bk_entries)
    # a broker already up 58 s when the run starts checks at 2 s, unless it restarts first
    assert simulate_restart(small(broker_uptime_s=58.0), "backlog").cursors_to_cache_checks == 2
    # an explicit --backlog-check-ms runs it every that many ms from the start on every loaded partition
    explicit = small(settings=(("backlog_check_ms", 1000.0),))
    assert simulate_restart(explicit, "backlog").cursors_to_cache_checks == 4 * 2  # at 0, 1, 2, 3 s


def test_one_namespace_bundle_puts_every_partition_on_one_broker_and_moves_them_together() -> None:
    # defaultNumberOfNamespaceBundles=1 (MockedPulsarServiceBaseTest.getDefaultConf): all partitions on broker 0
    run = _Run(small(partitions=4, bundles=1, restarts=3, duration_s=8.0), "legacy")
    assert run.owner == [0, 0, 0, 0]
    run._restart(0, 2000.0)
    assert run.owner == [1, 1, 1, 1] and run.res.moves == 4
    run._restart(1, 4000.0)
    assert run.owner == [0, 0, 0, 0] and run.res.moves == 8
    spread = _Run(small(partitions=4, bundles=2), "legacy")
    assert spread.owner == [0, 1, 0, 1]


def test_a_move_gives_the_cursor_a_fresh_cache_read_flag() -> None:
    run = _Run(small(restarts=1, move_ms=100.0), "backlog")
    run.cache_read[0][0] = run.cache_read[1][0] = run.cache_read[0][1] = True
    run._restart(0, 0.0)  # partition 0 moves: new ManagedCursorImpl objects on broker 1
    assert run.cache_read[0][0] is False and run.cache_read[1][0] is False
    assert run.cache_read[0][1] is True  # partition 1 stays where it is


# -- end of the run -------------------------------------------------------------------------------------------------


def test_producer_stops_at_the_end_and_consumers_drain() -> None:
    # 2 partitions x 1000 msg/s for 4 s = 8000 messages; each subscription processes 1500 msg/s: 6000 by the end
    slow = {"consumer_rate": 1500.0, "restarts": 0}
    cut = simulate_restart(small(**slow), "legacy")
    assert cut.produced == 8000
    assert cut.consumed < 2 * 8000
    # the test waits up to 5 s: the 2000 left per subscription take 1.33 s
    drained = simulate_restart(small(drain_s=5.0, **slow), "legacy")
    assert drained.produced == 8000 and drained.consumed == 2 * 8000
    assert drained.consumers_exited == 0  # they ended after the run, on the 2 s receive timeout


def test_consumer_thread_ends_after_a_two_second_receive_timeout() -> None:
    # one partition at 2000 msg/s, moved at 3 s for 2.5 s: nothing to receive for more than 2 s, both consumer
    # threads end at 5 s; the producer goes on (its queue is written when the topic loads at 5.5 s)
    sc = small(partitions=1, restarts=1, move_ms=2500.0, duration_s=6.0)
    r = simulate_restart(sc, "pip430")
    assert r.consumers_exited == 2
    assert r.consumed == 2 * 6000  # what was produced before the move, by each subscription
    assert r.produced == 12000
    longer = simulate_restart(sc.__class__(**{**sc.__dict__, "idle_exit_ms": 5000.0}), "pip430")
    assert longer.consumers_exited == 0 and longer.consumed > r.consumed


# -- why each miss happened ------------------------------------------------------------------------------------------


def test_miss_causes_after_a_move() -> None:
    run = _Run(small(restarts=1, move_ms=100.0), "legacy")
    run._produce(0, 0.0, 0.1)  # 10 blocks of partition 0 cached on broker 0 (active cursors)
    run._restart(0, 1000.0)  # moves to broker 1, loads at 1100 ms: first block there is 10
    assert run.first_blk[0] == 10
    run._produce(0, 1100.0, 0.05)  # the 5 blocks queued meanwhile are written on broker 1, no active cursor
    assert run.written[0] == 15 and run.brokers[1].e.cached[0] == {}
    run.rd[0][0] = run.md[0][0] = 8
    run.connected_at[0][0] = 0.0
    run._dispatch(0, 0, 1100.0)  # receiver queue 50 entries = 5 blocks: 8, 9 (before the load), 10, 11, 12
    assert run.res.miss_causes == {"before-load": 20, "not-cached": 30}
    assert run.res.bk_entries == 50 and run.res.bk_reads == 1
    # the other subscription reads the same blocks in the same tick: PendingReadsManager could share those reads
    run.rd[1][0] = run.md[1][0] = 8
    run._dispatch(1, 0, 1100.0)
    assert run.res.pending_read_merges == 50
    run.tick_misses.clear()  # next tick: no read of these blocks is in flight any more
    run.queued[1][0].clear()
    run.rd[1][0] = 8
    run.permits[1][0] = 5
    run._dispatch(1, 0, 1110.0)
    assert run.res.pending_read_merges == 50 and run.rd[1][0] == 13


def test_miss_and_hit_causes_eviction_and_storage_reads() -> None:
    run = _Run(small(), "pip430")
    run._produce(0, 0.0, 0.1)  # 10 blocks, both cursors active: cached with 2 expected reads
    br = run.brokers[0]
    br.e._remove(br.e.cached[0][0], "size")
    run._dispatch(0, 0, 0.0)  # blocks 0-4: block 0 evicted by size, read from storage and cached for cursor 1
    assert run.res.miss_causes == {"evicted-size": 10}
    assert run.res.hit_causes == {"added": 40}
    run._dispatch(1, 0, 0.0)
    assert run.res.hit_causes == {"added": 80, "read": 10}  # cursor 1 hits the entry cursor 0 read
    assert run.res.pending_read_merges == 0


def test_order_text_shows_ties() -> None:
    ranked = [("pip430", 0.9533), ("legacy", 0.61101), ("mark-delete", 0.611012), ("backlog", 0.52)]
    assert order_text(ranked) == "pip430 > legacy = mark-delete > backlog"


# -- flow control and read batches -----------------------------------------------------------------------------------


def test_dispatcher_reads_in_batches_while_the_consumer_has_permits() -> None:
    # receiver queue 50 entries = 5 blocks of 10; refill threshold 25 entries -> 3 blocks; read batch 20 -> 2 blocks
    run = _Run(small(max_read_batch=20), "legacy")
    run._produce(0, 0.0, 0.1)  # 10 blocks of partition 0, cached
    run.brokers[0].clear_topic(0, "size")  # all gone: every read goes to BookKeeper
    run._dispatch(0, 0, 0.0)
    assert run.rd[0][0] == 5 and run.permits[0][0] == 0
    assert (run.res.bk_reads, run.res.bk_entries) == (3, 50)  # reads of 2 + 2 + 1 blocks
    run.credit[0] = 2.0
    run._consume(0, 0.0, 0.0)  # 2 blocks processed: below the refill threshold, no FLOW yet
    assert run.permits[0][0] == 0 and run.client_avail[0][0] == 2
    run._dispatch(0, 0, 0.0)
    assert run.rd[0][0] == 5
    run.credit[0] = 1.0
    run._consume(0, 0.0, 0.0)  # the third: one FLOW of 3 blocks
    assert run.permits[0][0] == 3 and run.client_avail[0][0] == 0
    run._dispatch(0, 0, 0.0)
    assert run.rd[0][0] == 8 and run.res.bk_reads == 3 + 2


def test_partly_cached_read_fetches_only_the_missing_ranges() -> None:
    # PIP-430 RangeEntryCacheImpl: a read of blocks 0-4 with 1 and 3 cached reads 0, 2 and 4 from BookKeeper
    run = _Run(small(max_read_batch=50), "legacy")
    run._produce(0, 0.0, 0.1)
    cache = run.brokers[0].e.cached[0]
    for b in (0, 2, 4):
        run.brokers[0].e._remove(cache[b], "ttl")
    run._dispatch(0, 0, 0.0)
    assert (run.res.bk_reads, run.res.bk_entries, run.res.hits) == (3, 30, 20)
