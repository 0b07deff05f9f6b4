"""Uncertainty has a blast radius: one undecodable znode of each kind in a 5,000-topic cluster blocks exactly the
findings that depend on its content, names itself in their reason, and is never taken for an absent znode.

The clean cluster is audited first; then a managed-ledger info, a cursor, a schema locator and two ledger znodes
(one unreferenced, one referenced) are overwritten with values no upstream reader accepts, and the audit is run
again on a new snapshot. Every difference between the two audits must be one this file predicts.

5,000 topics (it was 10,000): enough for five plannable data orphans whose topic exists (the test needs three:
one whose info, one whose ledger znode and one whose referenced ledger is made undecodable) and five of every other
orphan kind; like the 10,000-topic snapshot (181,285 rows), it is audited as one partition (sizing.small_snapshot).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.runner import run_audit
from pulsar_ops.findings import Finding
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

pytestmark = [pytest.mark.zk, pytest.mark.spark, pytest.mark.slow]

AHEAD_MS = 25 * 3_600_000
# a compression header naming LZ4 whose payload does not decompress (upstream's reader fails on it too)
BAD_INFO = b"\x47\x78\x00\x00\x00\x04\x08\x01\x10\x40" + b"\x00" * 16
BAD_LEDGER = b"BookieMetadataFormatVersion\t3\n\xff\xff\xff\xff\x0f"  # length prefix past the value
BAD_SCHEMA = b"\x0a\xff\xff\xff\xff\x0f"  # a length-delimited field longer than the value


def _audit(spark: Any, zk_hosts: str, out: Path, now_ms: int) -> dict[tuple[str, Any], Finding]:
    scrape(ScrapeConfig(zookeeper=zk_hosts, out=out / "snap"))
    result = run_audit(out / "snap", out / "audit", AuditParams(now_ms=now_ms), spark=spark)
    return {
        (f.detection, f.ledger_id if f.ledger_id is not None else (f.path, f.topic, f.subscription)): f
        for f in result.findings
    }


def _ml_topic(ml_name: str) -> str:
    from urllib.parse import unquote_plus

    ns, local = ml_name.split("/persistent/")
    return f"persistent://{ns}/{unquote_plus(local)}"


def test_one_undecodable_znode_of_each_kind_blocks_only_what_depends_on_it(
    spark: Any, zk: KazooClient, zk_hosts: str, tmp_path: Path
) -> None:
    now = int(time.time() * 1000) + AHEAD_MS
    seed_cluster(zk, None, SeedOptions(topics=5_000, seed=11, now_ms=now))
    clean = _audit(spark, zk_hosts, tmp_path / "clean", now)
    orphans = {k[1]: f for k, f in clean.items() if k[0] == "orphan-ledger"}
    plannable = [f for f in orphans.values() if f.plannable and f.evidence.get("owner_exists")]

    def pick(kind: str, avoid: set[str]) -> Finding:
        return next(f for f in plannable if f.evidence["kind"] == kind and f.topic not in avoid)

    used: set[str] = set()
    data = pick("data", used)
    used.add(str(data.topic))
    cursor = pick("cursor", used)
    used.add(str(cursor.topic))
    schema = pick("schema", used)
    used.add(str(schema.topic))
    lone = next(f for f in plannable if f.evidence["kind"] == "data" and f.topic not in used)
    used.add(str(lone.topic))
    ml_a = str(data.evidence["owner"])  # its info becomes undecodable
    ml_b = str(cursor.evidence["owner"])  # one of its cursors becomes undecodable
    schema_id = str(schema.evidence["owner"])
    cursors_b = zk.get_children(f"/managed-ledgers/{ml_b}")
    assert cursors_b, "the cursor orphan's topic has cursors"
    bad_cursor = f"/managed-ledgers/{ml_b}/{sorted(cursors_b)[0]}"
    # a referenced ledger of a healthy topic: the first ledger-list entry of another managed ledger
    ref_id = None
    for f in plannable:
        if f.topic in used or f.evidence["kind"] != "data":
            continue
        info = decode_managed_ledger_info(zk.get(f"/managed-ledgers/{f.evidence['owner']}")[0], "ml").info
        if info.ledgers:
            ref_id = info.ledgers[0].ledger_id
            used.add(str(f.topic))
            break
    assert ref_id is not None

    bad = {
        f"/managed-ledgers/{ml_a}": BAD_INFO,
        bad_cursor: BAD_INFO,
        f"/schemas/{schema_id}": BAD_SCHEMA,
        ledger_path(int(lone.ledger_id or 0)): BAD_LEDGER,
        ledger_path(ref_id): BAD_LEDGER,
    }
    for path, value in bad.items():
        zk.set(path, value)
    after = _audit(spark, zk_hosts, tmp_path / "after", now)

    # 1. each undecodable znode is reported once, as existing; no scope became incomplete
    undecodable = {f.path: f for f in after.values() if f.detection == "undecodable-znode"}
    assert set(undecodable) == set(bad)
    assert not [f for f in after.values() if f.detection == "scrape-incomplete"]
    assert undecodable[ledger_path(ref_id)].evidence["referenced"] is True
    assert undecodable[ledger_path(int(lone.ledger_id or 0))].evidence["referenced"] is False
    # 2. nothing is called missing because it could not be decoded
    assert {k for k in after if k[0] == "dangling-ledger"} == {k for k in clean if k[0] == "dangling-ledger"}

    # 3. exactly the dependent orphans are blocked, each naming its znode; every other orphan is unchanged
    topic_a, topic_b = _ml_topic(ml_a), _ml_topic(ml_b)

    def blocker(f: Finding) -> str | None:
        kind, owner = f.evidence["kind"], f.evidence.get("owner")
        if kind in ("data", "cursor", "bucket") and owner == ml_a:
            return f"/managed-ledgers/{ml_a}"
        if kind in ("data", "cursor", "bucket", "compacted") and f.topic == topic_a:
            return f"/managed-ledgers/{ml_a}"
        if kind in ("data", "cursor", "bucket", "compacted") and f.topic == topic_b:
            return bad_cursor
        if kind == "schema" and owner == schema_id:
            return f"/schemas/{schema_id}"
        return None

    after_orphans = {k[1]: f for k, f in after.items() if k[0] == "orphan-ledger"}
    assert set(after_orphans) >= set(orphans) - {lone.ledger_id}
    assert lone.ledger_id not in after_orphans  # its metadata is unknown: reported as undecodable, not orphan
    newly = set(after_orphans) - set(orphans)
    assert newly, "the ledgers only the undecodable znodes referenced are orphans now"
    blocked_seen = 0
    for lid, f in after_orphans.items():
        expected = blocker(f)
        if expected is not None:
            assert not f.plannable and f"undecodable znode {expected}" in f.reason, (lid, f.reason)
            assert f.evidence["undecodable_dependency"] == expected
            blocked_seen += 1
        else:
            assert lid in orphans, (lid, f.reason)
            before = orphans[lid]
            assert (f.plannable, f.reason) == (before.plannable, before.reason), lid
    assert all(blocker(after_orphans[lid]) is not None for lid in newly)
    assert blocked_seen >= 3 + len(newly)
    assert not after_orphans[data.ledger_id].plannable and not after_orphans[cursor.ledger_id].plannable
    assert not after_orphans[schema.ledger_id].plannable

    # 4. other detections: only findings about the topic whose info is undecodable may change
    for key, f in clean.items():
        if key[0] in ("orphan-ledger", "undecodable-znode", "dangling-ledger"):
            continue
        if f.topic == topic_a:
            continue
        assert key in after, key
        assert (after[key].plannable, after[key].reason) == (f.plannable, f.reason), key
