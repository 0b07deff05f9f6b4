"""`plan` parses findings.json strictly and refuses leaks the snapshot contradicts; bad inputs get clear codes.

Each case writes a findings.json an operator might hand-edit (or a hostile one), runs `pulsar-ops plan`, and
checks the exit code, the error code naming the value, and that no plan file was left behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from tests.zk.repair_cluster import WATERMARK, build_cluster, findings_for, write_audit, write_snapshot
from tests.zk.test_apply import cli

pytestmark = pytest.mark.zk


@pytest.fixture
def audit(zk: KazooClient, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    s = build_cluster(zk)
    snap = write_snapshot(zk, tmp_path / "snap")
    audit_dir = write_audit(tmp_path / "audit", snap, findings_for(s))
    return audit_dir, json.loads((audit_dir / "findings.json").read_text())


def _plan(audit_dir: Path, doc: dict[str, Any]) -> tuple[int, str, Path]:
    (audit_dir / "findings.json").write_text(json.dumps(doc))
    out = audit_dir.parent / "plan.json"
    code, _o, err = cli("plan", str(audit_dir), "--out", str(out))
    return code, err, out


BAD: dict[str, tuple[Any, str]] = {
    "string false": ({"plannable": "false"}, "plannable: must be true or false, not str 'false'"),
    "string true": ({"plannable": "true"}, "plannable: must be true or false"),
    "number plannable": ({"plannable": 1}, "plannable: must be true or false, not int 1"),
    "list evidence": ({"evidence": ["kind", "data"]}, "evidence: expected an object, got list"),
    "dotdot path": ({"path": "/ledgers/00/0000/../../../admin/clusters"}, "holds a relative component ('..')"),
    "huge ledger id": ({"ledger_id": 10**30}, "ledger_id: 1000000000000000000000000000000 is out of range"),
    "negative bytes": ({"bytes": -5}, "bytes: -5 is out of range"),
    "string ledger id": ({"ledger_id": "20"}, "ledger_id: must be an integer, not str '20'"),
    "float bytes": ({"bytes": 1.5}, "bytes: must be an integer, not float 1.5"),
    "surrogate path": ({"path": "/ledgers/\udcff"}, "ZooKeeper refuses in paths"),
    "control char path": ({"path": "/ledgers/a\nb"}, "ZooKeeper refuses in paths"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_finding_is_refused_with_its_value(audit: tuple[Path, dict[str, Any]], case: str) -> None:
    audit_dir, doc = audit
    patch, needle = BAD[case]
    doc["findings"][0].update(patch)
    code, err, out = _plan(audit_dir, doc)
    assert code == 3, err
    assert "findings-invalid" in err and needle in err and "findings[0]" in err
    assert not out.exists()


def test_null_finding_is_refused(audit: tuple[Path, dict[str, Any]]) -> None:
    audit_dir, doc = audit
    doc["findings"].append(None)
    code, err, out = _plan(audit_dir, doc)
    assert code == 3 and "findings-invalid" in err and "is not an object (got NoneType None)" in err
    assert not out.exists()


def test_non_utf8_findings_file_and_directories(audit: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    audit_dir, _doc = audit
    (audit_dir / "findings.json").write_bytes(b'{"findings": [{"path": "/\xff"}]}')
    code, _o, err = cli("plan", str(audit_dir), "--out", str(tmp_path / "p.json"))
    assert code == 3 and "findings-invalid" in err and "utf-8" in err.lower()
    (audit_dir / "findings.json").unlink()
    (audit_dir / "findings.json").mkdir()
    code, _o, err = cli("plan", str(audit_dir), "--out", str(tmp_path / "p.json"))
    assert code == 3 and "findings-invalid" in err and "is a directory" in err
    code, _o, err = cli("apply", str(audit_dir), "--zookeeper", "127.0.0.1:1", "--phase", "mark")
    assert code == 3 and "plan-invalid" in err and "is a directory" in err


def test_string_false_used_to_plan_a_referenced_and_an_in_flight_ledger(audit: tuple[Path, dict[str, Any]]) -> None:
    """Findings that claim plannable orphans the snapshot contradicts are refused at plan time."""
    audit_dir, doc = audit
    doc["findings"] = [
        Finding(
            detection="orphan-ledger",
            severity="warning",
            ledger_id=10,
            path=ledger_path(10),
            plannable=True,
            evidence={"kind": "data", "owner": "t/ns/persistent/topic-a"},
        ).to_json(),
        Finding(
            detection="orphan-ledger",
            severity="warning",
            ledger_id=WATERMARK + 5,
            path=ledger_path(WATERMARK + 5),
            plannable=True,
            evidence={"kind": "data", "owner": "t/ns/persistent/topic-a"},
        ).to_json(),
        Finding(detection="znode-leak", severity="warning", path="/managed-ledgers/t/ns", plannable=True).to_json(),
        Finding(detection="znode-leak", severity="warning", path="/admin/clusters/test", plannable=True).to_json(),
    ]
    code, err, out = _plan(audit_dir, doc)
    assert code == 0, err
    plan = json.loads(out.read_text())
    assert plan["actions"] == []
    reasons = {n["ledger_id"] or n["path"]: (n["reason_code"], n["reason"]) for n in plan["not_planned"]}
    assert reasons[10][0] == "contradicted-by-snapshot" and "referenced by" in reasons[10][1]
    assert reasons[WATERMARK + 5][0] in ("contradicted-by-snapshot", "missing-in-snapshot")
    assert reasons["/managed-ledgers/t/ns"] == (
        "contradicted-by-snapshot",
        "namespace policies /admin/policies/t/ns exists again",  # prove_leak's reason, on the snapshot
    )
    assert reasons["/admin/clusters/test"][0] == "protected-path"


def test_truncated_parquet_is_snapshot_invalid_naming_the_file(audit: tuple[Path, dict[str, Any]]) -> None:
    audit_dir, doc = audit
    snap = Path(doc["snapshot"]["path"])
    part = sorted((snap / "tables" / "bk_ledgers").glob("part-*.parquet"))[0]
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    code, err, out = _plan(audit_dir, doc)
    assert code == 3 and "snapshot-invalid" in err and part.name in err
    assert "Traceback" not in err and not out.exists()
