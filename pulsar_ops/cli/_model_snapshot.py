"""`pulsar-ops model gc --snapshot DIR`: ledger facts, close times and disk sizes from a snapshot (pyarrow)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pulsar_ops.errors import ModelError
from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import Layout, estimate_layout


def snapshot_layout(path: Path, delete_ids: Sequence[int], cfg: GcConfig) -> tuple[Layout, int]:
    """(estimated layout with ``delete_ids`` deleted at the snapshot's finish time, that time)."""
    from pulsar_ops.snapshot.reader import open_snapshot

    snap = open_snapshot(path)
    now_ms = snap.manifest.finished_at_ms
    ledgers = snap.table("bk_ledgers").to_pylist()
    closed: dict[int, int] = {}
    for row in snap.table("ledger_list").select(["ledger_id", "timestamp_ms"]).to_pylist():
        if row["timestamp_ms"]:
            closed[int(row["ledger_id"])] = int(row["timestamp_ms"])
    disks: dict[str, int] = {}
    for row in snap.table("bookies").select(["bookie_id", "total_bytes"]).to_pylist():
        if row["total_bytes"]:
            disks[str(row["bookie_id"])] = int(row["total_bytes"])
    facts = [
        LedgerFacts(
            ledger_id=int(r["ledger_id"]),
            length=int(r["length"]),
            bookies=tuple(r["bookies"] or ()),
            ensemble_size=int(r["ensemble_size"]),
            write_quorum=int(r["write_quorum"]),
            ctime_ms=int(r["ctime_ms"]),
            state=str(r["state"]),
            closed_ms=closed.get(int(r["ledger_id"])),
            entries=int(r["last_entry_id"]) + 1 if r["last_entry_id"] is not None and r["last_entry_id"] >= 0 else None,
        )
        for r in ledgers
    ]
    known = {f.ledger_id for f in facts}
    unknown = [i for i in delete_ids if i not in known]
    if unknown:
        raise ModelError(
            f"{len(unknown)} ledger id(s) to delete are not in the snapshot, e.g. {unknown[:5]}",
            hint="take the ids from `pulsar-ops audit` findings on this snapshot",
        )
    layout = estimate_layout(
        facts,
        dict.fromkeys(delete_ids, now_ms),
        now_ms=now_ms,
        log_size_limit=cfg.log_size_limit,
        disk_bytes=disks or None,
    )
    return layout, now_ms
