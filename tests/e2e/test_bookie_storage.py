"""seed --bookie-dirs -> scrape -> scan-bookie per bookie -> audit --bookie-scan ...: the storage detections report
exactly the injected storage defects (and every other detection still its ground truth), against a real ZooKeeper.

The ground-truth, capacity and plan-impact checks read one seeded, scanned and audited cluster: the demo's 30-topic
one (tests/e2e/conftest.py's demo_cluster), which the reclaim loop reads too: one audit for the three.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.audit.runner import AuditResult
from pulsar_ops.cli.main import app
from pulsar_ops.findings import STORAGE_DETECTIONS
from pulsar_ops.testing.bookie_dirs import LAYOUT_FILE, PAYLOAD
from pulsar_ops.testing.truth import compare, summary_lines
from tests.e2e.conftest import DemoCluster

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]


def scan_all(bookie_dirs: Path, out: Path) -> list[Path]:
    """`pulsar-ops scan-bookie` for every bookie the seeder wrote, as an operator runs it on each host."""
    scans = []
    for b in json.loads((bookie_dirs / LAYOUT_FILE).read_text())["bookies"]:
        target = out / b["bookie_id"].replace(":", "_")
        r = CliRunner().invoke(
            app,
            ["scan-bookie", "--ledger-dirs", ",".join(b["ledger_dirs"]), "--bookie-id", b["bookie_id"],
             "--out", str(target), "--quiet", "--max-scan-mb-s", "0"],
        )  # fmt: skip
        assert r.exit_code == 0, r.stderr
        scans.append(target)
    return scans


@dataclass(frozen=True)
class Audited:
    truth: dict[str, Any]
    bookie_dirs: Path
    snap: Path
    scans: list[Path]
    result: AuditResult


@pytest.fixture(scope="module")
def audited(demo_cluster: DemoCluster) -> Audited:
    """The demo's 30-topic cluster (tests/e2e/conftest.py: seed 1, every storage defect injected), scraped, every
    bookie scanned, audited once with the capacity view keeping every owner; the plan-impact check and the reclaim
    loop read the same audit. The bookie directories' layout file is only read (the reclaim loop's GC rewrites
    entry logs, never it)."""
    seeded = demo_cluster.seeded
    return Audited(seeded.ground_truth, demo_cluster.bookie_dirs, demo_cluster.snap, demo_cluster.scans,
                   demo_cluster.result)  # fmt: skip


def test_storage_findings_match_the_ground_truth(audited: Audited) -> None:
    truth, result, scans = audited.truth, audited.result, audited.scans
    assert all(truth["expected"][d] for d in STORAGE_DETECTIONS)  # every kind injected
    diffs = compare(result.findings, truth)
    bad = {k: d for k, d in diffs.items() if not d.ok}
    assert not bad, (
        "\n".join(summary_lines(diffs))
        + "\n"
        + "\n".join(
            f"{k}: missing={d.missing[:5]} unexpected={d.unexpected[:5]} mismatched={d.mismatched[:3]}"
            for k, d in bad.items()
        )
    )
    assert all(not s["partial"] for s in result.audit["bookie_scans"])
    loggers = set()
    for s in scans:
        m = json.loads((s / "manifest.json").read_text())
        assert m["logs"]["map"] > 0 and m["logs"]["scanned"] > 0 and m["index"]["status"] == "read"
    for b in json.loads((audited.bookie_dirs / LAYOUT_FILE).read_text())["bookies"]:
        loggers.add(b["logger"])
    assert loggers == {"default", "direct"}


def _table(snap: Path, name: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    d = snap / "tables" / name
    return pq.read_table(d).to_pylist() if any(d.glob("*.parquet")) else []


def test_capacity_attributes_every_seeded_topics_bytes(audited: Audited) -> None:
    """audit.storage on a seeded cluster: per bookie the classes sum to the scanned data bytes, and every topic's
    live bytes on every bookie are what its referenced ledgers hold there (from the scans' own tables)."""
    import pyarrow.parquet as pq

    snap, scans, result = audited.snap, audited.scans, audited.result
    storage = result.audit["storage"]
    got = {b["bookie_id"]: b for b in storage["bookies"]}
    assert len(got) == len(scans) >= 3
    # who references each ledger (ledger lists, cursor / compacted / bucket ledgers, schemas)
    owners: dict[int, set[str]] = {}
    for r in _table(snap, "ledger_list"):
        owners.setdefault(r["ledger_id"], set()).add(r["topic"])
    for r in _table(snap, "cursors"):
        for lid in (r["cursors_ledger_id"], r["compacted_topic_ledger"]):
            if lid is not None and lid >= 0:
                owners.setdefault(lid, set()).add(r["topic"])
    for r in _table(snap, "cursor_properties"):
        if r["bucket_ledger_id"] is not None:
            owners.setdefault(r["bucket_ledger_id"], set()).add(r["topic"])
    for r in _table(snap, "schema_index"):
        owners.setdefault(r["ledger_id"], set()).add(r["topic"])
    in_bk = {r["ledger_id"] for r in _table(snap, "bk_ledgers")}
    topics_seen = 0
    for s in scans:
        logs = pq.read_table(s / "entry_logs.parquet").to_pylist()
        pairs = pq.read_table(s / "entry_log_ledgers.parquet").to_pylist()
        bid = logs[0]["bookie_id"]
        b = got[bid]
        assert b["data_bytes"] == sum(r["data_bytes"] for r in logs if not r["compacting"]) > 0
        assert sum(b[f"{c}_bytes"] for c in ("live", "orphan", "unreclaimed", "unattributed")) == b["data_bytes"]
        want: dict[str, int] = {}
        for p in pairs:
            topics = owners.get(p["ledger_id"], set())
            if p["ledger_id"] in in_bk and topics:
                assert len(topics) == 1, (p["ledger_id"], topics)  # the seeder shares no ledger
                t = next(iter(topics))
                want[t] = want.get(t, 0) + p["bytes"]
        rows = b["top"]["live"]["topic"]
        assert rows["of"] == len(rows["rows"]) == len(want)
        assert {r["name"]: r["bytes"] for r in rows["rows"]} == want
        assert sum(want.values()) == b["live_bytes"]
        assert b["orphan_bytes"] > 0 or b["unreclaimed_bytes"] > 0  # the injected defects show up somewhere
        topics_seen += len(want)
    assert topics_seen > 40  # topics spread over several bookies


def _freed_ledgers(plan: dict[str, Any]) -> set[int]:
    """The ledgers a plan frees, read from its actions (not its impact): ledger deletes, the ledgers an offline trim
    removes, a load's predicted first trim, and the cursor ledger of a dropped subscription."""
    from pulsar_ops.formats.ledger_path import ledger_id_from_path

    out: set[int] = set()
    for a in plan["actions"]:
        if a["kind"] == "delete-ledger-metadata":
            out.add(int(a["ledger_id"]))
        elif a["kind"] == "trim-unloaded":
            out.update(int(r["ledger_id"]) for r in a["rewrite"]["removed"])
        elif a["kind"] == "load-topic":
            out.update(int(x) for x in a["admin"]["expect_trimmed"])
        elif a["kind"] == "delete-subscription":
            for z in a["preconditions"]["znodes"]:
                lid = ledger_id_from_path(z["path"])
                if lid is not None:
                    out.add(lid)
    return out


def test_plan_impact_per_bookie_matches_what_the_seeded_ground_truth_frees(
    demo_cluster: DemoCluster, tmp_path: Path
) -> None:
    """plan --bookie-scan on a seeded 30-topic cluster (the demo's plan): each bookie's garbage bytes equal the bytes
    the seeder placed on it for the freed ledgers, computed from the seeded metadata alone (striping, record size
    8 + 8 + payload + 4, the data deliberately left off a bookie and the live records copied into injected logs);
    a bookie with nothing freed has no garbage; and the GC stages account for every garbage byte."""
    from pulsar_ops.testing.bookie_dirs import (
        DIRS_PER_BOOKIE,
        entries_on,
        ledgers_of,
        placements,
    )
    from pulsar_ops.testing.model_ledgers import BOOKIES

    res = demo_cluster.seeded
    assert res.model is not None
    truth = res.ground_truth
    audit, scans, plan_path = demo_cluster.audit, demo_cluster.scans, tmp_path / "plan.json"
    r = CliRunner().invoke(
        app,
        ["plan", str(audit), "--out", str(plan_path), "--include", "dangling-ledger",
         "--include", "inactive-subscription", "--include", "expired-retention-unloaded",
         "--offline-trim-namespace", "acme/idle-week-0", *[a for s in scans for a in ("--bookie-scan", str(s))]],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    plan = json.loads(plan_path.read_text())
    per_bookie = plan["impact"]["per_bookie"]

    # the seeder's own placement, over the seeded ledgers' metadata
    ledgers = ledgers_of(res.model.znodes)
    by_id = {m.ledger_id: m for m in ledgers}
    freed = {lid for lid in _freed_ledgers(plan) if lid in by_id}  # no metadata, nothing for the bookies to GC
    assert freed, "the demo's plan frees ledgers"
    dropped = {(e["path"], int(e["ledger_id"])) for e in truth["expected"]["ledger-data-missing"]}
    assert dropped

    def record(n_entries: int) -> int:  # one entry-log record: 4-byte length, then ledger id, entry id, payload
        return n_entries * (4 + 8 + 8 + PAYLOAD)

    want = {b: 0 for b in BOOKIES}
    for lid in freed:
        for b in BOOKIES:
            if (b, lid) not in dropped:  # the seeder left this ledger's data off that bookie
                want[b] += record(len(entries_on(by_id[lid], b)))
    # the injected logs copy live records next to deleted data: the first closed ledger a bookie's directory
    # indexes keeps one entry in bookie 0's stale log, ten entries in bookie 2's log with the dangling data
    closed = [m for m in ledgers if m.state == "CLOSED" and m.last_entry_id >= 0]

    def first_indexed(bookie: str, d: int) -> int | None:
        for m in closed:
            lid = m.ledger_id
            assert lid is not None
            if lid % DIRS_PER_BOOKIE == d and bookie in placements(m) and (bookie, lid) not in dropped:
                return lid
        return None

    extra: list[tuple[str, int | None, int]] = [(BOOKIES[0], first_indexed(BOOKIES[0], 900 % DIRS_PER_BOOKIE), 1)]
    dangling = sorted(int(e["ledger_id"]) for e in truth["expected"]["dangling-ledger"] if e.get("ledger_id", -1) >= 0)
    if dangling:
        extra.append((BOOKIES[2], first_indexed(BOOKIES[2], dangling[0] % DIRS_PER_BOOKIE), 10))
    for b, lid, n in extra:
        if lid in freed:
            want[b] += record(n)
    got = {b: per_bookie[b]["garbage_bytes"] if b in per_bookie else 0 for b in BOOKIES}
    assert set(per_bookie) <= set(BOOKIES)
    assert got == want
    assert sum(want.values()) > 0
    assert plan["impact"]["garbage_bytes"] == sum(want.values())
    # GC stages against simple rules on the scanned layout (the scanner's tables, not the model): a finished log
    # whose every ledger is freed goes by whole-log deletion; freed bytes in a directory's newest log (the active
    # one, which GC never touches: GarbageCollectorThread only considers logs below the least unflushed one) stay
    import pyarrow.parquet as pq

    for s in scans:
        logs = [x for x in pq.read_table(s / "entry_logs.parquet").to_pylist() if not x["compacting"]]
        pairs = pq.read_table(s / "entry_log_ledgers.parquet").to_pylist()
        bid = logs[0]["bookie_id"]
        doc = per_bookie[bid]
        assert doc["layout"] == "measured", bid
        newest = {d: max(x["log_id"] for x in logs if x["ledger_dir"] == d) for d in {x["ledger_dir"] for x in logs}}
        in_log: dict[tuple[str, int], set[int]] = {}
        for p in pairs:
            in_log.setdefault((p["ledger_dir"], p["log_id"]), set()).add(p["ledger_id"])
        whole = sum(
            x["data_bytes"]
            for x in logs
            if x["log_id"] != newest[x["ledger_dir"]] and in_log.get((x["ledger_dir"], x["log_id"]), {-1}) <= freed
        )
        active = sum(p["bytes"] for p in pairs if p["log_id"] == newest[p["ledger_dir"]] and p["ledger_id"] in freed)
        rec = doc["reclaimed_bytes"]
        assert rec["deletion"] == whole, bid
        assert doc["unreclaimable_by_reason"].get("active-log-until-rollover", 0) == active, bid
        assert rec["deletion"] + rec["minor"] + rec["major"] + doc["unreclaimable_bytes"] == doc["garbage_bytes"], bid
    assert any(
        per_bookie[b]["unreclaimable_by_reason"].get("active-log-until-rollover", 0) > 0 for b in per_bookie
    )  # the rule above is exercised: some freed ledgers are open ones, in the active logs
