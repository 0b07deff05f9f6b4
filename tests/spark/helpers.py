"""Run the audit over a hand-made snapshot and index the findings for assertions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import AuditResult, run_audit
from pulsar_ops.findings import Finding
from tests.spark.snapshot_builder import SnapshotBuilder


def audit(
    spark: Any,
    builder: SnapshotBuilder,
    root: Path,
    params: AuditParams | None = None,
    one_partition: bool | None = None,
) -> AuditResult:
    """``one_partition``: as run_audit's (by default the suite's small snapshots are read as one partition)."""
    snap = builder.write(root / "snap")
    return run_audit(snap, root / "out", params, spark=spark, one_partition=one_partition)


def of(result: AuditResult, detection: str) -> list[Finding]:
    return [f for f in result.findings if f.detection == detection]


def by_ledger(result: AuditResult, detection: str) -> dict[int, Finding]:
    out: dict[int, Finding] = {}
    for f in of(result, detection):
        assert f.ledger_id is not None
        assert f.ledger_id not in out, f"duplicate {detection} finding for ledger {f.ledger_id}"
        out[f.ledger_id] = f
    return out
