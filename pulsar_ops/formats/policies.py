"""Readers for the JSON znodes Pulsar's admin layer writes, reading them as the broker does; realistic encoders.

The broker reads ``/admin/policies/<tenant>/<ns>`` (``Policies``) and ``/admin/partitioned-topics/...``
(``PartitionedTopicMetadata``) through its metadata cache: ``MetadataCacheImpl`` -> ``JSONMetadataSerdeSimpleType``
-> ``ObjectMapperFactory``'s mapper ``readValue(bytes, type)``. That mapper is a plain Jackson 2 ``ObjectMapper`` with
``FAIL_ON_UNKNOWN_PROPERTIES`` off and ``READ_UNKNOWN_ENUM_VALUES_AS_NULL`` on; no parser feature is changed, so
every other Jackson default applies. ``docs/formats.md`` ("Namespace policies and partitioned-topic metadata")
lists each input, what the broker makes of it and what these readers do; every row has a test in
``tests/unit/formats/test_policies.py``. In short: unknown keys are skipped (kept in ``raw``), a missing key or a
JSON null reads as the Java field's default, scalars are coerced as Jackson coerces them, and a value Jackson
refuses is a DecodeError (an error is never evidence of absence). Where upstream's reading depends on the Jackson
version or would be a misreading for our consumers, these readers refuse (a refusal costs a report, an
over-acceptance could cost a deletion).

Bundles: a topic's bundle is found with CRC32 of the full topic name (``persistent://t/ns/x-partition-3``),
``zlib.crc32(name.encode()) & 0xffffffff``, against the sorted ``bundles.boundaries``: ``[lower, upper)``,
the last bundle's upper bound inclusive. Which boundaries: ``NamespaceBundleFactory.loadBundles``
(pulsar-broker, ``org/apache/pulsar/common/naming``) reads ``/admin/local-policies/<ns>`` first and takes its
``bundles``; only when that znode is absent does it copy ``Policies.bundles`` into new local policies. A bundle
split writes the local policies first (``NamespaceService.updateNamespaceBundles``) and the policies in a second,
separate write (``updateNamespaceBundlesForPolicies``); with a configuration store shared by several clusters the
policies hold whichever cluster's split came last. So ``Policies.bundles`` can differ from the bundles in use.
A null ``bundles`` on either side means one bundle, the full range (``NamespaceBundles.getPartitions(null)``).
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

from pulsar_ops.errors import DecodeError

FULL_RANGE = ("0x00000000", "0xffffffff")

T = TypeVar("T")


@dataclass(frozen=True)
class NamespacePolicies:
    retention_time_minutes: int | None  # None = no retention_policies object (broker default applies)
    retention_size_mb: int | None
    message_ttl_seconds: int | None  # None = absent, null or 0 (broker default applies)
    delayed_delivery_active: bool | None  # None = no delayed_delivery_policies object
    delayed_delivery_tick_ms: int | None
    delayed_delivery_max_delay_ms: int | None  # None = no delayed_delivery_policies (broker default applies)
    subscription_expiration_minutes: int | None  # None = absent or null
    bundle_boundaries: tuple[str, ...]  # () = no bundles / boundaries in these policies
    num_bundles: int
    deleted: bool
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class LocalPolicies:
    bundle_boundaries: tuple[str, ...]  # the bundles the broker builds from these local policies
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class PartitionedTopicMetadata:
    partitions: int
    deleted: bool
    properties: tuple[tuple[str, str | None], ...]  # a JSON null value stays None (a null in the Java map)


def parse_json_object(data: bytes | str, path: str) -> dict[str, Any]:
    """The root JSON object of any JSON znode (tenants, local policies, clusters...) as the broker's Jackson
    ``ObjectMapper`` reads the document (charset and BOM detection, NaN refused, content after the object never
    read, a null document refused); anything else is a DecodeError naming ``path``."""
    return _read_object(data, path, _DECODER)


# ------------------------------------------------------------------------ the document, as Jackson reads it


class _Repeated(dict[str, Any]):
    """A JSON object that names a key more than once. Jackson binds every occurrence in document order (the last
    one stays) and refuses the document when any of them does not bind; ``earlier`` keeps the ones before the last.
    """

    earlier: dict[str, list[Any]]


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    repeated = _Repeated(obj)
    occurrences: dict[str, list[Any]] = {}
    for key, value in pairs:
        occurrences.setdefault(key, []).append(value)
    repeated.earlier = {k: vs[:-1] for k, vs in occurrences.items() if len(vs) > 1}
    return repeated


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (Jackson's ALLOW_NON_NUMERIC_NUMBERS is off)")


class _IntText(int):
    """A JSON integer that keeps its text: Jackson gives a String-typed field the number as written."""

    text: str

    def __new__(cls, text: str) -> _IntText:
        self = super().__new__(cls, text)
        self.text = text
        return self


class _FloatText(float):
    """A JSON fraction or exponent number that keeps its text (see ``_IntText``)."""

    text: str

    def __new__(cls, text: str) -> _FloatText:
        self = super().__new__(cls, text)
        self.text = text
        return self


_DECODER = json.JSONDecoder(object_pairs_hook=_object_pairs, parse_constant=_no_constant)
# for documents with String-typed values (PartitionedTopicMetadata.properties): numbers keep their text
_TEXT_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_pairs, parse_constant=_no_constant, parse_int=_IntText, parse_float=_FloatText
)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of a byte that is not UTF-8


def _charset(raw: bytes, path: str) -> tuple[str, int]:
    """The charset Jackson's byte-source bootstrapper picks and the length of the BOM it skips: a BOM (UTF-32,
    UTF-16, UTF-8) when 4 bytes are there, else the zero bytes of the first characters (JSON starts with ASCII)."""
    if len(raw) >= 4:
        quad = int.from_bytes(raw[:4], "big")
        if quad == 0x0000FEFF:
            return "utf-32-be", 4
        if quad == 0xFFFE0000:
            return "utf-32-le", 4
        if quad in (0x0000FFFE, 0xFEFF0000):
            raise DecodeError(path, "UCS-4 in an unusual byte order (2143 / 3412): Jackson refuses it")
        if quad >> 16 == 0xFEFF:
            return "utf-16-be", 2
        if quad >> 16 == 0xFFFE:
            return "utf-16-le", 2
        if quad >> 8 == 0xEFBBBF:
            return "utf-8", 3
        if quad >> 8 == 0:
            return "utf-32-be", 0
        if quad & 0x00FFFFFF == 0:
            return "utf-32-le", 0
        if quad & 0xFF00FFFF == 0 or quad & 0xFFFF00FF == 0:
            raise DecodeError(path, "UCS-4 in an unusual byte order (2143 / 3412): Jackson refuses it")
        head = quad >> 16
    elif len(raw) >= 2:
        head = int.from_bytes(raw[:2], "big")
    else:
        return "utf-8", 0
    if head & 0xFF00 == 0:
        return "utf-16-be", 0
    if head & 0x00FF == 0:
        return "utf-16-le", 0
    return "utf-8", 0


def _read_object(data: bytes | str, path: str, decoder: json.JSONDecoder) -> dict[str, Any]:
    """The root JSON object of a value as ``ObjectMapper.readValue`` reads it into a bean: the first JSON value
    (anything after it is never read: ``FAIL_ON_TRAILING_TOKENS`` is off), which must be an object."""
    escaped = False
    if isinstance(data, str):
        text = data
    else:
        raw = bytes(data)
        charset, bom = _charset(raw, path)
        try:
            text = raw[bom:].decode(charset)
        except UnicodeDecodeError as exc:
            if charset != "utf-8":
                raise DecodeError(path, f"invalid {charset} text: {exc.reason}") from None
            # Jackson decodes UTF-8 as it parses: bytes after the document are never looked at
            text, escaped = raw[bom:].decode("utf-8", "surrogateescape"), True
    try:
        leading = _WHITESPACE.match(text)
        start = leading.end() if leading else 0
        if start == len(text):
            raise DecodeError(path, "empty value: no JSON document (Jackson: no content to map)")
        value, end = decoder.raw_decode(text, start)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise DecodeError(path, f"invalid JSON: {str(exc)[:120]}") from None
    if escaped and _ESCAPED_BYTE.search(text, 0, end):
        raise DecodeError(path, "invalid UTF-8 inside the JSON document")
    if value is None:
        # Jackson returns null; the metadata cache then answers "absent" for a znode that exists
        raise DecodeError(path, "the JSON document is null (the broker reads it as absent while the znode exists)")
    if not isinstance(value, dict):
        raise DecodeError(path, f"expected a JSON object, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


# ------------------------------------------------------------------------ fields, as Jackson binds them

_RANGES = {32: ("int", -(2**31), 2**31 - 1), 64: ("long", -(2**63), 2**63 - 1)}
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")  # what Integer.parseInt / Long.parseLong read, ASCII digits only
_BOUNDARY_TEXT = re.compile(r"0[xX][0-9a-fA-F]+")


def _show(value: Any) -> str:
    text = getattr(value, "text", None)
    return text[:60] if isinstance(text, str) else json.dumps(value)[:60]


def _refuse(key: str, path: str, expected: str, value: Any) -> NoReturn:
    raise DecodeError(path, f"{key}: expected {expected}, got {_show(value)}")


def _java_integer(value: Any, key: str, path: str, bits: int) -> int | None:
    """A JSON value bound to a Java ``int`` (bits 32) or ``long`` (64), boxed or primitive, as Jackson 2 binds it.
    None where Jackson binds null (JSON null, ``""``, ``"null"``): a primitive field then holds 0."""
    name, lo, hi = _RANGES[bits]
    if value is None:
        return None
    if isinstance(value, bool):
        _refuse(key, path, f"a Java {name}", value)
    if isinstance(value, int):
        if lo <= value <= hi:
            return int(value)
        raise DecodeError(path, f"{key}: {_show(value)} is out of range of Java {name}")
    if isinstance(value, float):  # ACCEPT_FLOAT_AS_INT: range-checked as a double, then truncated toward zero
        if math.isfinite(value) and float(lo) <= value <= float(hi):
            return max(lo, min(hi, int(value)))  # (long) of 2^63 is Long.MAX_VALUE
        raise DecodeError(path, f"{key}: {_show(value)} is out of range of Java {name}")
    if isinstance(value, str):  # scalar coercion from a String
        if value in ("", "null"):
            return None
        if _INTEGER_TEXT.fullmatch(value):
            try:
                number = int(value)
            except ValueError:  # more digits than Python converts: far outside any Java range
                number = hi + 1
            if lo <= number <= hi:
                return number
            raise DecodeError(path, f"{key}: {_show(value)} is out of range of Java {name}")
    _refuse(key, path, f"a Java {name}", value)


def _int(value: Any, key: str, path: str) -> int | None:
    return _java_integer(value, key, path, 32)


def _long(value: Any, key: str, path: str) -> int | None:
    return _java_integer(value, key, path, 64)


def _boolean(value: Any, key: str, path: str) -> bool | None:
    """A JSON value bound to a Java ``boolean`` / ``Boolean``; None where Jackson binds null (primitive: false).
    Numbers: 0 is false, any other integer true. Strings: ``true``/``True``/``false``/``False`` (``TRUE`` and
    ``FALSE`` only since Jackson 2.12: refused here)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    if value in ("", "null"):
        return None
    _refuse(key, path, "a Java boolean", value)


def _object(value: Any, key: str, path: str) -> Mapping[str, Any] | None:
    """A JSON value bound to a bean or a map: an object or null (no empty-string or empty-array coercion)."""
    if value is None or isinstance(value, dict):
        return value
    _refuse(key, path, "an object", value)


def _string(value: Any, key: str, path: str) -> str | None:
    """A JSON value bound to a Java ``String``: scalars as their JSON text, null as null; arrays and objects refused."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = getattr(value, "text", None)
        return text if isinstance(text, str) else json.dumps(value)
    _refuse(key, path, "a string", value)


def _bind(obj: Mapping[str, Any], key: str, bind: Callable[[Any, str, str], T], path: str, where: str = "") -> T:
    """``bind`` applied to ``obj[key]`` (None when absent), after checking that every earlier occurrence of a
    repeated key binds too."""
    label = f"{where}.{key}" if where else key
    if isinstance(obj, _Repeated):
        for earlier in obj.earlier.get(key, ()):
            bind(earlier, label, path)
    return bind(obj.get(key), label, path)


# ------------------------------------------------------------------------ namespace Policies


def _retention(value: Any, key: str, path: str) -> tuple[int, int] | None:
    """``RetentionPolicies``: ``int retentionTimeInMinutes``, ``long retentionSizeInMB`` (primitives: 0 when
    missing or null)."""
    obj = _object(value, key, path)
    if obj is None:
        return None
    minutes = _bind(obj, "retentionTimeInMinutes", _int, path, key)
    size = _bind(obj, "retentionSizeInMB", _long, path, key)
    return minutes or 0, size or 0


def _delayed(value: Any, key: str, path: str) -> tuple[bool, int, int] | None:
    """``DelayedDeliveryPoliciesImpl``: ``long tickTime``, ``boolean active``, ``long maxDeliveryDelayInMillis``
    (primitives: 0 / false when missing or null)."""
    obj = _object(value, key, path)
    if obj is None:
        return None
    tick = _bind(obj, "tickTime", _long, path, key)
    active = _bind(obj, "active", _boolean, path, key)
    return bool(active), tick or 0, _max_delay(obj, path, key)


def _max_delay(delayed: Mapping[str, Any], path: str, where: str = "delayed_delivery_policies") -> int:
    """``delayed_delivery_policies.maxDeliveryDelayInMillis`` as the broker reads it, for a namespace that has
    that object (without one the broker setting applies: the caller records None).

    ``DelayedDeliveryPolicies.getMaxDeliveryDelayInMillis`` is a primitive long: a policies object written by a
    broker that predates the field (or that left it 0) gives 0, and the namespace value 0 (unbounded) overrides
    the broker's ``delayedDeliveryMaxDelayInMillis`` (``AbstractTopic.updateTopicPolicyByNamespacePolicy``).
    """
    value = _bind(delayed, "maxDeliveryDelayInMillis", _long, path, where)
    return 0 if value is None else value


def _boundaries(value: Any, key: str, path: str) -> tuple[str, ...]:
    """``BundlesData.boundaries`` (``List<String>``). Jackson takes any list of scalars (numbers become their
    text) and the broker reads each with ``Long.decode`` when it loads the bundles; our consumers read the hex
    after ``0x``, so only what brokers write is accepted: at least two ``0x`` hex strings, strictly increasing,
    within 32 bits."""
    if value is None:
        return ()
    if not isinstance(value, list):
        _refuse(key, path, "a list of strings", value)
    for b in value:
        if not isinstance(b, str) or not _BOUNDARY_TEXT.fullmatch(b):
            raise DecodeError(path, f"{key}: malformed bundle boundary {_show(b)} (expected 0x followed by hex)")
    edges = [int(b, 16) for b in value]
    if len(edges) < 2 or any(a >= b for a, b in itertools.pairwise(edges)) or edges[-1] > 0xFFFFFFFF:
        raise DecodeError(path, f"{key}: bundle boundaries must be at least 2 strictly increasing 32-bit values")
    return tuple(value)


def _bundles(value: Any, key: str, path: str) -> tuple[tuple[str, ...], int] | None:
    """``BundlesDataImpl``: ``List<String> boundaries``, ``int numBundles`` (missing: the count the boundaries
    define, which is what the broker's bundles are made of)."""
    obj = _object(value, key, path)
    if obj is None:
        return None
    bounds = _bind(obj, "boundaries", _boundaries, path, key)
    num = _bind(obj, "numBundles", _int, path, key)
    return bounds, num if num is not None else max(len(bounds) - 1, 0)


def parse_namespace_policies(data: bytes | str, path: str) -> NamespacePolicies:
    """Namespace ``Policies`` as the broker reads them (see the module docstring and docs/formats.md)."""
    obj = _read_object(data, path, _DECODER)
    retention = _bind(obj, "retention_policies", _retention, path)
    delayed = _bind(obj, "delayed_delivery_policies", _delayed, path)
    bundles = _bind(obj, "bundles", _bundles, path)
    ttl = _bind(obj, "message_ttl_in_seconds", _int, path)  # Integer (int in older brokers): null and 0 = unset
    bounds, num = bundles if bundles is not None else ((), 0)
    return NamespacePolicies(
        retention_time_minutes=None if retention is None else retention[0],
        retention_size_mb=None if retention is None else retention[1],
        message_ttl_seconds=ttl or None,
        delayed_delivery_active=None if delayed is None else delayed[0],
        delayed_delivery_tick_ms=None if delayed is None else delayed[1],
        delayed_delivery_max_delay_ms=None if delayed is None else delayed[2],
        subscription_expiration_minutes=_bind(obj, "subscription_expiration_time_minutes", _int, path),
        bundle_boundaries=bounds,
        num_bundles=num,
        deleted=bool(_bind(obj, "deleted", _boolean, path)),
        raw=MappingProxyType(obj),
    )


def parse_local_policies(data: bytes | str, path: str) -> LocalPolicies:
    """``LocalPolicies`` (``bundles``, ``bookieAffinityGroup``, ``namespaceAntiAffinityGroup``, ``migrated``) as
    the broker reads them, for the one field that decides what a topic's bundle is: a missing or null
    ``bundles`` is the full range (``NamespaceBundles.getPartitions(null)``); a ``bundles`` object without
    boundaries is refused (the broker cannot build bundles from it: ``getBoundaries().size()`` on a null list)."""
    obj = _read_object(data, path, _DECODER)
    bundles = _bind(obj, "bundles", _bundles, path)
    if bundles is None:
        return LocalPolicies(FULL_RANGE, MappingProxyType(obj))
    if not bundles[0]:
        raise DecodeError(path, "bundles: no boundaries (the broker cannot build this namespace's bundles)")
    return LocalPolicies(bundles[0], MappingProxyType(obj))


def effective_boundaries(policies: Sequence[str], local: Sequence[str] | None) -> tuple[str, ...]:
    """The boundaries a broker builds the namespace's bundles from: the local policies' when that znode exists
    (``local`` not None), else ``Policies.bundles`` (copied into new local policies on first load), else the full
    range (``NamespaceBundleFactory.loadBundles`` / ``copyToLocalPolicies``)."""
    if local is not None:
        return tuple(local)
    return tuple(policies) if len(policies) >= 2 else FULL_RANGE


# ------------------------------------------------------------------------ PartitionedTopicMetadata


def _string_map(value: Any, key: str, path: str) -> tuple[tuple[str, str | None], ...]:
    """A ``Map<String, String>``: an object whose values bind to ``String``."""
    obj = _object(value, key, path)
    if obj is None:
        return ()
    return tuple((k, _bind(obj, k, _string, path, key)) for k in obj)


def parse_partitioned_topic(data: bytes | str, path: str) -> PartitionedTopicMetadata:
    """``PartitionedTopicMetadata`` as the broker reads it: ``int partitions`` (0 when missing: not partitioned
    for the broker, as is any count <= 0), ``Map<String, String> properties``, ``boolean deleted``."""
    obj = _read_object(data, path, _TEXT_DECODER)
    partitions = _bind(obj, "partitions", _int, path)
    properties = _bind(obj, "properties", _string_map, path)
    deleted = _bind(obj, "deleted", _boolean, path)
    return PartitionedTopicMetadata(partitions or 0, bool(deleted), properties)


def parse_bundle_range(name: str, path: str = "") -> tuple[int, int]:
    """``0x00000000_0x40000000`` -> ``(0, 0x40000000)``."""
    parts = name.split("_")
    try:
        if len(parts) != 2 or not all(p[:2].lower() == "0x" for p in parts):
            raise ValueError
        lower, upper = int(parts[0], 16), int(parts[1], 16)
    except ValueError:
        raise DecodeError(
            path or name, f"malformed bundle range {name[:60]!r} (expected 0xLLLLLLLL_0xUUUUUUUU)"
        ) from None
    if not 0 <= lower < upper <= 0xFFFFFFFF:
        raise DecodeError(path or name, f"bundle range {name!r} is empty or outside [0, 0xffffffff]")
    return lower, upper


def format_bundle_range(lower: int, upper: int) -> str:
    return f"0x{lower:08x}_0x{upper:08x}"


def topic_hash(topic: str) -> int:
    return zlib.crc32(topic.encode("utf-8")) & 0xFFFFFFFF


def in_bundle(h: int, lower: int, upper: int) -> bool:
    """Topic hash ``h`` falls in bundle ``[lower, upper)`` (the last bundle's upper bound inclusive)."""
    return lower <= h < upper or h == upper == 0xFFFFFFFF


def _boundary_ints(boundaries: Sequence[str | int], path: str) -> list[int]:
    out = []
    for b in boundaries:
        try:
            out.append(b if isinstance(b, int) else int(str(b), 16))
        except ValueError:
            raise DecodeError(path, f"malformed bundle boundary {str(b)[:30]!r}") from None
    if len(out) < 2 or any(a >= b for a, b in itertools.pairwise(out)):
        raise DecodeError(path, "bundle boundaries must be at least 2 strictly increasing values")
    return out


def bundle_for_topic(topic: str, boundaries: Sequence[str | int]) -> str:
    """The bundle range (``0x..._0x...``) owning ``topic`` (full name, including ``-partition-N``)."""
    bounds = _boundary_ints(boundaries, topic)
    h = topic_hash(topic)
    if h < bounds[0] or h > bounds[-1]:
        raise DecodeError(topic, f"topic hash 0x{h:08x} outside the namespace bundle boundaries")
    i = bisect.bisect_right(bounds, h) - 1
    if i == len(bounds) - 1:  # h == last upper bound: inclusive
        i -= 1
    return format_bundle_range(bounds[i], bounds[i + 1])


def even_boundaries(num_bundles: int) -> tuple[str, ...]:
    """Boundaries splitting ``[0, 0xffffffff]`` into ``num_bundles`` near-equal bundles (4 -> 0x40000000 steps)."""
    if num_bundles < 1:
        raise ValueError("num_bundles must be >= 1")
    seg, residue = divmod(0xFFFFFFFF, num_bundles)
    bounds, cur = [], 0
    for i in range(num_bundles):
        bounds.append(cur)
        cur += seg + (1 if i < residue else 0)
    bounds.append(0xFFFFFFFF)
    return tuple(f"0x{b:08x}" for b in bounds)


def encode_namespace_policies(**kwargs: Any) -> bytes:
    """Namespace ``Policies`` JSON bytes; the arguments are those of ``namespace_policies_doc``."""
    return json.dumps(namespace_policies_doc(**kwargs), separators=(",", ":")).encode("utf-8")


def namespace_policies_doc(
    *,
    retention_time_minutes: int | None = None,
    retention_size_mb: int | None = None,
    message_ttl_seconds: int | None = None,
    delayed_delivery_active: bool | None = None,
    delayed_delivery_tick_ms: int = 1000,
    delayed_delivery_max_delay_ms: int | None = 0,
    subscription_expiration_minutes: int | None = None,
    num_bundles: int = 4,
    boundaries: Sequence[str] | None = None,
    replication_clusters: Sequence[str] = ("standalone",),
    deleted: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Namespace ``Policies`` JSON object shaped like the broker's (subset of keys; ``extra`` adds/overrides)."""
    bounds = list(boundaries) if boundaries is not None else list(even_boundaries(num_bundles))
    obj: dict[str, Any] = {
        "auth_policies": {"namespace_auth": {}, "destination_auth": {}, "subscription_auth_roles": {}},
        "replication_clusters": list(replication_clusters),
        "bundles": {"boundaries": bounds, "numBundles": len(bounds) - 1},
        "backlog_quota_map": {},
        "clusterDispatchRate": {},
        "topicDispatchRate": {},
        "subscriptionDispatchRate": {},
        "replicatorDispatchRate": {},
        "clusterSubscribeRate": {},
        "publishMaxMessageRate": {},
        "latency_stats_sample_rate": {},
        "deleted": deleted,
        "encryption_required": False,
        "subscription_auth_mode": "None",
        "offload_threshold": -1,
        "schema_auto_update_compatibility_strategy": "Full",
        "schema_compatibility_strategy": "UNDEFINED",
        "is_allow_auto_update_schema": True,
        "schema_validation_enforced": False,
    }
    if retention_time_minutes is not None or retention_size_mb is not None:
        obj["retention_policies"] = {
            "retentionTimeInMinutes": retention_time_minutes if retention_time_minutes is not None else 0,
            "retentionSizeInMB": retention_size_mb if retention_size_mb is not None else 0,
        }
    if message_ttl_seconds is not None:
        obj["message_ttl_in_seconds"] = message_ttl_seconds
    if subscription_expiration_minutes is not None:
        obj["subscription_expiration_time_minutes"] = subscription_expiration_minutes
    if delayed_delivery_active is not None:
        obj["delayed_delivery_policies"] = {
            "tickTime": delayed_delivery_tick_ms,
            "active": delayed_delivery_active,
        }
        if delayed_delivery_max_delay_ms is not None:  # None: as a broker older than the field wrote it
            obj["delayed_delivery_policies"]["maxDeliveryDelayInMillis"] = delayed_delivery_max_delay_ms
    if extra:
        obj.update(extra)
    return obj


def encode_partitioned_topic(
    partitions: int, *, properties: Mapping[str, str] | None = None, deleted: bool | None = None
) -> bytes:
    """PartitionedTopicMetadata JSON: ``{"partitions": N}`` plus ``properties`` / ``deleted`` when given."""
    obj: dict[str, Any] = {"partitions": partitions}
    if properties is not None:
        obj["properties"] = dict(properties)
    if deleted is not None:
        obj["deleted"] = deleted
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")
