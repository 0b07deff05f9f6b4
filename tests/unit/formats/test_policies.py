from __future__ import annotations

import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.policies import (
    bundle_for_topic,
    encode_namespace_policies,
    encode_partitioned_topic,
    even_boundaries,
    parse_bundle_range,
    parse_json_object,
    parse_namespace_policies,
    parse_partitioned_topic,
)

PATH = "/admin/policies/public/default"

BROKER_JSON = {
    "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
    "replication_clusters": ["standalone"],
    "bundles": {"boundaries": ["0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff"], "numBundles": 4},
    "backlog_quota_map": {},
    "message_ttl_in_seconds": 3600,
    "retention_policies": {"retentionTimeInMinutes": 1440, "retentionSizeInMB": -1},
    "delayed_delivery_policies": {"tickTime": 1000, "active": True, "maxNumBuckets": 50},
    "subscription_expiration_time_minutes": 60,
    "deleted": False,
    "some_future_key": {"x": 1},
}


def test_parse_broker_policies_keeps_unknown_keys() -> None:
    p = parse_namespace_policies(json.dumps(BROKER_JSON).encode(), PATH)
    assert (p.retention_time_minutes, p.retention_size_mb) == (1440, -1)
    assert p.message_ttl_seconds == 3600
    assert (p.delayed_delivery_active, p.delayed_delivery_tick_ms) == (True, 1000)
    assert p.subscription_expiration_minutes == 60
    assert p.num_bundles == 4
    assert p.bundle_boundaries[1] == "0x40000000"
    assert p.deleted is False
    assert p.raw["some_future_key"] == {"x": 1}


def test_minimal_policies_are_all_unset() -> None:
    p = parse_namespace_policies(b'{"message_ttl_in_seconds": 0, "retention_policies": null}', PATH)
    assert p.retention_time_minutes is None and p.retention_size_mb is None
    assert p.message_ttl_seconds is None  # 0 = unset -> broker default
    assert p.delayed_delivery_active is None
    assert p.bundle_boundaries == () and p.num_bundles == 0


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"[1, 2]",
        b"\xff\xfe",
        b'{"retention_policies": "forever"}',
        b'{"message_ttl_in_seconds": "ten"}',
        b'{"message_ttl_in_seconds": 1.5}',
        b'{"deleted": "yes"}',
        b'{"bundles": {"boundaries": [1, 2]}}',
        b"[" * 100_000,
    ],
)
def test_bad_policies(data: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        parse_namespace_policies(data, PATH)
    assert info.value.path == PATH


def test_encode_parse_round_trip() -> None:
    data = encode_namespace_policies(
        retention_time_minutes=60,
        retention_size_mb=100,
        message_ttl_seconds=30,
        delayed_delivery_active=True,
        subscription_expiration_minutes=5,
        num_bundles=8,
    )
    p = parse_namespace_policies(data, PATH)
    assert (p.retention_time_minutes, p.retention_size_mb, p.message_ttl_seconds) == (60, 100, 30)
    assert p.delayed_delivery_active is True and p.subscription_expiration_minutes == 5
    assert p.num_bundles == 8 and len(p.bundle_boundaries) == 9
    assert "retention_policies" not in json.loads(encode_namespace_policies())


def test_even_boundaries_match_pulsar_defaults() -> None:
    assert even_boundaries(4) == ("0x00000000", "0x40000000", "0x80000000", "0xc0000000", "0xffffffff")
    assert even_boundaries(1) == ("0x00000000", "0xffffffff")


def test_partitioned_topic() -> None:
    p = parse_partitioned_topic(encode_partitioned_topic(3, properties={"a": "b"}, deleted=False), "/p")
    assert (p.partitions, p.deleted, p.properties) == (3, False, (("a", "b"),))
    assert parse_partitioned_topic(b'{"partitions": 0}', "/p").partitions == 0
    for bad in [b"{}", b'{"partitions": -1}', b'{"partitions": "x"}', b"3"]:
        with pytest.raises(DecodeError):
            parse_partitioned_topic(bad, "/p")


def test_parse_json_object() -> None:
    assert parse_json_object('{"a": 1}', "/x") == {"a": 1}
    with pytest.raises(DecodeError):
        parse_json_object(b"null", "/x")


def test_bundle_range() -> None:
    assert parse_bundle_range("0x00000000_0x40000000") == (0, 0x40000000)
    for bad in ["0x0_", "00000000_40000000", "0x40000000_0x00000000", "0x0_0x100000000", "x"]:
        with pytest.raises(DecodeError):
            parse_bundle_range(bad)


def test_bundle_for_topic_uses_crc32_of_full_name() -> None:
    topic = "persistent://public/default/my-topic-partition-3"
    h = zlib.crc32(topic.encode()) & 0xFFFFFFFF
    bounds = even_boundaries(4)
    lower, upper = parse_bundle_range(bundle_for_topic(topic, bounds))
    assert lower <= h < upper
    assert bundle_for_topic(topic, ["0x00000000", "0xffffffff"]) == "0x00000000_0xffffffff"


@given(st.text(min_size=1, max_size=40), st.integers(1, 64))
def test_bundle_for_topic_is_the_containing_range(name: str, n: int) -> None:
    topic = "persistent://t/ns/" + name.encode("utf-8", "replace").decode("utf-8")
    h = zlib.crc32(topic.encode()) & 0xFFFFFFFF
    lower, upper = parse_bundle_range(bundle_for_topic(topic, even_boundaries(n)))
    assert lower <= h < upper or (h == upper == 0xFFFFFFFF)


def test_bundle_for_topic_bad_boundaries() -> None:
    for bad in [[], ["0x00000000"], ["0x10", "0x05"], ["zz", "0xffffffff"], ["0x00000000", "0x00000001"]]:
        with pytest.raises(DecodeError):
            bundle_for_topic("persistent://public/default/t", bad)
