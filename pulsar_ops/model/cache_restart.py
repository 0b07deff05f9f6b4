"""The PIP-430 rolling-restart experiment as a workload: ``model cache --scenario rolling-restart``.

The setup is apache/pulsar ``BrokerEntryCacheRollingRestartTest`` (pulsar-broker/src/test/.../broker/cache/, with
``AbstractBrokerEntryCacheMultiBrokerTest``), reported in PR #24623 (comment of 2025-08-21): 2 brokers restarted
one after the other every ``duration / (restarts + 1)`` (7.5 s) in a 30 s run, a 10-partition topic, a producer at
50,000 msg/s without batching, 10 consumers each on its own Shared subscription (receiver queue 200, acks grouped
5 ms, connection delay 20-40 ms), a 250 MB cache, every entry accounted as 8 KB. Hit rate as the test computes it:
``(consumed - entries read from BookKeeper) / consumed``.

What a restart does to a partition (upstream behaviour; the broker's own cache is the model in ``model.cache``):
* the restarting broker closes the topic: its cached entries go; the consumers' receiver queues are cleared on
  reconnection (ConsumerImpl.connectionOpened -> clearReceiverQueue), so whatever was dispatched but not acked is
  delivered again;
* the topic loads on the other broker (``move_ms`` after the close): an empty cache, the cursors recovered at their
  mark-delete positions (read position = mark-delete + 1, ManagedCursorImpl recovery); the producer reconnects
  first (no connection delay in the test) and writes the messages it queued meanwhile;
* each consumer reconnects 20-40 ms later; on subscribe the broker checks its cursor
  (PersistentTopic.checkBackloggedCursor: active while the backlog is under
  ``managedLedgerCursorBackloggedThreshold``); the experiment's brokers activate the cursor on connect
  (``activate_on_connect``: the test says the branch it ran on was changed so, for the #12258 runs).
* when the last active cursor leaves, the legacy cache of the topic is cleared
  (ManagedLedgerImpl.invalidateEntriesUpToSlowestReaderPosition with no active cursor).
The restarted broker comes back empty and takes no topic back during the run (no load balancing in 30 s). The
namespace has one bundle (``defaultNumberOfNamespaceBundles=1`` in the test base's configuration), so the ten
partitions live on one broker and move together: 3 restarts, 30 topic moves.

Periodic checks: ``PulsarStats.updateStats`` runs ``checkBackloggedCursors`` for every topic of a broker, and with
it ``checkCursorsToCacheEntries`` (apache/pulsar#23503: reads are not cached for #12258 until that check ran; "it
gets called as part of PulsarStats.updateStats which gets called every statsUpdateFrequencyInSecs"). The stats
updater is scheduled when the broker starts, first after ``statsUpdateInitialDelayInSecs`` (60 s) and then every
``statsUpdateFrequencyInSecs`` (60 s) (ServiceConfiguration defaults). Each broker of the experiment is started at
the test's setup and restarted every 15 s, so on none of them does the check run within the 30 s run: the #12258
settings never mark a cursor ``cacheReadEntry``. An explicit ``--backlog-check-ms`` runs the check every that many
ms from the start instead (what #23503 asks for: a reactive check).

End of the run, as the test does it: the restarts and the producer stop at ``duration_s``; the consumers go on for
up to ``drain_s`` (``consumersLatch.await(5, SECONDS)``), and a consumer thread ends when ``receive(2000 ms)``
returns nothing (``idle_exit_ms``), during the run as well.

Misses are explained per cause (``miss_causes``, entries): ``before-load`` (written before the topic loaded on its
current broker: the catch-up after a move, never in this broker's cache), ``not-cached`` (written on this broker
while no cursor was active, or read from storage without being cached), ``evicted-size`` / ``evicted-ttl`` /
``evicted-invalidation``; ``pending_read_merges`` counts the missed entries another subscription read from
BookKeeper in the same tick, the most ``PendingReadsManager`` could share (it merges only reads in flight at the
same time, whose duration the test's mock BookKeeper does not publish). Hits are split by how the entry came into
the cache (``hit_causes``: ``added`` by the producer, ``read`` from storage).

Dispatch: a Shared dispatcher reads while its consumer has permits, at most ``dispatcherMaxReadBatchSize`` (100)
entries a read, straight after the previous read (the test's mock BookKeeper has no delay); the consumer gives
permits back in one FLOW once it has processed half its receiver queue (ConsumerImpl
``receiverQueueRefillThreshold``) and a full receiver queue's worth on (re)connection; a read partly in the cache
reads only the missing ranges from BookKeeper, one read each (RangeEntryCacheImpl.doAsyncReadEntriesByPosition,
PIP-430; before it the whole range was read again). The consumer processes up to
``consumer_rate`` messages/s and acks each one (mark-delete = last processed). Everything is simulated per block of
``block_entries`` consecutive entries of one partition, every ``tick_ms``.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pulsar_ops.errors import ModelError
from pulsar_ops.model.cache import POLICIES, _Sim
from pulsar_ops.model.cache_workload import CacheConfig, CacheWorkload

# PR #24623, comment of 2025-08-21: cache hit percentage per configuration (BrokerEntryCacheRollingRestartTest)
PUBLISHED_HIT_RATE = {"pip430": 0.984, "legacy": 0.7685, "mark-delete": 0.5997, "backlog": 0.5209}
PUBLISHED_NAMES = {
    "pip430": "PIP430",
    "legacy": "PIP430disabled (the previous default)",
    "mark-delete": "cacheEvictionByMarkDeletedPosition",
    "backlog": "PR12258",
}
INT_MAX = 2**31 - 1
_HINT = "see `pulsar-ops model cache --help` for the scenario options"


@dataclass(frozen=True)
class RestartScenario:
    seed: int = 1
    duration_s: float = 30.0
    tick_ms: float = 10.0
    brokers: int = 2
    restarts: int = 3
    partitions: int = 10
    # namespace bundles: MockedPulsarServiceBaseTest.getDefaultConf sets defaultNumberOfNamespaceBundles=1, and the
    # test creates my-property/my-ns without a bundle count, so the ten partitions are one bundle on one broker;
    # 0 = spread the partitions over the brokers (p % brokers)
    bundles: int = 1
    publish_rate: float = 50_000.0  # msg/s over all partitions, one entry per message (batching off)
    subscriptions: int = 10
    receiver_queue: int = 200  # per partition consumer
    consumer_rate: float = 50_000.0  # msg/s one subscription's consumer processes: the producer rate (assumption)
    consumer_spread: float = 0.0  # each consumer's rate x U(1 - spread, 1 + spread), redrawn every second
    move_ms: float = 500.0  # from the close on one broker to the load on the other (the test does not say)
    connect_delay_ms: tuple[float, float] = (20.0, 40.0)
    entry_size: int = 8 * 1024
    cache_mb: float = 250.0
    block_entries: int = 20
    activate_on_connect: bool = True
    eviction: str = "queue"  # "queue": #24363's removal queue, as on the experiment's branch; "per-topic": before
    max_read_batch: int = 100  # dispatcherMaxReadBatchSize (ServiceConfiguration default)
    max_in_flight: int = 500_000  # the test's targetMessagesInFlight (produced x subscriptions - consumed)
    throttle_ms: float = 100.0
    # PulsarStats.updateStats (checkBackloggedCursors, checkCursorsToCacheEntries): ServiceConfiguration
    # statsUpdateInitialDelayInSecs / statsUpdateFrequencyInSecs, from each broker's start
    stats_update_initial_delay_s: float = 60.0
    stats_update_frequency_s: float = 60.0
    broker_uptime_s: float = 0.0  # how long the brokers have run when the test starts (set up just before)
    drain_s: float = 5.0  # consumersLatch.await(5, SECONDS) after the producer stops
    idle_exit_ms: float = 2000.0  # consumer.receive(2000, MILLISECONDS) == null ends the consumer thread
    config: CacheConfig = field(default_factory=CacheConfig)
    # settings given explicitly (``--min-backlog-cursors`` ...): applied over each configuration's own
    settings: tuple[tuple[str, Any], ...] = ()

    def validate(self) -> RestartScenario:
        checks = [
            (self.duration_s > 0 and 0 < self.tick_ms <= 100, "duration_s > 0 and 0 < tick_ms <= 100"),
            (self.brokers >= 2, "brokers must be >= 2 (a restarted broker's topics move to another)"),
            (self.restarts >= 0 and self.partitions >= 1 and self.subscriptions >= 1, "bad counts"),
            (self.publish_rate > 0 and self.consumer_rate > 0, "rates must be > 0"),
            (self.receiver_queue >= self.block_entries >= 1, "receiver_queue >= block_entries >= 1"),
            (self.max_read_batch >= 1, "max_read_batch must be >= 1"),
            (self.bundles >= 0, "bundles must be >= 0"),
            (self.move_ms >= 0 and self.cache_mb > 0, "move_ms >= 0 and cache_mb > 0"),
            (self.eviction in ("queue", "per-topic"), "eviction must be queue or per-topic"),
            (self.stats_update_frequency_s > 0 and self.stats_update_initial_delay_s >= 0, "bad stats period"),
            (self.drain_s >= 0 and self.idle_exit_ms > 0 and self.broker_uptime_s >= 0, "bad drain settings"),
        ]
        for ok, msg in checks:
            if not ok:
                raise ModelError(msg, hint=_HINT)
        return self


def policy_config(policy: str, base: CacheConfig) -> CacheConfig:
    """The broker settings of each configuration, as ``AbstractBrokerEntryCacheMultiBrokerTest`` sets them."""
    if policy == "pip430":
        return dataclasses.replace(base, expected_read_count=True, extend_ttl_on_access=True)
    if policy == "backlog":  # configurePR12258Caching
        return dataclasses.replace(
            base,
            expected_read_count=False,
            extend_ttl_on_access=False,
            min_backlog_cursors_for_caching=1,
            min_backlog_entries_for_caching=1,
            max_backlog_between_cursors_for_caching=INT_MAX,
            backlogged_threshold_entries=2**63 - 1,
        )
    return dataclasses.replace(base, expected_read_count=False, extend_ttl_on_access=False)


@dataclass
class RestartResult:
    policy: str
    consumed: int = 0
    dispatched: int = 0
    hits: int = 0
    bk_entries: int = 0
    bk_reads: int = 0
    produced: int = 0
    restarts: int = 0
    moves: int = 0
    per_second: list[dict[str, float]] = field(default_factory=list)
    evicted: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    wall_s: float = 0.0
    miss_causes: dict[str, int] = field(default_factory=dict)
    hit_causes: dict[str, int] = field(default_factory=dict)
    pending_read_merges: int = 0
    cursors_to_cache_checks: int = 0  # checkCursorsToCacheEntries runs (per topic)
    consumers_exited: int = 0  # consumer threads that ended on a 2 s receive timeout before the end

    @property
    def hit_rate(self) -> float:
        """As the test computes it: (consumed - BookKeeper entries) / consumed."""
        return (self.consumed - self.bk_entries) / self.consumed if self.consumed else 0.0

    @property
    def hit_rate_if_merged(self) -> float:
        """Upper bound with PendingReadsManager: every same-tick duplicate storage read shared."""
        if not self.consumed:
            return 0.0
        return (self.consumed - self.bk_entries + self.pending_read_merges) / self.consumed

    def to_json(self) -> dict[str, Any]:
        return {
            "hit_rate": round(self.hit_rate, 6),
            "hit_rate_if_pending_reads_merged": round(self.hit_rate_if_merged, 6),
            "published_hit_rate": PUBLISHED_HIT_RATE.get(self.policy),
            "produced": self.produced,
            "consumed": self.consumed,
            "dispatched": self.dispatched,
            "bk_reads": self.bk_reads,
            "bk_read_entries": self.bk_entries,
            "restarts": self.restarts,
            "topic_moves": self.moves,
            "refused_inserts": self.refused,
            "evicted_bytes": self.evicted,
            "miss_causes": dict(sorted(self.miss_causes.items())),
            "hit_causes": dict(sorted(self.hit_causes.items())),
            "pending_read_merges": self.pending_read_merges,
            "cursors_to_cache_checks": self.cursors_to_cache_checks,
            "consumers_exited": self.consumers_exited,
            "per_second": self.per_second,
            "wall_seconds": round(self.wall_s, 3),
        }


class _Broker:
    """One broker's entry cache: the ``model.cache`` engine (legacy family or PIP-430) over all partitions."""

    def __init__(self, sc: RestartScenario, policy: str, cfg: CacheConfig) -> None:
        # eviction engine: the PIP-430 removal queue (no requeue without expected reads or TTL extension, so
        # oldest-inserted first) or the pre-PIP-430 per-topic caches with EntryCacheDefaultEvictionPolicy
        engine = "pip430" if sc.eviction == "queue" or policy == "pip430" else "legacy"
        w = CacheWorkload(
            topics=sc.partitions,
            block_entries=sc.block_entries,
            entry_size=sc.entry_size,
            cache_mb=sc.cache_mb,
            tick_ms=sc.tick_ms,
            config=cfg,
        )
        self.e = _Sim(w, engine)
        self.e.why = {}  # explain misses: the cause each block left the cache by
        self.read_inserted: set[tuple[int, int]] = set()  # blocks cached by a storage read
        self.legacy = self.e.legacy  # the per-topic engine
        self.low = [0] * sc.partitions  # queue engine: no cached block of topic k below low[k]

    def insert(self, k: int, b: int, now: float, exp: int) -> Any:
        if b < self.low[k]:
            self.low[k] = b
        return self.e._insert(k, b, now, exp)

    def clear_topic(self, k: int, cause: str) -> None:
        e = self.e
        for blk in list(e.cached[k].values()):
            e._remove(blk, cause)
        e.heaps[k] = []
        e.head_ts[k] = e.head_blk[k] = math.inf
        self.low[k] = 0

    def invalidate_below(self, k: int, limit: int) -> None:
        """RangeEntryCacheImpl.invalidateEntries: drop the topic's entries before ``limit`` (legacy family)."""
        e = self.e
        if self.legacy:
            heap = e.heaps[k]
            while heap and heap[0] < limit:
                e._legacy_pop(k, "invalidation")
            return
        cache = e.cached[k]
        for b in range(self.low[k], limit):
            blk = cache.get(b)
            if blk is not None:
                e._remove(blk, "invalidation")  # its queued wrapper becomes MISSING
        self.low[k] = max(self.low[k], limit)

    def evict(self, now: float) -> None:
        e = self.e
        if not self.legacy:
            e._pip430_evict(now)
            return
        if e.pending_free >= 0:
            e._legacy_size_eviction(e.pending_free)
            e.pending_free = -1
        cutoff = now - e.cfg.ttl_ms
        for k in range(len(e.heaps)):
            heap = e.heaps[k]
            cache = e.cached[k]
            while heap and cache[heap[0]].ts <= cutoff:
                e._legacy_pop(k, "ttl")


class _Run:
    def __init__(self, sc: RestartScenario, policy: str) -> None:
        self.sc = sc
        self.policy = policy
        self.cfg = dataclasses.replace(policy_config(policy, sc.config), **dict(sc.settings))
        self.res = RestartResult(policy)
        self.rng = np.random.default_rng(sc.seed)
        self.brokers = [_Broker(sc, policy, self.cfg) for _ in range(sc.brokers)]
        P, S = sc.partitions, sc.subscriptions
        # bundle i (partitions p with p % bundles == i) starts on broker i % brokers; with one bundle every
        # partition is on the first broker, the one the clients' service URL names first
        self.owner = [(p % sc.bundles) % sc.brokers if sc.bundles else p % sc.brokers for p in range(P)]
        self.available_at = [0.0] * P
        self.first_blk = [0] * P  # first block written on the partition's current owner
        # each broker's stats updater: next run (ms of the scenario clock)
        first = (sc.stats_update_initial_delay_s - sc.broker_uptime_s) * 1000.0
        self.next_stats = [max(0.0, first)] * sc.brokers
        explicit = dict(sc.settings).get("backlog_check_ms")
        self.check_ms: float | None = float(explicit) if explicit is not None else None
        self.last_rx = [0.0] * S
        self.stopped = [False] * S
        self.tick_misses: set[tuple[int, int]] = set()
        self.load_ms = [-math.inf] * P  # topics loaded before the run: the continue-caching window is over
        self.produced = [0.0] * P  # blocks the producer has sent (fractional)
        self.written = [0] * P  # whole blocks written to the managed ledger
        self.rate_blk = sc.publish_rate / P / sc.block_entries  # blocks/s per partition
        self.rq_blk = sc.receiver_queue // sc.block_entries
        # flow control: the consumer's FLOW permits (the full receiver queue on (re)connect, then in batches of
        # receiverQueueRefillThreshold = receiverQueueSize / 2, ConsumerImpl); reads of at most
        # dispatcherMaxReadBatchSize entries
        self.refill_blk = max(1, math.ceil((sc.receiver_queue // 2) / sc.block_entries))
        self.read_blk = max(1, sc.max_read_batch // sc.block_entries)
        self.permits = [[self.rq_blk] * P for _ in range(S)]
        self.client_avail = [[0] * P for _ in range(S)]
        # per (subscription, partition): read position, mark-delete (next unacked block), queued blocks
        self.rd = [[0] * P for _ in range(S)]
        self.md = [[0] * P for _ in range(S)]
        self.queued: list[list[list[int]]] = [[[] for _ in range(P)] for _ in range(S)]
        self.connected_at = [[0.0] * P for _ in range(S)]
        self.active = [[True] * P for _ in range(S)]  # subscribed before the producer starts: no backlog
        self.cache_read = [[False] * P for _ in range(S)]
        self.credit = [0.0] * S  # consumer processing budget (blocks)
        self.rr = [0] * S
        # the test's producer sleeps 100 ms whenever 500,000 messages (over all subscriptions) are in flight
        self.throttled_until = -1.0
        self.speed = [1.0] * S  # each consumer thread's speed factor, redrawn every second

    # -- helpers -------------------------------------------------------------------------------------------------

    def _n_active(self, p: int) -> int:
        return sum(1 for s in range(self.sc.subscriptions) if self.active[s][p])

    def _invalidate(self, p: int) -> None:
        """Legacy family: up to the slowest active cursor's read (or mark-delete) position; none left: clear."""
        br = self.brokers[self.owner[p]]
        if self.policy == "pip430":
            return
        pos = self.md if self.cfg_mark_delete else self.rd
        act = [pos[s][p] for s in range(self.sc.subscriptions) if self.active[s][p]]
        if act:
            br.invalidate_below(p, min(act))
        else:
            br.clear_topic(p, "invalidation")

    @property
    def cfg_mark_delete(self) -> bool:
        return self.policy == "mark-delete"

    def _set_active(self, s: int, p: int, on: bool) -> None:
        was = self.active[s][p]
        self.active[s][p] = on
        if was and not on:
            self._invalidate(p)

    def _backlog_entries(self, s: int, p: int) -> int:
        return (self.written[p] - self.rd[s][p]) * self.sc.block_entries

    # -- events --------------------------------------------------------------------------------------------------

    def _restart(self, b: int, now: float) -> None:
        sc = self.sc
        self.res.restarts += 1
        # the broker starts again right away: its stats updater is scheduled anew
        self.next_stats[b] = now + sc.stats_update_initial_delay_s * 1000.0
        others = [x for x in range(sc.brokers) if x != b]
        for p in range(sc.partitions):
            if self.owner[p] != b:
                continue
            self.res.moves += 1
            self.brokers[b].clear_topic(p, "unload")
            load = [sum(1 for q in range(sc.partitions) if self.owner[q] == x) for x in others]
            self.owner[p] = others[int(np.argmin(load))]
            ready = now + sc.move_ms
            self.available_at[p] = ready
            self.load_ms[p] = ready
            self.first_blk[p] = self.written[p]
            for s in range(sc.subscriptions):
                self.queued[s][p] = []  # cleared on reconnection: delivered again from the mark-delete position
                self.permits[s][p] = self.rq_blk  # the FLOW of a full receiver queue sent on connection
                self.client_avail[s][p] = 0
                self.rd[s][p] = self.md[s][p]
                self.active[s][p] = False
                self.cache_read[s][p] = False  # a new ManagedCursorImpl on the new owner: cacheReadEntry false
                lo, hi = sc.connect_delay_ms
                self.connected_at[s][p] = ready + float(self.rng.uniform(lo, hi))

    def _connect(self, s: int, p: int) -> None:
        """Consumer subscribes on the new owner: checkBackloggedCursor (or activation on connect)."""
        if self.sc.activate_on_connect:
            on = True
        else:
            on = self._backlog_entries(s, p) < self.cfg.backlogged_threshold_entries
        self._set_active(s, p, on)

    def _check_backlogged_cursors(self, now: float, broker: int | None = None) -> None:
        for p in range(self.sc.partitions):
            if broker is not None and self.owner[p] != broker:
                continue
            for s in range(self.sc.subscriptions):
                if now >= self.connected_at[s][p] and now >= self.available_at[p]:
                    on = self._backlog_entries(s, p) < self.cfg.backlogged_threshold_entries
                    self._set_active(s, p, on)

    def _check_cursors_to_cache_entries(self, now: float, broker: int | None = None) -> None:
        """ManagedLedgerImpl.checkCursorsToCacheEntries (#12258) over each partition's durable cursors."""
        cfg = self.cfg
        if cfg.min_backlog_cursors_for_caching < 1:
            return
        S = self.sc.subscriptions
        for p in range(self.sc.partitions):
            if now < self.available_at[p] or (broker is not None and self.owner[p] != broker):
                continue
            self.res.cursors_to_cache_checks += 1
            backlog = [self._backlog_entries(s, p) for s in range(S)]
            for s in range(S):
                n = 0
                if backlog[s] >= cfg.min_backlog_entries_for_caching:
                    n = sum(
                        1
                        for o in range(S)
                        if o != s and abs(backlog[s] - backlog[o]) <= cfg.max_backlog_between_cursors_for_caching
                    )
                self.cache_read[s][p] = n >= cfg.min_backlog_cursors_for_caching

    # -- per tick ------------------------------------------------------------------------------------------------

    def _produce(self, p: int, now: float, dt_s: float) -> None:
        if now < self.throttled_until or now >= self.sc.duration_s * 1000.0:
            return  # throttled, or the producer thread was interrupted at the end of the run
        self.produced[p] += self.rate_blk * dt_s
        if now < self.available_at[p]:
            return  # queued in the producer (blockIfQueueFull, no batching) until the topic is back
        complete = int(self.produced[p])
        if complete <= self.written[p]:
            return
        br = self.brokers[self.owner[p]]
        n_act = self._n_active(p)
        if self.policy != "pip430":
            ok, exp = n_act > 0, 0  # OpAddEntry: cached while the managed ledger has an active cursor
        else:
            window = now - self.load_ms[p] <= self.cfg.continue_caching_ms
            ok, exp = n_act > 0 or window, n_act
        if ok:
            for b in range(self.written[p], complete):
                br.insert(p, b, now, exp)
        self.res.produced += (complete - self.written[p]) * self.sc.block_entries
        self.written[p] = complete

    def _dispatch(self, s: int, p: int, now: float) -> None:
        """The Shared dispatcher reads while its consumer has permits: up to dispatcherMaxReadBatchSize entries a
        read (PersistentDispatcherMultipleConsumers.readMoreEntries), the next read right after (no BK delay)."""
        while True:
            start = self.rd[s][p]
            n = min(self.permits[s][p], self.read_blk, self.written[p] - start)
            if n <= 0:
                return
            self.permits[s][p] -= n
            self._read(s, p, start, n, now)

    def _read(self, s: int, p: int, start: int, n: int, now: float) -> None:
        sc = self.sc
        q = self.queued[s][p]
        br = self.brokers[self.owner[p]]
        e = br.e
        cache = e.cached[p]
        be = sc.block_entries
        missed_run = False
        res = self.res
        for b in range(start, start + n):
            blk = cache.get(b)
            if blk is not None:
                res.hits += be
                how = "read" if (p, b) in br.read_inserted else "added"
                res.hit_causes[how] = res.hit_causes.get(how, 0) + be
                blk.accessed = True
                if blk.exp > 0:
                    blk.exp -= 1
                missed_run = False
            else:
                res.bk_entries += be
                if not missed_run:
                    res.bk_reads += 1
                missed_run = True
                why = self._miss_cause(br, p, b)
                res.miss_causes[why] = res.miss_causes.get(why, 0) + be
                if (p, b) in self.tick_misses:
                    res.pending_read_merges += be
                else:
                    self.tick_misses.add((p, b))
                new = None
                if self.policy != "pip430":
                    if self.policy == "backlog" and self.cache_read[s][p]:
                        new = br.insert(p, b, now, 0)
                else:
                    mine = self.rd[s][p]
                    before = sum(1 for o in range(sc.subscriptions) if self.active[o][p] and self.rd[o][p] <= mine)
                    if before > 0:
                        new = br.insert(p, b, now, before)
                        if new is not None:
                            new.exp -= 1
                if new is not None:
                    br.read_inserted.add((p, b))
                    br.e.why.pop((p, b), None)  # type: ignore[union-attr]
            q.append(b)
        self.res.dispatched += n * be
        self.rd[s][p] = start + n
        if self.active[s][p] and not self.cfg_mark_delete:
            self._invalidate(p)

    def _miss_cause(self, br: _Broker, p: int, b: int) -> str:
        if b < self.first_blk[p]:
            return "before-load"
        why = br.e.why.get((p, b)) if br.e.why is not None else None
        return "not-cached" if why is None else f"evicted-{why}"

    def _consume(self, s: int, dt_s: float, now: float = 0.0) -> None:
        sc = self.sc
        if self.stopped[s]:
            return
        self.credit[s] = min(
            self.credit[s] + sc.consumer_rate * self.speed[s] * dt_s / sc.block_entries,
            float(sc.partitions * self.rq_blk),
        )
        P = sc.partitions
        moved = [False] * P
        idle = 0
        while self.credit[s] >= 1.0 and idle < P:
            p = self.rr[s]
            self.rr[s] = (p + 1) % P
            q = self.queued[s][p]
            if not q:
                idle += 1
                continue
            idle = 0
            b = q.pop(0)
            self.credit[s] -= 1.0
            self.res.consumed += sc.block_entries
            self.md[s][p] = max(self.md[s][p], b + 1)
            moved[p] = True
            self.last_rx[s] = now
            # ConsumerImpl: permits go back to the broker in one FLOW once half the receiver queue was processed
            self.client_avail[s][p] += 1
            if self.client_avail[s][p] >= self.refill_blk:
                self.permits[s][p] += self.client_avail[s][p]
                self.client_avail[s][p] = 0
        if now - self.last_rx[s] >= sc.idle_exit_ms:
            self.stopped[s] = True  # receive(2000 ms) returned null: the consumer thread ends
            if now < sc.duration_s * 1000.0:
                self.res.consumers_exited += 1
        if self.cfg_mark_delete:
            for p in range(P):
                if moved[p] and self.active[s][p]:
                    self._invalidate(p)

    def run(self) -> RestartResult:
        sc = self.sc
        t0 = time.perf_counter()
        dt_s = sc.tick_ms / 1000.0
        n_ticks = math.ceil((sc.duration_s + sc.drain_s) * 1000.0 / sc.tick_ms)
        interval = sc.duration_s * 1000.0 / (sc.restarts + 1)
        restarts = {round(interval * (i + 1) / sc.tick_ms): i % sc.brokers for i in range(sc.restarts)}
        check_cache = max(1, round(self.check_ms / sc.tick_ms)) if self.check_ms is not None else 0
        stats_ms = sc.stats_update_frequency_s * 1000.0
        pending: list[tuple[float, int, int]] = []
        ticks_per_s = max(1, round(1000.0 / sc.tick_ms))
        last = (0, 0)
        for tick in range(n_ticks):
            now = tick * sc.tick_ms
            if now >= sc.duration_s * 1000.0 and all(self.stopped):
                break  # every consumer thread has ended: the test closes the consumers
            self.tick_misses.clear()
            if tick in restarts:
                self._restart(restarts[tick], now)
                for s in range(sc.subscriptions):
                    for p in range(sc.partitions):
                        if self.connected_at[s][p] > now:
                            heapq.heappush(pending, (self.connected_at[s][p], s, p))
            if sc.consumer_spread > 0 and tick % ticks_per_s == 0:
                lo, hi = 1.0 - sc.consumer_spread, 1.0 + sc.consumer_spread
                self.speed = [float(x) for x in self.rng.uniform(lo, hi, sc.subscriptions)]
            while pending and pending[0][0] <= now:
                _, s, p = heapq.heappop(pending)
                self._connect(s, p)
            for x in range(sc.brokers):
                if now >= self.next_stats[x]:  # PulsarStats.updateStats on broker x
                    self._check_backlogged_cursors(now, x)
                    if self.policy == "backlog" and not check_cache:
                        self._check_cursors_to_cache_entries(now, x)
                    self.next_stats[x] += stats_ms
            if self.policy == "backlog" and check_cache and tick % check_cache == 0:
                self._check_cursors_to_cache_entries(now)
            in_flight = self.res.produced * sc.subscriptions - self.res.consumed
            if sc.max_in_flight and in_flight >= sc.max_in_flight and now >= self.throttled_until:
                self.throttled_until = now + sc.throttle_ms
            for p in range(sc.partitions):
                self._produce(p, now, dt_s)
            for s in range(sc.subscriptions):
                for p in range(sc.partitions):
                    if now >= self.available_at[p] and now >= self.connected_at[s][p]:
                        self._dispatch(s, p, now)
                self._consume(s, dt_s, now)
            for br in self.brokers:
                br.evict(now)
            if (tick + 1) % ticks_per_s == 0:
                c, m = self.res.consumed - last[0], self.res.bk_entries - last[1]
                last = (self.res.consumed, self.res.bk_entries)
                if not c and now >= sc.duration_s * 1000.0:
                    continue  # the drain is over: nothing consumed, no hit rate
                self.res.per_second.append(
                    {
                        "t_s": round((tick + 1) * dt_s, 3),
                        "hit_rate": round((c - m) / c, 6) if c else 0.0,
                        "bookkeeper_read_entries": m,
                        "cached_bytes": int(sum(br.e.total for br in self.brokers)),
                    }
                )
        evicted: dict[str, int] = {}
        for br in self.brokers:
            for k, v in br.e.res.evicted.items():
                evicted[k] = evicted.get(k, 0) + v
            self.res.refused += br.e.res.refused
        self.res.evicted = evicted
        self.res.wall_s = time.perf_counter() - t0
        return self.res


def simulate_restart(sc: RestartScenario, policy: str) -> RestartResult:
    if policy not in POLICIES:
        raise ValueError(policy)
    return _Run(sc.validate(), policy).run()


def order_text(ranked: list[tuple[str, float]]) -> str:
    """``a > b = c``: strategies in decreasing hit rate, equal to 0.01 points joined by ``=``."""
    out = ""
    for i, (name, rate) in enumerate(ranked):
        if i:
            out += " = " if round(100 * ranked[i - 1][1], 2) == round(100 * rate, 2) else " > "
        out += name
    return out


def compare_restart(sc: RestartScenario, policies: tuple[str, ...] = POLICIES) -> dict[str, Any]:
    results = {p: simulate_restart(sc, p) for p in policies}
    order = sorted(PUBLISHED_HIT_RATE, key=lambda p: -PUBLISHED_HIT_RATE[p])
    model_order = sorted(results, key=lambda p: -results[p].hit_rate)
    return {
        "scenario": "rolling-restart",
        "setup": {k: v for k, v in sc.__dict__.items() if k != "config"} | {"config": sc.config.__dict__},
        "policies": {p: r.to_json() for p, r in results.items()},
        "hit_rate": {p: round(r.hit_rate, 6) for p, r in results.items()},
        "published": {p: PUBLISHED_HIT_RATE[p] for p in policies},
        "published_names": {p: PUBLISHED_NAMES[p] for p in policies},
        "difference_points": {p: round(100 * (r.hit_rate - PUBLISHED_HIT_RATE[p]), 2) for p, r in results.items()},
        "published_order": [p for p in order if p in results],
        "model_order": model_order,
        "model_order_text": order_text([(p, results[p].hit_rate) for p in model_order]),
    }
