"""What a reclaim freed, proved by a re-scan: per bookie, two scans of it (before, after) and the plan's prediction.
Pure (numpy over :class:`~pulsar_ops.model.scan_layout.BookieScan`).

Freed bytes are the drop in the bookie's entry-log data bytes (``data_bytes``: ``L + 4`` per entry, as
``EntryLogMetadata`` counts them) between the two scans, transactional-compaction files and unread logs left out as
the GC model leaves them out. Entries written between the scans count against it (said in ``notes`` when a log
that was in the first scan grew or a log not in it appeared, beyond the compaction that appended survivors to the
active log). ``garbage_bytes``: the bytes, in each scan, of the ledgers the plan's ``bookie-gc`` action named as
garbage (what the reclaim was for).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pulsar_ops.model.scan_layout import BookieScan


@dataclass(frozen=True)
class Predicted:
    """A plan's ``bookie-gc`` action for one bookie."""

    action_id: str
    freed_bytes: int
    by: Mapping[str, int]
    garbage_ledgers: frozenset[int]


def _logs(scan: BookieScan) -> dict[tuple[str, int], int]:
    return {
        (scan.ledger_dirs[int(d)], int(i)): int(b)
        for d, i, b in zip(scan.log_dirs, scan.log_ids, scan.data_bytes, strict=True)
    }


def _ledger_bytes(scan: BookieScan, ledgers: Iterable[int]) -> int:
    ids = np.fromiter(ledgers, dtype=np.int64)
    if ids.size == 0 or scan.pair_ledger.size == 0:
        return 0
    return int(scan.pair_bytes[np.isin(scan.pair_ledger, ids)].sum())


def compare(old: BookieScan, new: BookieScan, predicted: Predicted | None) -> dict[str, Any]:
    """One bookie: data bytes before and after, freed, the prediction and the difference."""
    before, after = _logs(old), _logs(new)
    removed = sorted(k for k in before if k not in after)
    added = sorted(k for k in after if k not in before)
    grown = sorted(k for k in before if k in after and after[k] > before[k])
    freed = sum(before.values()) - sum(after.values())
    notes: list[str] = []
    if not old.complete or not new.complete:
        notes.append("a scan is incomplete: the logs it could not read are in neither total")
    if new.finished_at_ms and old.finished_at_ms and new.finished_at_ms <= old.finished_at_ms:
        notes.append("the second scan is not newer than the first")
    if added:
        notes.append(f"{len(added)} log(s) appeared between the scans: entries written since count against freed")
    garbage = predicted.garbage_ledgers if predicted is not None else frozenset()
    doc: dict[str, Any] = {
        "bookie_id": old.bookie_id,
        "scans": {"before": old.path, "after": new.path},
        "data_bytes": {"before": sum(before.values()), "after": sum(after.values())},
        "freed_bytes": freed,
        "logs_removed": [{"ledger_dir": d, "log_id": i, "data_bytes": before[(d, i)]} for d, i in removed],
        "logs_added": [{"ledger_dir": d, "log_id": i, "data_bytes": after[(d, i)]} for d, i in added],
        "logs_grown": [{"ledger_dir": d, "log_id": i, "by": after[(d, i)] - before[(d, i)]} for d, i in grown],
        "predicted_freed_bytes": None if predicted is None else predicted.freed_bytes,
        "predicted_by": None if predicted is None else dict(predicted.by),
        "action": None if predicted is None else predicted.action_id,
        "difference": None if predicted is None else freed - predicted.freed_bytes,
        "garbage_bytes": {"before": _ledger_bytes(old, garbage), "after": _ledger_bytes(new, garbage)},
        "notes": notes,
    }
    return doc


def predictions(plan_doc: Mapping[str, Any]) -> dict[str, Predicted]:
    """bookie id -> its ``bookie-gc`` action's prediction, from a plan document."""
    out: dict[str, Predicted] = {}
    for a in plan_doc.get("actions") or ():
        if not isinstance(a, Mapping) or a.get("kind") != "bookie-gc":
            continue
        call = a.get("bookie_gc") or {}
        imp = a.get("impact") or {}
        out[str(call.get("bookie_id"))] = Predicted(
            action_id=str(a.get("id")),
            freed_bytes=int(imp.get("predicted_freed_bytes") or 0),
            by={str(k): int(v) for k, v in (imp.get("predicted_by") or {}).items()},
            garbage_ledgers=frozenset(int(x) for x in call.get("garbage_ledgers") or ()),
        )
    return out


def lines(doc: Mapping[str, Any]) -> list[str]:
    """Human lines: one per bookie, predicted against freed."""
    out = []
    for b in doc.get("bookies") or ():
        pred = b["predicted_freed_bytes"]
        said = "no bookie-gc action" if pred is None else f"predicted {pred} B, difference {b['difference']:+d} B"
        g = b["garbage_bytes"]
        out.append(
            f"{b['bookie_id']}: freed {b['freed_bytes']} B ({b['data_bytes']['before']} -> "
            f"{b['data_bytes']['after']} data bytes, {len(b['logs_removed'])} log(s) removed); {said}; garbage of "
            f"the planned ledgers {g['before']} -> {g['after']} B"
        )
        out.extend(f"  note: {n}" for n in b["notes"])
    return out
