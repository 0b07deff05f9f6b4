"""The small rolling-restart scenario the model's hand-computed cases share (test_cache_restart,
test_cache_strategies): two partitions, two subscriptions, one partition per broker."""

from __future__ import annotations

from typing import Any

from pulsar_ops.model.cache_restart import RestartScenario

BASE: dict[str, Any] = {
    "duration_s": 4.0,
    "partitions": 2,
    "subscriptions": 2,
    "publish_rate": 2000.0,
    "consumer_rate": 4000.0,
    "block_entries": 10,
    "receiver_queue": 50,
    "cache_mb": 64.0,
    "entry_size": 1024,
    "bundles": 0,  # one partition per broker: the hand-computed cases
}


def restart_scenario(**kw: Any) -> RestartScenario:
    return RestartScenario(**{**BASE, **kw})
