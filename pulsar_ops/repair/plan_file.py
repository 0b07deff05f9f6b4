"""The plan file: versioned JSON with a checksum over everything else. Apply runs exactly the reviewed plan.

Layout (``schema_version`` 1)::

    {"schema_version": 1, "plan_id", "created_at_ms", "tool_version",
     "snapshot": {"id", "path", "finished_at_ms"}, "audit": {"path"}, "params": {...}, "caps": {...},
     "summary": {...}, "impact": {...}, "actions": [Action...], "not_planned": [NotPlanned...],
     "checksum": "<sha256 hex of the canonical JSON of every other key>"}

Canonical JSON: ``json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` as UTF-8.
Contract for scripts: ``actions`` holds objects with ``kind`` and the target as ``ledger_id`` (ledger metadata
deletions) or ``path`` (znode deletions).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulsar_ops.errors import PlanChecksumError, PlanError
from pulsar_ops.repair.actions import Action, NotPlanned

PLAN_SCHEMA_VERSION = 1


def canonical_bytes(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def compute_checksum(doc: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of every key except ``checksum``."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return hashlib.sha256(canonical_bytes(body)).hexdigest()


@dataclass(frozen=True)
class Plan:
    plan_id: str
    created_at_ms: int
    tool_version: str
    snapshot: Mapping[str, Any]
    audit: Mapping[str, Any]
    params: Mapping[str, Any]
    caps: Mapping[str, Any]
    summary: Mapping[str, Any]
    impact: Mapping[str, Any]
    actions: tuple[Action, ...]
    not_planned: tuple[NotPlanned, ...]
    checksum: str = ""

    def body(self) -> dict[str, Any]:
        return {
            "schema_version": PLAN_SCHEMA_VERSION,
            "plan_id": self.plan_id,
            "created_at_ms": self.created_at_ms,
            "tool_version": self.tool_version,
            "snapshot": dict(self.snapshot),
            "audit": dict(self.audit),
            "params": dict(self.params),
            "caps": dict(self.caps),
            "summary": dict(self.summary),
            "impact": dict(self.impact),
            "actions": [a.to_json() for a in self.actions],
            "not_planned": [n.to_json() for n in self.not_planned],
        }

    def to_json(self) -> dict[str, Any]:
        """The document with its checksum. The body goes through a JSON round trip first so the checksum is
        computed over exactly what a reader will see."""
        body = json.loads(json.dumps(self.body()))
        body["checksum"] = compute_checksum(body)
        return body


def dump_plan(plan: Plan, path: Path) -> str:
    """Write the plan atomically (tmp + fsync + rename). Returns the checksum."""
    doc = plan.to_json()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1, sort_keys=False, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return str(doc["checksum"])


def parse_plan(doc: Any, *, source: str = "plan") -> Plan:
    """Verify schema version and checksum, then build the Plan. Any edit -> PlanChecksumError."""
    if not isinstance(doc, dict):
        raise PlanError(f"{source}: a plan is a JSON object")
    # The checksum rule (sha256 of the canonical JSON of every other key) is the same in every version, so
    # it is verified first: an edited schema_version is an edit like any other.
    stored = doc.get("checksum")
    actual = compute_checksum(doc)
    if not isinstance(stored, str) or stored != actual:
        raise PlanChecksumError(f"{source}: checksum mismatch (stored {stored!r}, computed {actual})")
    version = doc.get("schema_version")
    if version != PLAN_SCHEMA_VERSION:
        raise PlanError(
            f"{source}: plan schema_version {version!r} is not supported (expected {PLAN_SCHEMA_VERSION})",
            hint="re-create the plan with this version: `pulsar-ops plan AUDIT_DIR --out PLAN.json`",
        )
    try:
        return Plan(
            plan_id=str(doc["plan_id"]),
            created_at_ms=int(doc["created_at_ms"]),
            tool_version=str(doc["tool_version"]),
            snapshot=dict(doc["snapshot"]),
            audit=dict(doc["audit"]),
            params=dict(doc["params"]),
            caps=dict(doc["caps"]),
            summary=dict(doc["summary"]),
            impact=dict(doc["impact"]),
            actions=tuple(Action.from_json(a) for a in doc["actions"]),
            not_planned=tuple(NotPlanned.from_json(n) for n in doc["not_planned"]),
            checksum=stored,
        )
    except (KeyError, TypeError, ValueError) as e:
        raise PlanError(f"{source}: malformed plan: {e}") from e


def load_plan(path: Path) -> Plan:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"plan file {path} does not exist") from None
    except OSError as e:
        raise PlanError(f"cannot read plan file {path}: {e}") from e
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlanChecksumError(f"{path}: not valid JSON ({e})") from e
    plan = parse_plan(doc, source=str(path))
    ids = [a.id for a in plan.actions]
    if len(set(ids)) != len(ids):
        raise PlanError(f"{path}: duplicate action ids")
    return plan
