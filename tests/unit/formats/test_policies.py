"""Namespace policies and partitioned-topic metadata read as the broker reads them.

One test per row of docs/formats.md ("Namespace policies and partitioned-topic metadata (JSON)"): the broker reads
these znodes with Jackson 2 (``ObjectMapperFactory``: ``FAIL_ON_UNKNOWN_PROPERTIES`` off, every other default), into
``Policies`` / ``PartitionedTopicMetadata``. Then property tests: what an older broker (keys missing) and a newer
broker (keys we do not know, of any JSON type, anywhere) write reads with the broker's meaning.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.policies import (
    FULL_RANGE,
    NamespacePolicies,
    bundle_for_topic,
    effective_boundaries,
    encode_namespace_policies,
    encode_partitioned_topic,
    even_boundaries,
    parse_bundle_range,
    parse_json_object,
    parse_local_policies,
    parse_namespace_policies,
    parse_partitioned_topic,
)

PATH = "/admin/policies/public/default"
PT = "/admin/partitioned-topics/public/default/persistent/t"

BROKER_JSON: dict[str, Any] = {
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


def ns(doc: dict[str, Any] | str | bytes) -> NamespacePolicies:
    data = doc if isinstance(doc, str | bytes) else json.dumps(doc)
    return parse_namespace_policies(data, PATH)


def pt(data: str | bytes) -> tuple[int, bool, tuple[tuple[str, str | None], ...]]:
    m = parse_partitioned_topic(data, PT)
    return m.partitions, m.deleted, m.properties


def refused_ns(data: str | bytes) -> str:
    with pytest.raises(DecodeError) as info:
        parse_namespace_policies(data, PATH)
    assert info.value.path == PATH
    return info.value.reason


def refused_pt(data: str | bytes) -> str:
    with pytest.raises(DecodeError) as info:
        parse_partitioned_topic(data, PT)
    assert info.value.path == PT
    return info.value.reason


def fields(p: NamespacePolicies) -> tuple[Any, ...]:
    """Every value the reader gives, without ``raw``."""
    return (
        p.retention_time_minutes,
        p.retention_size_mb,
        p.message_ttl_seconds,
        p.delayed_delivery_active,
        p.delayed_delivery_tick_ms,
        p.delayed_delivery_max_delay_ms,
        p.subscription_expiration_minutes,
        p.bundle_boundaries,
        p.num_bundles,
        p.deleted,
    )


# ------------------------------------------------------------------------------------------------ the rows


def test_row_broker_written_document() -> None:
    p = ns(BROKER_JSON)
    assert (p.retention_time_minutes, p.retention_size_mb) == (1440, -1)
    assert p.message_ttl_seconds == 3600
    assert (p.delayed_delivery_active, p.delayed_delivery_tick_ms, p.delayed_delivery_max_delay_ms) == (True, 1000, 0)
    assert p.subscription_expiration_minutes == 60
    assert p.num_bundles == 4 and p.bundle_boundaries[1] == "0x40000000"
    assert p.deleted is False
    assert pt(encode_partitioned_topic(3, properties={"a": "b"}, deleted=False)) == (3, False, (("a", "b"),))


def test_row_unknown_keys_are_skipped_at_every_level_and_kept_in_raw() -> None:
    doc = {
        **BROKER_JSON,
        "x_new": [1, {"y": None}],
        "retention_policies": {"retentionTimeInMinutes": 5, "retentionSizeInMB": 7, "x_tier": "cold"},
        "bundles": {**BROKER_JSON["bundles"], "x_split": {"a": [True]}},
    }
    p = ns(doc)
    assert (p.retention_time_minutes, p.retention_size_mb, p.num_bundles) == (5, 7, 4)
    assert p.raw["x_new"] == [1, {"y": None}] and p.raw["some_future_key"] == {"x": 1}
    assert pt('{"partitions": 2, "x_new": {"deep": [1.5, "s"]}}') == (2, False, ())


def test_row_missing_keys_read_as_the_java_defaults() -> None:
    assert fields(ns({})) == (None, None, None, None, None, None, None, (), 0, False)
    # a nested object that is there: its primitive fields default to 0 / false
    assert fields(ns({"retention_policies": {}, "delayed_delivery_policies": {}}))[:6] == (0, 0, None, False, 0, 0)
    assert fields(ns({"retention_policies": {"retentionTimeInMinutes": 60}}))[:2] == (60, 0)
    assert fields(ns({"delayed_delivery_policies": {"active": True}}))[3:6] == (True, 0, 0)
    # bundles without numBundles: the count the boundaries define
    assert ns({"bundles": {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"]}}).num_bundles == 2
    assert ns({"bundles": {}}).bundle_boundaries == () and ns({"bundles": {}}).num_bundles == 0
    # PartitionedTopicMetadata: int partitions defaults to 0 (not partitioned for the broker)
    assert pt("{}") == (0, False, ())


def test_row_null_reads_as_the_java_default() -> None:
    assert fields(ns({k: None for k in BROKER_JSON})) == (None, None, None, None, None, None, None, (), 0, False)
    nulls = {"retentionTimeInMinutes": None, "retentionSizeInMB": None}
    assert fields(ns({"retention_policies": nulls}))[:2] == (0, 0)
    assert fields(ns({"delayed_delivery_policies": {"tickTime": None, "active": None}}))[3:6] == (False, 0, 0)
    assert ns({"bundles": {"boundaries": None, "numBundles": None}}).num_bundles == 0
    assert pt('{"partitions": null, "deleted": null, "properties": null}') == (0, False, ())


def test_row_integer_given_as_a_string() -> None:
    def ttl(value: Any) -> int | None:
        return ns({"message_ttl_in_seconds": value}).message_ttl_seconds

    assert ttl("60") == 60 and ttl("+60") == 60 and ttl("0060") == 60 and ttl("-5") == -5
    assert ttl("") is None and ttl("null") is None  # Jackson binds "" and "null" as null
    assert ns({"retention_policies": {"retentionSizeInMB": "1099511627776"}}).retention_size_mb == 2**40
    assert pt('{"partitions": "4"}') == (4, False, ())
    assert pt('{"partitions": ""}') == (0, False, ())
    # not what Integer.parseInt reads, or read differently across Jackson versions (trimming, blank strings)
    for bad in [" 60", "60 ", "  ", "6e1", "60.0", "0x3c", "1_000", "٦٠", "sixty", "+", "-"]:
        assert "message_ttl_in_seconds" in refused_ns(json.dumps({"message_ttl_in_seconds": bad})), bad


def test_row_fraction_for_an_integer_is_truncated_toward_zero() -> None:
    assert ns({"message_ttl_in_seconds": 60.9}).message_ttl_seconds == 60
    assert ns('{"message_ttl_in_seconds": 1e2}').message_ttl_seconds == 100
    assert ns({"retention_policies": {"retentionTimeInMinutes": -1.5}}).retention_time_minutes == -1
    assert pt('{"partitions": 3.99}') == (3, False, ())
    # range-checked as a double before the cast: int32 max + 0.5 is out of range; 2^63 reads as Long.MAX_VALUE
    refused_ns('{"retention_policies": {"retentionTimeInMinutes": 2147483647.5}}')
    size = ns('{"retention_policies": {"retentionSizeInMB": 9.223372036854775807e18}}').retention_size_mb
    assert size == 2**63 - 1
    refused_ns('{"retention_policies": {"retentionSizeInMB": 1e19}}')
    refused_pt('{"partitions": 1e400}')  # a double infinity


def test_row_integer_outside_the_java_type_is_refused() -> None:
    assert ns({"retention_policies": {"retentionTimeInMinutes": 2**31 - 1}}).retention_time_minutes == 2**31 - 1
    assert "out of range of Java int" in refused_ns('{"retention_policies": {"retentionTimeInMinutes": 2147483648}}')
    refused_ns('{"retention_policies": {"retentionTimeInMinutes": -2147483649}}')
    assert ns({"retention_policies": {"retentionSizeInMB": 2**40}}).retention_size_mb == 2**40  # a long
    assert "out of range of Java long" in refused_ns(json.dumps({"retention_policies": {"retentionSizeInMB": 2**63}}))
    refused_ns(json.dumps({"delayed_delivery_policies": {"tickTime": -(2**63) - 1}}))
    refused_ns(json.dumps({"message_ttl_in_seconds": "2147483648"}))
    refused_pt('{"partitions": 2147483648}')
    refused_pt('{"partitions": "' + "9" * 5000 + '"}')


def test_row_boolean_coercions() -> None:
    def deleted(value: Any) -> bool:
        return ns({"deleted": value}).deleted

    assert deleted(0) is False and deleted(1) is True and deleted(2) is True and deleted(-1) is True
    assert deleted("true") is True and deleted("True") is True
    assert deleted("false") is False and deleted("False") is False
    assert deleted("") is False and deleted("null") is False
    assert ns({"delayed_delivery_policies": {"active": 1}}).delayed_delivery_active is True
    assert pt('{"deleted": "true"}') == (0, True, ())
    # TRUE/FALSE: only Jackson >= 2.12 (databind #1852); a fraction is never a boolean
    for bad in ["TRUE", "FALSE", "yes", "1", " true", 1.0, [], {}]:
        assert "deleted" in refused_ns(json.dumps({"deleted": bad})), bad


def test_row_boolean_for_an_integer_is_refused() -> None:
    refused_pt('{"partitions": true}')
    refused_ns('{"retention_policies": {"retentionTimeInMinutes": false}}')
    refused_ns('{"message_ttl_in_seconds": true}')


def test_row_array_or_object_for_a_scalar_is_refused() -> None:
    refused_pt('{"partitions": [3]}')  # UNWRAP_SINGLE_VALUE_ARRAYS is off
    refused_pt('{"partitions": {"value": 3}}')
    refused_pt('{"deleted": []}')
    refused_ns('{"message_ttl_in_seconds": [60]}')
    refused_pt('{"properties": {"a": ["b"]}}')
    refused_pt('{"properties": {"a": {"b": "c"}}}')


def test_row_scalar_for_an_object_is_refused() -> None:
    for value in ["forever", "", 5, True, []]:  # no empty-string / empty-array coercion to a bean
        assert "retention_policies" in refused_ns(json.dumps({"retention_policies": value})), value
    refused_ns('{"delayed_delivery_policies": true}')
    refused_ns('{"bundles": "4"}')
    refused_pt('{"properties": []}')
    refused_pt('{"properties": "a=b"}')


def test_row_nan_and_infinity_are_refused_anywhere() -> None:
    # Python's json reads them; Jackson's ALLOW_NON_NUMERIC_NUMBERS is off, whatever the key
    for token in ["NaN", "Infinity", "-Infinity"]:
        assert "ALLOW_NON_NUMERIC_NUMBERS" in refused_pt('{"partitions": ' + token + "}")
        refused_ns('{"x_unknown": ' + token + ', "message_ttl_in_seconds": 60}')
    # a number too big for a double is still a number token: fine where nobody reads it
    assert ns('{"x_unknown": 1e400, "message_ttl_in_seconds": 60}').message_ttl_seconds == 60


def test_row_repeated_key_last_wins_and_every_occurrence_must_bind() -> None:
    assert pt('{"partitions": 1, "partitions": 3}') == (3, False, ())
    assert ns('{"message_ttl_in_seconds": 60, "message_ttl_in_seconds": null}').message_ttl_seconds is None
    doc = '{"retention_policies": {"retentionTimeInMinutes": 1}, "retention_policies": {"retentionSizeInMB": 2}}'
    assert fields(ns(doc))[:2] == (0, 2)  # the last object, not a merge
    assert pt('{"properties": {"a": "1", "a": "2"}}') == (0, False, (("a", "2"),))
    # Jackson binds the earlier occurrence too, and fails on it
    assert "partitions" in refused_pt('{"partitions": "x", "partitions": 3}')
    refused_ns('{"retention_policies": {"retentionTimeInMinutes": "x", "retentionTimeInMinutes": 1}}')
    refused_ns('{"retention_policies": 5, "retention_policies": null}')
    refused_pt('{"properties": {"a": ["1"], "a": "2"}}')
    # keys nobody reads may repeat with anything
    assert pt('{"x": [], "x": "y", "partitions": 2}') == (2, False, ())


def test_row_content_after_the_document_is_never_read() -> None:
    # FAIL_ON_TRAILING_TOKENS is off: readValue stops after the root value
    assert pt('{"partitions": 3} trailing garbage') == (3, False, ())
    assert pt('{"partitions": 3}{"partitions": 5}') == (3, False, ())
    assert pt(b'{"partitions": 3}\xff\xfe\x00') == (3, False, ())
    assert ns(json.dumps(BROKER_JSON) + "]").message_ttl_seconds == 3600
    assert "invalid UTF-8" in refused_pt(b'{"partitions": 3, "x": "\xff"}')


@pytest.mark.parametrize(
    "data",
    [
        '{"partitions": 3 // comment\n}',
        '{"partitions": 3 /* comment */}',
        '# comment\n{"partitions": 3}',
        "{'partitions': 3}",
        "{partitions: 3}",
        '{"partitions": 3,}',
        '{"partitions": 03}',
        '{"partitions": +3}',
        '{"x": .5, "partitions": 3}',
        '{"x": "tab\there", "partitions": 3}',
        '{"x": "\\x41", "partitions": 3}',
        '{"partitions": 3',
    ],
)
def test_row_json_extensions_jackson_leaves_off_are_refused(data: str) -> None:
    refused_pt(data)


def test_row_null_document_is_refused() -> None:
    # Jackson returns null; MetadataCacheImpl then answers "absent" for a znode that exists
    assert "null" in refused_ns(b"null")
    refused_pt(b"  null  ")


def test_row_empty_value_is_refused() -> None:
    for data in [b"", b" \n\t\r "]:
        assert "empty" in refused_ns(data)
        refused_pt(data)


@pytest.mark.parametrize("data", [b"[1, 2]", b"[]", b'"x"', b'""', b"3", b"true", b"}"])
def test_row_a_root_that_is_not_an_object_is_refused(data: bytes) -> None:
    refused_ns(data)
    refused_pt(data)


def test_row_charsets_jackson_detects() -> None:
    text = json.dumps(BROKER_JSON, ensure_ascii=False) + "\n"
    expected = fields(ns(text.encode("utf-8")))
    for encoding in ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]:
        assert fields(ns(text.encode(encoding))) == expected, encoding
    assert pt('{"properties": {"k": "é"}}'.encode("utf-16")) == (0, False, (("k", "é"),))
    refused_pt(b"\x00\x00\xff\xfe" + '{"partitions": 1}'.encode("utf-32-le"))  # UCS-4 order 2143
    refused_pt(b"\x00{\x00\x00")  # UCS-4 order 3412
    refused_pt('{"partitions": 1}'.encode("utf-16-le") + b"\x00")  # half a character


def test_row_deep_nesting_is_refused() -> None:
    refused_ns(b"[" * 100_000)
    refused_pt(b'{"x": ' * 100_000)


def test_row_namespace_retention_policies() -> None:
    assert fields(ns({"retention_policies": None}))[:2] == (None, None)  # broker default
    assert fields(ns({"retention_policies": {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}}))[:2] == (-1, -1)


def test_row_namespace_message_ttl_zero_null_and_absent_are_unset() -> None:
    # Integer in current brokers (null = unset), int in older ones (0 = unset): both mean the broker default
    docs: list[dict[str, Any]] = [{}, {"message_ttl_in_seconds": None}, {"message_ttl_in_seconds": 0}]
    for doc in docs:
        assert ns(doc).message_ttl_seconds is None
    assert ns({"message_ttl_in_seconds": 3600}).message_ttl_seconds == 3600


def test_row_namespace_subscription_expiration() -> None:
    assert ns({}).subscription_expiration_minutes is None
    assert ns({"subscription_expiration_time_minutes": None}).subscription_expiration_minutes is None
    assert ns({"subscription_expiration_time_minutes": 0}).subscription_expiration_minutes == 0
    assert ns({"subscription_expiration_time_minutes": "90"}).subscription_expiration_minutes == 90


def test_row_namespace_delayed_delivery_max_delay() -> None:
    no_key = {"delayed_delivery_policies": {"tickTime": 1000, "active": True}}
    assert ns(no_key).delayed_delivery_max_delay_ms == 0  # primitive long: 0 = unbounded, overrides the broker
    with_key = {"delayed_delivery_policies": {"tickTime": 1, "active": True, "maxDeliveryDelayInMillis": 600_000}}
    assert ns(with_key).delayed_delivery_max_delay_ms == 600_000
    assert ns({"delayed_delivery_policies": None}).delayed_delivery_max_delay_ms is None  # broker setting applies
    refused_ns('{"delayed_delivery_policies": {"maxDeliveryDelayInMillis": "soon"}}')


@pytest.mark.parametrize(
    "boundaries",
    [
        [0, 4294967295],  # Jackson makes them Strings, Long.decode reads decimal
        ["0", "4294967295"],
        ["#0", "#ffffffff"],
        ["00", "037777777777"],
        ["-0x1", "0xffffffff"],
        ["0x", "0xffffffff"],
        ["0x00000000", None],
        ["0x00000000 ", "0xffffffff"],
        ["0x80000000", "0x00000000", "0xffffffff"],
        ["0x00000000", "0x00000000", "0xffffffff"],
        ["0x00000000", "0x100000000"],
        ["0x00000000"],
        [],
        "0x00000000_0xffffffff",
    ],
)
def test_row_namespace_bundle_boundaries_other_than_brokers_write_are_refused(boundaries: Any) -> None:
    refused_ns(json.dumps({"bundles": {"boundaries": boundaries, "numBundles": 1}}))


def test_row_namespace_bundles() -> None:
    p = ns({"bundles": {"boundaries": ["0x00000000", "0X7FFFFFFF", "0xffffffff"], "numBundles": 2}})
    assert p.bundle_boundaries == ("0x00000000", "0X7FFFFFFF", "0xffffffff") and p.num_bundles == 2
    assert ns({"bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": "1"}}).num_bundles == 1
    assert ns({}).bundle_boundaries == () and ns({"bundles": None}).num_bundles == 0


def test_row_namespace_deleted() -> None:
    assert ns({"deleted": True}).deleted is True and ns({}).deleted is False


def test_row_namespace_a_field_we_do_not_read_is_not_type_checked() -> None:
    # A broker whose Policies has these fields refuses the document; ours reads the fields it uses (decided).
    doc = {**BROKER_JSON, "replication_clusters": 5, "encryption_required": "maybe", "backlog_quota_map": []}
    assert fields(ns(doc)) == fields(ns(BROKER_JSON))


def test_row_partitioned_partitions() -> None:
    assert pt('{"partitions": 0}') == (0, False, ())
    assert pt('{"partitions": -1}') == (-1, False, ())  # read as written; <= 0 is not partitioned for the broker
    refused_pt('{"partitions": "x"}')


def test_row_partitioned_properties_are_strings() -> None:
    data = '{"partitions": 2, "properties": {"a": 1.50, "b": -0, "c": 1e2, "d": true, "e": null, "f": "s"}}'
    props = (("a", "1.50"), ("b", "-0"), ("c", "1e2"), ("d", "true"), ("e", None), ("f", "s"))
    assert pt(data) == (2, False, props)  # numbers as written, as Jackson gives a String field their text


def test_row_partitioned_deleted() -> None:
    assert pt('{"partitions": 2, "deleted": true}') == (2, True, ())
    assert pt('{"partitions": 2}') == (2, False, ())


# ------------------------------------------------------------------------------------------------ older / newer

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
UNKNOWN_KEYS = st.text(max_size=10).map(lambda s: "x_future_" + s)
EXTRAS = st.dictionaries(UNKNOWN_KEYS, JSON_VALUES, max_size=4)


@st.composite
def current_policies(draw: st.DrawFn) -> dict[str, Any]:
    """The known fields, all present, as today's broker writes them."""
    n = draw(st.integers(1, 64))
    bounds = list(even_boundaries(n))
    return {
        "retention_policies": {"retentionTimeInMinutes": draw(INT32), "retentionSizeInMB": draw(INT64)},
        "message_ttl_in_seconds": draw(st.none() | INT32),
        "subscription_expiration_time_minutes": draw(st.none() | INT32),
        "delayed_delivery_policies": {
            "tickTime": draw(INT64),
            "active": draw(st.booleans()),
            "maxDeliveryDelayInMillis": draw(INT64),
        },
        "bundles": {"boundaries": bounds, "numBundles": n},
        "deleted": draw(st.booleans()),
        "replication_clusters": ["standalone"],
    }


def broker_meaning(doc: dict[str, Any]) -> tuple[Any, ...]:
    """The Java fields after Jackson: missing or null -> the field's default (primitives 0 / false)."""
    r, d, b = doc.get("retention_policies"), doc.get("delayed_delivery_policies"), doc.get("bundles")
    bounds = tuple(b.get("boundaries") or ()) if b is not None else ()
    num = b.get("numBundles") if b is not None else 0
    return (
        None if r is None else r.get("retentionTimeInMinutes") or 0,
        None if r is None else r.get("retentionSizeInMB") or 0,
        doc.get("message_ttl_in_seconds") or None,
        None if d is None else bool(d.get("active")),
        None if d is None else d.get("tickTime") or 0,
        None if d is None else d.get("maxDeliveryDelayInMillis") or 0,
        doc.get("subscription_expiration_time_minutes"),
        bounds,
        num if num is not None else max(len(bounds) - 1, 0),
        bool(doc.get("deleted")),
    )


NESTED = ("retention_policies", "delayed_delivery_policies", "bundles")
NESTED_KEYS = {
    "retention_policies": ["retentionTimeInMinutes", "retentionSizeInMB"],
    "delayed_delivery_policies": ["tickTime", "active", "maxDeliveryDelayInMillis"],
    "bundles": ["boundaries", "numBundles"],
}


@given(current_policies(), st.data())
def test_older_broker_documents_read_with_the_broker_meaning(doc: dict[str, Any], data: st.DataObject) -> None:
    """An older broker did not write keys introduced later (at the top level and inside the nested objects)."""
    older = {k: v for k, v in doc.items() if not data.draw(st.booleans(), label=f"drop {k}")}
    for key in NESTED:
        if isinstance(older.get(key), dict):
            kept = [k for k in NESTED_KEYS[key] if not data.draw(st.booleans(), label=f"drop {key}.{k}")]
            older[key] = {k: older[key][k] for k in kept}
    assert fields(ns(older)) == broker_meaning(older)


@given(current_policies(), EXTRAS, st.dictionaries(st.sampled_from([*NESTED, "auth_policies"]), EXTRAS), st.data())
def test_newer_broker_documents_read_with_the_broker_meaning(
    doc: dict[str, Any], top: dict[str, Any], nested: dict[str, dict[str, Any]], data: st.DataObject
) -> None:
    """A newer broker writes keys we do not know, of any JSON type, at the top level and in nested objects; it may
    also write them in any order and pretty-printed, and a document in UTF-16 reads the same."""
    newer: dict[str, Any] = {**doc, **top, "auth_policies": {"namespace_auth": {}}}
    for key, extra in nested.items():
        newer[key] = {**newer[key], **extra}
    items = data.draw(st.permutations(list(newer.items())), label="key order")
    text = json.dumps(dict(items), indent=data.draw(st.sampled_from([None, 2])))
    encoding = data.draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16"]), label="charset")
    p = ns(text.encode(encoding))
    assert fields(p) == broker_meaning(doc) == fields(ns(doc))
    assert all(p.raw[k] == v for k, v in top.items())


@given(
    st.none() | INT32,
    st.none() | st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=4),
    st.none() | st.booleans(),
    EXTRAS,
)
def test_partitioned_topic_older_and_newer_documents(
    partitions: int | None, properties: dict[str, str] | None, deleted: bool | None, extra: dict[str, Any]
) -> None:
    """``properties`` and ``deleted`` came after ``partitions``: an older broker leaves them out; a newer one may
    add keys we do not know."""
    doc: dict[str, Any] = {"partitions": partitions, "properties": properties, "deleted": deleted}
    older = {k: v for k, v in doc.items() if v is not None}
    expected = (partitions or 0, bool(deleted), tuple((properties or {}).items()))
    assert pt(json.dumps(older)) == expected
    assert pt(json.dumps({**extra, **older})) == expected


# ------------------------------------------------------------------------------------------------ encoders, bundles


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


@pytest.mark.parametrize(
    ("data", "ok"),
    [
        (b'{"adminRoles": [], "allowedClusters": ["c1"]}', True),
        (b'\xef\xbb\xbf{"allowedClusters": ["c1"]}', True),  # a UTF-8 BOM: Jackson skips it
        ('{"allowedClusters": ["c1"]}'.encode("utf-16"), True),  # UTF-16 with a BOM
        (b'{"allowedClusters": ["c1"]} trailing \xff', True),  # never read after the object
        (b'{"x": NaN}', False),  # ALLOW_NON_NUMERIC_NUMBERS is off
        (b"null", False),  # the broker reads it as absent while the znode exists
        (b"", False),
        (b"[1]", False),
    ],
)
def test_every_json_znode_is_read_as_jackson_reads_the_document(data: bytes, ok: bool) -> None:
    from pulsar_ops.formats.policies import parse_json_object

    if ok:
        assert parse_json_object(data, "/admin/policies/t")["allowedClusters"] == ["c1"]
    else:
        with pytest.raises(DecodeError):
            parse_json_object(data, "/admin/policies/t")


LP = "/admin/local-policies/public/default"
SPLIT = ["0x00000000", "0x20000000", "0x40000000", "0x80000000", "0xffffffff"]


def test_local_policies_bundles_are_read_with_the_policies_binder() -> None:
    doc: dict[str, Any] = {
        "bundles": {"boundaries": SPLIT, "numBundles": 4},
        "bookieAffinityGroup": None,
        "migrated": False,
    }
    assert parse_local_policies(json.dumps(doc).encode(), LP).bundle_boundaries == tuple(SPLIT)
    # keys a newer broker adds are skipped, as FAIL_ON_UNKNOWN_PROPERTIES is off
    doc["namespaceAntiAffinityGroup"] = "g"
    doc["x_future"] = {"k": [1, 2]}
    assert parse_local_policies(json.dumps(doc).encode(), LP).bundle_boundaries == tuple(SPLIT)


@pytest.mark.parametrize("doc", [{}, {"bundles": None}, {"migrated": True}])
def test_local_policies_without_bundles_are_one_full_range_bundle(doc: dict[str, Any]) -> None:
    assert parse_local_policies(json.dumps(doc).encode(), LP).bundle_boundaries == FULL_RANGE


@pytest.mark.parametrize(
    "bundles",
    [{}, {"numBundles": 4}, {"boundaries": None}, {"boundaries": ["0x00000000"]}, {"boundaries": [0, 1]}, "x"],
)
def test_local_policies_bundles_the_broker_cannot_build_are_refused(bundles: Any) -> None:
    with pytest.raises(DecodeError):
        parse_local_policies(json.dumps({"bundles": bundles}).encode(), LP)


def test_local_policies_document_is_read_like_every_json_znode() -> None:
    with pytest.raises(DecodeError):
        parse_local_policies(b"null", LP)
    with pytest.raises(DecodeError):
        parse_local_policies(b'{"bundles": NaN}', LP)


def test_effective_boundaries_prefer_the_local_policies() -> None:
    half = ("0x00000000", "0x80000000", "0xffffffff")
    assert effective_boundaries(half, SPLIT) == tuple(SPLIT)  # a split the policies do not show
    assert effective_boundaries(half, None) == half  # no local policies yet: the broker copies the policies
    assert effective_boundaries((), None) == FULL_RANGE  # neither: one full-range bundle
    assert effective_boundaries(half, FULL_RANGE) == FULL_RANGE  # local policies without bundles win too
