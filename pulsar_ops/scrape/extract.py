"""From one znode read (store, path, Stat, exact bytes) to snapshot rows. Pure: no kazoo, no I/O.

``extract_znode`` returns the ``znodes`` inventory row (always), the entity rows decoded from the value (per
kind, see ``classify``) and the DecodeError when the value could not be decoded (then no entity rows: a
half-decoded value is never evidence). Oversized values are recorded but not decoded (``input-oversized``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pulsar_ops import pulsar_names
from pulsar_ops.errors import DecodeError, OversizedInputError
from pulsar_ops.formats import names
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.formats.policies import (
    parse_bundle_range,
    parse_json_object,
    parse_local_policies,
    parse_namespace_policies,
    parse_partitioned_topic,
)
from pulsar_ops.formats.schema_locator import decode_schema_locator
from pulsar_ops.formats.service_unit_state import parse_service_unit_state
from pulsar_ops.scrape.classify import PathInfo, classify
from pulsar_ops.scrape.multiread import Stat

DEFAULT_MAX_ZNODE_BYTES = 8 * 1024 * 1024

Row = dict[str, Any]
Rows = list[tuple[str, Row]]


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def total_size(sizes: list[int], path: str) -> int:
    """Sum of a ledger list's sizes; a sum outside int64 means corrupt metadata, not a number to store."""
    total = sum(sizes)
    if not INT64_MIN <= total <= INT64_MAX:
        raise DecodeError(path, f"ledger sizes add up to {total}, outside int64: corrupt ledger list")
    return total


@dataclass(frozen=True)
class ExtractConfig:
    ledgers_root: str = "/ledgers"
    max_znode_bytes: int = DEFAULT_MAX_ZNODE_BYTES


@dataclass
class Extracted:
    znode: tuple[Any, ...]
    info: PathInfo
    rows: Rows = field(default_factory=list)
    error: DecodeError | None = None


def _stat_cols(stat: Stat) -> Row:
    return {
        "version": stat[4],
        "mzxid": stat[1],
        "ctime_ms": stat[2],
        "mtime_ms": stat[3],
        "data_length": stat[8],
    }


def znode_row(store: str, path: str, data: bytes, stat: Stat, kind: str, decode_error: str | None) -> tuple[Any, ...]:
    """The ``znodes`` row in schema column order."""
    return znode_row_with_sha(store, path, stat, kind, decode_error, hashlib.sha256(data).hexdigest())


def znode_row_with_sha(
    store: str, path: str, stat: Stat, kind: str, decode_error: str | None, sha: str
) -> tuple[Any, ...]:
    """``znode_row`` for a value whose sha256 is already computed (the scrape's fast path hashes once)."""
    if path == "/":
        parent, name, depth = "", "", 0
    else:
        cut = path.rfind("/")
        parent = path[:cut] or "/"
        name = path[cut + 1 :]
        depth = path.count("/")
    czxid, mzxid, ctime, mtime, version, cversion, aversion, eph, dlen, nchildren, pzxid = stat
    return (
        store, path, parent, name, depth, version, cversion, aversion, czxid, mzxid, pzxid, ctime, mtime, dlen,
        nchildren, eph, sha, kind, decode_error,
    )  # fmt: skip


def _json_object(data: bytes, path: str) -> tuple[dict[str, Any], str]:
    """The object as the broker reads it, and the value as text (UTF-8, undecodable bytes replaced: the
    document itself may be UTF-16/32 or carry bytes after it that Jackson never reads)."""
    return parse_json_object(data, path), bytes(data).decode("utf-8", "replace")


def _opt_int(v: Any) -> int | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _opt_bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


# ------------------------------------------------------------------------------------------- per kind


def _managed_ledger(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    ml = names.ml_name_from_path(path)
    dec = decode_managed_ledger_info(data, path)
    mli = dec.info
    ledgers = mli.ledgers
    topic = ml.topic
    rows: Rows = [
        (
            "managed_ledgers",
            {
                "path": path,
                "ml_name": ml.ml_name,
                "tenant": ml.tenant,
                "namespace": ml.namespace,
                "is_v1": ml.is_v1,
                "encoded_name": ml.encoded_name,
                "local_name": ml.local_name,
                "topic": topic,
                "base_topic": ml.base_topic,
                "partition": ml.partition,
                **_stat_cols(stat),
                "format": dec.format,
                "compression": dec.compression,
                "ledger_count": len(ledgers),
                "total_size": total_size([li.size or 0 for li in ledgers], path),
                "last_ledger_id": ledgers[-1].ledger_id if ledgers else None,
                "terminated": mli.terminated_position is not None,
                "properties_json": json.dumps(dict(mli.properties), sort_keys=True),
            },
        )
    ]
    last = len(ledgers) - 1
    for idx, li in enumerate(ledgers):
        off = li.offload
        rows.append(
            (
                "ledger_list",
                {
                    "ml_path": path,
                    "topic": topic,
                    "namespace": ml.namespace,
                    "idx": idx,
                    "ledger_id": li.ledger_id,
                    "entries": li.entries,
                    "size": li.size,
                    "timestamp_ms": li.timestamp_ms,
                    "is_last": idx == last,
                    "offloaded": bool(off and off.complete),
                    "bookkeeper_deleted": bool(off and off.bookkeeper_deleted),
                    "offload_timestamp_ms": off.timestamp_ms if off else None,
                },
            )
        )
    return rows


def _cursor(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    cut = path.rfind("/")
    ml_path, encoded = path[:cut], path[cut + 1 :]
    ml = names.ml_name_from_path(ml_path)
    subscription = names.decode(encoded, path)
    dec = decode_cursor_info(data, path)
    ci = dec.info
    topic = ml.topic
    md = ci.mark_delete
    rows: Rows = [
        (
            "cursors",
            {
                "path": path,
                "ml_path": ml_path,
                "topic": topic,
                "namespace": ml.namespace,
                "encoded_name": encoded,
                "subscription": subscription,
                "is_system": pulsar_names.is_system_cursor(encoded),
                "cursors_ledger_id": ci.cursors_ledger_id,
                "mark_delete_ledger_id": md[0] if md else None,
                "mark_delete_entry_id": md[1] if md else None,
                "last_active_ms": ci.last_active_ms,
                "range_count": len(ci.individual_deleted),
                "batch_index_count": len(ci.batched_deletion),
                "compacted_topic_ledger": ci.compacted_topic_ledger,
                **_stat_cols(stat),
                "compression": dec.compression,
            },
        )
    ]
    for idx, r in enumerate(ci.individual_deleted):
        rows.append(
            (
                "ack_ranges",
                {
                    "cursor_path": path,
                    "topic": topic,
                    "subscription": subscription,
                    "idx": idx,
                    "lower_ledger_id": r.lower[0],
                    "lower_entry_id": r.lower[1],
                    "upper_ledger_id": r.upper[0],
                    "upper_entry_id": r.upper[1],
                },
            )
        )
    for name, value in ci.properties:
        rows.append(
            (
                "cursor_properties",
                {
                    "cursor_path": path,
                    "topic": topic,
                    "subscription": subscription,
                    "kind": "long",
                    "name": name,
                    "value": str(value),
                    "bucket_ledger_id": None,
                },
            )
        )
    buckets = dict(ci.bucket_ledgers)
    for name, svalue in ci.cursor_properties:
        rows.append(
            (
                "cursor_properties",
                {
                    "cursor_path": path,
                    "topic": topic,
                    "subscription": subscription,
                    "kind": "string",
                    "name": name,
                    "value": svalue,
                    "bucket_ledger_id": buckets.get(name),
                },
            )
        )
    return rows


@functools.lru_cache(maxsize=4096)
def _custom_json(custom: tuple[tuple[str, bytes], ...]) -> str:
    out: dict[str, str] = {}
    for k, v in custom:
        try:
            out[k] = v.decode("utf-8")
        except UnicodeDecodeError:
            out[k] = "base64:" + base64.b64encode(v).decode("ascii")
    return json.dumps(out, sort_keys=True)


@functools.lru_cache(maxsize=4096)
def _ensembles_json(ensembles: tuple[tuple[int, tuple[str, ...]], ...]) -> str:
    return json.dumps({str(first): list(b) for first, b in ensembles})


def _layout(path: str, cfg: ExtractConfig) -> str:
    top = path[len(cfg.ledgers_root) + 1 :].split("/", 1)[0]
    if len(top) == 2:
        return "legacy"
    if len(top) == 3:
        return "long"
    return "flat"


def _bk_ledger(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    ledger_id = ledger_id_from_path(path, cfg.ledgers_root)
    if ledger_id is None:
        raise DecodeError(path, "not a ledger znode path")
    md = decode_ledger_metadata(data, path)
    ctime = md.ctime_ms if md.ctime_ms else None
    custom = {k: v.decode("utf-8", errors="replace") for k, v in md.custom_metadata}
    return [
        (
            "bk_ledgers",
            {
                "path": path,
                "ledger_id": ledger_id,
                "layout": _layout(path, cfg),
                "format_version": md.format_version,
                "state": md.state,
                "length": md.length,
                "last_entry_id": md.last_entry_id,
                "ensemble_size": md.ensemble_size,
                "write_quorum": md.write_quorum,
                "ack_quorum": md.ack_quorum,
                "digest_type": md.digest_type,
                "ctime_ms": ctime if ctime is not None else stat[2],
                "metadata_ctime_ms": ctime,
                "version": stat[4],
                "mzxid": stat[1],
                "znode_ctime_ms": stat[2],
                "znode_mtime_ms": stat[3],
                "data_length": stat[8],
                "data_sha256": hashlib.sha256(data).hexdigest(),
                "application": custom.get("application"),
                "component": custom.get("component"),
                "ml_name": custom.get("pulsar/managed-ledger"),
                "cursor_name": custom.get("pulsar/cursor"),
                "schema_id": custom.get("pulsar/schemaId"),
                "compacted_topic": custom.get("pulsar/compactedTopic"),
                "custom_metadata_json": _custom_json(md.custom_metadata),
                "bookies": list(md.bookies),
                "ensembles_json": _ensembles_json(md.ensembles),
            },
        )
    ]


def _schema(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    t, ns, enc = info.segments
    namespace = f"{t}/{ns}"
    base = names.decode(enc, path)
    loc = decode_schema_locator(data, path)
    entries = list(loc.index)
    if all(e.version != loc.info.version for e in entries):
        entries.append(loc.info)
    rows: Rows = []
    for entry in entries:
        rows.append(
            (
                "schema_index",
                {
                    "path": path,
                    "schema_id": f"{namespace}/{enc}",
                    "namespace": namespace,
                    "topic": f"persistent://{namespace}/{base}",
                    "version": stat[4],
                    "mzxid": stat[1],
                    "latest_version": loc.info.version,
                    "schema_version": entry.version,
                    "ledger_id": entry.ledger_id,
                    "entry_id": entry.entry_id,
                },
            )
        )
    return rows


def _tenant(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    _doc, text = _json_object(data, path)
    return [("tenants", {"path": path, "tenant": info.segments[0], **_stat_cols(stat), "json": text})]


def _namespace(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    s = info.segments
    pol = parse_namespace_policies(data, path)
    boundaries = list(pol.bundle_boundaries)
    return [
        (
            "namespaces",
            {
                "path": path,
                "tenant": s[0],
                "namespace": "/".join(s),
                "is_v1": len(s) == 3,
                "cluster": s[1] if len(s) == 3 else None,
                **_stat_cols(stat),
                "retention_time_minutes": pol.retention_time_minutes,
                "retention_size_mb": pol.retention_size_mb,
                "message_ttl_seconds": pol.message_ttl_seconds,
                "delayed_delivery_active": pol.delayed_delivery_active,
                "delayed_delivery_tick_ms": pol.delayed_delivery_tick_ms,
                "delayed_delivery_max_delay_ms": pol.delayed_delivery_max_delay_ms,
                "subscription_expiration_minutes": pol.subscription_expiration_minutes,
                "bundle_boundaries": boundaries,
                "num_bundles": pol.num_bundles,
                "deleted": bool(pol.deleted),
                "json": data.decode("utf-8", errors="replace"),
            },
        )
    ]


def _local_policies(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    lp = parse_local_policies(data, path)
    ns = "/".join(info.segments)
    row = {
        "path": path,
        "namespace": ns,
        **_stat_cols(stat),
        "bundle_boundaries": list(lp.bundle_boundaries),
        "json": bytes(data).decode("utf-8", "replace"),
    }
    return [("local_policies", row)]


def _partitioned(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    s = info.segments
    ns_parts = s[:-2]
    namespace = "/".join(ns_parts)
    enc = s[-1]
    local = names.decode(enc, path)
    meta = parse_partitioned_topic(data, path)
    text = data.decode("utf-8", errors="replace")
    return [
        (
            "partitioned_topics",
            {
                "path": path,
                "tenant": s[0],
                "namespace": namespace,
                "encoded_name": enc,
                "local_name": local,
                "topic": f"{s[-2]}://{namespace}/{local}",  # persistent:// or non-persistent://
                "partitions": meta.partitions,
                "deleted": bool(meta.deleted),
                **_stat_cols(stat),
                "json": text,
            },
        )
    ]


def _cluster(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    _doc, text = _json_object(data, path) if data else ({}, "")
    return [("clusters", {"path": path, "cluster": info.segments[0], **_stat_cols(stat), "json": text or None})]


def _range(name: str, path: str) -> tuple[int, int]:
    return parse_bundle_range(name, path)


def _bundle_owner(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    s = info.segments
    lower, upper = _range(s[-1], path)
    doc, _text = _json_object(data, path) if data else ({}, "")
    return [
        (
            "bundle_owners",
            {
                "path": path,
                "namespace": "/".join(s[:-1]),
                "bundle_range": s[-1],
                "lower": lower,
                "upper": upper,
                "ephemeral_owner": stat[7],
                "native_url": doc.get("nativeUrl") if isinstance(doc.get("nativeUrl"), str) else None,
                "http_url": doc.get("httpUrl") if isinstance(doc.get("httpUrl"), str) else None,
                "disabled": bool(doc.get("disabled", False)),
                **_stat_cols(stat),
            },
        )
    ]


def _bundle_data(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    s = info.segments
    lower, upper = _range(s[-1], path)
    if data:
        _json_object(data, path)
    return [
        (
            "bundle_data",
            {
                "path": path,
                "namespace": "/".join(s[:-1]),
                "bundle_range": s[-1],
                "lower": lower,
                "upper": upper,
                **_stat_cols(stat),
            },
        )
    ]


def _service_unit_state(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    s = info.segments
    lower, upper = _range(s[-1], path)
    sus = parse_service_unit_state(data, path)
    return [
        (
            "service_unit_states",
            {
                "path": path,
                "namespace": "/".join(s[:-1]),
                "bundle_range": s[-1],
                "lower": lower,
                "upper": upper,
                "state": sus.state,
                "dst_broker": sus.dst_broker,
                "source_broker": sus.source_broker,
                "version_id": sus.version_id,
                "timestamp_ms": sus.timestamp_ms,
                **_stat_cols(stat),
            },
        )
    ]


def _topic_policies(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ExtractConfig) -> Rows:
    s = info.segments
    scope, ns_parts, domain, enc = s[0], s[1:-2], s[-2], s[-1]
    namespace = "/".join(ns_parts)
    doc, text = _json_object(data, path)
    ret = doc.get("retentionPolicies")
    ret = ret if isinstance(ret, dict) else {}
    return [
        (
            "topic_policies",
            {
                "path": path,
                "scope": scope,
                "namespace": namespace,
                "topic": f"{domain}://{namespace}/{names.decode(enc, path)}",
                "retention_time_minutes": _opt_int(ret.get("retentionTimeInMinutes")),
                "retention_size_mb": _opt_int(ret.get("retentionSizeInMB")),
                "message_ttl_seconds": _opt_int(doc.get("messageTTLInSeconds")),
                "delayed_delivery_active": _opt_bool(doc.get("delayedDeliveryEnabled")),
                "delayed_delivery_tick_ms": _opt_int(doc.get("delayedDeliveryTickTimeMillis")),
                "delayed_delivery_max_delay_ms": _opt_int(doc.get("delayedDeliveryMaxDelayInMillis")),
                **_stat_cols(stat),
                "json": text,
            },
        )
    ]


Extractor = Callable[[str, bytes, Stat, PathInfo, ExtractConfig], Rows]

EXTRACTORS: dict[str, Extractor] = {
    "managed-ledger": _managed_ledger,
    "cursor": _cursor,
    "bk-ledger": _bk_ledger,
    "schema": _schema,
    "tenant": _tenant,
    "namespace": _namespace,
    "local-policies": _local_policies,
    "partitioned-topic": _partitioned,
    "cluster": _cluster,
    "bundle-owner": _bundle_owner,
    "bundle-data": _bundle_data,
    "topic-policies": _topic_policies,
    "service-unit-state": _service_unit_state,
}


def bookie_row(path: str, ledgers_root: str) -> Row | None:
    """A ``bookies`` row for ``<ledgers_root>/available/<id>`` or ``.../available/readonly/<id>``."""
    prefix = ledgers_root.rstrip("/") + "/available/"
    if not path.startswith(prefix):
        return None
    rest = path[len(prefix) :].split("/")
    if len(rest) == 1 and rest[0] != "readonly":
        return {"bookie_id": rest[0], "readonly": False, "free_bytes": None, "total_bytes": None}
    if len(rest) == 2 and rest[0] == "readonly":
        return {"bookie_id": rest[1], "readonly": True, "free_bytes": None, "total_bytes": None}
    return None


def size_error(path: str, data: bytes, stat: Stat, cfg: ExtractConfig) -> OversizedInputError | None:
    """The error for a value past the decode limit (by its stat or its bytes), else None: never decoded."""
    if stat[8] > cfg.max_znode_bytes or len(data) > cfg.max_znode_bytes:
        return OversizedInputError(
            path, f"{max(stat[8], len(data))} bytes exceed the {cfg.max_znode_bytes}-byte decode limit"
        )
    return None


def extract_znode(store: str, path: str, data: bytes, stat: Stat, cfg: ExtractConfig) -> Extracted:
    """Everything one znode contributes to the snapshot. Never raises DecodeError: it is returned."""
    info = classify(path, cfg.ledgers_root, stat[9])
    kind = info.kind
    fn = EXTRACTORS.get(kind)
    rows: Rows = []
    error: DecodeError | None = None
    if fn is not None:
        error = size_error(path, data, stat, cfg)
        if error is None:
            try:
                rows = fn(path, data, stat, info, cfg)
            except DecodeError as e:
                error, rows = e, []
    elif kind == "bk-internal":
        b = bookie_row(path, cfg.ledgers_root)
        if b is not None:
            rows = [("bookies", b)]
    zrow = znode_row(store, path, data, stat, kind, error.code if error else None)
    return Extracted(zrow, info, rows, error)
