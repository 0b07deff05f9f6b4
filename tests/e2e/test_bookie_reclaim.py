"""The reclaim loop, end to end on the demo-sized seed (tests/e2e/conftest.py's demo_cluster, which the plan-impact test
reads too): seeded bookies -> scrape -> scan-bookie -> audit -> plan with the bookie-gc actions and their predictions
-> apply against test bookie servers (pulsar_ops.testing.bookie_server, whose forced GC does to the seeded
directories what BookKeeper's does) -> re-scan -> audit --compare-scans: per bookie, the freed bytes equal the
predicted ones. Forged bookie-gc actions (a bookie not in the scans, a bookie whose configuration disables the
compaction asked) are refused, the directories untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.repair.executor import APPLY_NOW_ENV
from pulsar_ops.repair.plan_file import compute_checksum
from pulsar_ops.testing.bookie_dirs import LAYOUT_FILE
from pulsar_ops.testing.bookie_server import BookieServer, zk_ledger_exists
from pulsar_ops.zkconn import connected
from tests.e2e.conftest import DemoCluster

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _scan(bookies: list[dict[str, Any]], out: Path) -> list[Path]:
    """`scan-bookie` per bookie, as tests/e2e/test_bookie_storage.py's scan_all runs it (three bookies are enough
    here: the injected storage defects are on the first three)."""
    scans = []
    for b in bookies:
        target = out / b["bookie_id"].replace(":", "_")
        r = _run("scan-bookie", "--ledger-dirs", ",".join(b["ledger_dirs"]), "--bookie-id", b["bookie_id"],
                 "--out", str(target), "--quiet", "--max-scan-mb-s", "0")  # fmt: skip
        assert r.exit_code == 0, r.stderr
        scans.append(target)
    return scans


def _run(*args: str) -> Any:
    r = CliRunner().invoke(app, list(args))
    return r


def _forge(plan_path: Path, out: Path, edit: Any) -> Path:
    doc = json.loads(plan_path.read_text())
    edit(doc)
    doc["checksum"] = compute_checksum(doc)
    out.write_text(json.dumps(doc))
    return out


@pytest.fixture
def servers() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def test_reclaim_loop_predicted_then_proved(
    demo_cluster: DemoCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, servers: ExitStack
) -> None:
    """The audit read every bookie's scan; the plan is given the first three (the bookies with injected garbage),
    and three test bookie servers answer the apply."""
    zk = servers.enter_context(connected(demo_cluster.zk_hosts))
    zk_hosts, now, bookie_dirs = demo_cluster.zk_hosts, demo_cluster.now_ms, demo_cluster.bookie_dirs
    audit, plan_path = demo_cluster.audit, tmp_path / "plan.json"
    layout = json.loads((bookie_dirs / LAYOUT_FILE).read_text())["bookies"][:3]
    scans = demo_cluster.scans[:3]  # scan_all's order is the layout's
    assert [s.name for s in scans] == [b["bookie_id"].replace(":", "_") for b in layout]
    r = _run("plan", str(audit), "--out", str(plan_path), *[a for s in scans for a in ("--bookie-scan", str(s))])
    assert r.exit_code == 0, r.output
    plan = json.loads(plan_path.read_text())
    gc = [a for a in plan["actions"] if a["kind"] == "bookie-gc"]
    by_bookie = {a["bookie_gc"]["bookie_id"]: a for a in gc}
    ids = [b["bookie_id"] for b in layout]
    # bookie 0: a deleted ledger's 20 entries next to one live entry (stale, compacted); bookie 1: a log of a
    # deleted ledger only (deleted by plain GC); bookie 2 holds a dangling ledger's data: never collected
    assert set(by_bookie) == {ids[0], ids[1]}
    record = 4 + 8 + 8 + 100
    b0, b1 = by_bookie[ids[0]], by_bookie[ids[1]]
    assert b0["bookie_gc"]["body"] == {"forceMajor": True, "forceMinor": True}
    assert b0["bookie_gc"]["expect_compaction"] == "major"  # Pulsar's settings: forceAllowCompaction, 0.5
    assert b0["impact"]["predicted_by"] == {"deletion": 0, "minor": 0, "major": 20 * record}
    assert b1["bookie_gc"]["body"] == {"forceMajor": False, "forceMinor": False}
    assert b1["impact"]["predicted_by"] == {"deletion": 10 * record, "minor": 0, "major": 0}
    assert [a["kind"] for a in plan["actions"][: len(gc)]] == ["bookie-gc"] * len(gc)  # first: before deletes
    dangling = [n for n in plan["not_planned"] if n["reason_code"] == "dangling-ledger-data"]
    assert dangling and all(ids[2] in n["reason"] for n in dangling)

    exists = zk_ledger_exists(zk)
    srv = {
        b["bookie_id"]: servers.enter_context(BookieServer(b["bookie_id"], b["ledger_dirs"], ledger_exists=exists))
        for b in layout
    }
    http = [a for bid, s in srv.items() for a in ("--bookie-http", f"{bid}={s.url}")]
    before = _digest(bookie_dirs)
    monkeypatch.setenv(APPLY_NOW_ENV, str(now))

    # forged: an action for a bookie the plan did not scan -> the whole plan is refused, nothing called
    def unscanned(doc: dict[str, Any]) -> None:
        a = json.loads(json.dumps(b0))
        a["id"] = "bookie-gc-forged"
        a["bookie_gc"]["bookie_id"] = ids[2]
        a["path"] = f"/ledgers/available/{ids[2]}"
        doc["actions"].insert(0, a)

    forged = _forge(plan_path, tmp_path / "forged1.json", unscanned)
    r = _run("apply", str(forged), "--zookeeper", zk_hosts, "--phase", "mark", "--apply", "--yes", *http)
    assert r.exit_code != 0 and "plan-unsafe" in r.output + r.stderr, r.output
    assert "bookie-gc-forged" in r.stderr and not any(s.calls for s in srv.values())
    # forged: compaction asked of a bookie whose configuration allows none -> refused at mark, final
    srv[ids[1]].config.update({"forceAllowCompaction": "false", "majorCompactionInterval": "0"})
    srv[ids[1]].config.update({"minorCompactionInterval": "0"})

    def compaction(doc: dict[str, Any]) -> None:
        for a in doc["actions"]:
            if a["kind"] == "bookie-gc" and a["bookie_gc"]["bookie_id"] == ids[1]:
                a["bookie_gc"]["body"] = {"forceMajor": True, "forceMinor": True}
                a["bookie_gc"]["expect_compaction"] = "major"
        doc["actions"] = [a for a in doc["actions"] if a["kind"] == "bookie-gc"]

    forged = _forge(plan_path, tmp_path / "forged2.json", compaction)
    r = _run("apply", str(forged), "--zookeeper", zk_hosts, "--phase", "mark", "--apply", "--yes", "--json", *http)
    assert r.exit_code != 0, r.output
    out = {o["target"]: o for o in json.loads(r.stdout)["actions"]}
    assert out[f"/ledgers/available/{ids[1]}"]["outcome"] == "skipped"
    assert "compaction-disabled" in out[f"/ledgers/available/{ids[1]}"]["reason"]
    assert all(not s.runs for s in srv.values()) and _digest(bookie_dirs) == before
    srv[ids[1]].config.update({"forceAllowCompaction": "true", "majorCompactionInterval": "86400"})
    srv[ids[1]].config.update({"minorCompactionInterval": "3600"})

    # the reviewed plan: dry run, mark, delete (the GC actions first, one bookie at a time)
    r = _run("apply", str(plan_path), "--zookeeper", zk_hosts, "--phase", "mark", *http)
    assert r.exit_code == 0 and "would-mark" in r.output and _digest(bookie_dirs) == before
    r = _run("apply", str(plan_path), "--zookeeper", zk_hosts, "--phase", "mark", "--apply", "--yes", *http)
    assert r.exit_code == 0, r.output
    assert all(not s.runs for s in srv.values()) and _digest(bookie_dirs) == before  # mark changes nothing
    r = _run(
        "apply", str(plan_path), "--zookeeper", zk_hosts, "--phase", "delete", "--quarantine", "0", "--apply",
        "--yes", "--json", "--bookie-gc-interval", "0", *http,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    outcomes = {o["id"]: o for o in json.loads(r.stdout)["actions"]}
    assert outcomes[b0["id"]]["outcome"] == outcomes[b1["id"]]["outcome"] == "committed"
    assert len(srv[ids[0]].runs) == len(srv[ids[1]].runs) == 1 and not srv[ids[2]].runs
    assert [d.compaction for d in srv[ids[0]].runs[0]] == ["major", "major"]
    assert [d.compaction for d in srv[ids[1]].runs[0]] == [None, None]
    puts = [c for s in srv.values() for c in s.calls if c[0] == "PUT"]
    assert len(puts) == 2

    # re-scan, then the comparison: per bookie, predicted against freed
    rescans = _scan(layout, tmp_path / "rescans")
    report = tmp_path / "compare.json"
    args = [a for old, new in zip(scans, rescans, strict=True) for a in ("--compare-scans", f"{old}={new}")]
    r = _run("audit", "--plan", str(plan_path), *args, "--json", "--out", str(report))
    assert r.exit_code == 0, r.output
    doc = json.loads(report.read_text())
    got = {b["bookie_id"]: b for b in doc["bookies"]}
    assert got[ids[0]]["predicted_freed_bytes"] == got[ids[0]]["freed_bytes"] == 20 * record
    assert got[ids[1]]["predicted_freed_bytes"] == got[ids[1]]["freed_bytes"] == 10 * record
    assert got[ids[0]]["garbage_bytes"] == {"before": 20 * record, "after": 0}
    assert got[ids[2]]["freed_bytes"] == 0 and got[ids[2]]["predicted_freed_bytes"] is None
    shutil.rmtree(tmp_path / "rescans")
