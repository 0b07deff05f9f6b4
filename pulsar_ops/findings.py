"""The findings contract: what every detection emits, and how findings map to exit codes.

Scripts depend on this. ``findings.json`` is ``{"snapshot": {...}, "findings": [Finding, ...]}``; the Parquet
table ``findings/`` has the same columns with ``evidence`` as a JSON string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops import strict
from pulsar_ops.errors import FindingsError

SEVERITIES = ("info", "warning", "critical")
FINDINGS_FILE = "findings.json"
_DETECTION_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_HINT = (
    "findings.json is written by `pulsar-ops audit SNAPSHOT --out DIR`; re-run the audit instead of editing it by hand"
)

DETECTIONS = (
    "orphan-ledger",
    "dangling-ledger",
    "znode-leak",
    "system-metadata",
    "expired-retention-unloaded",
    "ack-holes",
    "inactive-subscription",
    "ttl-expires-delayed",
    "scrape-incomplete",
    "undecodable-znode",
    "unreclaimed-ledger-data",
    "ledger-data-missing",
    "stale-entry-log",
)

# Detections over bookie scans (`audit --bookie-scan`): silent without a scan.
STORAGE_DETECTIONS = ("unreclaimed-ledger-data", "ledger-data-missing", "stale-entry-log")

# Detections whose ``path`` names a znode a plan may act on: it must be a valid, normalised ZooKeeper path.
ZNODE_PATH_DETECTIONS = frozenset({"orphan-ledger", "dangling-ledger", "znode-leak"})

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
        return "|".join(str(x) for x in (self.detection, self.ledger_id, self.topic, self.subscription, self.path))

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
    def from_json(cls, d: Any, where: str = "finding") -> Finding:
        """Strict: JSON types exactly as the audit writes them (see :mod:`pulsar_ops.strict`)."""
        E = FindingsError
        d = strict.obj(d, where, E, hint=_HINT)
        detection = strict.req_text(d, "detection", where, E, hint=_HINT)
        if not _DETECTION_NAME.fullmatch(detection):
            raise E(f"{where}.detection: {strict.describe(detection)} is not a detection name", hint=_HINT)
        severity = strict.req_text(d, "severity", where, E, hint=_HINT)
        if severity not in SEVERITIES:
            raise E(f"{where}.severity: {strict.describe(severity)} is not one of {', '.join(SEVERITIES)}", hint=_HINT)
        ev: Any = d.get("evidence")
        if ev is None:
            ev = {}
        elif isinstance(ev, str):
            try:
                ev = json.loads(ev) if ev else {}
            except json.JSONDecodeError as e:
                raise E(f"{where}.evidence: not a JSON object ({e})", hint=_HINT) from None
        if not isinstance(ev, Mapping):
            raise E(f"{where}.evidence: expected an object, got {type(ev).__name__}", hint=_HINT)
        return cls(
            detection=detection,
            severity=severity,
            ledger_id=strict.integer(d, "ledger_id", where, E, lo=0, nullable=True, hint=_HINT),
            topic=strict.text(d, "topic", where, E, nullable=True, hint=_HINT),
            subscription=strict.text(d, "subscription", where, E, nullable=True, hint=_HINT),
            path=(strict.zk_path if detection in ZNODE_PATH_DETECTIONS else strict.text)(
                d, "path", where, E, nullable=True, hint=_HINT
            ),
            namespace=strict.text(d, "namespace", where, E, nullable=True, hint=_HINT),
            plannable=strict.boolean(d, "plannable", where, E, default=False, hint=_HINT),
            bytes=strict.integer(d, "bytes", where, E, lo=0, default=0, hint=_HINT) or 0,
            reason=strict.text(d, "reason", where, E, default="", hint=_HINT) or "",
            evidence=dict(ev),
        )


@dataclass(frozen=True)
class FindingsDocument:
    """``findings.json`` as read by every consumer (plan, report, demo): strictly parsed, nothing dropped."""

    source: str
    snapshot: Mapping[str, Any]
    audit: Mapping[str, Any]
    findings: tuple[Finding, ...]
    raw: Mapping[str, Any]


def findings_file(path: Path | str) -> Path:
    """``AUDIT_DIR/findings.json`` for a directory, the path itself for a file."""
    p = Path(path)
    return p / FINDINGS_FILE if p.is_dir() else p


def parse_findings_document(doc: Any, source: str = FINDINGS_FILE) -> FindingsDocument:
    if not isinstance(doc, Mapping):
        raise FindingsError(f"{source}: not a findings document (expected a JSON object)", hint=_HINT)
    raw = doc.get("findings")
    if not isinstance(raw, list):
        raise FindingsError(f"{source}: `findings` is missing or not a list", hint=_HINT)
    snap = doc.get("snapshot")
    if snap is not None and not isinstance(snap, Mapping):
        raise FindingsError(f"{source}: `snapshot` must be an object", hint=_HINT)
    audit = doc.get("audit")
    if audit is not None and not isinstance(audit, Mapping):
        raise FindingsError(f"{source}: `audit` must be an object", hint=_HINT)
    findings = tuple(Finding.from_json(f, f"{source}: findings[{i}]") for i, f in enumerate(raw))
    return FindingsDocument(source, dict(snap or {}), dict(audit or {}), findings, dict(doc))


def read_findings(path: Path | str) -> FindingsDocument:
    """The one loader of ``findings.json`` (a file, or an audit directory holding one)."""
    file = findings_file(path)
    hint = "point at an audit directory written by `pulsar-ops audit SNAPSHOT --out DIR`"
    if file.is_dir():
        raise FindingsError(f"{file}: is a directory, expected a findings.json file", hint=hint)
    if not file.exists():
        raise FindingsError(f"{file}: no findings.json here", hint=hint, code="findings-missing")
    try:
        doc = json.loads(file.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise FindingsError(f"{file}: cannot read findings ({e})", hint=hint) from e
    return parse_findings_document(doc, str(file))


def exit_code(findings: Iterable[Finding]) -> int:
    """0 nothing found (or info only), 1 warnings, 2 critical findings."""
    worst = EXIT_CLEAN
    for f in findings:
        if f.severity == "critical":
            return EXIT_CRITICAL
        if f.severity == "warning":
            worst = EXIT_WARNINGS
    return worst
