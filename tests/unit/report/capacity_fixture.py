"""A findings.json ``audit.storage`` for the report tests, built by the audit's own shaping (storage_view) from
rows like those sql/storage returns: two scanned bookies, one with its free space known, one hostile name."""

from __future__ import annotations

from typing import Any

from pulsar_ops.audit.storage_view import storage_summary

B1, B2 = "bk-1:3181", "bk-2:3181"
GIB = 1 << 30


def _bookie(bid: str, live: int, orphan: int, unreclaimed: int, unattributed: int, free: int | None) -> dict[str, Any]:
    return {
        "bookie_id": bid,
        "complete": True,
        "index_status": "read",
        "data_bytes": live + orphan + unreclaimed + unattributed,
        "file_bytes": live + orphan + unreclaimed + unattributed + 4096,
        "logs": 4,
        "skipped_logs": 0,
        "compacting_logs": 0,
        "live_bytes": live,
        "orphan_bytes": orphan,
        "unreclaimed_bytes": unreclaimed,
        "unattributed_bytes": unattributed,
        "live_ledgers": 3,
        "orphan_ledgers": 1,
        "unreclaimed_ledgers": 1,
        "unattributed_ledgers": 1,
        "free_bytes": free,
        "total_bytes": None if free is None else free + 10 * GIB,
    }


def storage_doc() -> dict[str, Any]:
    hostile = "persistent://acme/ns/t\u202e<b>x</b>"
    owners = [
        {"bookie_id": B1, "class": "live", "level": "topic", "name": "persistent://acme/ns/big", "bytes": 3 * GIB,
         "ledgers": 2, "rank": 1, "groups": 2},
        {"bookie_id": B1, "class": "live", "level": "topic", "name": hostile, "bytes": GIB, "ledgers": 1, "rank": 2,
         "groups": 2},
        {"bookie_id": B1, "class": "live", "level": "namespace", "name": "acme/ns", "bytes": 4 * GIB, "ledgers": 3,
         "rank": 1, "groups": 1},
        {"bookie_id": B1, "class": "live", "level": "tenant", "name": "acme", "bytes": 4 * GIB, "ledgers": 3,
         "rank": 1, "groups": 1},
        {"bookie_id": B2, "class": "live", "level": "topic", "name": "persistent://acme/ns/big", "bytes": GIB,
         "ledgers": 1, "rank": 1, "groups": 1},
    ]  # fmt: skip
    oldest = [
        {"bookie_id": B1, "rank": 1, "ledger_dir": "/data/bk", "log_id": 3, "file": "current/3.log",
         "mtime_ms": 1_700_000_000_000, "data_bytes": 1000, "live_bytes": 100, "orphan_bytes": 0,
         "unreclaimed_bytes": 900, "unattributed_bytes": 0, "ledgers": 2, "live_ledgers": 1,
         "pinned_by": [{"neg_bytes": -100, "ledger_id": 7, "bytes": 100, "kind": "data", "topic": hostile,
                        "namespace": "acme/ns", "ns_retention_minutes": 10080, "ns_retention_mb": -1,
                        "topic_retention_minutes": None, "topic_retention_mb": None}]},
    ]  # fmt: skip
    rows = {
        "bookies": [_bookie(B1, 4 * GIB, GIB, 2 * GIB, 5, 3 * GIB), _bookie(B2, GIB, 0, 0, 0, None)],
        "owners": owners,
        "oldest_logs": oldest,
    }
    return storage_summary(rows, 10)
