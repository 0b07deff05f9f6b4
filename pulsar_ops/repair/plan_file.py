"""The plan file: versioned JSON (``docs/repair.md``, "Plan file") with ``checksum`` = sha256 of the canonical JSON
(``sort_keys``, ``separators=(",", ":")``, ``ensure_ascii=False``, UTF-8) of every other key. Apply runs exactly
the reviewed plan.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops import strict
from pulsar_ops.errors import PlanChecksumError, PlanError
from pulsar_ops.identity import ClusterIdentity
from pulsar_ops.repair.actions import Action, NotPlanned
from pulsar_ops.repair.backup import atomic_write

PLAN_SCHEMA_VERSION = 2  # 2: "target" (ledgers root + cluster identity) added; 1 is refused (re-plan)
_HINT = "re-create the plan: `pulsar-ops plan AUDIT_DIR --out PLAN.json`"


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
    target: Mapping[str, Any] = field(default_factory=lambda: {"ledgers_root": "/ledgers", "identity": None})
    checksum: str = ""

    @property
    def ledgers_root(self) -> str:
        return str(self.target.get("ledgers_root") or "/ledgers")

    @property
    def identity(self) -> ClusterIdentity | None:
        """The cluster the plan was made for; None when its snapshot recorded none (then apply refuses)."""
        doc = self.target.get("identity")
        return None if doc is None else ClusterIdentity.from_json(doc)

    def body(self) -> dict[str, Any]:
        return {
            "schema_version": PLAN_SCHEMA_VERSION,
            "plan_id": self.plan_id,
            "created_at_ms": self.created_at_ms,
            "tool_version": self.tool_version,
            "snapshot": dict(self.snapshot),
            "audit": dict(self.audit),
            "target": dict(self.target),
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
        body: dict[str, Any] = json.loads(json.dumps(self.body()))
        body["checksum"] = compute_checksum(body)
        return body


def dump_plan(plan: Plan, path: Path) -> str:
    """Write the plan atomically (tmp + fsync + rename). Returns the checksum."""
    doc = plan.to_json()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
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
            hint=_HINT,
        )
    E = PlanError
    for key in ("snapshot", "audit", "target", "params", "caps", "summary", "impact"):
        strict.obj(doc.get(key), f"{source}.{key}", E, hint=_HINT)
    for key in ("actions", "not_planned"):
        if not isinstance(doc.get(key), list):
            raise E(f"{source}.{key}: must be a list", hint=_HINT)
    target = doc["target"]
    strict.req_zk_path(target, "ledgers_root", f"{source}.target", E, hint=_HINT)
    try:
        if target.get("identity") is not None:
            ClusterIdentity.from_json(strict.obj(target["identity"], f"{source}.target.identity", E, hint=_HINT))
    except ValueError as e:
        raise E(f"{source}.target.identity: {e}", hint=_HINT) from None
    return Plan(
        plan_id=strict.req_text(doc, "plan_id", source, E, hint=_HINT),
        created_at_ms=strict.req_int(doc, "created_at_ms", source, E, lo=0, hint=_HINT),
        tool_version=strict.req_text(doc, "tool_version", source, E, hint=_HINT),
        **{k: dict(doc[k]) for k in ("snapshot", "audit", "params", "caps", "summary", "impact", "target")},
        actions=tuple(Action.from_json(a, f"{source}: actions[{i}]") for i, a in enumerate(doc["actions"])),
        not_planned=tuple(
            NotPlanned.from_json(n, f"{source}: not_planned[{i}]") for i, n in enumerate(doc["not_planned"])
        ),
        checksum=stored,
    )


def load_plan(path: Path) -> Plan:
    path = Path(path)
    if path.is_dir():
        raise PlanError(f"{path} is a directory, expected a plan file", hint="pass the PLAN.json `plan` wrote")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise PlanError(f"plan file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"cannot read plan file {path}: {e}") from e
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise PlanChecksumError(f"{path}: not valid JSON ({e})") from e
    plan = parse_plan(doc, source=str(path))
    ids = [a.id for a in plan.actions]
    if len(set(ids)) != len(ids):
        raise PlanError(f"{path}: duplicate action ids")
    return plan
