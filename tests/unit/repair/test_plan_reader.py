"""The plan file's strict reader (``repair/actions.py``, ``read_strict``): a plan's objects round-trip, and a single
bad field is refused with the message and hint the hand-written readers gave (pinned: issue 34 replaced them with
per-field declarations, and apply's refusals must read the same)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pulsar_ops.errors import PlanError
from pulsar_ops.repair.actions import Action

PLAN_HINT = "plans are written by `pulsar-ops plan AUDIT_DIR --out PLAN.json`; re-create it instead of editing it"
GC_HINT = "plans are written by `pulsar-ops plan AUDIT_DIR --out PLAN.json --bookie-scan SCAN`; re-create it"

Z: dict[str, Any] = {
    "store": "local",
    "path": "/managed-ledgers/t/ns/persistent/x",
    "version": 3,
    "mzxid": 7,
    "sha256": "a" * 64,
}
L: dict[str, Any] = {"store": "local", "path": "/ledgers/00/0000/L0042", "version": 0, "mzxid": 9, "sha256": "b" * 64}
TRIM: dict[str, Any] = {
    "id": "trim-1",
    "kind": "trim-unloaded",
    "store": "local",
    "path": Z["path"],
    "finding": {"key": "k", "detection": "expired-retention-unloaded"},
    "ledger_kind": None,
    "owner": "persistent://t/ns/x",
    "leak": None,
    "bytes": 10,
    "znodes": 2,
    "time_ms": 5,
    "loads_topics": False,
    "preconditions": {
        "znodes": [Z, L],
        "custom_metadata": {},
        "references": [{"role": "cursor", "exists": True, **{**Z, "path": Z["path"] + "/sub"}}],
    },
    "impact": {"metadata_ops": 2},
    "rewrite": {
        "path": Z["path"],
        "topic": "persistent://t/ns/x",
        "removed": [{"ledger_id": 42, "entries": 3, "bytes": 10, "message_ids": ["42:0", "42:2"], "finding": "k"}],
    },
}
GC: dict[str, Any] = {
    "id": "bookie-gc-1",
    "kind": "bookie-gc",
    "store": "local",
    "path": "/ledgers/available/b1:3181",
    "finding": {"key": "k2", "detection": "stale-entry-log"},
    "ledger_kind": None,
    "owner": "b1:3181",
    "leak": None,
    "bytes": 5,
    "znodes": 0,
    "time_ms": 6,
    "loads_topics": False,
    "preconditions": {"znodes": [], "custom_metadata": {}, "references": []},
    "impact": {},
    "bookie_gc": {
        "bookie_id": "b1:3181",
        "url": None,
        "body": {"forceMajor": True, "forceMinor": True},
        "expect_compaction": "major",
        "scan": "/s",
        "scan_finished_at_ms": 1,
        "data_age_ms": 2,
        "garbage_ledgers": [1, 2],
        "predicted_freed_bytes": {"total": 5},
        "settings": {},
        "settings_source": "audit (the bookie's configuration was not scraped)",
    },
}
DOCS = {"trim": TRIM, "gc": GC}


def test_actions_round_trip() -> None:
    for doc in DOCS.values():
        assert Action.from_json(copy.deepcopy(doc)).to_json() == doc


CASES = [
    ("trim", ("store",), "elsewhere", "action 'trim-1'.store: unknown store 'elsewhere'", PLAN_HINT),
    ("trim", ("kind",), 7, "action 'trim-1'.kind: must be a string, not int 7", PLAN_HINT),
    ("trim", ("id",), None, "action None.id: must be a string, not null", PLAN_HINT),
    ("trim", ("path",), "a//b", "action 'trim-1'.path: ZooKeeper path 'a//b' is not absolute", PLAN_HINT),
    ("trim", ("bytes",), -1, "action 'trim-1'.bytes: -1 is out of range [0, 9223372036854775807]", PLAN_HINT),
    ("trim", ("time_ms",), "1", "action 'trim-1'.time_ms: must be an integer, not str '1'", PLAN_HINT),
    (
        "trim",
        ("loads_topics",),
        "false",
        "action 'trim-1'.loads_topics: must be true or false, not str 'false'",
        PLAN_HINT,
    ),
    ("trim", ("impact",), [], "action 'trim-1'.impact: is not an object (got list [])", PLAN_HINT),
    (
        "trim",
        ("finding", "detection"),
        None,
        "action 'trim-1'.finding.detection: must be a string, not null",
        PLAN_HINT,
    ),
    (
        "trim",
        ("preconditions", "znodes", 0, "version"),
        2147483648,
        "action 'trim-1'.preconditions.znodes[0].version: 2147483648 is out of range [-1, 2147483647]",
        PLAN_HINT,
    ),
    (
        "trim",
        ("preconditions", "znodes", 1, "sha256"),
        "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
        "action 'trim-1'.preconditions.znodes[1].sha256: '" + "B" * 64 + "' is not a sha256 hex digest",
        PLAN_HINT,
    ),
    (
        "trim",
        ("preconditions", "references", 0, "role"),
        "owner",
        "action 'trim-1'.preconditions.references[0].role: unknown reference role 'owner'",
        PLAN_HINT,
    ),
    (
        "trim",
        ("preconditions", "references", 0, "exists"),
        1,
        "action 'trim-1'.preconditions.references[0].exists: must be true or false, not int 1",
        PLAN_HINT,
    ),
    (
        "trim",
        ("preconditions", "absent"),
        ["rel/path"],
        "action 'trim-1'.preconditions.absent[0].p: ZooKeeper path 'rel/path' is not absolute",
        PLAN_HINT,
    ),
    (
        "trim",
        ("rewrite", "removed", 0, "ledger_id"),
        -5,
        "action 'trim-1'.rewrite.removed[0].ledger_id: -5 is out of range [0, 9223372036854775807]",
        PLAN_HINT,
    ),
    (
        "trim",
        ("rewrite", "removed", 0, "bytes"),
        "10",
        "action 'trim-1'.rewrite.removed[0].bytes: must be an integer, not str '10'",
        PLAN_HINT,
    ),
    (
        "trim",
        ("rewrite", "removed"),
        [],
        "action 'trim-1'.rewrite.removed: a rewrite removes at least one ledger",
        PLAN_HINT,
    ),
    ("trim", ("rewrite", "topic"), None, "action 'trim-1'.rewrite.topic: must be a string, not null", PLAN_HINT),
    ("trim", ("ledger_id",), True, "action 'trim-1'.ledger_id: must be an integer, not bool True", PLAN_HINT),
    (
        "gc",
        ("bookie_gc", "garbage_ledgers", 1),
        -1,
        "action 'bookie-gc-1'.bookie_gc.garbage_ledgers[1].v: -1 is out of range [0, 9223372036854775807]",
        GC_HINT,
    ),
    (
        "gc",
        ("bookie_gc", "expect_compaction"),
        "full",
        "action 'bookie-gc-1'.bookie_gc.expect_compaction: 'full' is not major, minor or null",
        GC_HINT,
    ),
    (
        "gc",
        ("bookie_gc", "body", "forceMinor"),
        "true",
        "action 'bookie-gc-1'.bookie_gc.body.forceMinor: must be true or false, not str 'true'",
        GC_HINT,
    ),
    (
        "gc",
        ("bookie_gc", "scan_finished_at_ms"),
        None,
        "action 'bookie-gc-1'.bookie_gc.scan_finished_at_ms: must be an integer, not null",
        GC_HINT,
    ),
    ("gc", ("bookie_gc", "url"), 5, "action 'bookie-gc-1'.bookie_gc.url: must be a string, not int 5", GC_HINT),
    (
        "gc",
        ("preconditions", "znodes"),
        [
            {
                "store": "local",
                "path": "/managed-ledgers/t/ns/persistent/x",
                "version": 3,
                "mzxid": 7,
                "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            }
        ],
        "action 'bookie-gc-1'.preconditions.znodes: this action changes no znode",
        PLAN_HINT,
    ),
]


@pytest.mark.parametrize(("doc", "path", "value", "message", "hint"), CASES)
def test_one_bad_field_is_refused_as_before(
    doc: str, path: tuple[Any, ...], value: Any, message: str, hint: str
) -> None:
    d = copy.deepcopy(DOCS[doc])
    at = d
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    with pytest.raises(PlanError) as e:
        Action.from_json(d)
    assert (e.value.message, e.value.hint, e.value.code) == (message, hint, "plan-invalid")
