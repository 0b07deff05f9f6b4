"""Broker entry-cache model pinned to reference/broker-cache-and-nack.md §2-§3 and the PIP-430 seed."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from pulsar_ops.errors import ModelError
from pulsar_ops.model.cache import _Sim, compare, simulate_cache
from pulsar_ops.model.cache_workload import CacheConfig, CacheWorkload, workload_from_json

KB = 1024


def sim(policy: str, topics: int = 4, cache_blocks: int = 1000, **cfg: Any) -> _Sim:
    w = CacheWorkload(
        topics=topics, block_entries=1, entry_size=KB, cache_mb=cache_blocks * KB / (1 << 20), config=CacheConfig(**cfg)
    )
    return _Sim(w, policy)


def fill(s: _Sim, topic: int, blocks: range, now: float = 0.0, exp: int = 0) -> None:
    for b in blocks:
        s._insert(topic, b, now, exp)


# -- legacy ---------------------------------------------------------------------------------------------------------


def test_legacy_victims_are_the_largest_caches_covering_half_the_bytes_with_proportional_shares() -> None:
    s = sim("legacy")
    for k, n in enumerate((40, 30, 20, 10)):
        fill(s, k, range(100, 100 + n))
    s._legacy_size_eviction(35 * KB)
    # half of 100 blocks = 50: topics 0 (40) and 1 (30) are the victims; shares 35*40/70 = 20 and 35*30/70 = 15
    assert [int(x) // KB for x in s.topic_bytes] == [20, 15, 20, 10]
    # lowest positions first, inside the victims only
    assert sorted(s.cached[0]) == list(range(120, 140)) and sorted(s.cached[1]) == list(range(115, 130))
    assert s.res.evicted["size"] == 35 * KB


def test_legacy_single_largest_cache_can_be_the_only_victim_and_shares_truncate() -> None:
    s = sim("legacy")
    for k, n in enumerate((50, 30, 10, 10)):
        fill(s, k, range(n))
    s._legacy_size_eviction(7 * KB + 1)  # 50 >= half of 100: topic 0 alone frees int(7169 * 50/50) bytes
    assert [int(x) // KB for x in s.topic_bytes] == [42, 30, 10, 10]  # whole blocks: 8 removed to free 7169 B


def test_legacy_refuses_inserts_at_max_and_fixes_the_amount_at_submission() -> None:
    s = sim("legacy", cache_blocks=100)
    fill(s, 0, range(150))
    assert s.total == 100 * KB and s.res.refused == 50
    assert s.pending_free == int(99 * KB - 0.9 * 100 * KB)  # submitted when the total first exceeded 0.98 x max


def test_legacy_timestamp_walk_stops_at_the_first_fresh_entry() -> None:
    s = sim("legacy", ttl_ms=1000)
    fill(s, 0, range(10, 20), now=0.0)  # stale by t=2000
    fill(s, 0, range(0, 2), now=1500.0)  # a catch-up read inserts fresh entries at lower positions
    s.pos[:] = 0.0  # no invalidation: cursors sit at the start
    s._legacy_evict(2000.0, s._active_mask())
    assert sorted(s.cached[0]) == [0, 1, *range(10, 20)]  # the stale entries survive behind the fresh ones
    s._legacy_evict(2600.0, s._active_mask())
    assert s.cached[0] == {}
    assert s.res.evicted["ttl"] == 12 * KB


def test_legacy_invalidates_behind_the_slowest_active_cursor() -> None:
    s = sim("legacy")
    s.published[:] = 20.0
    fill(s, 0, range(20))
    s.pos[s.topic_cursors[0]] = [12.0, 15.0]
    s._legacy_evict(0.0, s._active_mask())
    assert sorted(s.cached[0]) == list(range(12, 20))
    assert s.res.evicted["invalidation"] == 12 * KB
    assert s.res.topic_visits == 4  # every topic is visited on every pass


# -- PIP-430 ---------------------------------------------------------------------------------------------------------


def lifetime(policy_cfg: dict[str, Any], *, accessed_every_ms: float | None = None, exp: int = 0) -> float:
    s = sim("pip430", **policy_cfg)
    fill(s, 0, range(1), now=0.0, exp=exp)
    blk = s.cached[0][0]
    t = 0.0
    while blk.alive and t < 60_000:
        t += 10.0
        if accessed_every_ms and t % accessed_every_ms == 0:
            blk.accessed = True
        s._pip430_evict(t)
    return t


def test_pip430_lifetimes() -> None:
    ttl = 1000.0
    plain = lifetime({"extend_ttl_on_access": False})
    assert ttl <= plain <= ttl + 10  # about 1 x TTL (between TTL and TTL + one interval)
    accessed_once = sim("pip430")
    fill(accessed_once, 0, range(1))
    blk = accessed_once.cached[0][0]
    blk.accessed = True
    t = 0.0
    while blk.alive:
        t += 10.0
        accessed_once._pip430_evict(t)
    assert 2 * ttl <= t <= 2 * ttl + 20  # >= 2 x TTL when accessed
    assert lifetime({}, accessed_every_ms=500) == 60_000  # accessed in every TTL window: kept (LRU-like)
    with_reads = lifetime({"extend_ttl_on_access": False}, exp=3)
    assert 6 * ttl <= with_reads <= 6 * ttl + 60  # at most (1 + max requeues) x TTL
    assert lifetime({"extend_ttl_on_access": False, "max_requeue": 2}, exp=3) <= 3 * ttl + 30


def test_pip430_results_remove_requeue_stop_missing() -> None:
    s = sim("pip430", cache_blocks=1000)
    fill(s, 0, range(3), now=0.0)
    fill(s, 1, range(2), now=0.0, exp=1)
    fill(s, 2, range(1), now=900.0)
    s._unload(0, 5.0)  # topic 0's wrappers stay queued with no key: MISSING
    removed_before = s.res.removals
    s._pip430_evict(1001.0)
    # 3 MISSING polled, 2 REQUEUEd (expected reads), the fresh topic-2 entry is the STOP
    assert s.res.removals == removed_before and s.res.requeues == 2
    assert [(b.topic, b.idx) for b in s.queue] == [(2, 0), (1, 0), (1, 1)]
    assert all(b.requeues == 1 and b.ts == 1001.0 and not b.accessed for b in list(s.queue)[1:])


def test_pip430_size_pass_frees_to_the_watermark_skipping_protected_entries() -> None:
    s = sim("pip430", cache_blocks=100, extend_ttl_on_access=False)
    fill(s, 0, range(10), exp=1)  # expected reads: requeued, not removed
    fill(s, 1, range(90))
    assert s.total == 100 * KB and s.evict_scheduled  # inserts are never refused
    s._pip430_evict(1.0)
    assert s.total == 90 * KB  # down to the watermark
    assert len(s.cached[0]) == 10 and len(s.cached[1]) == 80  # oldest unprotected entries went
    assert s.res.evicted["size"] == 10 * KB and s.res.requeues == 10


# -- whole runs ------------------------------------------------------------------------------------------------------


def small(**kw: Any) -> CacheWorkload:
    base: dict[str, Any] = {"topics": 40, "duration_s": 8, "publish_rate": 200, "cache_mb": 4}
    base.update(kw)
    return CacheWorkload(**base)


def test_key_shared_replays_hit_with_pip430_expected_reads() -> None:
    w = small(tailing=1, key_shared=1, replay_fraction=0.3, replay_delay_ms=2500, cache_mb=64)
    out = compare(w)
    # legacy invalidates entries once every active cursor has read past them, so replays go to BookKeeper;
    # PIP-430 keeps them (replay enqueue -> expected read) for up to 6 x TTL
    assert out["hit_rate"]["pip430"] > out["hit_rate"]["legacy"] + 0.05
    assert out["policies"]["legacy"]["evicted_bytes"]["invalidation"] > 0


def test_restart_turns_the_ack_lag_into_bookkeeper_reads() -> None:
    base = simulate_cache(small(), "pip430")
    restarted = simulate_cache(small(restarts_at_s=(4.0,)), "pip430")
    assert restarted.misses > base.misses
    assert restarted.evicted["unload"] > 0
    sec = restarted.per_second
    assert sec[4]["bookkeeper_reads"] > 10 * max(sec[2]["bookkeeper_reads"], 1)


def test_deterministic_for_a_seed_and_sensitive_to_it() -> None:
    w = small(reloads_per_s=2.0, key_shared=1, catchup=1)

    def strip(doc: dict[str, Any]) -> dict[str, Any]:
        for p in doc["policies"].values():
            p.pop("wall_seconds")
            p.pop("operations_per_second")
        return doc

    first = strip(compare(w))
    assert first == strip(compare(w))
    other = strip(compare(CacheWorkload(**{**w.__dict__, "seed": 99})))
    assert other["policies"]["pip430"]["evicted_bytes"] != first["policies"]["pip430"]["evicted_bytes"]


def test_workload_json_validation() -> None:
    assert workload_from_json({"topics": 3, "subscriptions": {"tailing": 1}}).topics == 3
    for bad in (
        {"topics": "x"},
        {"topicz": 1},
        {"config": {"ttl": 1}},
        {"subscriptions": {"tailing": 0}},
        {"key_shared": {"replay_fraction": 2}},
        [],
        {"restarts_at_s": "5"},
    ):
        with pytest.raises(ModelError):
            workload_from_json(bad)


def test_models_import_no_io_library() -> None:
    code = (
        "import sys; import pulsar_ops.model.cache, pulsar_ops.model.gc, pulsar_ops.model.nack, "
        "pulsar_ops.model.impact; "
        "bad = [m for m in ('kazoo', 'httpx', 'pyspark', 'pyarrow', 'pandas', 'matplotlib', 'typer', 'rich') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
