"""The findings contract: what every detection emits, and how findings map to exit codes.

Scripts depend on this. ``findings.json`` is ``{"snapshot": {...}, "findings": [Finding, ...]}``; the Parquet
table ``findings/`` has the same columns with ``evidence`` as a JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "critical")

DETECTIONS = (
    "orphan-ledger",
    "dangling-ledger",
    "znode-leak",
    "expired-retention-unloaded",
    "ack-holes",
    "inactive-subscription",
    "ttl-expires-delayed",
    "scrape-incomplete",
)

# The fixed output columns of every sql/detect/*.sql file, in order, with their Spark SQL types.
FINDING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("detection", "string"),
    ("severity", "string"),
    ("ledger_id", "bigint"),
    ("topic", "string"),
    ("subscription", "string"),
    ("path", "string"),
    ("namespace", "string"),
    ("plannable", "boolean"),
    ("bytes", "bigint"),
    ("reason", "string"),
    ("evidence", "string"),
)
FINDING_COLUMN_NAMES = tuple(name for name, _ in FINDING_COLUMNS)

EXIT_CLEAN = 0
EXIT_WARNINGS = 1
EXIT_CRITICAL = 2
EXIT_TOOL_FAILED = 3


@dataclass(frozen=True)
class Finding:
    detection: str
    severity: str
    ledger_id: int | None = None
    topic: str | None = None
    subscription: str | None = None
    path: str | None = None
    namespace: str | None = None
    plannable: bool = False
    bytes: int = 0
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tenant(self) -> str | None:
        return self.namespace.split("/", 1)[0] if self.namespace else None

    def key(self) -> str:
        """A stable identity for the finding across re-audits."""
        return "|".join(
            str(x) for x in (self.detection, self.ledger_id, self.topic, self.subscription, self.path)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "detection": self.detection,
            "severity": self.severity,
            "ledger_id": self.ledger_id,
            "topic": self.topic,
            "subscription": self.subscription,
            "path": self.path,
            "namespace": self.namespace,
            "plannable": self.plannable,
            "bytes": self.bytes,
            "reason": self.reason,
            "evidence": dict(self.evidence),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Finding:
        ev = d.get("evidence") or {}
        if isinstance(ev, str):
            ev = json.loads(ev) if ev else {}
        ledger_id = d.get("ledger_id")
        return cls(
            detection=str(d["detection"]),
            severity=str(d["severity"]),
            ledger_id=None if ledger_id is None else int(ledger_id),
            topic=d.get("topic"),
            subscription=d.get("subscription"),
            path=d.get("path"),
            namespace=d.get("namespace"),
            plannable=bool(d.get("plannable", False)),
            bytes=int(d.get("bytes") or 0),
            reason=str(d.get("reason") or ""),
            evidence=ev,
        )


def exit_code(findings: Iterable[Finding]) -> int:
    """0 nothing found (or info only), 1 warnings, 2 critical findings."""
    worst = EXIT_CLEAN
    for f in findings:
        if f.severity == "critical":
            return EXIT_CRITICAL
        if f.severity == "warning":
            worst = EXIT_WARNINGS
    return worst
