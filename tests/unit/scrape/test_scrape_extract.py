"""Pure extraction: (path, Stat, bytes) -> znodes row + entity rows, kinds and scopes."""

from __future__ import annotations

import hashlib
import json

import pytest

from pulsar_ops.formats.cursor import ManagedCursorInfo, MessageRange, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import LedgerMetadata, encode_ledger_metadata
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    OffloadInfo,
    encode_managed_ledger_info,
)
from pulsar_ops.formats.policies import encode_namespace_policies, encode_partitioned_topic
from pulsar_ops.formats.schema_locator import SchemaIndexEntry, SchemaLocator, encode_schema_locator
from pulsar_ops.scrape.classify import classify, roots_for
from pulsar_ops.scrape.extract import ExtractConfig, bookie_row, extract_znode
from pulsar_ops.snapshot import schema

CFG = ExtractConfig()


def stat(data: bytes = b"", *, num_children: int = 0, version: int = 2, eph: int = 0) -> tuple[int, ...]:
    # czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength, numChildren, pzxid
    return (10, 11, 1_000, 2_000, version, 0, 0, eph, len(data), num_children, 12)


def rows_of(ex: object, table: str) -> list[dict[str, object]]:
    return [r for t, r in ex.rows if t == table]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("path", "kind", "scope"),
    [
        ("/managed-ledgers", "ml-dir", "/managed-ledgers"),
        ("/managed-ledgers/t", "ml-dir", "/managed-ledgers"),
        ("/managed-ledgers/t/ns", "ml-dir", "/managed-ledgers/t/ns"),
        ("/managed-ledgers/t/ns/persistent", "ml-dir", "/managed-ledgers/t/ns"),
        ("/managed-ledgers/t/ns/persistent/a%2Fb", "managed-ledger", "/managed-ledgers/t/ns"),
        ("/managed-ledgers/t/ns/persistent/a/sub", "cursor", "/managed-ledgers/t/ns"),
        ("/managed-ledgers/p/c/ns/persistent/a", "managed-ledger", "/managed-ledgers/p/c/ns"),
        ("/managed-ledgers/p/c/ns/persistent/a/sub", "cursor", "/managed-ledgers/p/c/ns"),
        ("/ledgers", "bk-dir", "/ledgers"),
        ("/ledgers/00/0000", "bk-dir", "/ledgers"),
        ("/ledgers/00/0000/L0001", "bk-ledger", "/ledgers"),
        ("/ledgers/000/0000/0021/4748/L3648", "bk-ledger", "/ledgers"),
        ("/ledgers/L0000000001", "bk-ledger", "/ledgers"),
        ("/ledgers/available/bk1:3181", "bk-internal", "/ledgers"),
        ("/ledgers/idgen/ID-0000000001", "bk-internal", "/ledgers"),
        ("/schemas/t/ns/topic", "schema", "/schemas/t/ns"),
        ("/schemas/t", "schema-dir", "/schemas"),
        ("/admin/policies/t", "tenant", "/admin/policies"),
        ("/admin/policies/p/c/ns", "namespace", "/admin/policies"),
        ("/admin/partitioned-topics/t/ns/persistent/x", "partitioned-topic", "/admin/partitioned-topics"),
        ("/admin/partitioned-topics/t/ns/non-persistent/x", "partitioned-topic", "/admin/partitioned-topics"),
        ("/admin/clusters/standalone", "cluster", "/admin/clusters"),
        ("/namespace/t/ns/0x00000000_0x40000000", "bundle-owner", "/namespace"),
        ("/loadbalance/bundle-data/t/ns/0x00000000_0x40000000", "bundle-data", "/loadbalance/bundle-data"),
        ("/loadbalance/bundle-data/t/ns", "bundle-data-dir", "/loadbalance/bundle-data"),
        ("/admin/topic-policies/global/t/ns/persistent/x", "topic-policies", "/admin/topic-policies"),
    ],
)
def test_classify_kind_and_innermost_scope(path: str, kind: str, scope: str) -> None:
    info = classify(path, "/ledgers")
    assert (info.kind, info.scope) == (kind, scope)


def test_v2_namespace_policies_node_is_a_namespace_only_without_children() -> None:
    assert classify("/admin/policies/t/ns", "/ledgers", 0).kind == "namespace"
    assert classify("/admin/policies/p/c", "/ledgers", 3).kind == "policies-dir"


def test_custom_ledgers_root() -> None:
    info = classify("/bk/ledgers/00/0000/L0001", "/bk/ledgers")
    assert (info.kind, info.scope) == ("bk-ledger", "/bk/ledgers")
    assert "/bk/ledgers" in roots_for("local", "/bk/ledgers", separate_config=False)


def test_config_roots_walk_topic_policies_only_when_the_store_is_separate() -> None:
    assert "/admin/topic-policies" not in roots_for("config", "/ledgers", separate_config=False)
    assert "/admin/topic-policies" in roots_for("config", "/ledgers", separate_config=True)
    assert "/admin/policies" not in roots_for("local", "/ledgers", separate_config=False)


def test_znode_row_has_full_stat_and_exact_sha() -> None:
    data = b"\x00\x01abc"
    st = (1, 2, 3, 4, 5, 6, 7, 8, len(data), 0, 9)
    ex = extract_znode("local", "/loadbalance/other/x", data, st, CFG)
    row = dict(zip(schema.ZNODES.column_names, ex.znode, strict=True))
    assert row == {
        "store": "local",
        "path": "/loadbalance/other/x",
        "parent": "/loadbalance/other",
        "name": "x",
        "depth": 3,
        "version": 5,
        "cversion": 6,
        "aversion": 7,
        "czxid": 1,
        "mzxid": 2,
        "pzxid": 9,
        "ctime_ms": 3,
        "mtime_ms": 4,
        "data_length": 5,
        "num_children": 0,
        "ephemeral_owner": 8,
        "data_sha256": hashlib.sha256(data).hexdigest(),
        "kind": "other",
        "decode_error": None,
    } | {"data_length": len(data)}


@pytest.mark.parametrize("compression", ["NONE", "LZ4", "ZSTD"])
def test_managed_ledger_rows(compression: str) -> None:
    info = ManagedLedgerInfo(
        (
            LedgerInfo(3, 10, 1000, 111, OffloadInfo(True, True, 5)),
            LedgerInfo(2**40, None, None, 0),
        ),
        properties=(("k", "v"),),
    )
    data = encode_managed_ledger_info(info, compression=compression)
    path = "/managed-ledgers/t/ns/persistent/my+topic-partition-3"
    ex = extract_znode("local", path, data, stat(data), CFG)
    assert ex.error is None
    (ml,) = rows_of(ex, "managed_ledgers")
    assert ml["topic"] == "persistent://t/ns/my topic-partition-3"
    assert ml["base_topic"] == "persistent://t/ns/my topic"
    assert ml["partition"] == 3
    assert ml["compression"] == compression
    assert ml["ledger_count"] == 2 and ml["total_size"] == 1000 and ml["last_ledger_id"] == 2**40
    assert json.loads(str(ml["properties_json"])) == {"k": "v"}
    ll = rows_of(ex, "ledger_list")
    assert [r["ledger_id"] for r in ll] == [3, 2**40]
    assert ll[0]["offloaded"] and ll[0]["bookkeeper_deleted"] and not ll[0]["is_last"]
    assert ll[1]["is_last"] and ll[1]["entries"] is None


def test_empty_managed_ledger_value() -> None:
    path = "/managed-ledgers/t/ns/persistent/empty"
    ex = extract_znode("local", path, b"", stat(), CFG)
    (ml,) = rows_of(ex, "managed_ledgers")
    assert (ml["format"], ml["ledger_count"], ml["last_ledger_id"]) == ("empty", 0, None)
    assert rows_of(ex, "ledger_list") == []


def test_cursor_rows_with_ranges_and_properties() -> None:
    ci = ManagedCursorInfo(
        cursors_ledger_id=-1,
        mark_delete=(7, 3),
        individual_deleted=(MessageRange((7, 4), (7, 9)),),
        properties=(("CompactedTopicLedger", 99),),
        last_active_ms=1234,
        cursor_properties=(("#pulsar.internal.delayed.bucket_1_2", "77"),),
    )
    data = encode_cursor_info(ci)
    path = "/managed-ledgers/t/ns/persistent/topic/my%2Bsub"
    ex = extract_znode("local", path, data, stat(data), CFG)
    assert ex.error is None
    (c,) = rows_of(ex, "cursors")
    assert c["subscription"] == "my+sub" and c["encoded_name"] == "my%2Bsub"
    assert (c["mark_delete_ledger_id"], c["mark_delete_entry_id"]) == (7, 3)
    assert c["compacted_topic_ledger"] == 99 and c["range_count"] == 1 and not c["is_system"]
    (r,) = rows_of(ex, "ack_ranges")
    assert (r["lower_ledger_id"], r["lower_entry_id"], r["upper_ledger_id"], r["upper_entry_id"]) == (7, 4, 7, 9)
    props = {(p["kind"], p["name"]): p for p in rows_of(ex, "cursor_properties")}
    assert props[("long", "CompactedTopicLedger")]["value"] == "99"
    assert props[("string", "#pulsar.internal.delayed.bucket_1_2")]["bucket_ledger_id"] == 77


def _md(**kw: object) -> LedgerMetadata:
    base: dict[str, object] = {
        "ledger_id": None,
        "format_version": 3,
        "ensemble_size": 2,
        "write_quorum": 2,
        "ack_quorum": 2,
        "state": "CLOSED",
        "length": 500,
        "last_entry_id": 9,
        "ensembles": ((0, ("bk1:3181", "bk2:3181")),),
        "digest_type": "CRC32C",
        "password": b"",
        "ctime_ms": 5_000,
        "custom_metadata": (("application", b"pulsar"), ("component", b"managed-ledger"), ("x", b"\xff")),
        "ctoken": None,
    }
    base.update(kw)
    return LedgerMetadata(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_bk_ledger_rows_for_every_format_and_long_ids(version: int) -> None:
    data = encode_ledger_metadata(_md(format_version=version), version)
    path = "/ledgers/000/0000/0021/4748/L3648"
    ex = extract_znode("local", path, data, stat(data), CFG)
    assert ex.error is None, ex.error
    (b,) = rows_of(ex, "bk_ledgers")
    assert b["ledger_id"] == 2147483648 and b["layout"] == "long" and b["format_version"] == version
    assert b["bookies"] == ["bk1:3181", "bk2:3181"]
    assert b["data_sha256"] == hashlib.sha256(data).hexdigest()
    if version == 3:
        assert b["ctime_ms"] == b["metadata_ctime_ms"] == 5_000
        assert json.loads(str(b["custom_metadata_json"]))["x"].startswith("base64:")
        assert b["application"] == "pulsar"
    if version == 1:
        assert b["ctime_ms"] == 1_000 and b["metadata_ctime_ms"] is None  # falls back to the znode ctime


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"BookieMetadataFormatVersion\t9\n", "format-version-unknown"),
        (b"BookieMetadataFor", "input-truncated"),
        (b"garbage", None),
    ],
)
def test_bad_ledger_metadata_is_an_error_naming_the_znode(data: bytes, code: str | None) -> None:
    path = "/ledgers/00/0000/L0001"
    ex = extract_znode("local", path, data, stat(data), CFG)
    assert ex.error is not None and ex.error.path == path
    if code:
        assert ex.error.code == code
    assert rows_of(ex, "bk_ledgers") == []
    assert ex.znode[-1] == ex.error.code  # znodes.decode_error
    assert ex.info.scope == "/ledgers"


def test_oversized_value_is_recorded_not_decoded() -> None:
    data = b"\x00" * 100
    cfg = ExtractConfig(max_znode_bytes=10)
    ex = extract_znode("local", "/managed-ledgers/t/ns/persistent/x", data, stat(data), cfg)
    assert ex.error is not None and ex.error.code == "input-oversized"
    assert ex.rows == [] and ex.znode[-1] == "input-oversized"


def test_schema_rows_one_per_version() -> None:
    e1 = SchemaIndexEntry(0, 50, 0, b"h")
    e2 = SchemaIndexEntry(1, 51, 0, b"h")
    data = encode_schema_locator(SchemaLocator(e2, (e1, e2)))
    ex = extract_znode("local", "/schemas/t/ns/a%20b", data, stat(data), CFG)
    rows = rows_of(ex, "schema_index")
    assert [(r["schema_version"], r["ledger_id"]) for r in rows] == [(0, 50), (1, 51)]
    assert rows[0]["schema_id"] == "t/ns/a%20b" and rows[0]["topic"] == "persistent://t/ns/a b"
    assert rows[0]["latest_version"] == 1


def test_namespace_partitioned_and_bundle_rows() -> None:
    pol = encode_namespace_policies(retention_time_minutes=60, num_bundles=2)
    ex = extract_znode("config", "/admin/policies/t/ns", pol, stat(pol), CFG)
    (n,) = rows_of(ex, "namespaces")
    assert n["namespace"] == "t/ns" and n["retention_time_minutes"] == 60 and n["num_bundles"] == 2
    assert len(n["bundle_boundaries"]) == 3  # type: ignore[arg-type]

    pt = encode_partitioned_topic(4)
    ex = extract_znode("config", "/admin/partitioned-topics/t/ns/persistent/a%2Fb", pt, stat(pt), CFG)
    (p,) = rows_of(ex, "partitioned_topics")
    assert (p["topic"], p["partitions"]) == ("persistent://t/ns/a/b", 4)

    owner = b'{"nativeUrl":"pulsar://b:6650","httpUrl":"http://b:8080","disabled":false}'
    ex = extract_znode("local", "/namespace/t/ns/0x00000000_0x80000000", owner, stat(owner, eph=77), CFG)
    (o,) = rows_of(ex, "bundle_owners")
    assert (o["lower"], o["upper"], o["ephemeral_owner"], o["native_url"]) == (0, 0x80000000, 77, "pulsar://b:6650")


def test_bad_json_policies_is_a_decode_error() -> None:
    ex = extract_znode("config", "/admin/policies/t/ns", b"{not json", stat(b"{not json"), CFG)
    assert ex.error is not None and ex.error.path == "/admin/policies/t/ns"
    assert rows_of(ex, "namespaces") == []


def test_bookie_rows() -> None:
    assert bookie_row("/ledgers/available/bk1:3181", "/ledgers") == {
        "bookie_id": "bk1:3181",
        "readonly": False,
        "free_bytes": None,
        "total_bytes": None,
    }
    ro = bookie_row("/ledgers/available/readonly/bk2:3181", "/ledgers")
    assert ro is not None and ro["readonly"] is True
    assert bookie_row("/ledgers/available/readonly", "/ledgers") is None


def test_service_unit_state_rows_and_errors() -> None:
    """/service_unit_state is walked (a local root, its own scope); a value becomes a service_unit_states row, one
    the record refuses is that znode's decode error (its bundle's ownership unknown) and no row."""
    assert "/service_unit_state" in roots_for("local", "/ledgers", separate_config=False)
    path = "/service_unit_state/t/ns/0x00000000_0x80000000"
    assert classify(path, "/ledgers")[:2] == ("service-unit-state", "/service_unit_state")
    assert classify("/service_unit_state/t/ns", "/ledgers")[0] == "service-unit-state-dir"
    value = b'{"state":"Owned","dstBroker":"b:8080","sourceBroker":null,"force":false,"timestamp":5,"versionId":3}'
    ex = extract_znode("local", path, value, stat(value), CFG)
    (r,) = rows_of(ex, "service_unit_states")
    assert (r["namespace"], r["lower"], r["upper"], r["state"], r["dst_broker"], r["version_id"]) == (
        "t/ns",
        0,
        0x80000000,
        "Owned",
        "b:8080",
        3,
    )
    bad = b'{"state":"Owned"}'  # names no broker: ServiceUnitStateData refuses it
    ex = extract_znode("local", path, bad, stat(bad), CFG)
    assert ex.error is not None and ex.error.path == path
    assert rows_of(ex, "service_unit_states") == []
