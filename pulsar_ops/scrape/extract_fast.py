"""The scrape's hot path: one znode read to snapshot rows as tuples in schema column order. Pure: no I/O.

``extract_columns`` gives exactly what ``extract.extract_znode`` (the reference, built on the public
``decode_*`` dataclasses) gives, with each row as a tuple in ``schema`` column order instead of a dict, the
``data_sha256`` computed once per znode, the ledger id derived once from the classified path, and the three
hot kinds (bookie ledgers, managed ledgers, cursors) read from the protobuf message straight into their rows
(``ledger_metadata_fields``, ``managed_ledger_fields``, ``cursor_fields``) without intermediate dataclasses.
Every other kind goes through the reference extractor. Equivalence is property-tested
(tests/unit/scrape/test_extract_fast.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii as _enc
from typing import Any

from pulsar_ops import native, pulsar_names
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.formats.cursor import BUCKET_PROPERTY_PREFIX, COMPACTED_TOPIC_LEDGER, bucket_ledger_id, cursor_fields
from pulsar_ops.formats.ledger_metadata import ledger_metadata_fields
from pulsar_ops.formats.ledger_path import ledger_id_from_parts
from pulsar_ops.formats.managed_ledger import managed_ledger_fields
from pulsar_ops.scrape import extract as ref
from pulsar_ops.scrape.classify import PathInfo, classify
from pulsar_ops.scrape.multiread import Stat
from pulsar_ops.snapshot import schema

TupleRow = tuple[Any, ...]
TupleRows = list[tuple[str, TupleRow]]
FastExtractor = Callable[[str, bytes, Stat, PathInfo, ref.ExtractConfig, str], TupleRows]

# json.dumps(obj, sort_keys=True) builds this very encoder on every call; build it once.
_dumps_sorted = json.JSONEncoder(sort_keys=True).encode

_ml_name = functools.lru_cache(maxsize=4096)(names.ml_name_from_path)


def _custom_cols(custom: tuple[tuple[str, bytes], ...]) -> tuple[dict[str, str], str]:
    """(values decoded with replacement, ``custom_metadata_json``) as the reference computes them: for valid
    UTF-8 values both are the plain decode and the JSON is ``json.dumps(..., sort_keys=True)`` written out
    (``encode_basestring_ascii`` is the function json.dumps applies to str keys and values)."""
    try:
        cd = {k: v.decode("utf-8") for k, v in custom}
    except UnicodeDecodeError:
        return {k: v.decode("utf-8", errors="replace") for k, v in custom}, ref._custom_json(custom)
    return cd, "{" + ", ".join([f"{_enc(k)}: {_enc(v)}" for k, v in sorted(cd.items())]) + "}"


BkParts = tuple[Any, ...]


def bk_ledger_parts(data: bytes, path: str) -> BkParts:
    """The pure-Python ``bk_ledgers`` row parts, in ``native.bk_ledger`` order: (format_version, state, length,
    last_entry_id, ensemble_size, write_quorum, ack_quorum, digest_type, ctime_ms or None for 0/absent,
    application, component, managed_ledger, cursor, schema_id, compacted_topic, custom_metadata_json, bookies,
    ensembles_json). Raises DecodeError like ``decode_ledger_metadata``."""
    fv, state, length, last, ens, wq, aq, digest, ctime, custom, ensembles = ledger_metadata_fields(data, path)
    if custom:
        cd, cjson = _custom_cols(custom)
        get = cd.get
        app, comp, mln = get("application"), get("component"), get("pulsar/managed-ledger")
        cur, sid, cmp = get("pulsar/cursor"), get("pulsar/schemaId"), get("pulsar/compactedTopic")
    else:
        app = comp = mln = cur = sid = cmp = None
        cjson = "{}"
    if len(ensembles) == 1:
        bookies = list(dict.fromkeys(ensembles[0][1]))
    else:
        bookies = list(dict.fromkeys(b for _, members in ensembles for b in members))
    return (
        fv, state, length, last, ens, wq, aq, digest, ctime or None,
        app, comp, mln, cur, sid, cmp, cjson, bookies, ref._ensembles_json(ensembles),
    )  # fmt: skip


_native_bk = native.bk_ledger


def bk_parts(data: bytes, path: str) -> BkParts:
    """The row parts from the native decoder when it takes the value, else from ``bk_ledger_parts``."""
    parts = _native_bk(data) if _native_bk is not None else None
    return parts if parts is not None else bk_ledger_parts(data, path)


def _bk_ledger(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ref.ExtractConfig, sha: str) -> TupleRows:
    ledger_id = ledger_id_from_parts(info.segments, path, cfg.ledgers_root)
    if ledger_id is None:
        raise DecodeError(path, "not a ledger znode path")
    fv, state, length, last, ens, wq, aq, digest, ctime, app, comp, mln, cur, sid, cmp, cjson, bookies, ej = bk_parts(
        data, path
    )
    top = len(info.segments[0])
    layout = "legacy" if top == 2 else ("long" if top == 3 else "flat")
    row = (
        path, ledger_id, layout, fv, state, length, last, ens, wq, aq, digest,
        ctime if ctime is not None else stat[2], ctime, stat[4], stat[1], stat[2], stat[3], stat[8], sha,
        app, comp, mln, cur, sid, cmp, cjson, bookies, ej,
    )  # fmt: skip
    return [("bk_ledgers", row)]


def _props_json(props: tuple[tuple[str, str], ...]) -> str:
    return _dumps_sorted(dict(props)) if props else "{}"  # most topics have none: skip the encoder


def _managed_ledger(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ref.ExtractConfig, sha: str) -> TupleRows:
    ml = _ml_name(path)
    f = managed_ledger_fields(data, path)
    ledgers = f.ledgers
    topic = ml.topic
    namespace = ml.namespace
    local, partition = names.partition_suffix(ml.local_name)
    rows: TupleRows = [
        (
            "managed_ledgers",
            (
                path, ml.ml_name, ml.tenant, namespace, ml.is_v1, ml.encoded_name, ml.local_name, topic,
                f"{names.PERSISTENT}://{namespace}/{local}", partition,
                stat[4], stat[1], stat[2], stat[3], stat[8],
                f.format, f.compression, len(ledgers), ref.total_size([li[2] or 0 for li in ledgers], path),
                ledgers[-1][0] if ledgers else None, f.terminated, _props_json(f.properties),
            ),
        )
    ]  # fmt: skip
    last = len(ledgers) - 1
    for idx, (lid, entries, size, ts, offloaded, bk_deleted, off_ts) in enumerate(ledgers):
        rows.append(
            (
                "ledger_list",
                (path, topic, namespace, idx, lid, entries, size, ts, idx == last, offloaded, bk_deleted, off_ts),
            )
        )
    return rows


def _buckets(cprops: tuple[tuple[str, str], ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in cprops:
        if name.startswith(BUCKET_PROPERTY_PREFIX):
            lid = bucket_ledger_id(value)
            if lid is not None:
                out[name] = lid
    return out


def _cursor(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ref.ExtractConfig, sha: str) -> TupleRows:
    cut = path.rfind("/")
    ml_path, encoded = path[:cut], path[cut + 1 :]
    ml = _ml_name(ml_path)
    subscription = names.decode(encoded, path)
    f = cursor_fields(data, path)
    topic = ml.topic
    md = f.mark_delete
    compacted = None
    for name, value in f.properties:
        if name == COMPACTED_TOPIC_LEDGER:
            compacted = value
            break
    ranges = f.ranges
    rows: TupleRows = [
        (
            "cursors",
            (
                path, ml_path, topic, ml.namespace, encoded, subscription, pulsar_names.is_system_cursor(encoded),
                f.cursors_ledger_id, md[0] if md else None, md[1] if md else None, f.last_active_ms,
                len(ranges), f.batch_index_count, compacted,
                stat[4], stat[1], stat[2], stat[3], stat[8], f.compression,
            ),
        )
    ]  # fmt: skip
    for idx, (ll, le, ul, ue) in enumerate(ranges):
        rows.append(("ack_ranges", (path, topic, subscription, idx, ll, le, ul, ue)))
    for name, value in f.properties:
        rows.append(("cursor_properties", (path, topic, subscription, "long", name, str(value), None)))
    if f.cursor_properties:
        buckets = _buckets(f.cursor_properties)
        for name, svalue in f.cursor_properties:
            rows.append(("cursor_properties", (path, topic, subscription, "string", name, svalue, buckets.get(name))))
    return rows


@functools.cache
def _columns(table: str) -> tuple[str, ...]:
    return schema.table(table).column_names


def _via_reference(fn: ref.Extractor) -> FastExtractor:
    def run(path: str, data: bytes, stat: Stat, info: PathInfo, cfg: ref.ExtractConfig, sha: str) -> TupleRows:
        return [(t, tuple([row.get(c) for c in _columns(t)])) for t, row in fn(path, data, stat, info, cfg)]

    return run


FAST_EXTRACTORS: dict[str, FastExtractor] = {kind: _via_reference(fn) for kind, fn in ref.EXTRACTORS.items()}
FAST_EXTRACTORS.update({"bk-ledger": _bk_ledger, "managed-ledger": _managed_ledger, "cursor": _cursor})


znode_tuple = native.znode_row or ref.znode_row_with_sha


def extract_columns(
    store: str, path: str, data: bytes, stat: Stat, cfg: ref.ExtractConfig
) -> tuple[TupleRow, PathInfo, TupleRows, DecodeError | None]:
    """``extract_znode`` with tuple rows: (znodes row, PathInfo, entity rows, DecodeError or None)."""
    info = classify(path, cfg.ledgers_root, stat[9])
    kind = info.kind
    fn = FAST_EXTRACTORS.get(kind)
    sha = hashlib.sha256(data).hexdigest()
    rows: TupleRows = []
    error: DecodeError | None = None
    if fn is not None:
        error = ref.size_error(path, data, stat, cfg)
        if error is None:
            try:
                rows = fn(path, data, stat, info, cfg, sha)
            except DecodeError as e:
                error, rows = e, []
    elif kind == "bk-internal":
        b = ref.bookie_row(path, cfg.ledgers_root)
        if b is not None:
            rows = [("bookies", tuple([b.get(c) for c in _columns("bookies")]))]
    return znode_tuple(store, path, stat, kind, error.code if error else None, sha), info, rows, error
