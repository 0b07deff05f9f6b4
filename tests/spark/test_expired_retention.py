"""expired-retention-unloaded: candidates, the prefix cut, retention sources, loaded/owned controls."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import DAY, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark

KB600 = 600 * 1024
HALF = ["0x00000000", "0x80000000", "0xffffffff"]


def closed(lid: int, age_days: float, size: int = 100, entries: int = 10) -> tuple[Any, ...]:
    return (lid, entries, size, NOW - int(age_days * DAY))


def open_(
    b: SnapshotBuilder, lid: int, owner: str, *, last_entry_id: int = -1, length: int = 0, age_days: float = 1
) -> tuple[Any, ...]:
    b.bk_ledger(lid, owner=owner, last_entry_id=last_entry_id, length=length, ctime_ms=NOW - int(age_days * DAY))
    return (lid, None, None, None)


@pytest.fixture(scope="module")
def found(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    b = SnapshotBuilder(admin_scraped=True)
    b.add("loaded_topics", broker="b1", topic="persistent://t/owned/loaded")
    b.namespace("t/r")  # no retention: broker defaults 0/0, bundles unowned
    b.topic(
        "t/r",
        "all",
        ledgers=[
            closed(10, 5, 100),
            closed(11, 4, 200),
            open_(b, 12, "t/r/persistent/all", last_entry_id=9, length=300, age_days=3),
        ],
    )
    b.topic("t/r", "behind", ledgers=[closed(13, 5), closed(14, 4), open_(b, 15, "x")])
    b.cursor("t/r", "behind", "s", md=(14, 5))  # 14 not fully consumed: only 13
    b.cursor("t/r", "behind", "pulsar.dedup", md=(14, 9), is_system=True)
    b.topic("t/r", "consumed", ledgers=[closed(16, 5), closed(17, 4), open_(b, 18, "x")])
    b.cursor("t/r", "consumed", "s", md=(17, 9))  # 17 fully consumed: 16 and 17
    b.topic("t/r", "empty-open", ledgers=[closed(20, 5, 50), open_(b, 21, "x", last_entry_id=-1)])
    b.topic("t/r", "offloaded", ledgers=[(30, 5, 50, NOW - 9 * DAY, True, True), closed(31, 5, 50), open_(b, 32, "x")])
    b.topic("t/r", "pinned-by-policy", ledgers=[closed(33, 5), open_(b, 34, "x")])
    b.add(
        "topic_policies",
        path="/admin/topic-policies/local/t/r/persistent/pinned-by-policy",
        scope="local",
        namespace="t/r",
        topic="persistent://t/r/pinned-by-policy",
        retention_time_minutes=-1,
        retention_size_mb=-1,
    )
    b.namespace("t/inf", retention_time_minutes=-1, retention_size_mb=-1)
    b.topic("t/inf", "kept", ledgers=[closed(35, 50), open_(b, 36, "x")])
    b.topic("t/inf", "topic-zero", ledgers=[closed(37, 50, 70), open_(b, 38, "x")])
    b.add(
        "topic_policies",
        path="/admin/topic-policies/local/t/inf/persistent/topic-zero",
        scope="local",
        namespace="t/inf",
        topic="persistent://t/inf/topic-zero",
        retention_time_minutes=0,
        retention_size_mb=0,
    )
    b.namespace("t/timed", retention_time_minutes=3 * 24 * 60, retention_size_mb=-1)
    b.topic("t/timed", "prefix", ledgers=[closed(40, 5), closed(41, 4), closed(42, 1), open_(b, 43, "x")])
    b.topic("t/timed", "cut", ledgers=[closed(50, 5), closed(51, 1), closed(52, 5), open_(b, 53, "x")])
    # never rolled over for 4 days: past retention by its ctime; a load re-stamps it (load time)
    b.topic(
        "t/timed", "stale-open", ledgers=[closed(90, 5), open_(b, 91, "x", last_entry_id=9, length=300, age_days=4)]
    )
    b.namespace("t/size", retention_time_minutes=-1, retention_size_mb=1)
    b.topic(
        "t/size", "big", ledgers=[closed(60, 9, KB600), closed(61, 8, KB600), closed(62, 7, KB600), open_(b, 63, "x")]
    )
    # the open ledger's BookKeeper length counts in the total (after a load it is listed with it)
    b.topic(
        "t/size",
        "big-open",
        ledgers=[closed(64, 9, KB600), open_(b, 65, "x", last_entry_id=9, length=2 * KB600, age_days=8)],
    )
    b.namespace("t/owned")
    b.own_all_bundles("t/owned")
    b.topic("t/owned", "loaded", ledgers=[closed(70, 5), open_(b, 71, "x")])
    b.topic("t/owned", "not-loaded", ledgers=[closed(72, 5), open_(b, 73, "x")])
    b.namespace("t/b2", boundaries=HALF)
    b.add(
        "bundle_owners",
        path="/namespace/t/b2/0x00000000_0x80000000",
        namespace="t/b2",
        bundle_range="0x00000000_0x80000000",
        lower=0,
        upper=0x80000000,
        ephemeral_owner=1,
    )
    b.add("loaded_topics", broker="b1", topic="persistent://t/b2/k0")  # k2 is not listed: its bundle is unowned
    b.topic("t/b2", "k0", ledgers=[closed(80, 5), open_(b, 81, "x")])  # crc32 in the owned lower half
    b.topic("t/b2", "k2", ledgers=[closed(82, 5), open_(b, 83, "x")])  # upper half: unowned
    # a split namespace: Policies.bundles still says two halves, the local policies (which the broker reads,
    # NamespaceBundleFactory.loadBundles) split the lower half; both split halves are owned
    b.namespace("t/split", boundaries=HALF)
    split = ["0x00000000", "0x40000000", "0x80000000", "0xffffffff"]
    b.add("local_policies", path="/admin/local-policies/t/split", namespace="t/split", bundle_boundaries=split)
    b.own_range("t/split", 0, 0x40000000)
    b.own_range("t/split", 0x40000000, 0x80000000)
    for k, first in (("k2", 100), ("k3", 102), ("k0", 104)):
        if k != "k0":
            b.add("loaded_topics", broker="b1", topic=f"persistent://t/split/{k}")
        b.topic("t/split", k, ledgers=[closed(first, 5), open_(b, first + 1, "x")])
    # policies without bundles: the broker's one full-range bundle, owned here, topic loaded
    b.namespace("t/nobundles", boundaries=[])
    b.own_range("t/nobundles", 0, 0xFFFFFFFF)
    b.add("loaded_topics", broker="b1", topic="persistent://t/nobundles/a")
    b.topic("t/nobundles", "a", ledgers=[closed(110, 5), open_(b, 111, "x")])
    # unknown bundles (local policies do not decode) and unknown retention (topic policies do not decode)
    b.namespace("t/lp-unknown")
    b.znode("/admin/local-policies/t/lp-unknown", kind="local-policies", decode_error="decode-error")
    b.topic("t/lp-unknown", "a", ledgers=[closed(120, 5), open_(b, 121, "x")])
    b.znode("/admin/topic-policies/local/t/r/persistent/policy%20unknown", kind="topic-policies", decode_error="x")
    b.topic("t/r", "policy unknown", ledgers=[closed(122, 5), open_(b, 123, "x")])
    r: AuditResult = audit(spark, b, tmp_path_factory.mktemp("retention"))
    found: dict[Any, Any] = {f.topic: f for f in of(r, "expired-retention-unloaded")}
    found["undecodable"] = {f.path: f for f in of(r, "undecodable-znode")}
    return found


def ids(found: dict[str, Any], topic: str) -> list[int]:
    return list(found[f"persistent://{topic}"].evidence["ledger_ids"])


def test_exact_topics(found: dict[str, Any]) -> None:
    assert set(found) - {"undecodable"} == {
        f"persistent://{t}"
        for t in (
            "t/r/all",
            "t/r/behind",
            "t/r/consumed",
            "t/r/empty-open",
            "t/split/k0",
            "t/r/offloaded",
            "t/inf/topic-zero",
            "t/timed/prefix",
            "t/timed/cut",
            "t/timed/stale-open",
            "t/size/big",
            "t/size/big-open",
            "t/owned/not-loaded",
            "t/b2/k2",
        )
    }


def test_no_cursor_every_ledger_and_open_ledger_with_entries(found: dict[str, Any]) -> None:
    f = found["persistent://t/r/all"]
    assert ids(found, "t/r/all") == [10, 11, 12]
    assert f.bytes == 600  # 100 + 200 + BookKeeper length of the open ledger
    assert (f.severity, f.plannable) == ("warning", False)
    assert f.evidence["retention_source"] == "broker"
    assert f.evidence["oldest_age_ms"] == 5 * DAY
    assert f.evidence["owned"] is False and f.evidence["bundle"] == "0x00000000_0xffffffff"
    assert f.path == "/managed-ledgers/t/r/persistent/all"


def test_slowest_cursor_bounds_candidates(found: dict[str, Any]) -> None:
    assert ids(found, "t/r/behind") == [13]
    assert ids(found, "t/r/consumed") == [16, 17]


def test_open_ledger_without_entries_and_offloaded(found: dict[str, Any]) -> None:
    assert ids(found, "t/r/empty-open") == [20]
    assert ids(found, "t/r/offloaded") == [31]


def test_topic_policy_overrides(found: dict[str, Any]) -> None:
    assert "persistent://t/r/pinned-by-policy" not in found
    f = found["persistent://t/inf/topic-zero"]
    assert f.evidence["retention_source"] == "topic" and f.bytes == 70


def test_retention_time_is_a_prefix_cut(found: dict[str, Any]) -> None:
    assert ids(found, "t/timed/prefix") == [40, 41]
    assert ids(found, "t/timed/cut") == [50]
    assert found["persistent://t/timed/cut"].evidence["retention_time_minutes"] == 3 * 24 * 60
    assert found["persistent://t/timed/cut"].evidence["retention_source"] == "namespace"


def test_retention_size(found: dict[str, Any]) -> None:
    # internalTrimLedgers: a ledger goes by size only when what stays after deleting it still meets the quota:
    # 1800 KB - 600 KB >= 1 MB (60 goes), 1800 KB - 1200 KB < 1 MB (61 stays)
    assert ids(found, "t/size/big") == [60]
    assert found["persistent://t/size/big"].bytes == KB600


def test_loaded_and_owned_controls(found: dict[str, Any]) -> None:
    assert "persistent://t/owned/loaded" not in found
    assert "persistent://t/inf/kept" not in found
    f = found["persistent://t/owned/not-loaded"]
    assert f.evidence["owned"] is True  # owned bundle but the admin API says not loaded


def test_bundle_lookup_by_crc32(found: dict[str, Any]) -> None:
    assert zlib.crc32(b"persistent://t/b2/k0") < 0x80000000 <= zlib.crc32(b"persistent://t/b2/k2")
    assert "persistent://t/b2/k0" not in found
    assert found["persistent://t/b2/k2"].evidence["bundle"] == "0x80000000_0xffffffff"


def test_bundles_come_from_the_local_policies_first(found: dict[str, Any]) -> None:
    """The policies do not show the split the local policies record: the owned split halves hold loaded topics,
    the upper half is unowned; a namespace whose policies have no bundles has one full-range bundle."""
    assert 0x40000000 <= zlib.crc32(b"persistent://t/split/k3") < 0x80000000 <= zlib.crc32(b"persistent://t/split/k0")
    assert zlib.crc32(b"persistent://t/split/k2") < 0x40000000
    assert "persistent://t/split/k2" not in found and "persistent://t/split/k3" not in found
    assert found["persistent://t/split/k0"].evidence["bundle"] == "0x80000000_0xffffffff"
    assert "persistent://t/nobundles/a" not in found


def test_unknown_bundles_or_retention_are_not_judged(found: dict[str, Any]) -> None:
    assert "persistent://t/lp-unknown/a" not in found
    assert "persistent://t/r/policy unknown" not in found
    lp = found["undecodable"]["/admin/local-policies/t/lp-unknown"]
    assert "expired-retention calls and bundle-data leaks of t/lp-unknown" in lp.evidence["blocks"]
    tp = found["undecodable"]["/admin/topic-policies/local/t/r/persistent/policy%20unknown"]
    assert tp.topic == "persistent://t/r/policy unknown"
    assert "expired-retention calls for persistent://t/r/policy unknown" in tp.evidence["blocks"]


def test_last_ledger_is_freed_one_retention_period_after_a_load(found: dict[str, Any]) -> None:
    f = found["persistent://t/timed/stale-open"]
    assert ids(found, "t/timed/stale-open") == [90, 91]
    assert f.evidence["first_trim_ledger_ids"] == [90]
    assert f.evidence["after_retention_ledger_ids"] == [91]
    assert f.evidence["first_trim_bytes"] == 100 and f.bytes == 400
    assert f.evidence["after_load_ms"] == 3 * DAY
    assert "the last ledger one retention period after the load" in f.reason
    # retention time 0: the re-stamped last ledger goes at the first trim
    g = found["persistent://t/r/all"]
    assert g.evidence["after_retention_ledger_ids"] == [] and g.evidence["first_trim_bytes"] == 600
    assert g.evidence["after_load_ms"] is None


def test_size_rule_counts_the_last_ledgers_bookkeeper_length(found: dict[str, Any]) -> None:
    # total 600 KB + 1200 KB (the last ledger at its BookKeeper length): 1800 KB - 600 KB >= 1 MB, so 64 goes (with
    # the last ledger counted as 0 it would stay); the last one would leave 0 B: it stays
    f = found["persistent://t/size/big-open"]
    assert ids(found, "t/size/big-open") == [64]
    assert f.evidence["after_retention_ledger_ids"] == [] and f.evidence["first_trim_bytes"] == KB600
