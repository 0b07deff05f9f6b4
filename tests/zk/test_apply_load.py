"""load-topic through a broker's admin API (the test broker over the real ZooKeeper): seed -> scrape ->
plan --include expired-retention-unloaded -> mark -> delete --admin-url, the broker's trim checked against the
plan's prediction, and the preconditions and answers that stop a load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.repair.admin_writer import topic_path
from pulsar_ops.testing.admin_server import AdminServer
from tests.zk.apply_steps import explain_broker_loads
from tests.zk.repair_cluster import dump
from tests.zk.test_apply import cli
from tests.zk.test_apply_trim import seeded_retention

pytestmark = pytest.mark.zk


def test_load_topic_trims_what_the_plan_predicted(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    audit, _, now = seeded_retention(zk, zk_hosts, tmp_path)
    plan = tmp_path / "plan.json"
    code, out, err = cli("plan", str(audit), "--out", str(plan), "--include", "expired-retention-unloaded", "--json")
    assert code == 0, err
    doc = json.loads(plan.read_text())
    assert {a["kind"] for a in doc["actions"]} == {"load-topic"}
    assert doc["impact"]["load_wave"]["loads"] == len(doc["actions"]) > 0
    assert all(a["loads_topics"] and a["admin"]["expect_trimmed"] for a in doc["actions"])
    base = ["apply", str(plan), "--zookeeper", zk_hosts, "--apply", "--yes", "--json"]
    code, _, err = cli(*base, "--phase", "mark")
    assert code == 0, err
    busy, failing, older = doc["actions"][0], doc["actions"][1], doc["actions"][2]
    zk.set(busy["path"], zk.get(busy["path"])[0])  # a broker loaded it since the snapshot (a load writes the znode)
    before = dump(zk)
    with AdminServer(zk_hosts, now_ms=lambda: now) as server:
        server.fail("POST", f"{topic_path(failing['admin']['topic'])}/trim", status=500, times=1)
        server.fail("POST", f"{topic_path(older['admin']['topic'])}/trim", status=405, times=1)  # no trim endpoint
        args = [*base, "--admin-url", server.url, "--max-loads-per-minute", "6000"]
        code, out, err = cli(*args, "--phase", "delete", "--quarantine", "0")
        assert code == 2, err
        got = {o["id"]: o for o in json.loads(out)["actions"]}
        assert got[busy["id"]]["outcome"] == "skipped" and "version" in got[busy["id"]]["reason"]
        assert got[failing["id"]]["outcome"] == "failed" and "500" in got[failing["id"]]["reason"]
        assert "GET stats" in got[older["id"]]["reason"]  # an older broker: loaded through stats instead
        for a in doc["actions"][2:]:
            assert got[a["id"]]["outcome"] == "committed", got[a["id"]]
            assert (
                f"trimmed {len(a['admin']['expect_trimmed'])} of {len(a['admin']['expect_trimmed'])}"
                in (got[a["id"]]["reason"])
            )
            listed = decode_managed_ledger_info(zk.get(a["path"])[0], a["path"]).info.ledger_ids
            assert not set(a["admin"]["expect_trimmed"]) & set(listed)
            for lid in a["admin"]["expect_trimmed"]:
                assert ledger_path(lid) in before and not zk.exists(ledger_path(lid))  # the broker deleted it
        assert dump(zk)[busy["path"]] == before[busy["path"]]  # a loaded topic is never touched
        code, out, err = cli(*args, "--phase", "delete", "--quarantine", "0")  # the failed one is retried
        got = {o["id"]: o for o in json.loads(out)["actions"]}
        assert got[failing["id"]]["outcome"] == "committed"
        # full dumps: every difference is the broker's load of the loaded topics, and what it deleted is
        # exactly what the plan predicted (the first trim) for each of them
        loaded = {a["path"] for a in doc["actions"] if a is not busy}
        deleted = explain_broker_loads(before, dump(zk), loaded)
        for a in doc["actions"][1:]:
            trimmed = set(a["admin"]["expect_trimmed"])
            assert trimmed <= deleted[a["path"]], a["path"]
            for lid in deleted[a["path"]] - trimmed:  # besides, the load drops ledgers BookKeeper holds empty
                md = decode_ledger_metadata(before[ledger_path(lid)][0], ledger_path(lid))
                assert md.last_entry_id == -1, (a["path"], lid)
        trims = [c for c in server.calls if c.method == "POST"]
        assert len(trims) == len(doc["actions"])  # one call per action, plus the one retried; never the skipped
        assert [c.path for c in server.calls if c.method == "GET"] == [f"{topic_path(older['admin']['topic'])}/stats"]
