"""Forged plans for apply's rule tests (test_apply_rules.py, test_apply_new_rules.py, test_apply_pulsar_own.py).

A forged plan is the (empty) plan made from a real tree's snapshot, with hand-made actions put in and its checksum
recomputed: each action self-consistent (every znode reference matching the live tree) so that apply refuses it
for exactly the one rule the test breaks.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo, encode_managed_ledger_info
from pulsar_ops.formats.policies import encode_namespace_policies
from pulsar_ops.repair.actions import (
    KIND_DELETE_LEDGER,
    KIND_DELETE_SUBSCRIPTION,
    KIND_DELETE_SUBTREE,
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
from tests.unit.repair.encoders import ledger_md, ml_info
from tests.zk.repair_cluster import INSTANCE_ID, Scenario, custom_ml, dump, write_audit, write_snapshot
from tests.zk.test_apply import Env, apply, cli

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


def _ref(zk: KazooClient, path: str, store: str = "local") -> ZnodeRef:
    data, st = zk.get(path)
    return ZnodeRef(store, path, st.version, st.mzxid, hashlib.sha256(data).hexdigest())


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


OWNED = custom_ml("t/ns/persistent/gone")  # a ledger's custom metadata naming a topic that no longer exists


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
    return _topic_action(
        "trim-forged",
        KIND_TRIM_UNLOADED,
        "expired-retention-unloaded",
        Precondition(
            znodes=(_ref(zk, ML_PATH), *(_ref(zk, ledger_path(i)) for i in remove)),
            references=(rules_cursor_ref(zk),),
        ),
        bytes=100,
        rewrite=Rewrite(ML_PATH, TOPIC, tuple(RemovedLedger(i, 10, 100) for i in remove)),
    )


def _topic_action(id: str, kind: str, detection: str, preconditions: Precondition, **fields: Any) -> Action:
    """An action of ``kind`` on topic tp's managed ledger (a ``detection`` finding), owned by tp."""
    return Action(
        id=id,
        kind=kind,
        store="local",
        path=ML_PATH,
        finding=FindingRef("forged-" + id.removesuffix("-forged"), detection),
        preconditions=preconditions,
        time_ms=0,
        owner=TOPIC,
        **fields,
    )


def rules_cursor_ref(zk: KazooClient) -> Any:
    from pulsar_ops.repair.actions import ROLE_CURSOR, Reference

    return Reference(ROLE_CURSOR, _ref(zk, ML_PATH + "/sub"))


def _now() -> int:
    return int(time.time() * 1000)


def _subtree_action(
    zk: KazooClient, path: str, leak: str, *, id: str = "subtree-forged", store: str = "local"
) -> Action:
    """A delete-subtree of the ``leak`` kind at ``path`` (a znode-leak finding), its root's reference current."""
    return Action(
        id=id,
        kind=KIND_DELETE_SUBTREE,
        store=store,
        path=path,
        finding=FindingRef("forged-leak", "znode-leak"),
        preconditions=Precondition(znodes=(_ref(zk, path, store),)),
        bytes=0,
        time_ms=0,
        leak=leak,
    )


def _subscription_action(zk: KazooClient, ml_path: str, topic: str, sub: str) -> Action:
    """A delete-subscription of ``sub`` on ``topic`` (through the broker), its cursor znode's reference current."""
    return Action(
        id="subscription-forged",
        kind=KIND_DELETE_SUBSCRIPTION,
        store="local",
        path=f"{ml_path}/{sub}",
        finding=FindingRef("forged-sub", "inactive-subscription"),
        preconditions=Precondition(znodes=(_ref(zk, f"{ml_path}/{sub}"),)),
        bytes=0,
        time_ms=0,
        owner=topic,
        loads_topics=True,
        admin=AdminCall(topic=topic, subscription=sub),
    )
