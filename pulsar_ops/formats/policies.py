"""Lenient parsers for the JSON znodes Pulsar's admin layer writes, and encoders for realistic values.

Unknown keys are kept (``raw``); a KNOWN key holding a value of the wrong type is a DecodeError (an error is
never evidence of absence). Keys follow ``pulsar-http-apis.md`` §2.9.

Bundles: a topic's bundle is found with CRC32 of the full topic name (``persistent://t/ns/x-partition-3``),
``zlib.crc32(name.encode()) & 0xffffffff``, against the sorted ``bundles.boundaries``: ``[lower, upper)``,
the last bundle's upper bound inclusive.
"""

from __future__ import annotations

import bisect
import itertools
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pulsar_ops.errors import DecodeError

FULL_RANGE = ("0x00000000", "0xffffffff")


@dataclass(frozen=True)
class NamespacePolicies:
    retention_time_minutes: int | None
    retention_size_mb: int | None
    message_ttl_seconds: int | None
    delayed_delivery_active: bool | None
    delayed_delivery_tick_ms: int | None
    delayed_delivery_max_delay_ms: int | None  # None = no delayed_delivery_policies (broker default applies)
    subscription_expiration_minutes: int | None
    bundle_boundaries: tuple[str, ...]
    num_bundles: int
    deleted: bool
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class PartitionedTopicMetadata:
    partitions: int
    deleted: bool
    properties: tuple[tuple[str, str], ...]


def parse_json_object(data: bytes | str, path: str) -> dict[str, Any]:
    """Parse a JSON object (bytes are UTF-8); anything else is a DecodeError naming ``path``."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray | memoryview) else data
        value = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DecodeError(path, f"invalid JSON: {str(exc)[:120]}") from None
    if not isinstance(value, dict):
        raise DecodeError(path, f"expected a JSON object, got {type(value).__name__}")
    return value


def _opt_int(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DecodeError(path, f"{key}: expected an integer, got {json.dumps(value)[:60]}")
    try:
        as_int = int(value)
    except (ValueError, OverflowError):
        raise DecodeError(path, f"{key}: expected an integer, got {json.dumps(value)[:60]}") from None
    if isinstance(value, float) and value != as_int:
        raise DecodeError(path, f"{key}: expected an integer, got {value!r}")
    return as_int


def _opt_bool(obj: Mapping[str, Any], key: str, path: str) -> bool | None:
    value = obj.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise DecodeError(path, f"{key}: expected a boolean, got {json.dumps(value)[:60]}")


def _opt_obj(obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DecodeError(path, f"{key}: expected an object, got {json.dumps(value)[:60]}")
    return value


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


def parse_namespace_policies(data: bytes | str, path: str) -> NamespacePolicies:
    obj = parse_json_object(data, path)
    retention = _opt_obj(obj, "retention_policies", path)
    delayed = _opt_obj(obj, "delayed_delivery_policies", path)
    delayed_object = obj.get("delayed_delivery_policies")  # None: no object, the broker setting applies
    bundles = _opt_obj(obj, "bundles", path)
    raw_bounds = bundles.get("boundaries") or []
    if not isinstance(raw_bounds, list) or not all(isinstance(b, str) for b in raw_bounds):
        raise DecodeError(path, "bundles.boundaries: expected a list of strings")
    num = _opt_int(bundles, "numBundles", path)
    ttl = _opt_int(obj, "message_ttl_in_seconds", path)
    return NamespacePolicies(
        retention_time_minutes=_opt_int(retention, "retentionTimeInMinutes", path),
        retention_size_mb=_opt_int(retention, "retentionSizeInMB", path),
        message_ttl_seconds=ttl if ttl else None,
        delayed_delivery_active=_opt_bool(delayed, "active", path),
        delayed_delivery_tick_ms=_opt_int(delayed, "tickTime", path),
        delayed_delivery_max_delay_ms=None if delayed_object is None else _max_delay(delayed, path),
        subscription_expiration_minutes=_opt_int(obj, "subscription_expiration_time_minutes", path),
        bundle_boundaries=tuple(raw_bounds),
        num_bundles=num if num is not None else max(len(raw_bounds) - 1, 0),
        deleted=bool(_opt_bool(obj, "deleted", path)),
        raw=MappingProxyType(obj),
    )


def _max_delay(delayed: Mapping[str, Any], path: str) -> int:
    """``delayed_delivery_policies.maxDeliveryDelayInMillis`` as the broker reads it, for a namespace that has
    that object (without one the broker setting applies: the caller records None).

    ``DelayedDeliveryPolicies.getMaxDeliveryDelayInMillis`` is a primitive long: a policies object written by a
    broker that predates the field (or that left it 0) gives 0, and the namespace value 0 (unbounded) overrides
    the broker's ``delayedDeliveryMaxDelayInMillis`` (``AbstractTopic.updateTopicPolicyByNamespacePolicy``).
    """
    value = _opt_int(delayed, "maxDeliveryDelayInMillis", path)
    return 0 if value is None else value


def parse_partitioned_topic(data: bytes | str, path: str) -> PartitionedTopicMetadata:
    obj = parse_json_object(data, path)
    partitions = _opt_int(obj, "partitions", path)
    if partitions is None or partitions < 0:
        raise DecodeError(path, "partitioned-topic metadata without a non-negative 'partitions'")
    props = _opt_obj(obj, "properties", path)
    return PartitionedTopicMetadata(
        partitions,
        bool(_opt_bool(obj, "deleted", path)),
        tuple((str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in props.items()),
    )


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
