"""Apply decides from the live tree with the planner's own rules (issue 29), against the embedded real ZooKeeper.

Every test forges a self-consistent plan (checksum recomputed, every znode reference matching the live tree, the
static safety rules satisfied) that breaks exactly one eligibility rule of :mod:`pulsar_ops.repair.rules`, and
shows ``apply`` refusing it before any write: the full dump of the tree is the same before and after.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo, encode_managed_ledger_info
from pulsar_ops.formats.policies import encode_namespace_policies
from pulsar_ops.repair import executor, planner, rules
from pulsar_ops.repair.actions import (
    KIND_DELETE_LEDGER,
    KIND_DELETE_SUBSCRIPTION,
    KIND_DELETE_SUBTREE,
    KIND_DROP_MISSING_LEDGER,
    KIND_LOAD_TOPIC,
    KIND_TRIM_UNLOADED,
    Action,
    AdminCall,
    FindingRef,
    Precondition,
    RemovedLedger,
    Rewrite,
    ZnodeRef,
)
from pulsar_ops.repair.plan_file import compute_checksum
from tests.unit.repair.encoders import ledger_md, ml_info, schema_locator
from tests.zk.repair_cluster import (
    INSTANCE_ID,
    TEST_AUDIT_PARAMS,
    Scenario,
    custom_ml,
    dump,
    walk,
    write_audit,
    write_snapshot,
)
from tests.zk.test_apply import Env, apply, cli

pytestmark = pytest.mark.zk

DAY = 86_400_000
HOUR = 3_600_000
BOUNDS = ["0x00000000", "0xffffffff"]
ML = "t/ns/persistent/tp"
ML_PATH = f"/managed-ledgers/{ML}"
TOPIC = "persistent://t/ns/tp"
WATERMARK = 1000  # topic-a lists it: the ledgers below it may be orphans


def _policies(rt: int | None = None, rs: int | None = None) -> bytes:
    return encode_namespace_policies(boundaries=BOUNDS, retention_time_minutes=rt, retention_size_mb=rs)


def _base() -> dict[str, bytes]:
    return {
        "/admin/clusters/test": b"{}",
        "/ledgers/INSTANCEID": INSTANCE_ID.encode(),
        "/admin/policies/t": b'{"allowed_clusters": ["test"]}',
        "/admin/policies/t/ns": _policies(),
        "/managed-ledgers/t/ns/persistent/topic-a": ml_info([10, WATERMARK]),
        ledger_path(10): ledger_md(custom_ml("t/ns/persistent/topic-a")),
        ledger_path(WATERMARK): ledger_md(custom_ml("t/ns/persistent/topic-a")),
    }


def _env(zk: KazooClient, hosts: str, tmp: Path, nodes: dict[str, bytes]) -> Env:
    """The tree (base + ``nodes``), its snapshot, an audit without findings and the (empty) plan made from it:
    the shell the forged actions go into (its target is the live cluster's)."""
    for path, data in {**_base(), **nodes}.items():
        zk.create(path, data, makepath=True)
    snap = write_snapshot(zk, tmp / "snap")
    audit = write_audit(tmp / "audit", snap, [])
    plan = tmp / "plan.json"
    code, _out, err = cli("plan", str(audit), "--out", str(plan), "--json")
    assert code == 0, err
    return Env(zk, hosts, Scenario(), plan, tmp)


def _forge(env: Env, actions: Sequence[Action], **rule_params: int) -> None:
    """Put ``actions`` into the plan (and change the recorded rule parameters), then recompute the checksum."""
    doc = json.loads(env.plan.read_text())
    doc["actions"] = [a.to_json() for a in actions]
    doc["params"]["rules"] = {**doc["params"]["rules"], **rule_params}
    doc["checksum"] = compute_checksum(doc)
    env.plan.write_text(json.dumps(doc))


def _ref(zk: KazooClient, path: str) -> ZnodeRef:
    data, st = zk.get(path)
    return ZnodeRef("local", path, st.version, st.mzxid, hashlib.sha256(data).hexdigest())


def _refused(env: Env, words: str, phase: str = "mark") -> None:
    """``apply --phase PHASE`` skips the one action with a reason holding ``words`` and changes nothing."""
    before = dump(env.zk)
    extra = ("--quarantine", "0") if phase == "delete" else ()
    code, doc, err = apply(env, phase, "--apply", "--yes", *extra)
    assert code == 1, err
    assert doc is not None
    (out,) = doc["actions"]
    assert out["outcome"] == "skipped", out
    assert words in out["reason"], out["reason"]
    assert dump(env.zk) == before


# --- delete-ledger-metadata ----------------------------------------------------------------------------------


def _ledger_action(zk: KazooClient, lid: int, plan_custom: dict[str, str] | None = None) -> Action:
    """A well-formed ledger action for ``lid`` whose recorded custom metadata is ``plan_custom`` (default: the
    ledger's own, so the plan is self-consistent)."""
    from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata

    path = ledger_path(lid)
    own = {k: v.decode() for k, v in decode_ledger_metadata(zk.get(path)[0], path).custom_metadata}
    custom = own if plan_custom is None else plan_custom
    return Action(
        id=f"ledger-{lid}",
        kind=KIND_DELETE_LEDGER,
        store="local",
        path=path,
        ledger_id=lid,
        finding=FindingRef(f"forged-{lid}", "orphan-ledger"),
        preconditions=Precondition(znodes=(_ref(zk, path),), custom_metadata=tuple(sorted(custom.items()))),
        bytes=1000,
        time_ms=0,
        ledger_kind="data",
        owner="t/ns/persistent/gone",
    )


OWNED = custom_ml("t/ns/persistent/gone")


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


def _topic(now: int, mark_delete: tuple[int, int] | None, policies: bytes, last_entries: int = 5) -> dict[str, bytes]:
    """Topic tp: ledgers 100 and 101 closed 10 and 9 days ago (10 entries each), 102 the current ledger (its
    BookKeeper metadata: ``last_entries`` entries, created 8 days ago), one cursor at ``mark_delete``."""
    ledgers = (
        LedgerInfo(100, 10, 100, now - 10 * DAY),
        LedgerInfo(101, 10, 100, now - 9 * DAY),
        LedgerInfo(102, None, None, None),
    )
    cursor = ManagedCursorInfo(cursors_ledger_id=-1, mark_delete=mark_delete, last_active_ms=now - 30 * DAY)
    nodes = {
        "/admin/policies/t/ns": policies,
        ML_PATH: encode_managed_ledger_info(ManagedLedgerInfo(ledgers=ledgers)),
        ML_PATH + "/sub": encode_cursor_info(cursor),
    }
    for lid in (100, 101):
        nodes[ledger_path(lid)] = ledger_md(custom_ml(ML), length=100, ctime_ms=now - 11 * DAY)
    nodes[ledger_path(102)] = _open_ledger_md(last_entries, now - 8 * DAY)
    return nodes


def _open_ledger_md(entries: int, ctime: int) -> bytes:
    from pulsar_ops.formats.ledger_metadata import LedgerMetadata, encode_ledger_metadata

    md = LedgerMetadata(
        ledger_id=None, format_version=3, ensemble_size=1, write_quorum=1, ack_quorum=1, state="CLOSED",
        length=50, last_entry_id=entries - 1, ensembles=((0, ("bk1:3181",)),), digest_type="CRC32C",
        password=b"", ctime_ms=ctime, custom_metadata=tuple((k, v.encode()) for k, v in custom_ml(ML).items()),
        ctoken=None,
    )  # fmt: skip
    return encode_ledger_metadata(md, 3)


def _trim_action(zk: KazooClient, remove: Sequence[int]) -> Action:
    """A self-consistent trim-unloaded of tp removing ``remove`` (and deleting their metadata)."""
    return Action(
        id="trim-forged",
        kind=KIND_TRIM_UNLOADED,
        store="local",
        path=ML_PATH,
        finding=FindingRef("forged-trim", "expired-retention-unloaded"),
        preconditions=Precondition(
            znodes=(_ref(zk, ML_PATH), *(_ref(zk, ledger_path(i)) for i in remove)),
            references=(rules_cursor_ref(zk),),
        ),
        bytes=100,
        time_ms=0,
        owner=TOPIC,
        rewrite=Rewrite(ML_PATH, TOPIC, tuple(RemovedLedger(i, 10, 100) for i in remove)),
    )


def rules_cursor_ref(zk: KazooClient) -> Any:
    from pulsar_ops.repair.actions import ROLE_CURSOR, Reference

    return Reference(ROLE_CURSOR, _ref(zk, ML_PATH + "/sub"))


def _now() -> int:
    return int(time.time() * 1000)


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
    return Action(
        id="load-forged",
        kind=KIND_LOAD_TOPIC,
        store="local",
        path=ML_PATH,
        finding=FindingRef("forged-load", "expired-retention-unloaded"),
        preconditions=Precondition(znodes=(_ref(zk, ML_PATH),)),
        bytes=100,
        time_ms=0,
        owner=TOPIC,
        loads_topics=True,
        admin=AdminCall(topic=TOPIC, expect_trimmed=tuple(expect)),
    )


def test_a_load_of_a_topic_inside_infinite_retention_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    env = _env(zk, zk_hosts, tmp_path, _topic(_now(), (101, 9), _policies(-1, -1)))
    _forge(env, [_load_action(zk, [100])])
    _refused(env, "nothing is past retention now")


# --- drop-missing-ledger -------------------------------------------------------------------------------------


def _drop_action(zk: KazooClient, drop: Sequence[int], absent: Sequence[str]) -> Action:
    return Action(
        id="drop-forged",
        kind=KIND_DROP_MISSING_LEDGER,
        store="local",
        path=ML_PATH,
        finding=FindingRef("forged-drop", "dangling-ledger"),
        preconditions=Precondition(znodes=(_ref(zk, ML_PATH),), absent=tuple(absent)),
        bytes=0,
        time_ms=0,
        owner=TOPIC,
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


# --- delete-subscription -------------------------------------------------------------------------------------


def test_deleting_an_active_subscription_is_refused(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> None:
    now = _now()
    cursor = encode_cursor_info(ManagedCursorInfo(cursors_ledger_id=-1, mark_delete=(10, 0), last_active_ms=now - HOUR))
    env = _env(zk, zk_hosts, tmp_path, {ML_PATH: ml_info([10]), ML_PATH + "/active": cursor})
    a = Action(
        id="subscription-forged",
        kind=KIND_DELETE_SUBSCRIPTION,
        store="local",
        path=ML_PATH + "/active",
        finding=FindingRef("forged-sub", "inactive-subscription"),
        preconditions=Precondition(znodes=(_ref(zk, ML_PATH + "/active"),)),
        bytes=0,
        time_ms=0,
        owner=TOPIC,
        loads_topics=True,
        admin=AdminCall(topic=TOPIC, subscription="active"),
    )
    _forge(env, [a], inactive_after_ms=7 * DAY)
    _refused(env, "within inactive-after")


# --- delete-subtree: a live non-persistent partitioned topic owns its schema ---------------------------------

NP_SCHEMA = "/schemas/t/ns/np"
NP_PARTITIONED = "/admin/partitioned-topics/t/ns/non-persistent/np"


def test_the_schema_of_a_live_non_persistent_partitioned_topic_is_never_deleted(
    zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    env = _env(zk, zk_hosts, tmp_path, {NP_SCHEMA: schema_locator([7]), NP_PARTITIONED: b'{"partitions":2}'})
    a = Action(
        id="subtree-forged",
        kind=KIND_DELETE_SUBTREE,
        store="local",
        path=NP_SCHEMA,
        finding=FindingRef("forged-leak", "znode-leak"),
        preconditions=Precondition(znodes=(_ref(zk, NP_SCHEMA),)),
        bytes=0,
        time_ms=0,
        leak="schema",
    )
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
