"""Workload and settings for the broker entry-cache model (``model.cache``), parsed from ``--workload FILE.json``.

Contract (every key optional; defaults in brackets)::

    {"seed": 1, "duration_s": 30, "tick_ms": 10, "topics": 200, "publish_rate": 100 (entries/s per topic),
     "rate_skew": 0.0 (Zipf exponent over topics), "entry_size": 1024, "block_entries": 10,
     "subscriptions": {"tailing": 2, "catchup": 0, "key_shared": 0} (per topic),
     "tail_lag_ms": 20, "catchup": {"backlog_s": 60, "rate_factor": 3.0},
     "key_shared": {"replay_fraction": 0.05, "replay_delay_ms": 1500},
     "reloads_per_s": 0.0, "ack_lag_ms": 2000, "restarts_at_s": [], "cache_mb": 64,
     "config": {"ttl_ms": 1000, "watermark": 0.9, "trigger": 0.98, "max_requeue": 5,
                "extend_ttl_on_access": true, "continue_caching_ms": 2000, "backlogged_threshold_entries": 1000,
                "expected_read_count": true, "min_backlog_cursors_for_caching": 1,
                "min_backlog_entries_for_caching": 1000, "max_backlog_between_cursors_for_caching": 1000,
                "backlog_check_ms": 1000}}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pulsar_ops.errors import ModelError

_HINT = "fix the --workload file; its keys are listed in `pulsar-ops model cache --help`"


@dataclass(frozen=True)
class CacheConfig:
    ttl_ms: float = 1000.0  # managedLedgerCacheEvictionTimeThresholdMillis
    watermark: float = 0.9  # managedLedgerCacheEvictionWatermark
    trigger: float = 0.98  # evictionTriggerThresholdPercent (hard-coded upstream)
    max_requeue: int = 5  # ...ExtendTTLOfEntriesWithRemainingExpectedReadsMaxTimes
    extend_ttl_on_access: bool = True  # ...ExtendTTLOfRecentlyAccessed (4.2.x: true, 5.0: false)
    continue_caching_ms: float = 2000.0  # ...ContinueCachingAddedEntriesAfterLastActiveCursorLeavesMillis
    backlogged_threshold_entries: int = 1000  # managedLedgerCursorBackloggedThreshold (legacy "active" cursor)
    expected_read_count: bool = True  # cacheEvictionByExpectedReadCount
    # #12258 backlog caching (policy "backlog"): managedLedgerMinimumBacklogCursorsForCaching (upstream default 0 =
    # off; the policy needs >= 1), ...MinimumBacklogEntriesForCaching, ...MaxBacklogBetweenCursorsForCaching
    min_backlog_cursors_for_caching: int = 1
    min_backlog_entries_for_caching: int = 1000
    max_backlog_between_cursors_for_caching: int = 1000
    backlog_check_ms: float = 1000.0  # period of checkCursorsToCacheEntries in the model (an assumption, see README)


@dataclass(frozen=True)
class CacheWorkload:
    seed: int = 1
    duration_s: float = 30.0
    tick_ms: float = 10.0
    topics: int = 200
    publish_rate: float = 100.0
    rate_skew: float = 0.0
    entry_size: int = 1024
    block_entries: int = 10
    tailing: int = 2
    catchup: int = 0
    key_shared: int = 0
    tail_lag_ms: float = 20.0
    catchup_backlog_s: float = 60.0
    catchup_rate_factor: float = 3.0
    replay_fraction: float = 0.05
    replay_delay_ms: float = 1500.0
    reloads_per_s: float = 0.0
    ack_lag_ms: float = 2000.0
    restarts_at_s: tuple[float, ...] = ()
    cache_mb: float = 64.0
    config: CacheConfig = field(default_factory=CacheConfig)

    @property
    def cache_bytes(self) -> int:
        return int(self.cache_mb * 1024 * 1024)

    def validate(self) -> CacheWorkload:
        checks = [
            (self.duration_s > 0, "duration_s must be > 0"),
            (0 < self.tick_ms <= 1000, "tick_ms must be in (0, 1000]"),
            (self.topics >= 1, "topics must be >= 1"),
            (self.publish_rate > 0, "publish_rate must be > 0"),
            (self.entry_size > 0 and self.block_entries >= 1, "entry_size and block_entries must be positive"),
            (min(self.tailing, self.catchup, self.key_shared) >= 0, "subscription counts must be >= 0"),
            (self.tailing + self.catchup + self.key_shared >= 1, "need at least one subscription per topic"),
            (0 <= self.replay_fraction <= 1, "key_shared.replay_fraction must be in [0, 1]"),
            (self.catchup_rate_factor > 1, "catchup.rate_factor must be > 1 (faster than the producer)"),
            (self.cache_mb >= 0, "cache_mb must be >= 0"),
            (0 < self.config.watermark < self.config.trigger <= 1, "need 0 < watermark < trigger <= 1"),
            (self.config.ttl_ms > 0 and self.config.max_requeue >= 0, "ttl_ms > 0 and max_requeue >= 0"),
            (self.config.backlog_check_ms > 0, "backlog_check_ms must be > 0"),
            (
                min(self.config.min_backlog_entries_for_caching, self.config.max_backlog_between_cursors_for_caching)
                >= 0,
                "backlog caching settings must be >= 0",
            ),
        ]
        for ok, msg in checks:
            if not ok:
                raise ModelError(msg, hint=_HINT)
        return self


def _num(raw: Mapping[str, Any], key: str, default: Any) -> Any:
    value = raw.get(key, default)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ModelError(f"{key!r} must be true or false, got {value!r}", hint=_HINT)
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"{key!r} must be a number, got {value!r}", hint=_HINT)
    return type(default)(value) if isinstance(default, int) and value == int(value) else value


def workload_from_json(doc: Any) -> CacheWorkload:
    if not isinstance(doc, dict):
        raise ModelError("the workload must be a JSON object", hint=_HINT)
    known = {
        "seed",
        "duration_s",
        "tick_ms",
        "topics",
        "publish_rate",
        "rate_skew",
        "entry_size",
        "block_entries",
        "subscriptions",
        "tail_lag_ms",
        "catchup",
        "key_shared",
        "reloads_per_s",
        "ack_lag_ms",
        "restarts_at_s",
        "cache_mb",
        "config",
    }
    unknown = set(doc) - known
    if unknown:
        raise ModelError(f"unknown workload key(s): {', '.join(sorted(unknown))}", hint=_HINT)
    base = CacheWorkload()
    flat: dict[str, Any] = {}
    for key in (
        "seed",
        "duration_s",
        "tick_ms",
        "topics",
        "publish_rate",
        "rate_skew",
        "entry_size",
        "block_entries",
        "tail_lag_ms",
        "reloads_per_s",
        "ack_lag_ms",
        "cache_mb",
    ):
        flat[key] = _num(doc, key, getattr(base, key))
    subs = doc.get("subscriptions", {})
    catch = doc.get("catchup", {})
    ks = doc.get("key_shared", {})
    cfg_raw = doc.get("config", {})
    for name, part in (("subscriptions", subs), ("catchup", catch), ("key_shared", ks), ("config", cfg_raw)):
        if not isinstance(part, dict):
            raise ModelError(f"{name!r} must be an object", hint=_HINT)
    for key in ("tailing", "catchup", "key_shared"):
        flat[key] = int(_num(subs, key, getattr(base, key)))
    flat["catchup_backlog_s"] = _num(catch, "backlog_s", base.catchup_backlog_s)
    flat["catchup_rate_factor"] = _num(catch, "rate_factor", base.catchup_rate_factor)
    flat["replay_fraction"] = _num(ks, "replay_fraction", base.replay_fraction)
    flat["replay_delay_ms"] = _num(ks, "replay_delay_ms", base.replay_delay_ms)
    restarts = doc.get("restarts_at_s", [])
    if not isinstance(restarts, list) or not all(isinstance(x, int | float) for x in restarts):
        raise ModelError("'restarts_at_s' must be a list of seconds", hint=_HINT)
    flat["restarts_at_s"] = tuple(float(x) for x in restarts)
    cbase = CacheConfig()
    unknown_cfg = set(cfg_raw) - {f.name for f in dataclasses.fields(CacheConfig)}
    if unknown_cfg:
        raise ModelError(f"unknown cache config key(s): {', '.join(sorted(unknown_cfg))}", hint=_HINT)
    cfg = CacheConfig(**{f.name: _num(cfg_raw, f.name, getattr(cbase, f.name)) for f in dataclasses.fields(cbase)})
    for key in ("topics", "entry_size", "block_entries", "seed"):
        if flat[key] != int(flat[key]):
            raise ModelError(f"{key!r} must be an integer", hint=_HINT)
        flat[key] = int(flat[key])
    return CacheWorkload(**flat, config=cfg).validate()
