"""Audits shared by more than one module of tests/spark: one snapshot holds the cases of each module that need the
same snapshot-wide state, each in its own topics and ledger ids, so the session audits it once (every audit of a
small snapshot costs the spark shard about 20 s on a loaded 2-core runner). Each test still asserts its own case's
findings exactly (by ledger id, topic or path)."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit


@pytest.fixture(scope="session")
def ledgers_listing_incomplete(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    """A snapshot whose /ledgers walk is incomplete (a snapshot-wide scope: every absence claim about BookKeeper's
    ledgers is withheld): test_dangling_ledger's references (topic t/ns/"a b", t/ns/off) and test_orphan_ledger's
    reason-order case (topic t/ns/a, ledgers 1-3 and 100), disjoint topics and ids."""
    from tests.spark.test_dangling_ledger import build
    from tests.spark.test_orphan_ledger import reason_order_case

    b = build(ledgers_complete=False)
    reason_order_case(b)
    return audit(spark, b, tmp_path_factory.mktemp("ledgers-incomplete"))
