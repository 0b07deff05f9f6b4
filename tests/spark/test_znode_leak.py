"""znode-leak: every sub-kind of docs/detections.md with its controls, in one snapshot."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.audit.runner import AuditResult
from tests.spark.helpers import audit, of
from tests.spark.snapshot_builder import HOUR, NOW, SnapshotBuilder

pytestmark = pytest.mark.spark

BOUNDS = ["0x00000000", "0x80000000", "0xffffffff"]


@pytest.fixture(scope="module")
def leaks(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    b = SnapshotBuilder()
    b.namespace("t/live", boundaries=BOUNDS)
    b.namespace("p/c1/v1ns")  # V1 namespace (tenant p registered)
    # live namespace, live V1 namespace: controls
    for path in (
        "/managed-ledgers/t",
        "/managed-ledgers/t/live",
        "/managed-ledgers/t/live/persistent",
        "/managed-ledgers/p",
        "/managed-ledgers/p/c1",
        "/managed-ledgers/p/c1/v1ns",
        "/managed-ledgers/p/c1/v1ns/persistent",
    ):
        b.znode(path, num_children=1)
    b.topic("t/live", "ok-partition-0", ledgers=[(1, None, None, None)])
    b.znode("/managed-ledgers/t/live/persistent/ok-partition-0", data_length=40)
    # 1. deleted namespace of a live tenant: empty `persistent` parent left behind (plannable)
    b.znode("/managed-ledgers/t/gone", num_children=1, data_length=0)
    b.znode("/managed-ledgers/t/gone/persistent", data_length=0)
    # deleted namespace still holding a topic with ledgers (not plannable)
    b.znode("/managed-ledgers/t/held", num_children=1)
    b.znode("/managed-ledgers/t/held/persistent", num_children=1)
    b.topic("t/held", "still here", ledgers=[(2, 5, 50, NOW - 40 * HOUR), (3, None, None, None)])
    b.znode("/managed-ledgers/t/held/persistent/still+here", data_length=100)
    # deleted namespace modified an hour ago (young, not plannable)
    b.znode("/managed-ledgers/t/young", num_children=1)
    b.znode("/managed-ledgers/t/young/persistent", mtime_ms=NOW - HOUR)
    # deleted V1 namespace of a live property
    b.znode("/managed-ledgers/p/c1/gonev1", num_children=1)
    b.znode("/managed-ledgers/p/c1/gonev1/persistent")
    # whole tenant gone: ONE finding for the tenant
    b.znode("/managed-ledgers/gt", num_children=2, data_length=0)
    b.znode("/managed-ledgers/gt/a", num_children=1, data_length=0)
    b.znode("/managed-ledgers/gt/a/persistent", data_length=0)
    b.znode("/managed-ledgers/gt/b", data_length=0)
    # 2. partitioned-topic node without partitions; control: one whose partition exists
    b.add(
        "partitioned_topics",
        path="/admin/partitioned-topics/t/live/persistent/ghost",
        tenant="t",
        namespace="t/live",
        encoded_name="ghost",
        local_name="ghost",
        topic="persistent://t/live/ghost",
        partitions=4,
    )
    b.znode("/admin/partitioned-topics/t/live/persistent/ghost", store="config", data_length=16)
    b.add(
        "partitioned_topics",
        path="/admin/partitioned-topics/t/live/persistent/ok",
        tenant="t",
        namespace="t/live",
        encoded_name="ok",
        local_name="ok",
        topic="persistent://t/live/ok",
        partitions=1,
    )
    # 3. schema without topic; controls: schema of the partitioned topic `ok` and of the live topic base name
    b.schema("t/live", "no topic", [70, 71])
    b.znode("/schemas/t/live/no+topic", data_length=55)
    b.schema("t/live", "ok", [72])
    # control: a live non-persistent partitioned topic (no managed ledger by design) owns the schema of its name,
    # and its own partitioned-topic node is never a leak
    b.add(
        "partitioned_topics",
        path="/admin/partitioned-topics/t/live/non-persistent/np",
        tenant="t",
        namespace="t/live",
        encoded_name="np",
        local_name="np",
        topic="non-persistent://t/live/np",
        partitions=2,
    )
    b.znode("/admin/partitioned-topics/t/live/non-persistent/np", store="config", data_length=16)
    b.schema("t/live", "np", [73])
    b.znode("/schemas/t/live/np", data_length=30)
    # 4. bundle-data of a namespace without policies (one finding for the directory), a stale range of a
    #    live namespace, and a control range that is a bundle
    for rg in ("0x00000000_0x80000000", "0x80000000_0xffffffff"):
        b.add("bundle_data", path=f"/loadbalance/bundle-data/t/bdgone/{rg}", namespace="t/bdgone", bundle_range=rg)
        b.znode(f"/loadbalance/bundle-data/t/bdgone/{rg}")
    b.znode("/loadbalance/bundle-data/t/bdgone", num_children=2, data_length=0)
    b.add(
        "bundle_data",
        path="/loadbalance/bundle-data/t/live/0x00000000_0x40000000",
        namespace="t/live",
        bundle_range="0x00000000_0x40000000",
        lower=0,
        upper=0x40000000,
    )
    b.znode("/loadbalance/bundle-data/t/live/0x00000000_0x40000000")
    b.add(
        "bundle_data",
        path="/loadbalance/bundle-data/t/live/0x80000000_0xffffffff",
        namespace="t/live",
        bundle_range="0x80000000_0xffffffff",
        lower=0x80000000,
        upper=0xFFFFFFFF,
    )
    # 5. local policies without policies; control: local policies of a live namespace
    b.add("local_policies", path="/admin/local-policies/t/lpgone", namespace="t/lpgone")
    b.znode("/admin/local-policies/t/lpgone", data_length=30)
    b.add("local_policies", path="/admin/local-policies/t/live", namespace="t/live", bundle_boundaries=BOUNDS)
    # 4c. a split namespace: its policies still say two bundles, its local policies (what the broker reads,
    #     NamespaceBundleFactory.loadBundles) say three; the pre-split range is the leak, the split halves are not
    b.namespace("t/split", boundaries=BOUNDS)
    b.add(
        "local_policies",
        path="/admin/local-policies/t/split",
        namespace="t/split",
        bundle_boundaries=["0x00000000", "0x40000000", "0x80000000", "0xffffffff"],
    )
    for lo, hi in ((0, 0x40000000), (0x40000000, 0x80000000), (0, 0x80000000)):
        b.bundle_data("t/split", lo, hi)
    # 4d. local policies that do not decode: the namespace's bundles are unknown, no bundle-data call
    b.namespace("t/unknown", boundaries=BOUNDS)
    b.znode("/admin/local-policies/t/unknown", kind="local-policies", decode_error="decode-error")
    b.bundle_data("t/unknown", 0, 0x40000000)
    # 5b. local policies of a deleted namespace whose value does not decode: still a leak, never planned
    b.znode("/admin/local-policies/t/lpbad", kind="local-policies", decode_error="decode-error")
    # an incomplete scope under the deleted V1 namespace blocks only that finding
    b.scope("/managed-ledgers/p/c1/gonev1", complete=False, error="NoAuth")
    r: AuditResult = audit(spark, b, tmp_path_factory.mktemp("leak"))
    return {f.path: f for f in of(r, "znode-leak")}


def test_exact_leak_set(leaks: dict[str, Any]) -> None:
    assert {p: f.evidence["leak"] for p, f in leaks.items()} == {
        "/managed-ledgers/t/gone": "managed-ledgers-namespace",
        "/managed-ledgers/t/held": "managed-ledgers-namespace",
        "/managed-ledgers/t/young": "managed-ledgers-namespace",
        "/managed-ledgers/p/c1/gonev1": "managed-ledgers-namespace",
        "/managed-ledgers/gt": "managed-ledgers-tenant",
        "/admin/partitioned-topics/t/live/persistent/ghost": "partitioned-topic",
        "/schemas/t/live/no+topic": "schema",
        "/loadbalance/bundle-data/t/bdgone": "bundle-data",
        "/loadbalance/bundle-data/t/live/0x00000000_0x40000000": "bundle-data",
        "/loadbalance/bundle-data/t/split/0x00000000_0x80000000": "bundle-data",
        "/admin/local-policies/t/lpgone": "local-policies",
        "/admin/local-policies/t/lpbad": "local-policies",
    }


def test_plannable_leaks(leaks: dict[str, Any]) -> None:
    plannable = {p for p, f in leaks.items() if f.plannable}
    assert plannable == set(leaks) - {
        "/managed-ledgers/t/held",
        "/managed-ledgers/t/young",
        "/managed-ledgers/p/c1/gonev1",
        "/admin/local-policies/t/lpbad",
    }
    assert all(f.severity == "warning" for f in leaks.values())
    bad = leaks["/admin/local-policies/t/lpbad"]
    assert bad.evidence["undecodable_znode"] == "/admin/local-policies/t/lpbad", bad.evidence


def test_held_topics_block(leaks: dict[str, Any]) -> None:
    f = leaks["/managed-ledgers/t/held"]
    assert f.reason == "holds 1 topics with ledgers; delete the topics first"


def test_young_subtree_blocks(leaks: dict[str, Any]) -> None:
    assert "min-age" in leaks["/managed-ledgers/t/young"].reason


def test_incomplete_scope_blocks_only_its_subtree(leaks: dict[str, Any]) -> None:
    f = leaks["/managed-ledgers/p/c1/gonev1"]
    assert f.evidence["blocked_scopes"] == ["/managed-ledgers/p/c1/gonev1"]
    assert leaks["/managed-ledgers/gt"].evidence["blocked_scopes"] == []


def test_subtree_counts(leaks: dict[str, Any]) -> None:
    tenant = leaks["/managed-ledgers/gt"]
    assert tenant.evidence["znodes"] == 4 and tenant.bytes == 0
    assert leaks["/managed-ledgers/t/gone"].evidence["znodes"] == 2
    assert leaks["/managed-ledgers/t/held"].evidence["znodes"] == 3
    assert leaks["/managed-ledgers/t/held"].bytes == 120
    bd = leaks["/loadbalance/bundle-data/t/bdgone"]
    assert bd.evidence["znodes"] == 3 and bd.bytes == 20


def test_schema_leak_evidence(leaks: dict[str, Any]) -> None:
    f = leaks["/schemas/t/live/no+topic"]
    assert f.evidence["ledgers"] == [70, 71]
    assert "non-persistent" in f.evidence["note"]
    assert f.namespace == "t/live"
