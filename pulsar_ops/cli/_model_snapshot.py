"""`pulsar-ops model gc --snapshot DIR`: ledger facts, close times and disk sizes from a snapshot.

The facts come from the same loader `plan` uses (`pulsar_ops.repair.snapshot_facts`), so the model and the
plan's predicted impact always read a snapshot the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pulsar_ops.errors import ModelError
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import Layout, estimate_layouts


def snapshot_layout(path: Path, delete_ids: Sequence[int], cfg: GcConfig) -> tuple[Layout, int, npt.NDArray[np.int64]]:
    """(estimated layout with ``delete_ids`` deleted at the snapshot's finish time, that time, the snapshot's
    ledger ids sorted)."""
    layouts, now_ms, known = snapshot_layouts(path, delete_ids, cfg, (0.0,))
    return layouts[0], now_ms, known


def snapshot_layouts(
    path: Path, delete_ids: Sequence[int], cfg: GcConfig, phases: Sequence[float]
) -> tuple[list[Layout], int, npt.NDArray[np.int64]]:
    """As :func:`snapshot_layout`, one estimated layout per log-boundary phase (``model.reclaim_band``)."""
    from pulsar_ops.repair.snapshot_facts import load_disk_bytes, load_ledgers  # the one ledger-facts loader
    from pulsar_ops.snapshot.reader import open_snapshot

    snap = open_snapshot(path)
    now_ms = snap.manifest.finished_at_ms
    facts = load_ledgers(snap)[1]
    disks = load_disk_bytes(snap)
    known = {f.ledger_id for f in facts}
    unknown = [i for i in delete_ids if i not in known]
    if unknown:
        raise ModelError(
            f"{len(unknown)} ledger id(s) to delete are not in the snapshot, e.g. {unknown[:5]}",
            hint="take the ids from `pulsar-ops audit` findings on this snapshot",
        )
    layouts = estimate_layouts(
        facts,
        dict.fromkeys(delete_ids, now_ms),
        now_ms=now_ms,
        log_size_limit=cfg.log_size_limit,
        disk_bytes=disks or None,
        phases=phases,
    )
    return layouts, now_ms, np.sort(np.fromiter(known, dtype=np.int64, count=len(known)))
