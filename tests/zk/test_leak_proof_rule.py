"""The leak proof is pinned to the audit's SQL (issue 34): on generated metadata trees, written to a real ZooKeeper
and scraped by the real scraper, znode-leak's SQL (``int_znode_leaks`` and its blockers, run here on DuckDB)
calls a subtree root a plannable leak exactly when the planner, asked for that root, plans it: the delete-subtree
kind's rule on the snapshot (:func:`pulsar_ops.repair.safety.prove_leak`, the system-name and the leak's age
rules) and its build checks. Every root with a leak kind's shape is asked, whether the SQL reported it or not.

Generated trees mix, per namespace: policies present, absent or undecodable; a managed-ledger directory absent,
empty, or with topics that list ledgers, list none, do not decode or are partitions; persistent and non-persistent
partitioned-topic nodes with or without managed ledgers; schemas whose topic has a managed ledger, a partitioned
node of either domain, or nothing; bundle data of one of the namespace's bundles or of another range; local
policies; and a deleted tenant's managed ledgers and bundle data."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kazoo.client import KazooClient

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files
from pulsar_ops.bench.duckdb_sql import connect, rewrite
from pulsar_ops.findings import Finding
from pulsar_ops.formats.policies import encode_namespace_policies
from pulsar_ops.repair.facts import RuleParams
from pulsar_ops.repair.planner import PlanParams, plan_actions
from pulsar_ops.repair.safety import leak_shape
from pulsar_ops.repair.snapshot_facts import load_facts, load_ledgers
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.snapshot.reader import open_snapshot
from tests.unit.repair.encoders import ml_info, schema_locator

DAY = 86_400_000
WHOLE = "0x00000000_0xffffffff"
HALF = "0x00000000_0x80000000"
BAD = b"\xff\x00 not a value"
TOPICS = ("a", "b", "c", "d-partition-0", "e-partition-01")
TOPIC_STATES = {"ledgers": ml_info([5]), "empty": ml_info([]), "undecodable": BAD}

namespace_st = st.fixed_dictionaries(
    {
        "policies": st.sampled_from(["yes", "yes", "no", "undecodable"]),
        "ml": st.sampled_from(["none", "empty-dir", "topics", "topics"]),
        "topics": st.dictionaries(st.sampled_from(TOPICS), st.sampled_from(sorted(TOPIC_STATES)), max_size=3),
        "partitioned": st.lists(st.sampled_from(["a", "d", "e", "x"]), max_size=2, unique=True),
        "partitioned_np": st.lists(st.sampled_from(["f", "a"]), max_size=1),
        "schemas": st.lists(st.sampled_from(["a", "d", "e", "f", "x", "y"]), max_size=3, unique=True),
        "bundle": st.sampled_from(["none", WHOLE, HALF]),
        "local_policies": st.booleans(),
    }
)


def _tree(nss: list[dict[str, Any]], gone_ledgers: bool) -> dict[str, bytes]:
    t: dict[str, bytes] = {
        "/admin/clusters/test": b"{}",
        "/ledgers/INSTANCEID": b"5a8f4a9c-1c9e-4c4e-9a51-0d2b8d9f0e11",
        "/admin/policies/t": b'{"allowed_clusters": ["test"]}',
        "/managed-ledgers/gone/ns/persistent/y": ml_info([6] if gone_ledgers else []),
        f"/loadbalance/bundle-data/gone/ns/{WHOLE}": b"{}",
    }
    for i, n in enumerate(nss):
        ns = f"t/ns{i}"
        if n["policies"] == "yes":
            t[f"/admin/policies/{ns}"] = encode_namespace_policies(boundaries=["0x00000000", "0xffffffff"])
        elif n["policies"] == "undecodable":
            t[f"/admin/policies/{ns}"] = b"not json"
        if n["ml"] == "empty-dir":
            t[f"/managed-ledgers/{ns}"] = b""
        elif n["ml"] == "topics":
            t[f"/managed-ledgers/{ns}/persistent"] = b""
            for name, state in n["topics"].items():
                t[f"/managed-ledgers/{ns}/persistent/{name}"] = TOPIC_STATES[state]
        for name in n["partitioned"]:
            t[f"/admin/partitioned-topics/{ns}/persistent/{name}"] = b'{"partitions": 2}'
        for name in n["partitioned_np"]:
            t[f"/admin/partitioned-topics/{ns}/non-persistent/{name}"] = b'{"partitions": 2}'
        for name in n["schemas"]:
            t[f"/schemas/{ns}/{name}"] = schema_locator([7])
        if n["bundle"] != "none":
            t[f"/loadbalance/bundle-data/{ns}/{n['bundle']}"] = b"{}"
        if n["local_policies"]:
            t[f"/admin/local-policies/{ns}"] = b"{}"
    return t


def _roots(tree: dict[str, bytes]) -> set[str]:
    """Every path of the tree (and every ancestor of one) that has a leak kind's shape."""
    out = set()
    for path in tree:
        parts = path.split("/")
        for k in range(2, len(parts) + 1):
            p = "/".join(parts[:k])
            if leak_shape(p) is not None:
                out.add(p)
    return out


def _sql_plannable(snap_dir: Path, params: AuditParams) -> tuple[set[str], dict[str, str]]:
    con = connect(snap_dir, params, admin_scraped=False)
    f = next(f for f in detect_files() if f.name == "znode-leak")
    cur = con.execute(rewrite(f.text))
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    return {str(r["path"]) for r in rows if r["plannable"]}, {str(r["path"]): str(r["reason"]) for r in rows}


def _python_plans(snap_dir: Path, roots: set[str], now_ms: int) -> tuple[set[str], dict[str, str]]:
    snap = open_snapshot(snap_dir)
    ledgers, _rows = load_ledgers(snap)
    findings = {
        r: Finding(detection="znode-leak", severity="warning", path=r, plannable=True, evidence={"leak": s.leak})
        for r in sorted(roots)
        if (s := leak_shape(r)) is not None
    }
    facts = load_facts(snap, findings.values(), ledgers, rules=RuleParams(min_age_ms=DAY), now_ms=now_ms)
    planned, why = set(), {}
    for root, f in findings.items():
        draft = plan_actions([f], facts, PlanParams())
        if draft.actions:
            planned.add(root)
        else:
            why[root] = "; ".join(f"{n.reason_code}: {n.reason}" for n in draft.not_planned)
    return planned, why


def _outermost(roots: set[str]) -> set[str]:
    return {r for r in roots if not any(r.startswith(o + "/") for o in roots)}


COUNTER = [0]


def _check(zk: KazooClient, zk_hosts: str, nss: list[dict[str, Any]], gone_ledgers: bool) -> None:
    COUNTER[0] += 1
    chroot = f"/ex{COUNTER[0]}"
    tree = _tree(nss, gone_ledgers)
    for path, data in sorted(tree.items()):
        zk.create(chroot + path, data, makepath=True)
    for d in ("/managed-ledgers", "/schemas", "/admin/partitioned-topics", "/admin/local-policies", "/namespace"):
        zk.ensure_path(chroot + d)
    tmp = Path(tempfile.mkdtemp(prefix="leak-proof-"))
    try:
        scrape(ScrapeConfig(zookeeper=zk_hosts + chroot, out=tmp / "snap", workers=0))
        now = int(time.time() * 1000) + 2 * DAY  # every znode older than the min-age (1 day)
        sql, sql_why = _sql_plannable(tmp / "snap", AuditParams(now_ms=now, min_age_ms=DAY))
        roots = _roots(tree)
        python, py_why = _python_plans(tmp / "snap", roots, now)
        assert sql <= roots  # the SQL reports only roots of a leak kind's shape
        # a root inside another planned root is deleted with it: the SQL reports the outer one only (a deleted
        # tenant's managed ledgers, not each namespace; a namespace's bundle-data directory, not each range)
        sql, python = _outermost(sql), _outermost(python)
        diff = {r: (sql_why.get(r, "not reported"), py_why.get(r, "planned")) for r in sorted(sql ^ python)}
        assert python == sql, json.dumps({"tree": sorted(tree), "diff": diff}, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


NS_DEFAULT: dict[str, Any] = {
    "policies": "yes", "ml": "none", "topics": {}, "partitioned": [], "partitioned_np": [], "schemas": [],
    "bundle": "none", "local_policies": False,
}  # fmt: skip


def _ns(**kw: Any) -> dict[str, Any]:
    return {**NS_DEFAULT, **kw}


# few examples of several namespaces each: every example is one scrape and one DuckDB audit (~3 s). The explicit
# one holds every form once
@pytest.mark.slow
@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
@given(nss=st.lists(namespace_st, min_size=2, max_size=5), gone_ledgers=st.booleans())
@example(
    nss=[
        _ns(policies="no", ml="topics", topics={"a": "empty", "d-partition-0": "empty"}, local_policies=True),
        _ns(policies="no", ml="topics", topics={"a": "ledgers"}, bundle=WHOLE),
        _ns(policies="undecodable", ml="empty-dir", bundle=HALF, local_policies=True),
        _ns(policies="no", ml="topics", topics={"c": "undecodable"}),
        _ns(ml="topics", topics={"a": "empty", "c": "undecodable", "e-partition-01": "undecodable"},
            partitioned=["a", "d", "e", "x"], partitioned_np=["f"], schemas=["a", "d", "e", "f", "x", "y"],
            bundle=HALF),
        _ns(ml="topics", topics={"d-partition-0": "undecodable"}, partitioned=["d"], schemas=["d"], bundle=WHOLE),
    ],
    gone_ledgers=False,
)  # fmt: skip
def test_the_audit_sql_and_the_planner_agree_on_a_leak(
    zk: KazooClient, zk_hosts: str, nss: list[dict[str, Any]], gone_ledgers: bool
) -> None:
    _check(zk, zk_hosts, nss, gone_ledgers)
