"""The seeder's ground truth as findings: what a correct audit reports for the seeded orphan ledgers and znode
leaks (test_apply_seeded.py, test_scrape_zk_data_dir.py plan from them instead of running the Spark audit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path


def seeded_findings(expected: Mapping[str, Any]) -> list[Finding]:
    """The orphan-ledger and znode-leak findings of ``ground_truth["expected"]``."""
    return [
        Finding(
            detection="orphan-ledger",
            severity=o["severity"],
            ledger_id=o["ledger_id"],
            path=ledger_path(o["ledger_id"]),
            plannable=o["plannable"],
            evidence={"kind": o["kind"], "owner": o["owner"]},
        )
        for o in expected["orphan-ledger"]
    ] + [
        Finding(
            detection="znode-leak",
            severity="warning",
            path=z["path"],
            plannable=z["plannable"],
            evidence={"leak": z["leak"]},
        )
        for z in expected["znode-leak"]
    ]
