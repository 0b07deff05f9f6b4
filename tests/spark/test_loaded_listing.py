"""expired-retention-unloaded with several brokers: a bundle's topics are judged by the listing of the broker that
owns it, never by another broker's answer (docs/detections.md, "Loaded topics: several brokers")."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark

QUARTERS = ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"]
B1, B2 = "10.0.0.1:8080", "10.0.0.2:8080"


def _name_in(namespace: str, quarter: int, prefix: str) -> str:
    """A local name whose topic hashes (CRC32 of the full name, as the broker does) into ``quarter``."""
    for i in range(10_000):
        local = f"{prefix}-{i}"
        if zlib.crc32(f"persistent://{namespace}/{local}".encode()) >> 30 == quarter:
            return local
    raise AssertionError("no name found")


def _expired_topic(b: SnapshotBuilder, ns: str, local: str, first: int) -> str:
    b.bk_ledger(first + 1, owner=local, last_entry_id=-1, length=0, ctime_ms=NOW - DAY)
    b.topic(ns, local, ledgers=[(first, 10, 100, NOW - 9 * DAY), (first + 1, None, None, None)])
    return f"persistent://{ns}/{local}"


def _own(b: SnapshotBuilder, ns: str, quarter: int, broker: str | None) -> None:
    lo, hi = int(QUARTERS[quarter], 16), int(QUARTERS[quarter + 1], 16)
    rg = f"{QUARTERS[quarter]}_{QUARTERS[quarter + 1]}"
    b.add(
        "bundle_owners",
        path=f"/namespace/{ns}/{rg}",
        namespace=ns,
        bundle_range=rg,
        lower=lo,
        upper=hi,
        ephemeral_owner=5,
        native_url=f"pulsar://{broker.split(':')[0]}:6650" if broker else None,
        http_url=f"http://{broker}" if broker else None,
    )


def _snapshot(
    *, per_broker: bool, admin_scraped: bool, namespace_complete: bool = True
) -> tuple[SnapshotBuilder, dict[str, str]]:
    """t/q: quarter 0 owned by B1 (its listing complete) with one loaded and one unloaded topic, quarter 1 owned by
    B2 (listing missing), quarter 2 without an ownership znode, quarter 3 owned by a znode without httpUrl."""
    b = SnapshotBuilder(admin_scraped=admin_scraped)
    ns = "t/q"
    b.namespace(ns, boundaries=QUARTERS)
    topics = {
        "b1-loaded": _expired_topic(b, ns, _name_in(ns, 0, "loaded"), 10),
        "b1-unloaded": _expired_topic(b, ns, _name_in(ns, 0, "idle"), 20),
        "b2": _expired_topic(b, ns, _name_in(ns, 1, "b2"), 30),
        "unowned": _expired_topic(b, ns, _name_in(ns, 2, "free"), 40),
        "no-url": _expired_topic(b, ns, _name_in(ns, 3, "nourl"), 50),
    }
    _own(b, ns, 0, B1)
    _own(b, ns, 1, B2)
    _own(b, ns, 3, None)
    b.add("loaded_topics", broker=B1, topic=topics["b1-loaded"], bundle=f"{QUARTERS[0]}_{QUARTERS[1]}")
    if per_broker:
        b.scope(f"broker-stats/topics/{B1}", store="admin")
        b.scope(f"broker-stats/topics/{B2}", complete=False, error=f"broker {B2} answered an empty body", store="admin")
    if not namespace_complete:
        b.scope("/namespace", complete=False, error="connection lost")
    return b, topics


def _found(spark: Any, tmp: Path, b: SnapshotBuilder, topics: dict[str, str]) -> dict[str, Any]:
    r = audit(spark, b, tmp)
    by_topic = {f.topic: f for f in of(r, "expired-retention-unloaded")}
    found: dict[str, Any] = {k: by_topic[t] for k, t in topics.items() if t in by_topic}
    found["scrape-incomplete"] = {f.path: f for f in of(r, "scrape-incomplete")}
    return found


def test_a_bundle_is_judged_by_its_owners_listing_only(spark: Any, tmp_path: Path) -> None:
    b, topics = _snapshot(per_broker=True, admin_scraped=False)
    found = _found(spark, tmp_path, b, topics)
    # B2 did not answer: the topic of its bundle is unknown, not unloaded; the owner without httpUrl likewise
    incomplete = found.pop("scrape-incomplete")
    assert sorted(found) == ["b1-unloaded", "unowned"]
    assert found["b1-unloaded"].evidence["owned"] is True
    assert found["b1-unloaded"].evidence["owner_broker"] == B1
    assert found["unowned"].evidence["owned"] is False and found["unowned"].evidence["owner_broker"] is None
    # the missing listing is a scrape-incomplete finding naming the broker; the complete one is none
    assert B2 in incomplete[f"broker-stats/topics/{B2}"].reason
    assert f"broker-stats/topics/{B1}" not in incomplete


def test_every_broker_answered_judges_every_owned_bundle_it_can_name(spark: Any, tmp_path: Path) -> None:
    b, topics = _snapshot(per_broker=True, admin_scraped=True)
    b.scope(f"broker-stats/topics/{B2}", store="admin")  # B2 answered too, with nothing loaded
    found = _found(spark, tmp_path, b, topics)
    assert not found.pop("scrape-incomplete")
    # the znode without httpUrl names no broker: still unknown
    assert sorted(found) == ["b1-unloaded", "b2", "unowned"]


def test_without_the_ownership_data_any_missing_broker_makes_the_whole_listing_partial(
    spark: Any, tmp_path: Path
) -> None:
    b, topics = _snapshot(per_broker=True, admin_scraped=False, namespace_complete=False)
    found = _found(spark, tmp_path, b, topics)
    del found["scrape-incomplete"]
    # /namespace was not read completely: a missing ownership znode is no evidence that the bundle is unowned
    assert sorted(found) == ["b1-unloaded"]


def test_a_snapshot_without_per_broker_scopes_judges_owned_bundles_only_when_every_broker_answered(
    spark: Any, tmp_path: Path
) -> None:
    """Older snapshots: one flag for all brokers. Some loaded topics listed is no longer taken as 'all answered'."""
    b, topics = _snapshot(per_broker=False, admin_scraped=False)
    assert sorted(_found(spark, tmp_path / "partial", b, topics)) == ["scrape-incomplete", "unowned"]
    b, topics = _snapshot(per_broker=False, admin_scraped=True)
    assert sorted(_found(spark, tmp_path / "all", b, topics)) == [
        "b1-unloaded",
        "b2",
        "no-url",
        "scrape-incomplete",
        "unowned",
    ]


def test_a_topic_loaded_in_a_bundle_without_an_ownership_znode_makes_the_ownership_data_unknown(
    spark: Any, tmp_path: Path
) -> None:
    """A broker lists a topic loaded in a bundle ZooKeeper shows no owner for (the extensible load manager keeps
    ownership in a system topic; or the bundle was taken after the walk): no bundle is unowned for certain."""
    b, topics = _snapshot(per_broker=True, admin_scraped=False)
    b.add("loaded_topics", broker=B1, topic="persistent://t/q/elsewhere", bundle=f"{QUARTERS[2]}_{QUARTERS[3]}")
    found = _found(spark, tmp_path, b, topics)
    del found["scrape-incomplete"]
    assert sorted(found) == ["b1-unloaded"]
