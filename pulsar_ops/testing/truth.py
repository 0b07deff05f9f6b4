"""Compare an audit's findings with a seeder's ground truth (used by the end-to-end tests and the demo).

Pure: takes ``findings.Finding`` values and the ground-truth JSON document, returns per-detection differences.
Each detection is matched on its identity (ledger id, path, topic/subscription ...) and then on the attributes
the ground truth pins (plannable, kind, owner, the ledger ids retention would trim, ack-hole range counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pulsar_ops.findings import DETECTIONS, Finding

Key = tuple[Any, ...]


def _finding_key(f: Finding) -> Key:
    d = f.detection
    if d == "orphan-ledger":
        return (f.ledger_id,)
    if d == "dangling-ledger":
        return (f.ledger_id, f.path)
    if d in ("znode-leak", "scrape-incomplete", "undecodable-znode", "system-metadata"):
        return (f.path,)
    if d == "expired-retention-unloaded":
        return (f.topic,)
    if d in ("ack-holes", "inactive-subscription"):
        return (f.topic, f.subscription)
    if d == "ttl-expires-delayed":
        return (f.namespace, f.topic)
    if d in ("unreclaimed-ledger-data", "ledger-data-missing"):
        return (f.ledger_id, f.path)  # path: the bookie
    if d == "stale-entry-log":
        return (f.path,)  # <bookie>:<ledger_dir>/<file>
    return (f.ledger_id, f.topic, f.subscription, f.path)


def _truth_key(detection: str, e: Mapping[str, Any]) -> Key:
    if detection == "orphan-ledger":
        return (e["ledger_id"],)
    if detection == "dangling-ledger":
        return (e["ledger_id"], e["path"])
    if detection in ("znode-leak", "scrape-incomplete", "undecodable-znode", "system-metadata"):
        return (e["path"],)
    if detection == "expired-retention-unloaded":
        return (e["topic"],)
    if detection in ("ack-holes", "inactive-subscription"):
        return (e["topic"], e["subscription"])
    if detection == "ttl-expires-delayed":
        return (e["namespace"], e.get("topic"))
    if detection in ("unreclaimed-ledger-data", "ledger-data-missing"):
        return (e["ledger_id"], e["path"])
    if detection == "stale-entry-log":
        return (e["path"],)
    return tuple(sorted(e.items()))


def _orphan_attrs(f: Finding) -> dict[str, Any]:
    return {
        "plannable": f.plannable,
        "kind": f.evidence.get("kind"),
        "owner_exists": f.evidence.get("owner_exists"),
        "severity": f.severity,
    }


def _ids(f: Finding) -> dict[str, Any]:
    return {
        "ledger_ids": sorted(int(x) for x in f.evidence.get("ledger_ids", [])),
        "after_retention_ledger_ids": sorted(int(x) for x in f.evidence.get("after_retention_ledger_ids", [])),
        # topic policies in __change_events: the topic-level retention is unknown (docs/detections.md)
        "retention_unknown": f.evidence.get("retention_source") == "topic-unknown",
    }


def _holes(f: Finding) -> dict[str, Any]:
    rc = f.evidence.get("range_count")
    return {"range_count": rc if rc == "unknown" or rc is None else int(rc)}


def _plannable(f: Finding) -> dict[str, Any]:
    return {"plannable": f.plannable}


def _unreclaimed(f: Finding) -> dict[str, Any]:
    return {"in_local_index": f.evidence.get("in_local_index"), "bytes": f.bytes}


_ATTRS: dict[str, Callable[[Finding], dict[str, Any]]] = {
    "unreclaimed-ledger-data": _unreclaimed,
    "orphan-ledger": _orphan_attrs,
    "expired-retention-unloaded": _ids,
    "ack-holes": _holes,
    "znode-leak": _plannable,
}


@dataclass(frozen=True)
class DetectionDiff:
    detection: str
    expected: int
    found: int
    missing: tuple[Key, ...]
    unexpected: tuple[Key, ...]
    mismatched: tuple[tuple[Key, dict[str, Any], dict[str, Any]], ...]  # key, expected attrs, found attrs

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)


def compare(findings: Iterable[Finding], ground_truth: Mapping[str, Any]) -> dict[str, DetectionDiff]:
    expected: Mapping[str, list[Mapping[str, Any]]] = ground_truth.get("expected", {})
    by_detection: dict[str, dict[Key, Finding]] = {}
    for f in findings:
        by_detection.setdefault(f.detection, {})[_finding_key(f)] = f
    out: dict[str, DetectionDiff] = {}
    for det in sorted(set(DETECTIONS) | set(expected) | set(by_detection)):
        want = {_truth_key(det, e): e for e in expected.get(det, [])}
        got = by_detection.get(det, {})
        mismatched = []
        attrs = _ATTRS.get(det)
        if attrs is not None:
            for key in sorted(set(want) & set(got), key=repr):
                found = attrs(got[key])
                exp = {k: _norm(k, want[key].get(k)) for k in found if k in want[key]}
                if any(found[k] != v for k, v in exp.items()):
                    mismatched.append((key, exp, {k: found[k] for k in exp}))
        out[det] = DetectionDiff(
            detection=det,
            expected=len(want),
            found=len(got),
            missing=tuple(sorted(set(want) - set(got), key=repr)),
            unexpected=tuple(sorted(set(got) - set(want), key=repr)),
            mismatched=tuple(mismatched),
        )
    return out


def _norm(key: str, value: Any) -> Any:
    if key in ("ledger_ids", "after_retention_ledger_ids") and value is not None:
        return sorted(int(x) for x in value)
    return value


def summary_lines(diffs: Mapping[str, DetectionDiff]) -> list[str]:
    lines = []
    for det, d in diffs.items():
        if d.expected == 0 and d.found == 0:
            continue
        verdict = (
            "matches ground truth"
            if d.ok
            else (f"MISMATCH: {len(d.missing)} missing, {len(d.unexpected)} unexpected, {len(d.mismatched)} differ")
        )
        lines.append(f"  {det:<28} expected {d.expected:>5}  found {d.found:>5}  {verdict}")
    return lines
