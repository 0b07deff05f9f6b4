"""audit --compare-scans' arithmetic: freed bytes between two scans of one bookie, against a plan's prediction."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pulsar_ops.model import reclaim
from pulsar_ops.model.scan_layout import BookieScan


def _scan(ids: list[int], data: list[int], pairs: list[tuple[int, int, int]], t: int) -> BookieScan:
    return BookieScan(
        path=f"/scan-{t}",
        bookie_id="b1:3181",
        complete=True,
        finished_at_ms=t,
        ledger_dirs=("/d0",),
        log_dirs=np.zeros(len(ids), dtype=np.int64),
        log_ids=np.array(ids, dtype=np.int64),
        data_bytes=np.array(data, dtype=np.int64),
        active=np.array([i == max(ids) for i in ids]),
        pair_log=np.array([p[0] for p in pairs], dtype=np.int64),
        pair_ledger=np.array([p[1] for p in pairs], dtype=np.int64),
        pair_bytes=np.array([p[2] for p in pairs], dtype=np.int64),
    )


def test_freed_bytes_logs_and_garbage_against_the_prediction() -> None:
    # before: log 0 all of ledger 7; log 1 ledger 8 (2400) + ledger 100 (120); log 2 active (600)
    old = _scan([0, 1, 2], [1200, 2520, 600], [(0, 7, 1200), (1, 8, 2400), (1, 100, 120), (2, 9, 600)], 1)
    # after: logs 0 and 1 gone, the survivor appended to the active log
    new = _scan([2], [720], [(0, 9, 600), (0, 100, 120)], 2)
    pred = reclaim.Predicted("bookie-gc-x", 3600, {"deletion": 1200, "major": 2400}, frozenset({7, 8}))
    doc = reclaim.compare(old, new, pred)
    assert doc["freed_bytes"] == 3600 and doc["difference"] == 0
    assert doc["data_bytes"] == {"before": 4320, "after": 720}
    assert [x["log_id"] for x in doc["logs_removed"]] == [0, 1] and doc["logs_grown"] == [
        {"ledger_dir": "/d0", "log_id": 2, "by": 120}
    ]
    assert doc["garbage_bytes"] == {"before": 3600, "after": 0} and not doc["notes"]
    assert reclaim.compare(old, old, None)["predicted_freed_bytes"] is None
    # a log written between the scans counts against the freed bytes, and says so
    grown = replace(new, log_ids=np.array([2, 3]), log_dirs=np.zeros(2, dtype=np.int64),
                    data_bytes=np.array([720, 500]), active=np.array([False, True]))  # fmt: skip
    doc = reclaim.compare(old, grown, pred)
    assert doc["freed_bytes"] == 3100 and doc["difference"] == -500 and doc["notes"]
