"""`plan --bookie-scan`: a scanned bookie's predicted impact comes from its measured entry-log layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.bookiescan.run import ScanConfig, scan
from pulsar_ops.testing.entrylog_writer import entry_log_path, write_entry_log, write_last_id
from tests.zk.repair_cluster import ML_A, build_cluster, findings_for, write_audit, write_snapshot
from tests.zk.test_apply import cli

pytestmark = pytest.mark.zk


def test_plan_impact_on_the_scanned_bookie_is_what_its_logs_free(zk: KazooClient, tmp_path: Path) -> None:
    s = build_cluster(zk)
    snap = write_snapshot(zk, tmp_path / "snap")
    audit = write_audit(tmp_path / "audit", snap, findings_for(s))
    d = tmp_path / "bk1" / "ledgers"
    # log 1: two orphans interleaved (wholly garbage once planned); log 2: orphan 22's one entry among nine of the
    # referenced ledger 10 (usage 0.9: pinned); log 3: referenced ledger 11 only
    t1 = write_entry_log(entry_log_path(d, 1), 1, [(lid, e, 980) for e in range(4) for lid in (20, 21)])
    t2 = write_entry_log(entry_log_path(d, 2), 2, [(22, 0, 980), *((10, e, 980) for e in range(9))])
    write_entry_log(entry_log_path(d, 3), 3, [(11, e, 980) for e in range(3)])
    write_last_id(d, 3)
    out = tmp_path / "scan-bk1"
    scan(ScanConfig(ledger_dirs=[d], bookie_id="bk1:3181", out=out))
    plan = tmp_path / "plan.json"
    code, stdout, err = cli("plan", str(audit), "--out", str(plan), "--json", "--bookie-scan", str(out))
    assert code == 0, err
    doc = json.loads(plan.read_text())
    planned = {a["ledger_id"] for a in doc["actions"] if a["kind"] == "delete-ledger-metadata"}
    assert {20, 21, 22} <= planned and not planned & {10, 11}
    impact = doc["impact"]
    assert impact["bookie_scans"] == {"bk1:3181": str(out)}
    bk1, bk2 = impact["per_bookie"]["bk1:3181"], impact["per_bookie"]["bk2:3181"]
    assert (bk1["layout"], bk2["layout"]) == ("measured", "estimated")
    assert bk1["garbage_bytes"] == t1.data_bytes + t2.bytes_per_ledger[22]
    assert bk1["reclaimed_bytes"] == {"deletion": t1.data_bytes, "minor": 0, "major": 0}
    [stuck] = bk1["stuck_logs"]
    assert (stuck["log_id"], stuck["garbage_bytes"]) == (2, t2.bytes_per_ledger[22])
    # pinned by the live ledger 10, named by its owner (custom metadata)
    assert stuck["pinned_by"] == [{"ledger_id": 10, "bytes": t2.bytes_per_ledger[10], "owner": ML_A}]
    assert bk1["estimate_vs_measured"]["total_bytes"]["measured"] == 21_000
    assert "layouts: measured (scan) on 1 bookie(s), estimated on 1" in err + stdout
    # the delete action of ledger 20 reports the bytes found on bk1 plus the estimate for bk2 (half the estimate
    # over both bookies that a plan without scans gives)
    code, _o, err = cli("plan", str(audit), "--out", str(tmp_path / "plain.json"))
    assert code == 0, err
    plain = json.loads((tmp_path / "plain.json").read_text())

    def a20(d: dict[str, Any]) -> int:
        return int(next(a for a in d["actions"] if a.get("ledger_id") == 20)["impact"]["bytes_on_disk"])

    assert a20(doc) == t1.bytes_per_ledger[20] + a20(plain) // 2
    assert all(b["layout"] == "estimated" for b in plain["impact"]["per_bookie"].values())
