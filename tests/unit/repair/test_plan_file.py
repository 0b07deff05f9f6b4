"""Plan file: versioned JSON, checksum over everything else, any edit detected, load round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import PlanChecksumError, PlanError
from pulsar_ops.repair.plan_file import PLAN_SCHEMA_VERSION, Plan, compute_checksum, dump_plan, load_plan, parse_plan
from pulsar_ops.repair.planner import PlanParams, plan_actions, summarize
from tests.unit.repair.factory import facts, leak, ledger_fact, orphan, subtree


def make_plan() -> Plan:
    root = "/loadbalance/bundle-data/t/gone"
    f = facts(ledgers={1: ledger_fact(1), 2: ledger_fact(2)}, subtrees={root: subtree(root, ["0x0_0x1"])})
    draft = plan_actions([orphan(1), orphan(2, kind="cursor"), leak(root), orphan(3, plannable=False)], f, PlanParams())
    return Plan(
        plan_id="p-1",
        created_at_ms=1,
        tool_version="0.1.0",
        snapshot={"id": "s", "path": "/snap", "finished_at_ms": 2},
        audit={"path": "/audit"},
        params={"max_actions": None},
        caps={"max_actions": None, "max_bytes": None},
        summary=summarize(draft.actions, draft.not_planned),
        impact={"available": False},
        actions=draft.actions,
        not_planned=draft.not_planned,
    )


def test_round_trip_and_contract(tmp_path: Path) -> None:
    plan = make_plan()
    out = tmp_path / "plan.json"
    checksum = dump_plan(plan, out)
    doc = json.loads(out.read_text())
    assert doc["schema_version"] == PLAN_SCHEMA_VERSION and doc["checksum"] == checksum
    for key in (
        "plan_id",
        "created_at_ms",
        "tool_version",
        "snapshot",
        "audit",
        "params",
        "caps",
        "summary",
        "impact",
        "actions",
        "not_planned",
    ):
        assert key in doc
    kinds = {(a["kind"], "ledger_id" in a, a["path"]) for a in doc["actions"]}
    assert ("delete-subtree", False, "/loadbalance/bundle-data/t/gone") in kinds
    assert all(a["loads_topics"] is False for a in doc["actions"])
    loaded = load_plan(out)
    assert loaded.actions == plan.actions and loaded.not_planned == plan.not_planned
    assert loaded.checksum == checksum


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


DOC = make_plan().to_json()
EDITABLE = [p for p in _paths(DOC) if p[0] != "checksum"]


def _mutate(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if value is None:
        return 0
    if isinstance(value, list):
        return [*value, 1] if not value else value[:-1]
    if isinstance(value, dict):
        return {**value, "extra": 1}
    return "changed"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(EDITABLE))
def test_checksum_detects_any_edit(path: tuple[Any, ...]) -> None:
    doc = copy.deepcopy(DOC)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = _mutate(parent[path[-1]])
    with pytest.raises(PlanChecksumError):
        parse_plan(doc)


def test_removed_key_and_checksum_edit_detected() -> None:
    doc = copy.deepcopy(DOC)
    del doc["not_planned"]
    with pytest.raises(PlanChecksumError):
        parse_plan(doc)
    doc = copy.deepcopy(DOC)
    doc["checksum"] = "0" * 64
    with pytest.raises(PlanChecksumError):
        parse_plan(doc)


def test_schema_version_checked(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["schema_version"] = 99
    doc["checksum"] = compute_checksum(doc)
    with pytest.raises(PlanError) as e:
        parse_plan(doc)
    assert e.value.code == "plan-invalid" and "schema_version 99" in e.value.message
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(PlanChecksumError):
        load_plan(bad)
    with pytest.raises(PlanError):
        load_plan(tmp_path / "missing.json")
