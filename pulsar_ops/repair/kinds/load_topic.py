"""``load-topic``: a broker loads an unloaded topic and trims it (``expired-retention-unloaded`` findings with
``plan --include expired-retention-unloaded``; admin REST API).

Rule: the first-trim set re-computed now is not empty and holds every ledger the action predicts
(:func:`pulsar_ops.repair.rules.load_topic_rule`). The plan also requires the topic unloaded in the snapshot; apply
does not re-check ownership: a broker that loads a topic rewrites its managed-ledger znode, so "still at the
scraped version" (the compare-and-set token) is "not loaded since the snapshot", and once a broker owns a bundle
for one load its other topics are still unloaded. Apply reports which predicted ledgers the broker trimmed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pulsar_ops.findings import Finding
from pulsar_ops.repair import rules as R
from pulsar_ops.repair.actions import KIND_LOAD_TOPIC, Action, AdminCall, Precondition
from pulsar_ops.repair.facts import SNAPSHOT_SAYS, Facts, SnapshotFacts
from pulsar_ops.repair.kind import Called, Kind, Skip, broker_shape, checked, freed_bytes, hashed_id, retention_target

if TYPE_CHECKING:
    from pulsar_ops.repair.admin_writer import AdminApi
    from pulsar_ops.repair.zk_writer import ZkSession

LOADED = "let its broker trim"


class LoadTopic(Kind):
    name = KIND_LOAD_TOPIC
    via_broker = True
    paced = True

    def build(self, f: Finding, facts: SnapshotFacts, view: Facts) -> Action:
        ml, znode, removed, _targets = retention_target(f, facts, rewrite=False)
        loaded = "the finding says so" if f.evidence.get("owned") is True else None
        why = f"{f.topic} is loaded ({loaded}): {LOADED}" if loaded else view.loaded(ml.topic, LOADED)
        if why is not None:
            raise Skip("topic-loaded", why)
        a = self.action(
            f,
            hashed_id("load", "local", znode.path),
            znode.path,
            preconditions=Precondition(znodes=(znode,)),
            bytes=freed_bytes(removed, facts),
            time_ms=min(facts.ledgers[r.ledger_id].ctime_ms for r in removed),
            owner=ml.topic,
            loads_topics=True,
            admin=AdminCall(topic=ml.topic, expect_trimmed=tuple(r.ledger_id for r in removed)),
        )
        blocked = view.trim_blocked(a)
        if blocked is not None:
            raise Skip(SNAPSHOT_SAYS, blocked)
        return checked(self, a, view)

    def kept_znodes(self, a: Action) -> int:
        return 1  # its managed-ledger znode is the compare-and-set token; the broker decides what it deletes

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        """A load-topic names the managed-ledger znode of its topic (its compare-and-set token), nothing else."""
        if a.admin is None or a.admin.subscription is not None:
            return "a load-topic action names its topic and no subscription"
        problem, target = broker_shape(a)
        if problem is not None or target is None:
            return problem
        if target[1] is not None or list(paths) != [a.path]:
            return f"a load-topic action checks exactly the managed-ledger znode of {a.admin.topic}"
        return None

    def rule(self, a: Action, facts: Facts) -> str | None:
        assert a.admin is not None
        return R.load_topic_rule(facts.topic(a.path), a.admin.expect_trimmed, facts.now_ms)

    def done(self, session: ZkSession, a: Action, rewritten_sha: str | None) -> bool:
        """The broker loaded the topic: a load always rewrites the managed-ledger znode."""
        node = session.read(a.store, [a.path])[0]
        return node.exists and node.version != a.preconditions.znodes[0].version

    def call_text(self, a: Action) -> str:
        assert a.admin is not None
        return f"POST trim of {a.admin.topic}"

    def call(self, session: ZkSession, a: Action, admin: AdminApi, done: Callable[[], bool]) -> Called:
        """Ask the broker to load the topic and trim it (``trim``; ``stats`` where a broker has no trim endpoint),
        then re-read the managed-ledger znode and report which of the predicted ledgers the broker trimmed."""
        assert a.admin is not None
        call = self.call_text(a)
        result = admin.trim_topic(a.admin.topic)
        # no trim endpoint (an older broker): 405, or a 404 the web server gave rather than the broker's ErrorData
        # ("Topic ... not found"); then only load it
        if result.status == 405 or (result.status == 404 and not result.error_data):
            call = f"GET stats of {a.admin.topic} (this broker has no trim endpoint)"
            result = admin.load_topic(a.admin.topic)
        answer = "no answer" if result.status is None else f"HTTP {result.status}"
        if not result.ok:
            reason = f"{call}: {result.describe()}" + (
                "" if result.status is not None else "; outcome unknown, re-run to re-check"
            )
            if result.status == 404:
                return Called("skipped", reason, {"reason": reason, "status": 404, "final": True})
            return Called("failed", reason, {"reason": reason, "status": result.status})
        from pulsar_ops.repair.live_facts import listed_now  # the live reader (kazoo): only at apply

        entries = listed_now(session, a.path)
        expected = a.admin.expect_trimmed
        trimmed = [i for i in expected if entries is not None and i not in {lid for lid, _ in entries}]
        waiting = [i for i in expected if i not in trimmed]
        reason = f"{call}: {answer}; the broker trimmed {len(trimmed)} of {len(expected)} predicted ledger(s)"
        if waiting:
            reason += f"; still listed: {waiting[:10]} (the broker trims every retentionCheckIntervalInSeconds)"
        return Called("committed", reason, {"status": result.status, "trimmed": trimmed, "still_listed": waiting})

    def dry_run(self, a: Action) -> tuple[str, str]:
        assert a.admin is not None
        return "would-call", (
            f"re-verify {a.path} (version, bytes) and that {a.admin.topic} is unloaded, then ask the broker "
            f"to load and trim it (POST trim), paced by --max-loads-per-minute; predicted: ledger(s) "
            f"{', '.join(str(i) for i in a.admin.expect_trimmed)}"
        )

    def freed(self, a: Action, ledgers_root: str) -> list[int]:
        return list(a.admin.expect_trimmed) if a.admin is not None else []

    def impact_note(self, a: Action, per_ledger: dict[str, Any], ledgers_root: str) -> dict[str, Any]:
        return {
            "note": "a broker loads the topic and trims it: the predicted first trim below; the broker "
            "decides (apply reports what it trimmed)",
            "ledgers": {str(lid): per_ledger.get(str(lid), {}) for lid in self.freed(a, ledgers_root)},
            "metadata_ops": 0,
        }


KIND = LoadTopic()
