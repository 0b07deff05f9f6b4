"""``delete-subscription``: a broker deletes an idle subscription (opt-in ``inactive-subscription`` findings; admin
REST API, ``force=false``: a broker answers 412 while consumers are connected).

Rule (:func:`pulsar_ops.repair.rules.subscription_rule`): a user cursor (never one Pulsar creates for itself) of a
topic that is not one of Pulsar's own, idle for longer than inactive-after by its ``lastActive`` (else its
znode's mtime). The action backs up the cursor znode and its cursor ledger's metadata (the broker deletes both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pulsar_ops.findings import Finding
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.repair import rules as R
from pulsar_ops.repair.actions import KIND_DELETE_SUBSCRIPTION, Action, AdminCall, Precondition, ZnodeRef
from pulsar_ops.repair.facts import CursorFact, Facts, SnapshotFacts
from pulsar_ops.repair.kind import Called, Kind, Skip, broker_shape, checked, hashed_id

if TYPE_CHECKING:
    from pulsar_ops.repair.admin_writer import AdminApi
    from pulsar_ops.repair.zk_writer import ZkSession


def trimmable_after_delete(c: CursorFact, facts: SnapshotFacts) -> tuple[int, bool]:
    """(bytes that become trimmable, whether it is the slowest durable cursor) when ``c`` goes: the ledgers from
    its mark-delete ledger up to the next slowest cursor's (or to the current ledger when it is the only one),
    by the snapshot's ledger list. Retention may keep them longer; the broker's trim decides."""
    others = [
        o.mark_delete
        for o in facts.cursor_facts.values()
        if o.ml_path == c.ml_path and o.znode.path != c.znode.path and o.mark_delete is not None
    ]
    if c.mark_delete is None:
        return 0, False
    listed = sorted((lid, size or 0) for (ml, lid), (_e, size) in facts.list_entries.items() if ml == c.ml_path)
    if any(o < c.mark_delete for o in others):
        return 0, False
    upto = min((o[0] for o in others), default=listed[-1][0] if listed else c.mark_delete[0])
    return sum(size for lid, size in listed if c.mark_delete[0] <= lid < upto), True


class DeleteSubscription(Kind):
    name = KIND_DELETE_SUBSCRIPTION
    via_broker = True

    def build(self, f: Finding, facts: SnapshotFacts, view: Facts) -> Action:
        if not f.path or not f.topic or f.subscription is None:
            raise Skip("malformed-finding", "inactive-subscription finding without path, topic or subscription")
        c = facts.cursor_facts.get(f.path)
        if c is None or c.znode.sha256 is None:
            raise Skip("missing-in-snapshot", f"cursor {f.path} is not in the snapshot's cursors/znodes tables")
        if c.subscription != f.subscription:
            raise Skip("path-mismatch", f"{f.path} is subscription {c.subscription!r}, not {f.subscription!r}")
        znodes = [c.znode]
        ledger = facts.ledgers.get(c.cursors_ledger_id) if c.cursors_ledger_id >= 0 else None
        if ledger is not None:  # the broker deletes the cursor ledger with the cursor: back it up too
            znodes.append(ZnodeRef("local", ledger.path, ledger.version, ledger.mzxid, ledger.sha256))
        trimmable, slowest = trimmable_after_delete(c, facts)
        a = self.action(
            f,
            hashed_id("subscription", "local", f.path),
            f.path,
            preconditions=Precondition(znodes=tuple(znodes)),
            bytes=trimmable,
            time_ms=int(f.evidence.get("last_active_ms") or 0),
            owner=f.topic,
            loads_topics=True,
            admin=AdminCall(topic=f.topic, subscription=f.subscription),
            impact={
                "backlog_bytes": int(f.evidence.get("backlog_bytes") or 0),
                "slowest_cursor": slowest,
                "trimmable_bytes": trimmable,
                "note": "the bytes become trimmable (retention permitting) because this was the slowest cursor"
                if slowest
                else "another cursor is slower: deleting this one frees nothing until that one moves",
            },
        )
        return checked(self, a, view)

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        """A user cursor znode of its topic; it backs up only that znode and its cursor ledger's metadata."""
        call = a.admin
        if call is None or call.subscription is None:
            return "a delete-subscription action names its topic and subscription"
        problem, target = broker_shape(a)
        if problem is not None or target is None:
            return problem
        enc = target[1]
        if enc is None or names.decode(enc, a.path) != call.subscription:
            return f"{a.path} is not the cursor znode of {call.subscription!r} on {call.topic}"
        system = R.system_subscription(call.subscription)  # the rule's own test of the name, statically too
        if system is not None:
            return system
        if not paths or paths[0] != a.path or len(paths) > 2:
            return "a delete-subscription action backs up its cursor znode (first) and at most its cursor ledger"
        if len(paths) == 2 and ledger_id_from_path(paths[1], ledgers_root) is None:
            return f"{paths[1]} is not a ledger metadata znode under {ledgers_root}"
        return None

    def rule(self, a: Action, facts: Facts) -> str | None:
        assert a.admin is not None and a.admin.subscription is not None
        c = facts.cursor(a.path, a.admin.subscription)
        if c.problem is not None:
            return c.problem
        return R.subscription_rule(
            a.admin.subscription,
            c.last_active_ms,
            c.mtime_ms,
            inactive_after_ms=facts.params.inactive_after_ms,
            now_ms=facts.now_ms,
            cursor_path=a.path,
        )

    def done(self, session: ZkSession, a: Action, rewritten_sha: str | None) -> bool:
        """The broker deleted the cursor znode (its ledger goes asynchronously)."""
        return not session.read(a.store, [a.path])[0].exists

    def call_text(self, a: Action) -> str:
        assert a.admin is not None
        return f"DELETE subscription {a.admin.subscription!r} of {a.admin.topic}"

    def call(self, session: ZkSession, a: Action, admin: AdminApi, done: Callable[[], bool]) -> Called:
        assert a.admin is not None and a.admin.subscription is not None
        result = admin.delete_subscription(a.admin.topic, a.admin.subscription)
        gone = done()
        if result.ok and gone:
            return Called("committed", f"broker answered {result.status}; cursor znode gone", {"status": result.status})
        if result.ok:
            reason = f"the broker answered {result.status} but {a.path} still exists; not counted as done"
            return Called("failed", reason, {"reason": reason, "status": result.status})
        detail = result.describe()
        if result.status == 412:
            reason = f"consumers are connected: {detail}; the subscription is in use, not deleted"
            return Called("skipped", reason, {"reason": reason, "status": 412, "final": True})
        if result.status == 404 and gone:
            reason = f"the broker says {detail} and the cursor znode is gone: someone else deleted it"
            return Called("skipped", reason, {"reason": reason, "status": 404, "final": True})
        reason = f"{self.call_text(a)}: {detail}" + (
            "" if result.status is not None else "; outcome unknown, re-run to re-check"
        )
        return Called("failed", reason, {"reason": reason, "status": result.status})

    def dry_run(self, a: Action) -> tuple[str, str]:
        assert a.admin is not None
        return "would-call", (
            f"re-verify {a.path} (version, bytes, lastActive), then ask the broker to delete subscription "
            f"{a.admin.subscription!r} of {a.admin.topic} (DELETE, force=false; 412 if consumers connect)"
        )

    def freed(self, a: Action, ledgers_root: str) -> list[int]:
        """The broker deletes the cursor ledger with the subscription."""
        return [lid for z in a.preconditions.znodes if (lid := ledger_id_from_path(z.path, ledgers_root)) is not None]

    def impact_note(self, a: Action, per_ledger: dict[str, Any], ledgers_root: str) -> dict[str, Any]:
        return {
            "note": "the broker deletes the cursor ledger with the subscription (its bookie bytes below); "
            "the topic ledgers that become trimmable go at the broker's next trim, retention permitting, "
            "and are not in the GC prediction",
            "ledgers": {str(lid): per_ledger.get(str(lid), {}) for lid in self.freed(a, ledgers_root)},
        }


KIND = DeleteSubscription()
