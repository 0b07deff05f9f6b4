"""What the Pulsar-own-names and service-unit-state audit tests share (test_pulsar_own_names,
test_service_unit_state_audit): the extensible load manager's class name and a closed ledger of a given age."""

from __future__ import annotations

from typing import Any

from tests.spark.snapshot_builder import DAY, NOW

ELM = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"


def closed(lid: int, age_days: float) -> tuple[Any, ...]:
    """A topic's ledger entry: 10 entries, 100 bytes, closed ``age_days`` before NOW."""
    return (lid, 10, 100, NOW - int(age_days * DAY))
