"""Apply decides from the live tree with the planner's own rules (issue 29), against the embedded real ZooKeeper.

Every test forges a self-consistent plan (checksum recomputed, every znode reference matching the live tree, the
static safety rules satisfied) that breaks exactly one eligibility rule of :mod:`pulsar_ops.repair.rules`, and
shows ``apply`` refusing it before any write: the full dump of the tree is the same before and after.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair import executor, planner, rules
from pulsar_ops.repair.actions import (
    KIND_DROP_MISSING_LEDGER,
    KIND_LOAD_TOPIC,
    Action,
    AdminCall,
    Precondition,
    RemovedLedger,
    Rewrite,
)
from pulsar_ops.repair.plan_file import compute_checksum
from tests.unit.repair.encoders import ledger_md, ml_info, schema_locator
from tests.zk.forged_plans import (
    DAY,
    HOUR,
    ML,
    ML_PATH,
    OWNED,
    TOPIC,
    _base,
    _env,
    _forge,
    _ledger_action,
    _now,
    _policies,
    _ref,
    _refused,
    _subscription_action,
    _subtree_action,
    _topic,
    _topic_action,
    _trim_action,
)
from tests.zk.repair_cluster import (
    TEST_AUDIT_PARAMS,
    custom_ml,
    dump,
    walk,
    write_audit,
    write_snapshot,
)
from tests.zk.test_apply import apply, cli

pytestmark = pytest.mark.zk


# --- delete-ledger-metadata ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lid", "custom", "rule_params", "words"),
    [
        (30, {"application": "other", "component": "managed-ledger"}, {}, "is unowned by its own custom metadata"),
        (31, {"application": "pulsar", "component": "weird"}, {}, "is pulsar-unknown by its own custom metadata"),
        (32, OWNED, {"min_age_ms": HOUR}, "less than the min-age 3600 s"),  # its znode was created just now
        (2000, OWNED, {}, "not below the highest ledger id referenced in the tree (1000)"),  # may be in flight
    ],
    ids=["unowned", "pulsar-unknown", "one-hour-min-age", "above-watermark"],
)
def test_a_forged_ledger_delete_that_breaks_the_ledger_rule_is_refused(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, lid: int, custom: dict[str, str], rule_params: dict[str, int],
    words: str,
) -> None:  # fmt: skip
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(lid): ledger_md(custom)})
    _forge(env, [_ledger_action(zk, lid)], **rule_params)
    _refused(env, words)


def test_a_ledger_delete_that_follows_the_rule_is_deleted(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """The control of the cases above: the same forged shape, inside every rule, goes through both phases."""
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(33): ledger_md(OWNED)})
    _forge(env, [_ledger_action(zk, 33)])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"committed": 1}
    assert zk.exists(ledger_path(33)) is None


def test_a_plan_without_the_ledgers_custom_metadata_gets_no_pass(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(34): ledger_md(OWNED)})
    _forge(env, [_ledger_action(zk, 34, plan_custom={})])
    _refused(env, "the plan records no custom metadata")


def test_a_plan_that_records_no_min_age_gets_no_pass(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(35): ledger_md(OWNED)})
    doc = json.loads(env.plan.read_text())
    doc["actions"] = [_ledger_action(zk, 35).to_json()]
    del doc["params"]["rules"]  # an older plan
    doc["checksum"] = compute_checksum(doc)
    env.plan.write_text(json.dumps(doc))
    _refused(env, "the plan records no min-age")


# --- trim-unloaded and load-topic ----------------------------------------------------------------------------


def test_a_trim_of_the_first_trim_set_is_applied(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """The control: retention 1 hour, the cursor past 101: the first trim removes 100 and 101 (not the current
    ledger, which a load re-stamps)."""
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (101, 9), _policies(60, -1)))
    _forge(env, [_trim_action(zk, [100, 101])])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, _doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    assert zk.exists(ledger_path(100)) is None and zk.exists(ledger_path(101)) is None
    assert zk.exists(ledger_path(102)) is not None


def test_a_trim_of_a_topic_whose_bundle_is_owned_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """The control's trim, differing only in "the topic is not loaded": a broker owns the bundle holding it."""
    owner = {"/namespace/t/ns/0x00000000_0xffffffff": b'{"nativeUrl":"pulsar://b1:6650"}'}
    env = _env(zk, zk_hosts, tmp_path, {**_topic(_now(), (101, 9), _policies(60, -1)), **owner})
    _forge(env, [_trim_action(zk, [100, 101])])
    _refused(env, "is loaded (its bundle 0x00000000_0xffffffff is owned) under /namespace/t/ns")
    _refused(env, "is loaded (its bundle 0x00000000_0xffffffff is owned) under /namespace/t/ns", phase="delete")


def test_a_trim_inside_infinite_retention_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (101, 9), _policies(-1, -1)))
    _forge(env, [_trim_action(zk, [100, 101])])
    _refused(env, "ledger 100 is not in the first-trim set [] re-computed now (retention -1 min / -1 MB")


def test_a_trim_of_the_current_ledger_and_a_cursors_backlog_is_refused(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """The hostile case that left the managed-ledger znode rewritten to zero bytes: every ledger, the current
    one included, while the cursor still has 100's last six entries to read."""
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (100, 3), _policies(60, -1)))
    _forge(env, [_trim_action(zk, [100, 101, 102])])
    _refused(env, "ledger 100 is not in the first-trim set []")
    assert zk.get(ML_PATH)[0]  # never zero bytes


def test_a_trim_past_the_slowest_cursor_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (101, 4), _policies(60, -1)))
    _forge(env, [_trim_action(zk, [100, 101])])  # 101 is only half consumed
    _refused(env, "ledger 101 is not in the first-trim set [100]")


def test_a_trim_that_empties_the_list_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """Retention 0 and every ledger consumed: the rule's first trim takes all three, but a rewrite never leaves
    the list empty (upstream's trim keeps the ledger being written to)."""
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (102, 4), _policies(0, -1)))
    _forge(env, [_trim_action(zk, [100, 101, 102])])
    _refused(env, "would leave the ledger list empty")


def test_the_trim_rule_is_re_derived_at_delete(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """Marked while allowed; retention became infinite during the quarantine: the delete refuses it."""
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (101, 9), _policies(60, -1)))
    _forge(env, [_trim_action(zk, [100, 101])])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    zk.set("/admin/policies/t/ns", _policies(-1, -1))
    _refused(env, "not in the first-trim set []", phase="delete")


def _load_action(zk: KazooClient, expect: Sequence[int]) -> Action:
    return _topic_action(
        "load-forged",
        KIND_LOAD_TOPIC,
        "expired-retention-unloaded",
        Precondition(znodes=(_ref(zk, ML_PATH),)),
        bytes=100,
        loads_topics=True,
        admin=AdminCall(topic=TOPIC, expect_trimmed=tuple(expect)),
    )


def test_a_load_of_a_topic_inside_infinite_retention_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (101, 9), _policies(-1, -1)))
    _forge(env, [_load_action(zk, [100])])
    _refused(env, "nothing is past retention now")


# --- drop-missing-ledger -------------------------------------------------------------------------------------


def _drop_action(zk: KazooClient, drop: Sequence[int], absent: Sequence[str]) -> Action:
    return _topic_action(
        "drop-forged",
        KIND_DROP_MISSING_LEDGER,
        "dangling-ledger",
        Precondition(znodes=(_ref(zk, ML_PATH),), absent=tuple(absent)),
        bytes=0,
        rewrite=Rewrite(ML_PATH, TOPIC, tuple(RemovedLedger(i, 10, 100) for i in drop)),
    )


DROP_TREE = {
    ML_PATH: ml_info([200, 201, 202]),
    ledger_path(200): ledger_md(custom_ml(ML)),
    ledger_path(202): ledger_md(custom_ml(ML)),
}


def test_dropping_a_ledger_that_is_not_missing_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """The plan lists only the hierarchical path as absent; the metadata lives at the flat path."""
    env = _env(zk, zk_hosts, tmp_path, {**DROP_TREE, ledger_path(201, flat=True): ledger_md(custom_ml(ML))})
    _forge(env, [_drop_action(zk, [201], [ledger_path(201)])])
    _refused(env, f"{ledger_path(201, flat=True)} exists: that ledger is not missing")


def test_dropping_a_ledger_that_is_not_listed_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = _env(zk, zk_hosts, tmp_path, DROP_TREE)
    _forge(env, [_drop_action(zk, [203], [ledger_path(203), ledger_path(203, flat=True)])])
    _refused(env, "ledger 203 is not listed now")


def test_dropping_an_offloaded_ledger_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    """201 has no metadata because it was offloaded and its BookKeeper copy deleted on purpose: its data is in
    tiered storage, so its absence is no loss (dangling-ledger never reports it; ``rules.may_dangle``)."""
    from pulsar_ops.formats.managed_ledger import (
        LedgerInfo,
        ManagedLedgerInfo,
        OffloadInfo,
        encode_managed_ledger_info,
    )

    infos = tuple(
        LedgerInfo(i, 10, 100, 1_600_000_000_000, OffloadInfo(True, True, None) if i == 201 else None)
        for i in (200, 201, 202)
    )
    tree = {**DROP_TREE, ML_PATH: encode_managed_ledger_info(ManagedLedgerInfo(ledgers=infos))}
    env = _env(zk, zk_hosts, tmp_path, tree)
    _forge(env, [_drop_action(zk, [201], [ledger_path(201), ledger_path(201, flat=True)])])
    _refused(env, "ledger 201 is offloaded and its BookKeeper copy deleted by design")
    _refused(env, "ledger 201 is offloaded and its BookKeeper copy deleted by design", phase="delete")


def test_dropping_a_ledger_under_the_extensible_load_manager_is_refused(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """201 is really missing and no /namespace znode owns the topic's bundle, but a broker registered by the
    extensible load manager (BrokerLookupData names loadManagerClassName) keeps ownership outside /namespace: the
    topic may be loaded, and its list is the broker's (LiveFacts.loaded, as the planner's snapshot ownership)."""
    elm = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
    reg = json.dumps({"webServiceUrl": "http://b1:8080", "loadManagerClassName": elm}).encode()
    env = _env(zk, zk_hosts, tmp_path, {**DROP_TREE, "/loadbalance/brokers/b1:8080": reg})
    _forge(env, [_drop_action(zk, [201], [ledger_path(201), ledger_path(201, flat=True)])])
    _refused(env, "load manager 'extensible' now: ownership is kept outside /namespace znodes")
    _refused(env, "load manager 'extensible' now: ownership is kept outside /namespace znodes", phase="delete")


def test_the_control_drop_still_applies_under_the_modular_load_manager(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """The same drop with a modular registration (LocalBrokerData, no loadManagerClassName) goes through: the
    refusal above is the load manager's, not a blanket one."""
    reg = b'{"webServiceUrl": "http://b1:8080"}'
    env = _env(zk, zk_hosts, tmp_path, {**DROP_TREE, "/loadbalance/brokers/b1:8080": reg})
    _forge(env, [_drop_action(zk, [201], [ledger_path(201), ledger_path(201, flat=True)])])
    assert apply(env, "mark", "--apply", "--yes")[0] == 0
    code, _doc, err = apply(env, "delete", "--apply", "--yes", "--quarantine", "0")
    assert code == 0, err
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info

    left = decode_managed_ledger_info(zk.get(ML_PATH)[0], ML_PATH).info.ledgers
    assert [li.ledger_id for li in left] == [200, 202]


# --- delete-subscription -------------------------------------------------------------------------------------


def test_deleting_an_active_subscription_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    now = _now()
    cursor = encode_cursor_info(ManagedCursorInfo(cursors_ledger_id=-1, mark_delete=(10, 0), last_active_ms=now - HOUR))
    env = _env(zk, zk_hosts, tmp_path, {ML_PATH: ml_info([10]), ML_PATH + "/active": cursor})
    a = _subscription_action(zk, ML_PATH, TOPIC, "active")
    _forge(env, [a], inactive_after_ms=7 * DAY)
    _refused(env, "within inactive-after")


# --- delete-subtree: a live non-persistent partitioned topic owns its schema ---------------------------------

NP_SCHEMA = "/schemas/t/ns/np"
NP_PARTITIONED = "/admin/partitioned-topics/t/ns/non-persistent/np"


def test_the_schema_of_a_live_non_persistent_partitioned_topic_is_never_deleted(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    env = _env(zk, zk_hosts, tmp_path, {NP_SCHEMA: schema_locator([7]), NP_PARTITIONED: b'{"partitions":2}'})
    a = _subtree_action(zk, NP_SCHEMA, "schema")
    _forge(env, [a])
    words = f"partitioned-topic metadata {NP_PARTITIONED} exists again"
    before = dump(env.zk)
    code, doc, err = apply(env, "mark", "--apply", "--yes")  # mark forecasts it (backed up, nothing changed)
    assert code == 1, err
    assert doc is not None
    (out,) = doc["actions"]
    assert out["outcome"] == "would-skip" and words in out["reason"], out
    assert dump(env.zk) == before
    _refused(env, words, phase="delete")  # and delete re-proves the leak and refuses it


# --- one implementation --------------------------------------------------------------------------------------


def test_the_planner_and_apply_call_the_same_rule_functions() -> None:
    """The planner and apply ask the same kind object (the registry's), whose rule looks its functions up in the
    rules module (no copy); the subtree kind calls safety.prove_leak through the safety module."""
    from pulsar_ops.repair import registry, safety
    from pulsar_ops.repair.kinds import delete_subtree

    for name in ("ledger_delete_rule", "trim_rule", "load_topic_rule", "drop_missing_rule", "subscription_rule"):
        assert callable(getattr(rules, name)), name
    for kind in registry.KINDS.values():
        module = __import__(type(kind).__module__, fromlist=["KIND"])
        assert module.KIND is kind and getattr(module, "R", rules) is rules, kind.name
    assert planner.registry is registry and executor.kind_of is registry.kind_of
    assert delete_subtree.S is safety  # the planner calls safety.prove_leak on the snapshot (test below)


def test_apply_consults_the_rules_module_at_mark(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replacing the rule in :mod:`pulsar_ops.repair.rules` changes what apply decides: there is no second copy."""
    env = _env(zk, zk_hosts, tmp_path, {ledger_path(36): ledger_md(OWNED)})
    _forge(env, [_ledger_action(zk, 36)])
    seen: list[int] = []

    def spy(f: rules.LedgerNow, *, min_age_ms: int | None, now_ms: int) -> str | None:
        seen.append(f.ledger_id)
        return "refused by the spy rule"

    monkeypatch.setattr(rules, "ledger_delete_rule", spy)
    _refused(env, "refused by the spy rule")
    assert seen == [36]


def test_the_planner_consults_the_rule(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner's verdict on an orphan is the rule's: a rule that refuses leaves it not planned."""
    from pulsar_ops.findings import Finding

    for path, data in {**_base(), ledger_path(37): ledger_md(OWNED)}.items():
        zk.create(path, data, makepath=True)
    snap = write_snapshot(zk, tmp_path / "snap")
    finding = Finding(
        detection="orphan-ledger", severity="warning", ledger_id=37, path=ledger_path(37), plannable=True,
        evidence={"kind": "data", "owner": "t/ns/persistent/gone"},
    )  # fmt: skip
    audit = write_audit(tmp_path / "audit", snap, [finding], TEST_AUDIT_PARAMS)
    calls: list[int] = []
    real: Callable[..., str | None] = rules.ledger_delete_rule

    def spy(f: rules.LedgerNow, *, min_age_ms: int | None, now_ms: int) -> str | None:
        calls.append(f.ledger_id)
        return real(f, min_age_ms=min_age_ms, now_ms=now_ms) or "refused by the spy rule"

    monkeypatch.setattr(rules, "ledger_delete_rule", spy)  # the kind's rule looks it up there, as apply does
    out = tmp_path / "plan.json"
    code, _o, err = cli("plan", str(audit), "--out", str(out), "--json")
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["actions"] == [] and calls == [37]
    assert [n["reason_code"] for n in doc["not_planned"]] == ["refused-by-rule"]
    assert set(walk(zk))  # plan never writes


def test_the_planner_decides_a_leak_with_prove_leak_on_the_snapshot(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner's verdict on a leak subtree is apply's rule (:func:`safety.prove_leak`) run on the snapshot:
    the real rule plans the leaked schema; a rule that refuses leaves it not planned with the rule's reason."""
    from pulsar_ops.findings import Finding
    from pulsar_ops.repair import safety

    gone = "/schemas/t/ns/gone"
    for path, data in {**_base(), gone: schema_locator([7])}.items():
        zk.create(path, data, makepath=True)
    snap = write_snapshot(zk, tmp_path / "snap")
    finding = Finding(detection="znode-leak", severity="warning", path=gone, namespace="t/ns", plannable=True)
    audit = write_audit(tmp_path / "audit", snap, [finding], TEST_AUDIT_PARAMS)
    seen: list[tuple[str, list[str]]] = []
    real = safety.prove_leak

    def plan(name: str) -> dict[str, Any]:
        out = tmp_path / name
        code, _o, err = cli("plan", str(audit), "--out", str(out), "--json")
        assert code == 0, err
        doc: dict[str, Any] = json.loads(out.read_text())
        return doc

    def spy(action: Action, subtree: Sequence[safety.SubtreeNode], reader: safety.TreeReader) -> str | None:
        seen.append((action.path, [n.path for n in subtree]))
        assert not reader.exists("config", "/admin/partitioned-topics/t/ns/persistent/gone")
        return real(action, subtree, reader) or "refused by the spy rule"

    assert [a["path"] for a in plan("real.json")["actions"]] == [gone]  # the real rule: a leak
    monkeypatch.setattr(safety, "prove_leak", spy)
    doc = plan("spy.json")
    assert doc["actions"] == [] and seen == [(gone, [gone])]
    (np_,) = doc["not_planned"]
    assert np_["reason_code"] == "contradicted-by-snapshot" and np_["reason"] == "refused by the spy rule"


def test_the_planner_plans_no_delete_of_a_live_non_persistent_topic_s_schema(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    """The real scraper records the non-persistent partitioned topic; a schema-leak finding for its schema (as an
    audit before the fix reported it) is contradicted by the snapshot and never planned."""
    import pyarrow.parquet as pq

    from pulsar_ops.findings import Finding
    from pulsar_ops.scrape.run import ScrapeConfig, scrape

    for path, data in {**_base(), NP_SCHEMA: schema_locator([7]), NP_PARTITIONED: b'{"partitions":2}'}.items():
        zk.create(path, data, makepath=True)
    manifest = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap"))
    parts = sorted((tmp_path / "snap" / "tables" / "partitioned_topics").glob("*.parquet"))
    topics = {t for p in parts for t in pq.read_table(p, columns=["topic"]).column("topic").to_pylist()}
    assert topics == {"non-persistent://t/ns/np"}
    stale = Finding(detection="znode-leak", severity="warning", path=NP_SCHEMA, namespace="t/ns", plannable=True)
    snap = {"snapshot_id": manifest.snapshot_id, "path": str(tmp_path / "snap")}
    audit = write_audit(tmp_path / "audit", snap, [stale])
    out = tmp_path / "plan.json"
    code, _o, err = cli("plan", str(audit), "--out", str(out), "--json")
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["actions"] == []
    (np_,) = doc["not_planned"]
    assert np_["reason_code"] == "contradicted-by-snapshot" and NP_PARTITIONED in np_["reason"]
