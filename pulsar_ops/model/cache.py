"""Broker managed-ledger entry cache: the legacy per-topic design and PIP-430's global removal queue.

Mechanisms (reference/broker-cache-and-nack.md §2-§3), simulated tick by tick (``tick_ms``, 10 ms = both
designs' eviction cadence) on *blocks* of ``block_entries`` consecutive entries of one topic: a block is inserted,
read, requeued and evicted as a unit, so one block operation stands for ``block_entries`` entry operations.

Legacy (before PIP-430):
  * an insert is refused while the total is at or above the maximum; above 0.98 x max one eviction task is
    submitted whose amount (total - watermark x max) is fixed at submission;
  * ``EntryCacheDefaultEvictionPolicy``: caches sorted by size, the shortest prefix of the largest caches holding
    at least half the bytes are victims, each frees ``int(sizeToFree x size / victimsTotal)`` from its lowest
    positions;
  * every tick every topic is visited: entries below the slowest active cursor are invalidated, then entries are
    removed from the lowest position while their timestamp is at or before now - TTL, stopping at the first
    fresh one (so out-of-order inserts shield stale entries behind them);
  * producer adds are cached while the topic has an active cursor (backlog <= managedLedgerCursorBackloggedThreshold
    entries; OpAddEntry -> ManagedLedgerImpl.hasActiveCursors); storage reads are not cached
    (ManagedLedgerImpl.asyncReadEntry passes ``cursor.isCacheReadEntry()``, false by default; apache/pulsar#23900).
Two variants of the legacy design, each a broker setting (apache/pulsar managed-ledger ManagedLedgerImpl,
ManagedCursorImpl):
  * ``mark-delete`` (``cacheEvictionByMarkDeletedPosition=true``, #14985): active cursors are ordered by their
    mark-delete position instead of their read position, so the invalidation keeps entries up to the slowest
    active cursor's mark-delete position (``ack_lag_ms`` behind its read position here);
  * ``backlog`` (#12258: ``managedLedgerMinimumBacklogCursorsForCaching``, ``...MinimumBacklogEntriesForCaching``,
    ``...MaxBacklogBetweenCursorsForCaching``): every ``backlog_check_ms`` ``checkCursorsToCacheEntries`` sets
    each cursor's ``cacheReadEntry``; storage reads by such a cursor are cached.
PIP-430:
  * one insertion-ordered queue for the broker; inserts are never refused;
  * time pass: head entries older than now - TTL are REQUEUEd (timestamp := now, accessed := false,
    requeueCount += 1) when (extend-TTL-on-access and accessed) or (expected reads >= 1 and requeueCount <
    maxRequeue), else REMOVEd; a fresh head is STOP; an entry already removed is MISSING;
  * size pass when the total exceeds 0.98 x max: free total - watermark x max from the head, same requeue rule,
    STOP once freed;
  * expected reads: producer add = number of active cursors (cached while there is one, or within
    ``continue_caching_ms`` of the topic loading); storage read = cursors at the same position or before (the
    reader included), minus the reader's own read; each dispatched read decrements; a Key_Shared replay
    enqueue increments.
Workload: tailing cursors read ``tail_lag_ms`` behind the producer, catch-up cursors start ``backlog_s`` behind
and read ``rate_factor`` x faster, Key_Shared cursors replay ``replay_fraction`` of blocks after
``replay_delay_ms``; topic reloads (Poisson) and broker restarts drop a topic's cache and rewind its cursors by
``ack_lag_ms`` (the mark-delete position).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pulsar_ops.model.cache_workload import CacheWorkload

POLICIES = ("legacy", "pip430", "mark-delete", "backlog")
LEGACY_FAMILY = ("legacy", "mark-delete", "backlog")
TAILING, CATCHUP, KEY_SHARED = 0, 1, 2
CAUSES = ("ttl", "size", "invalidation", "unload")


class _Block:
    __slots__ = ("accessed", "alive", "exp", "idx", "requeues", "topic", "ts")

    def __init__(self, topic: int, idx: int, ts: float, exp: int) -> None:
        self.topic = topic
        self.idx = idx
        self.ts = ts
        self.exp = exp
        self.accessed = False
        self.requeues = 0
        self.alive = True


@dataclass
class CacheResult:
    policy: str
    block_entries: int
    entry_size: int
    duration_s: float
    hits: int = 0  # entries
    misses: int = 0
    inserted: int = 0
    refused: int = 0
    requeues: int = 0
    removals: int = 0
    evicted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))  # bytes
    topic_visits: int = 0
    examined: int = 0  # blocks looked at by eviction passes
    per_second: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def hit_rate(self) -> float:
        n = self.hits + self.misses
        return self.hits / n if n else 0.0

    @property
    def block_ops(self) -> int:
        b = self.block_entries
        return (self.hits + self.misses + self.inserted) // b + self.requeues + self.removals

    @property
    def entry_ops(self) -> int:
        return self.block_ops * self.block_entries

    def to_json(self) -> dict[str, Any]:
        return {
            "hit_rate": round(self.hit_rate, 6),
            "reads": self.hits + self.misses,
            "hits": self.hits,
            "bookkeeper_reads_per_s": round(self.misses / self.duration_s, 3),
            "bookkeeper_read_bytes_per_s": round(self.misses * self.entry_size / self.duration_s, 1),
            "inserted_entries": self.inserted,
            "refused_inserts": self.refused,
            "evicted_bytes": dict(self.evicted),
            "eviction_work": {
                "topic_visits": self.topic_visits,
                "entries_examined": self.examined * self.block_entries,
                "requeues": self.requeues * self.block_entries,
            },
            "simulated_operations": self.entry_ops,
            "block_operations": self.block_ops,
            "wall_seconds": round(self.wall_s, 4),
            "operations_per_second": round(self.entry_ops / self.wall_s) if self.wall_s > 0 else None,
            "per_second": self.per_second,
        }


class _Sim:
    def __init__(self, w: CacheWorkload, policy: str) -> None:
        self.w = w
        self.cfg = w.config
        self.policy = policy
        self.legacy = policy in LEGACY_FAMILY
        self.by_mark_delete = policy == "mark-delete"
        self.backlog_caching = policy == "backlog" and w.config.min_backlog_cursors_for_caching >= 1
        self.res = CacheResult(policy, w.block_entries, w.entry_size, w.duration_s)
        self.rng = np.random.default_rng(w.seed)
        n_topics = w.topics
        weights: np.ndarray[Any, np.dtype[np.float64]] = np.ones(n_topics)
        if w.rate_skew > 0:
            weights = 1.0 / np.arange(1, n_topics + 1, dtype=np.float64) ** w.rate_skew
            self.rng.shuffle(weights)
        rates = w.publish_rate * weights * n_topics / weights.sum()
        self.rate_blk = rates / w.block_entries  # blocks per second
        self.block_bytes = w.block_entries * w.entry_size
        self.max = w.cache_bytes
        self.total = 0
        self.topic_bytes: list[int] = [0] * n_topics
        self.trigger_bytes = self.cfg.trigger * self.max
        self.cached: list[dict[int, _Block]] = [{} for _ in range(n_topics)]
        backlog = self.rate_blk * w.catchup_backlog_s
        self.published = backlog.copy()  # blocks published before t=0 (not cached)
        self.next_ins = np.floor(self.published).astype(np.int64)
        types = [TAILING] * w.tailing + [CATCHUP] * w.catchup + [KEY_SHARED] * w.key_shared
        per = len(types)
        self.cur_topic = np.repeat(np.arange(n_topics), per)
        self.cur_type = np.tile(np.asarray(types, dtype=np.int64), n_topics)
        self.pos = np.where(self.cur_type == CATCHUP, 0.0, backlog[self.cur_topic])
        self.topic_cursors = [list(range(k * per, (k + 1) * per)) for k in range(n_topics)]
        self.lag_blk = self.rate_blk * w.tail_lag_ms / 1000.0
        self.ack_lag_blk = self.rate_blk * w.ack_lag_ms / 1000.0
        self.load_ms = np.zeros(n_topics)
        # ManagedCursorImpl.cacheReadEntry (false until checkCursorsToCacheEntries sets it; #12258)
        self.cache_read = np.zeros(len(self.cur_topic), dtype=np.bool_)
        self.replays: list[tuple[float, int, int, int]] = []
        # legacy structures
        self.heaps: list[list[int]] = [[] for _ in range(n_topics)]
        self.head_ts: list[float] = [math.inf] * n_topics
        self.head_blk: list[float] = [math.inf] * n_topics
        self.pos_l: list[float] = self.pos.tolist()
        self.pending_free = -1
        # pip430 structures
        self.queue: deque[_Block] = deque()
        self.evict_scheduled = False
        # (topic, block) -> cause of its last removal, when a caller wants to explain misses (cache_restart)
        self.why: dict[tuple[int, int], str] | None = None

    # -- cache primitives ---------------------------------------------------------------------------------------

    def _insert(self, k: int, b: int, now: float, exp: int) -> _Block | None:
        cache = self.cached[k]
        if b in cache:
            return None
        size = self.block_bytes
        if self.legacy:
            if self.total >= self.max:
                self.res.refused += self.w.block_entries
                return None
            if self.total > self.trigger_bytes and self.pending_free < 0:
                self.pending_free = int(self.total - self.cfg.watermark * self.max)
        blk = _Block(k, b, now, exp)
        cache[b] = blk
        self.total += size
        self.topic_bytes[k] += size
        self.res.inserted += self.w.block_entries
        if self.legacy:
            heap = self.heaps[k]
            heapq.heappush(heap, b)
            if heap[0] == b:
                self.head_ts[k] = now
                self.head_blk[k] = b
        else:
            self.queue.append(blk)
            if self.total > self.trigger_bytes:
                self.evict_scheduled = True
        return blk

    def _remove(self, blk: _Block, cause: str) -> None:
        del self.cached[blk.topic][blk.idx]
        blk.alive = False
        self.total -= self.block_bytes
        self.topic_bytes[blk.topic] -= self.block_bytes
        self.res.evicted[cause] += self.block_bytes
        self.res.removals += 1
        if self.why is not None:
            self.why[(blk.topic, blk.idx)] = cause

    def _legacy_pop(self, k: int, cause: str) -> None:
        heap = self.heaps[k]
        b = heapq.heappop(heap)
        self._remove(self.cached[k][b], cause)
        if heap:
            self.head_ts[k] = self.cached[k][heap[0]].ts
            self.head_blk[k] = heap[0]
        else:
            self.head_ts[k] = self.head_blk[k] = math.inf

    # -- workload ------------------------------------------------------------------------------------------------

    def _active_mask(self) -> np.ndarray[Any, Any]:
        backlog_entries = (self.published[self.cur_topic] - self.pos) * self.w.block_entries
        return np.asarray(backlog_entries <= self.cfg.backlogged_threshold_entries)

    def _producer_inserts(self, now: float, active_count: np.ndarray[Any, Any]) -> None:
        complete = np.floor(self.published).astype(np.int64)
        n_cur = len(self.topic_cursors[0])
        window = self.cfg.continue_caching_ms
        for k in np.flatnonzero(complete > self.next_ins).tolist():
            if self.legacy:
                ok = active_count[k] > 0
                exp = 0
            else:
                ok = n_cur > 0 or now - self.load_ms[k] <= window
                exp = n_cur if self.cfg.expected_read_count else 0
            if ok:
                for b in range(int(self.next_ins[k]), int(complete[k])):
                    self._insert(k, b, now, exp)
            self.next_ins[k] = complete[k]

    def _read(self, c: int, k: int, b: int, now: float, active: bool) -> None:
        blk = self.cached[k].get(b)
        be = self.w.block_entries
        if blk is not None:
            self.res.hits += be
            blk.accessed = True
            if blk.exp > 0:
                blk.exp -= 1
            return
        self.res.misses += be
        if self.legacy:
            # ManagedLedgerImpl.asyncReadEntry passes opReadEntry.cursor.isCacheReadEntry() as shouldCacheEntry:
            # false unless the #12258 check enabled it for this cursor (reads are otherwise never cached, #23900)
            if self.backlog_caching and self.cache_read[c]:
                self._insert(k, b, now, 0)
        else:
            before = 1
            if self.cfg.expected_read_count:
                pl = self.pos_l
                p = pl[c]
                before = sum(1 for o in self.topic_cursors[k] if pl[o] <= p)
            new = self._insert(k, b, now, before)
            if new is not None and new.exp > 0:
                new.exp -= 1  # the reader's own dispatched copy

    def _reads(self, now: float, dt_s: float, active: np.ndarray[Any, Any]) -> None:
        tail = self.published[self.cur_topic] - self.lag_blk[self.cur_topic]
        speed = self.rate_blk[self.cur_topic] * self.w.catchup_rate_factor * dt_s
        target = np.where(self.cur_type == CATCHUP, np.minimum(self.pos + speed, tail), tail)
        target = np.maximum(target, self.pos)
        start = np.floor(self.pos).astype(np.int64)
        end = np.floor(target).astype(np.int64)
        ks_replay = self.w.replay_fraction if self.w.key_shared else 0.0
        for c in np.flatnonzero(end > start).tolist():
            k = int(self.cur_topic[c])
            is_ks = self.cur_type[c] == KEY_SHARED
            act = bool(active[c])
            for b in range(int(start[c]), int(end[c])):
                self._read(c, k, b, now, act)
                if is_ks and ks_replay > 0 and self.rng.random() < ks_replay:
                    heapq.heappush(self.replays, (now + self.w.replay_delay_ms, c, k, b))
                    blk = self.cached[k].get(b)
                    if blk is not None and not self.legacy and self.cfg.expected_read_count:
                        blk.exp += 1
        self.pos = target
        self.pos_l = target.tolist()
        while self.replays and self.replays[0][0] <= now:
            _, c, k, b = heapq.heappop(self.replays)
            self._read(c, k, b, now, bool(active[c]))

    def _unload(self, k: int, now: float) -> None:
        for blk in list(self.cached[k].values()):
            self._remove(blk, "unload")
        self.heaps[k] = []
        self.head_ts[k] = self.head_blk[k] = math.inf
        for c in self.topic_cursors[k]:
            self.pos[c] = max(0.0, self.pos[c] - self.ack_lag_blk[k])
            self.pos_l[c] = float(self.pos[c])
        self.load_ms[k] = now

    # -- eviction ------------------------------------------------------------------------------------------------

    def _legacy_evict(self, now: float, active: np.ndarray[Any, Any]) -> None:
        n_topics = self.w.topics
        if self.pending_free >= 0:
            self._legacy_size_eviction(self.pending_free)
            self.pending_free = -1
        self.res.topic_visits += n_topics
        # invalidate behind the slowest active cursor: its read position, or with cacheEvictionByMarkDeletedPosition
        # (#14985) its mark-delete position (ManagedLedgerImpl.invalidateEntriesUpToSlowestReaderPosition)
        slow = np.full(n_topics, np.inf)
        np.minimum.at(slow, self.cur_topic[active], np.floor(self._eviction_positions()[active]))
        # topics without an active cursor keep everything (nothing to invalidate up to)
        head_blk = np.asarray(self.head_blk)
        for k in np.flatnonzero((head_blk < slow) & np.isfinite(slow)).tolist():
            heap = self.heaps[k]
            limit = slow[k]
            while heap and heap[0] < limit:
                self.res.examined += 1
                self._legacy_pop(k, "invalidation")
        cutoff = now - self.cfg.ttl_ms
        for k in np.flatnonzero(np.asarray(self.head_ts) <= cutoff).tolist():
            heap = self.heaps[k]
            cache = self.cached[k]
            while heap and cache[heap[0]].ts <= cutoff:
                self.res.examined += 1
                self._legacy_pop(k, "ttl")
            self.res.examined += 1 if heap else 0

    def _eviction_positions(self) -> np.ndarray[Any, Any]:
        """Per cursor, the position the legacy family invalidates up to (exclusive)."""
        if self.by_mark_delete:
            return np.asarray(np.maximum(0.0, self.pos - self.ack_lag_blk[self.cur_topic]))
        return self.pos

    def check_cursors_to_cache_entries(self) -> None:
        """ManagedLedgerImpl.checkCursorsToCacheEntries (#12258), per topic over its durable cursors.

        A cursor's backlog is its entries not yet consumed (ManagedCursorImpl.getNumberOfEntries: read position to
        the end). A cursor with backlog >= minimumBacklogEntriesForCaching counts the other cursors whose backlog
        differs from its own by at most maxBacklogBetweenCursorsForCaching; reads are cached for it
        (setCacheReadEntry) when that count reaches minimumBacklogCursorsForCaching. Below the entries minimum the
        count stays 0. With minimumBacklogCursorsForCaching < 1 the check returns at once (feature off).
        """
        cfg = self.cfg
        if cfg.min_backlog_cursors_for_caching < 1:
            return
        backlog = (self.published[self.cur_topic] - self.pos) * self.w.block_entries
        for cursors in self.topic_cursors:
            for c in cursors:
                n = 0
                if backlog[c] >= cfg.min_backlog_entries_for_caching:
                    n = sum(
                        1
                        for o in cursors
                        if o != c and abs(backlog[c] - backlog[o]) <= cfg.max_backlog_between_cursors_for_caching
                    )
                self.cache_read[c] = n >= cfg.min_backlog_cursors_for_caching

    def _legacy_size_eviction(self, size_to_free: int) -> None:
        sizes = np.asarray(self.topic_bytes, dtype=np.int64)
        nz = np.flatnonzero(sizes > 0)
        if size_to_free <= 0 or nz.size == 0:
            return
        self.res.topic_visits += int(nz.size)
        order = nz[np.argsort(-sizes[nz], kind="stable")]
        csum = np.cumsum(sizes[order])
        half = 0.5 * csum[-1]
        n_victims = int(np.searchsorted(csum, half, side="left")) + 1
        victims = order[:n_victims]
        victims_total = int(csum[n_victims - 1])
        for k in victims.tolist():
            share = int(size_to_free * int(sizes[k]) / victims_total)
            freed = 0
            heap = self.heaps[k]
            while share > 0 and freed < share and heap:
                self.res.examined += 1
                self._legacy_pop(k, "size")
                freed += self.block_bytes

    def _requeue_rule(self, blk: _Block) -> bool:
        if self.cfg.extend_ttl_on_access and blk.accessed:
            return True
        return blk.exp >= 1 and blk.requeues < self.cfg.max_requeue

    def _requeue(self, blk: _Block, now: float) -> None:
        blk.ts = now
        blk.accessed = False
        blk.requeues += 1
        self.queue.append(blk)
        self.res.requeues += 1

    def _pip430_evict(self, now: float) -> None:
        q = self.queue
        cutoff = now - self.cfg.ttl_ms
        while q:
            blk = q[0]
            self.res.examined += 1
            if not blk.alive:
                q.popleft()  # MISSING
                continue
            if blk.ts >= cutoff:
                break  # STOP
            q.popleft()
            if self._requeue_rule(blk):
                self._requeue(blk, now)
            else:
                self._remove(blk, "ttl")
        if self.total > self.trigger_bytes:
            to_free = self.total - self.cfg.watermark * self.max
            freed = 0
            while q and freed < to_free:
                blk = q[0]
                self.res.examined += 1
                q.popleft()
                if not blk.alive:
                    continue
                if self._requeue_rule(blk):
                    self._requeue(blk, now)
                else:
                    self._remove(blk, "size")
                    freed += self.block_bytes
        self.evict_scheduled = False

    # -- main loop -----------------------------------------------------------------------------------------------

    def run(self) -> CacheResult:
        w = self.w
        t0 = time.perf_counter()
        dt_s = w.tick_ms / 1000.0
        n_ticks = math.ceil(w.duration_s * 1000.0 / w.tick_ms)
        restart_ticks = {int(s * 1000.0 / w.tick_ms) for s in w.restarts_at_s}
        ticks_per_s = max(1, round(1000.0 / w.tick_ms))
        check_every = max(1, round(self.cfg.backlog_check_ms / w.tick_ms))
        last_h = last_m = 0
        for tick in range(n_ticks):
            now = tick * w.tick_ms
            if tick in restart_ticks:
                for k in range(w.topics):
                    self._unload(k, now)
            if w.reloads_per_s > 0:
                for _ in range(int(self.rng.poisson(w.reloads_per_s * dt_s))):
                    self._unload(int(self.rng.integers(w.topics)), now)
            self.published += self.rate_blk * dt_s
            active = self._active_mask()
            if self.backlog_caching and tick % check_every == 0:
                self.check_cursors_to_cache_entries()
            active_count = np.bincount(self.cur_topic[active], minlength=w.topics)
            self._producer_inserts(now, active_count)
            self._reads(now, dt_s, active)
            if self.legacy:
                self._legacy_evict(now, self._active_mask())
            else:
                self._pip430_evict(now)
            if (tick + 1) % ticks_per_s == 0:
                h, m = self.res.hits - last_h, self.res.misses - last_m
                last_h, last_m = self.res.hits, self.res.misses
                self.res.per_second.append(
                    {
                        "t_s": round((tick + 1) * dt_s, 3),
                        "hit_rate": round(h / (h + m), 6) if h + m else 0.0,
                        "bookkeeper_reads": m,
                        "cached_bytes": int(self.total),
                    }
                )
        self.res.wall_s = time.perf_counter() - t0
        return self.res


def simulate_cache(w: CacheWorkload, policy: str) -> CacheResult:
    if policy not in POLICIES:
        raise ValueError(policy)
    return _Sim(w.validate(), policy).run()


def compare(w: CacheWorkload, policies: tuple[str, ...] = POLICIES) -> dict[str, Any]:
    results = {p: simulate_cache(w, p) for p in policies}
    return {
        "workload": {k: v for k, v in w.__dict__.items() if k != "config"} | {"config": w.config.__dict__},
        "policies": {p: r.to_json() for p, r in results.items()},
        "hit_rate": {p: round(r.hit_rate, 6) for p, r in results.items()},
    }
