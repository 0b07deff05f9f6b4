"""Apply re-proves every safety rule itself (issue: repair safety), against the embedded real ZooKeeper.

* every leak kind: the condition that made it a leak is re-checked just before the delete; a change during the
  quarantine skips the action with its reason and deletes nothing;
* forged, self-consistent plans (valid checksum) that touch protected paths are refused whole, before anything
  is journaled;
* a ledger referenced anywhere in the live tree is never deleted, whatever the plan says about its owner;
* a wrong chroot or another cluster is refused before anything is journaled;
* restore of a backup directory shared by two plans restores the one named;
* empty plans are a success at every step.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.policies import encode_namespace_policies
from pulsar_ops.repair.plan_file import compute_checksum
from tests.unit.repair.encoders import ml_info, schema_locator
from tests.zk.repair_cluster import (
    INSTANCE_ID,
    ML_A_PATH,
    Scenario,
    build_cluster,
    dump,
    findings_for,
    write_audit,
    write_snapshot,
)
from tests.zk.test_apply import Env, apply, cli, make_env

pytestmark = pytest.mark.zk

BASE = {
    "/admin/clusters/test": b"{}",
    "/ledgers/INSTANCEID": INSTANCE_ID.encode(),
    "/admin/policies/t/ns": b'{"bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1}}',
}


def _tree(zk: KazooClient, nodes: dict[str, bytes]) -> None:
    for path, data in {**BASE, **nodes}.items():
        zk.create(path, data, makepath=True)


def _leak_env(zk: KazooClient, hosts: str, tmp: Path, nodes: dict[str, bytes], leaks: list[str]) -> Env:
    _tree(zk, nodes)
    snap = write_snapshot(zk, tmp / "snap")
    findings = [Finding(detection="znode-leak", severity="warning", path=p, plannable=True) for p in leaks]
    audit = write_audit(tmp / "audit", snap, findings)
    plan = tmp / "plan.json"
    code, _out, err = cli("plan", str(audit), "--out", str(plan), "--json")
    assert code == 0, err
    doc = json.loads(plan.read_text())
    assert [a["path"] for a in doc["actions"]] == sorted(leaks), doc["not_planned"]
    return Env(zk, hosts, Scenario(leaks=leaks), plan, tmp)


HALF_POLICIES = encode_namespace_policies(boundaries=["0x00000000", "0x80000000", "0xffffffff"])
SPLIT_LOCAL = json.dumps(
    {"bundles": {"boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xffffffff"], "numBundles": 3}}
).encode()


def _create(path: str, data: bytes = b"") -> Callable[[KazooClient], None]:
    def change(zk: KazooClient) -> None:
        zk.create(path, data, makepath=True)

    return change


# (leak root, znodes of the scenario, the change made during the quarantine, words of the skip reason)
LEAK_CASES: list[tuple[str, dict[str, bytes], Callable[[KazooClient], None], str]] = [
    (
        "/managed-ledgers/gone",
        {"/managed-ledgers/gone/ns/persistent/t1": b""},
        _create("/admin/policies/gone"),
        "tenant /admin/policies/gone exists again",
    ),
    (
        "/managed-ledgers/t/old",
        {"/managed-ledgers/t/old/persistent/t1": b""},
        _create("/admin/policies/t/old"),
        "namespace policies /admin/policies/t/old exists again",
    ),
    (
        "/admin/partitioned-topics/t/ns/persistent/pt",
        {"/admin/partitioned-topics/t/ns/persistent/pt": b'{"partitions":2}'},
        _create("/managed-ledgers/t/ns/persistent/pt-partition-1"),
        "pt-partition-1 exists for it",
    ),
    (
        "/schemas/t/ns/gone-topic",
        {"/schemas/t/ns/gone-topic": schema_locator([7])},
        _create("/managed-ledgers/t/ns/persistent/gone-topic"),
        "persistent/gone-topic exists for it",
    ),
    (
        "/schemas/t/ns/gone-topic",
        {"/schemas/t/ns/gone-topic": schema_locator([7])},
        _create("/admin/partitioned-topics/t/ns/persistent/gone-topic"),
        "partitioned-topic metadata",
    ),
    (
        "/loadbalance/bundle-data/old/ns",
        {"/loadbalance/bundle-data/old/ns/0x00000000_0xffffffff": b"{}"},
        _create("/admin/policies/old/ns"),
        "namespace policies /admin/policies/old/ns exist",
    ),
    (
        "/loadbalance/bundle-data/old/ns",
        {"/loadbalance/bundle-data/old/ns/0x00000000_0xffffffff": b"{}"},
        _create("/namespace/old/ns/0x00000000_0xffffffff"),
        "bundle ownership",
    ),
    (
        "/loadbalance/bundle-data/t/ns/0x00000000_0x80000000",
        {"/loadbalance/bundle-data/t/ns/0x00000000_0x80000000": b"{}"},
        _create("/namespace/t/ns/0x00000000_0x80000000"),
        "bundle ownership",
    ),
    (
        "/admin/local-policies/t/gone",
        {"/admin/local-policies/t/gone": b"{}"},
        _create("/admin/policies/t/gone"),
        "namespace policies /admin/policies/t/gone exists again",
    ),
    # a split recorded in the local policies (what the broker reads first) makes the range a bundle again
    (
        "/loadbalance/bundle-data/t/sp/0x00000000_0x40000000",
        {"/admin/policies/t/sp": HALF_POLICIES, "/loadbalance/bundle-data/t/sp/0x00000000_0x40000000": b"{}"},
        _create("/admin/local-policies/t/sp", SPLIT_LOCAL),
        "0x00000000_0x40000000 is again a bundle of t/sp (by /admin/local-policies/t/sp)",
    ),
    (
        "/loadbalance/bundle-data/t/sp/0x00000000_0x40000000",
        {"/admin/policies/t/sp": HALF_POLICIES, "/loadbalance/bundle-data/t/sp/0x00000000_0x40000000": b"{}"},
        _create("/admin/local-policies/t/sp", b'{"bundles": {"numBundles": 3}}'),
        "/admin/local-policies/t/sp cannot be decoded",
    ),
]


@pytest.mark.parametrize(
    ("root", "nodes", "change", "why"), LEAK_CASES, ids=[c[0] + ":" + c[3][:20] for c in LEAK_CASES]
)
def test_leak_is_re_proved_at_delete_time(
    zk: KazooClient,
    zk_hosts: str,
    tmp_path: Path,
    root: str,
    nodes: dict[str, bytes],
    change: Callable[[KazooClient], None],
    why: str,
) -> None:
    env = _leak_env(zk, zk_hosts, tmp_path, nodes, [root])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    change(zk)
    before = dump(zk)
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 1, err
    assert doc is not None
    (out,) = doc["actions"]
    assert out["outcome"] == "skipped" and why in out["reason"], out
    assert dump(zk) == before


@pytest.mark.parametrize(("root", "nodes"), [(c[0], c[1]) for c in LEAK_CASES[::2]])
def test_unchanged_leak_is_deleted(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, root: str, nodes: dict[str, bytes]
) -> None:
    env = _leak_env(zk, zk_hosts, tmp_path, nodes, [root])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"committed": 1}
    assert zk.exists(root) is None


def test_managed_ledger_that_lists_a_ledger_blocks_the_namespace_leak(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    root = "/managed-ledgers/t/old"
    env = _leak_env(zk, zk_hosts, tmp_path, {root + "/persistent/t1": b""}, [root])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    zk.set(root + "/persistent/t1", ml_info([5]))
    code, doc, _err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 1 and doc is not None
    assert doc["actions"][0]["outcome"] == "skipped"
    assert zk.exists(root + "/persistent/t1") is not None


# --- forged plans ----------------------------------------------------------------------------------------


def _forge(plan: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(plan.read_text())
    edit(doc)
    doc["checksum"] = compute_checksum(doc)
    plan.write_text(json.dumps(doc))


def _subtree_action(doc: dict[str, Any]) -> dict[str, Any]:
    return next(a for a in doc["actions"] if a["kind"] == "delete-subtree")


def _ledger_action(doc: dict[str, Any]) -> dict[str, Any]:
    return next(a for a in doc["actions"] if a["kind"] == "delete-ledger-metadata")


def _retarget_subtree(zk: KazooClient, path: str, store: str = "local") -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        a = _subtree_action(doc)
        data, st = zk.get(path)
        a["path"], a["store"], a["leak"] = path, store, None
        a["preconditions"]["znodes"] = [
            {
                "store": store,
                "path": path,
                "version": st.version,
                "mzxid": st.mzxid,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        ]

    return edit


FORGED = {
    "/admin/clusters": lambda zk: _retarget_subtree(zk, "/admin/clusters", "config"),
    "/admin/clusters/test": lambda zk: _retarget_subtree(zk, "/admin/clusters/test", "config"),
    "/ledgers/LAYOUT": lambda zk: _retarget_subtree(zk, "/ledgers/LAYOUT"),
    "/ledgers/INSTANCEID": lambda zk: _retarget_subtree(zk, "/ledgers/INSTANCEID"),
    "/ledgers/available": lambda zk: _retarget_subtree(zk, "/ledgers/available"),
    "/ledgers/underreplication": lambda zk: _retarget_subtree(zk, "/ledgers/underreplication"),
    "live topic": lambda zk: _retarget_subtree(zk, ML_A_PATH),
    "/": lambda zk: _retarget_subtree(zk, "/"),
    "/managed-ledgers": lambda zk: _retarget_subtree(zk, "/managed-ledgers"),
}


@pytest.mark.parametrize("target", sorted(FORGED))
def test_forged_plan_on_a_protected_path_is_refused_before_anything(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, target: str
) -> None:
    env = make_env(zk, zk_hosts, tmp_path)
    for p in ("/ledgers/LAYOUT", "/ledgers/available", "/ledgers/underreplication"):
        zk.ensure_path(p)
    _forge(env.plan, FORGED[target](zk))
    before = dump(zk)
    for phase in ("mark", "delete"):
        code, doc, err = apply(env, phase, "--apply", "--yes", "--quarantine", "0")
        assert code == 3 and "plan-unsafe" in err, err
        assert doc is not None and doc["error"]["code"] == "plan-unsafe"
    assert dump(zk) == before
    assert not env.journal.exists() and not env.backup.exists()


def test_ledger_id_must_match_its_path(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = make_env(zk, zk_hosts, tmp_path)

    def edit(doc: dict[str, Any]) -> None:
        _ledger_action(doc)["ledger_id"] = 2147483876

    _forge(env.plan, edit)
    code, _doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 3 and "plan-unsafe" in err and "does not match its path" in err
    assert not env.journal.exists()


def test_subtree_znode_outside_its_root_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = make_env(zk, zk_hosts, tmp_path)

    def edit(doc: dict[str, Any]) -> None:
        data, st = zk.get("/admin/policies/t/ns")
        _subtree_action(doc)["preconditions"]["znodes"].append(
            {
                "store": "local",
                "path": "/admin/policies/t/ns",
                "version": st.version,
                "mzxid": st.mzxid,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )

    _forge(env.plan, edit)
    code, _doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 3 and "plan-unsafe" in err


def test_ledger_referenced_by_another_managed_ledger_is_never_deleted(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """A self-consistent forged action for ledger 10 (listed by topic-a) that names another, absent owner."""
    env = make_env(zk, zk_hosts, tmp_path)
    path = ledger_path(10)

    def edit(doc: dict[str, Any]) -> None:
        a = _ledger_action(doc)
        data, st = zk.get(path)
        a.update(id="ledger-10", ledger_id=10, path=path, owner="t/ns/persistent/elsewhere")
        a["preconditions"] = {
            "znodes": [
                {
                    "store": "local",
                    "path": path,
                    "version": st.version,
                    "mzxid": st.mzxid,
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            ],
            "custom_metadata": {k: v.decode() for k, v in decode_ledger_metadata(data, path).custom_metadata},
            "references": [
                {
                    "role": "managed-ledger",
                    "store": "local",
                    "exists": False,
                    "version": -1,
                    "mzxid": 0,
                    "sha256": None,
                    "path": "/managed-ledgers/t/ns/persistent/elsewhere",
                }
            ],
        }
        doc["actions"] = [a]

    _forge(env.plan, edit)
    before = dump(zk)
    code, doc, err = apply(env, "mark", "--apply", "--yes")  # the ledger rule refuses it at mark already
    assert code == 1, err
    assert doc is not None
    (out,) = doc["actions"]
    assert out["outcome"] == "skipped" and f"referenced by {ML_A_PATH}" in out["reason"]
    assert dump(zk) == before


# --- the target -------------------------------------------------------------------------------------------


def test_wrong_chroot_is_refused_before_journaling(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = make_env(zk, zk_hosts, tmp_path)
    typo = zk_hosts + "-typo"
    for phase in ("mark", "delete"):
        code, _out, err = cli(
            "apply", str(env.plan), "--zookeeper", typo, "--phase", phase, "--apply", "--yes", "--quarantine", "0"
        )
        assert code == 3, err
        # mark: the missing chroot; delete: refused even earlier (nothing was marked anywhere)
        assert ("target-chroot-missing" in err) if phase == "mark" else ("backup manifest" in err), err
    assert not env.journal.exists()
    # and the plan is not used up: the right target still applies everything
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, doc, _err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0 and doc is not None and set(doc["counts"]) == {"committed"}


def test_another_cluster_is_refused_before_journaling(
    zk: KazooClient, zk_server: Any, zk_hosts: str, tmp_path: Path
) -> None:
    env = make_env(zk, zk_hosts, tmp_path)
    other = zk_hosts + "-other"
    c = KazooClient(hosts=zk_server.hosts)
    c.start(timeout=30)
    try:
        chroot = "/" + other.split("/", 1)[1]
        c.create(chroot + "/ledgers/INSTANCEID", b"another-instance", makepath=True)
        c.create(chroot + "/admin/clusters/test", b"{}", makepath=True)
    finally:
        c.stop()
        c.close()
    code, _out, err = cli("apply", str(env.plan), "--zookeeper", other, "--phase", "mark", "--apply", "--yes")
    assert code == 3 and "target-mismatch" in err and "another-instance" in err
    assert not env.journal.exists()


# --- restore one plan of a shared backup directory ----------------------------------------------------------


def test_restore_of_a_shared_backup_dir_restores_one_plan(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    s = build_cluster(zk)
    snap = write_snapshot(zk, tmp_path / "snap")
    all_findings = findings_for(s)
    shared = tmp_path / "shared.backup"
    plans = {}
    for name, keep in (("a", "/managed-ledgers/old/ns"), ("b", "/loadbalance/bundle-data/old/ns")):
        fs = [f for f in all_findings if f.detection == "znode-leak" and f.path == keep]
        audit = write_audit(tmp_path / f"audit-{name}", snap, fs)
        plan = tmp_path / f"plan-{name}.json"
        assert cli("plan", str(audit), "--out", str(plan))[0] == 0
        plans[name] = plan
        for phase in ("mark", "delete"):
            code, _o, err = cli(
                "apply",
                str(plan),
                "--zookeeper",
                zk_hosts,
                "--phase",
                phase,
                "--apply",
                "--yes",
                "--quarantine",
                "0",
                "--backup-dir",
                str(shared),
            )
            assert code == 0, err
        assert zk.exists(keep) is None
    code, _o, err = cli("restore", str(shared), "--zookeeper", zk_hosts, "--apply", "--yes")
    assert code == 3 and "restore-ambiguous" in err
    code, _o, err = cli("restore", str(shared), "--zookeeper", zk_hosts, "--plan", str(plans["a"]), "--apply", "--yes")
    assert code == 0, err
    assert zk.exists("/managed-ledgers/old/ns/persistent/t1") is not None
    assert zk.exists("/loadbalance/bundle-data/old/ns") is None


# --- empty plans ---------------------------------------------------------------------------------------------


def test_empty_plan_is_a_success_at_every_step(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    _tree(zk, {})
    snap = write_snapshot(zk, tmp_path / "snap")
    audit = write_audit(tmp_path / "audit", snap, [])
    plan = tmp_path / "plan.json"
    code, _o, err = cli("plan", str(audit), "--out", str(plan))
    assert code == 0 and "Nothing to do" in err and plan.exists()
    env = Env(zk, zk_hosts, Scenario(), plan, tmp_path)
    for phase in ("mark", "delete"):
        code, doc, err = apply(env, phase, "--apply", "--yes", "--quarantine", "0")
        assert code == 0 and "nothing to do" in err and doc is not None and doc["counts"] == {}
    assert env.journal.exists() and (env.backup / "manifest.json").exists()
    code, _o, err = cli("restore", str(env.backup), "--zookeeper", zk_hosts, "--apply", "--yes")
    assert code == 0 and "nothing to do" in err
