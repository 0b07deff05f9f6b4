"""Load what the planner needs from an audit directory and its snapshot (pyarrow; no Spark, no ZooKeeper).

Only the rows the plannable findings touch are turned into Python values, except ``bk_ledgers`` which the
impact model needs whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pulsar_ops import pulsar_names
from pulsar_ops.errors import DecodeError, FindingsError, SnapshotError
from pulsar_ops.findings import Finding, read_findings
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_paths
from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.repair.actions import ZnodeRef
from pulsar_ops.repair.facts import (
    CursorFact,
    LedgerFact,
    ListedLedger,
    Ownership,
    Retention,
    RetentionPair,
    RuleParams,
    SnapshotFacts,
    SubtreeZnode,
    listed_ledger,
)
from pulsar_ops.repair.planner import IDENTITY_KEYS, MANAGED_LEDGERS_ROOT
from pulsar_ops.repair.rules import resolve_retention, topic_policy_pair
from pulsar_ops.repair.safety import CONFIG, LOCAL, leak_shape
from pulsar_ops.repair.snapshot_tree import LeakReads, SnapshotTree, SnapshotUnknown, leak_reads, v1_schema_parents
from pulsar_ops.snapshot.reader import Snapshot, open_snapshot

# bk_ledgers column -> custom-metadata key
_IDENTITY_COLUMNS = (
    ("application", "application"),
    ("component", "component"),
    ("ml_name", "pulsar/managed-ledger"),
    ("cursor_name", "pulsar/cursor"),
    ("schema_id", "pulsar/schemaId"),
    ("compacted_topic", "pulsar/compactedTopic"),
)
assert {k for _, k in _IDENTITY_COLUMNS} == set(IDENTITY_KEYS)


@dataclass(frozen=True)
class AuditInput:
    audit_dir: Path
    snapshot_summary: dict[str, Any]
    audit: dict[str, Any]
    findings: tuple[Finding, ...]


def load_audit(audit_dir: Path) -> AuditInput:
    audit_dir = Path(audit_dir)
    hint = f"run `pulsar-ops audit SNAPSHOT --out {audit_dir}` first"
    if not audit_dir.is_dir():
        raise FindingsError(f"{audit_dir} is not an audit directory", hint=hint)
    doc = read_findings(audit_dir)
    snap = doc.snapshot
    if not isinstance(snap.get("path"), str) or not snap.get("path"):
        raise FindingsError(f"{doc.source}: the snapshot section (with its path) is missing", hint=hint)
    return AuditInput(audit_dir, dict(snap), dict(doc.audit), doc.findings)


def open_audited_snapshot(audit: AuditInput) -> Snapshot:
    """The snapshot the audit names; its id must match."""
    raw = Path(str(audit.snapshot_summary["path"]))
    candidates = [raw] if raw.is_absolute() else [raw, audit.audit_dir / raw, audit.audit_dir.parent / raw]
    chosen = next((c for c in candidates if (c / "manifest.json").exists()), candidates[0])
    snap = open_snapshot(chosen)
    want = audit.snapshot_summary.get("snapshot_id")
    if want and snap.manifest.snapshot_id != want:
        raise SnapshotError(
            f"{chosen} is snapshot {snap.manifest.snapshot_id}, but the audit was made from {want}",
            hint=f"re-run `pulsar-ops audit {chosen} --out {audit.audit_dir}`",
        )
    return snap


def _rows(t: pa.Table) -> list[dict[str, Any]]:
    return t.to_pylist()  # type: ignore[no-any-return]


def _cols(snap: Snapshot, table: str, columns: tuple[str, ...], where: Any = None) -> Iterator[tuple[Any, ...]]:
    """The rows of some columns of a snapshot table (``where``: only the matching rows), as tuples."""
    t = snap.read(table, columns, where)
    return zip(*(t.column(c).to_pylist() for c in columns), strict=True)


_BK_COLUMNS = (
    "ledger_id",
    "path",
    "version",
    "mzxid",
    "data_sha256",
    "ctime_ms",
    "length",
    "bookies",
    "ensemble_size",
    "write_quorum",
    "state",
    "last_entry_id",
    "znode_ctime_ms",
    "ensembles_json",
    *(c for c, _ in _IDENTITY_COLUMNS),
)


def _segments(raw: Any) -> tuple[tuple[int, tuple[str, ...]], ...] | None:
    """``ensembles_json`` ({firstEntryId: [bookie, ...]}) -> segments in entry order; None when unreadable."""
    if not raw:
        return None
    try:
        doc = json.loads(raw)
        segs = sorted((int(k), tuple(str(b) for b in v)) for k, v in doc.items())
    except (ValueError, TypeError, AttributeError):
        return None
    return tuple(segs) or None


def _close_times(snap: Snapshot) -> dict[int, int]:
    """Ledger id -> close time (``ledger_list.timestamp_ms``; the open ledger has none)."""
    return {int(lid): int(ts) for lid, ts in _cols(snap, "ledger_list", ("ledger_id", "timestamp_ms")) if ts}


def load_disk_bytes(snap: Snapshot) -> dict[str, int]:
    """Bookie id -> disk capacity, when the bookie HTTP API was scraped."""
    return {str(b): int(total) for b, total in _cols(snap, "bookies", ("bookie_id", "total_bytes")) if total}


def load_ledgers(snap: Snapshot) -> tuple[dict[int, LedgerFact], list[LedgerFacts]]:
    """Re-verification facts per ledger id, and every ledger as the impact model takes it."""
    t = snap.read("bk_ledgers", _BK_COLUMNS)
    closed = _close_times(snap)
    facts: dict[int, LedgerFact] = {}
    rows: list[LedgerFacts] = []
    cols = {name: t.column(name).to_pylist() for name in _BK_COLUMNS}
    for i in range(t.num_rows):
        lid = int(cols["ledger_id"][i])
        custom = tuple((key, str(cols[col][i])) for col, key in _IDENTITY_COLUMNS if cols[col][i] is not None)
        last_entry, zc = int(cols["last_entry_id"][i]), cols["znode_ctime_ms"][i]
        facts[lid] = LedgerFact(
            ledger_id=lid,
            path=str(cols["path"][i]),
            version=int(cols["version"][i]),
            mzxid=int(cols["mzxid"][i]),
            sha256=str(cols["data_sha256"][i]),
            ctime_ms=int(cols["ctime_ms"][i]),
            length=int(cols["length"][i]),
            custom_metadata=custom,
            last_entry_id=last_entry,
            znode_ctime_ms=None if zc is None else int(zc),
        )
        rows.append(
            LedgerFacts(
                ledger_id=lid,
                length=int(cols["length"][i]),
                bookies=tuple(cols["bookies"][i] or ()),
                ensemble_size=int(cols["ensemble_size"][i]),
                write_quorum=int(cols["write_quorum"][i]),
                ctime_ms=int(cols["ctime_ms"][i]),
                state=str(cols["state"][i]),
                closed_ms=closed.get(lid),
                entries=last_entry + 1 if last_entry >= 0 else None,
                segments=_segments(cols["ensembles_json"][i]),
            )
        )
    return facts, rows


def _znode_rows(snap: Snapshot, exact: set[str], roots: set[str]) -> list[dict[str, Any]]:
    if not exact and not roots:
        return []
    t = snap.read(
        "znodes",
        ("store", "path", "version", "mzxid", "data_sha256", "mtime_ms", "ephemeral_owner", "data_length"),
    )
    paths = t.column("path")
    mask = pc.is_in(paths, value_set=pa.array(sorted(exact | roots), type=pa.string()))
    for root in sorted(roots):
        mask = pc.or_(mask, pc.starts_with(paths, pattern=root.rstrip("/") + "/"))
    return list(_rows(t.filter(mask)))


def _strings(values: Sequence[str]) -> pa.Array:
    return pa.array(values, type=pa.string())  # typed, so an empty list still compares with a string column


def _tree_part(snap: Snapshot, reads: LeakReads, incomplete: frozenset[tuple[str, str]]) -> SnapshotTree:
    """The znodes ``reads`` names (exact paths and the children of its directories), with their decode errors
    and, for namespace and local policies, their JSON (the only values :func:`prove_leak` reads)."""
    if not reads.exact and not reads.parents:
        return SnapshotTree.build((), incomplete=incomplete, loaded=reads)
    paths = sorted({p for _, p in reads.exact})
    parents = sorted({p for _, p in reads.parents})
    where = ds.field("path").isin(_strings(paths)) | ds.field("parent").isin(_strings(parents))
    nodes: set[tuple[str, str]] = set()
    bad: dict[tuple[str, str], str] = {}
    for store, path, parent, err in _cols(snap, "znodes", ("store", "path", "parent", "decode_error"), where):
        key = (str(store), str(path))
        if key not in reads.exact and (key[0], str(parent)) not in reads.parents:
            continue  # the same path in the other store
        nodes.add(key)
        if err:
            bad[key] = str(err)
    values: dict[tuple[str, str], bytes] = {}
    for table, store in (("namespaces", CONFIG), ("local_policies", LOCAL)):
        want = [p for s, p in reads.exact if s == store]
        if want:
            for path, js in _cols(snap, table, ("path", "json"), ds.field("path").isin(_strings(sorted(want)))):
                if js is not None:
                    values[(store, str(path))] = str(js).encode()
    return SnapshotTree.build(nodes, values=values, undecodable=bad, incomplete=incomplete, loaded=reads)


def _listed_in(snap: Snapshot, paths: Iterable[str]) -> dict[str, int]:
    """Managed-ledger path -> how many ledgers its list holds, for these znodes (those inside the
    ``/managed-ledgers`` leak roots; the scraper decoded them, an undecodable one has no row)."""
    want = sorted({p for p in paths if p.startswith(MANAGED_LEDGERS_ROOT + "/")})
    if not want:
        return {}
    where = ds.field("path").isin(_strings(want))
    return {str(p): int(n) for p, n in _cols(snap, "managed_ledgers", ("path", "ledger_count"), where)}


def load_leak_tree(snap: Snapshot, roots: Iterable[str]) -> SnapshotTree:
    """The snapshot tree :func:`pulsar_ops.repair.safety.prove_leak` reads for these leak roots, and nothing
    else: at 600,000 topics the planner never holds the cluster's paths, only the leaks' neighbourhoods."""
    shapes = [s for r in sorted(set(roots)) if (s := leak_shape(r)) is not None]
    scopes = _cols(snap, "scopes", ("store", "scope", "complete"))
    incomplete = frozenset((str(st), str(scope)) for st, scope, ok in scopes if not ok)
    tree = _tree_part(snap, leak_reads(shapes), incomplete)
    if any(s.leak == "schema" for s in shapes):
        try:
            v1 = v1_schema_parents(shapes, tree)
        except SnapshotUnknown:
            return tree  # the tenant's directory is unknown: prove_leak refuses on the same read
        tree = tree.merged(_tree_part(snap, v1, incomplete))
    return tree


# Where Pulsar references ledgers in the snapshot (table, column, what to call it).
_REFERENCE_COLUMNS = (
    ("ledger_list", "ledger_id", "ml_path", "a managed ledger's ledger list"),
    ("cursors", "cursors_ledger_id", "path", "a cursor ledger"),
    ("cursors", "compacted_topic_ledger", "path", "a compacted-topic ledger"),
    ("cursor_properties", "bucket_ledger_id", "cursor_path", "a delayed-delivery bucket"),
    ("schema_index", "ledger_id", "path", "a schema locator"),
)


def _referenced(
    snap: Snapshot, candidates: set[int], exclude_lists: set[str] | None = None
) -> tuple[dict[int, str], int | None]:
    """Which candidate ledger ids the snapshot references (id -> where), and the highest referenced id.
    ``exclude_lists``: managed-ledger paths whose own ledger lists do not count (a trim's own list)."""
    found: dict[int, str] = {}
    watermark: int | None = None
    want = pa.array(sorted(candidates), type=pa.int64())
    for table, col, where_col, what in _REFERENCE_COLUMNS:
        t = snap.read(table, (col, where_col))
        ids = t.column(col)
        top = pc.max(ids).as_py()
        if top is not None and (table != "cursors" or top >= 0):
            watermark = int(top) if watermark is None else max(watermark, int(top))
        hit = t.filter(pc.is_in(ids, value_set=want))
        if exclude_lists and table == "ledger_list":
            own = pa.array(sorted(exclude_lists), type=pa.string())
            hit = hit.filter(pc.invert(pc.is_in(hit.column(where_col), value_set=own)))
        for lid, where in zip(hit.column(col).to_pylist(), hit.column(where_col).to_pylist(), strict=True):
            found.setdefault(int(lid), f"{where} ({what})")
    return found, watermark


def _ancestors_in(path: str, roots: set[str]) -> list[str]:
    """``path`` and each of its ancestors that is one of ``roots``."""
    out = []
    p = path
    while p and p != "/":
        if p in roots:
            out.append(p)
        p = p.rsplit("/", 1)[0]
    return out


@dataclass(frozen=True)
class RewriteFacts:
    """What rewrite actions (opt-in ``dangling-ledger``) need: their managed-ledger znodes and list entries,
    and which topics the snapshot says are loaded."""

    ml_rows: list[dict[str, Any]]
    list_entries: dict[tuple[str, int], tuple[int | None, int | None]]
    owned_ranges: dict[str, tuple[tuple[int, int], ...]]
    loaded_topics: frozenset[str]
    list_rows: tuple[dict[str, Any], ...] = ()  # ledger_list rows of those managed ledgers


REWRITE_DETECTIONS = ("dangling-ledger", "expired-retention-unloaded", "inactive-subscription")


def _ml_path_of(f: Finding) -> str | None:
    if not f.path:
        return None
    return f.path.rsplit("/", 1)[0] if f.detection == "inactive-subscription" else f.path


def _rewrite_facts(snap: Snapshot, findings: Iterable[Finding], include: frozenset[str]) -> RewriteFacts:
    paths = sorted(
        {p for f in findings if f.detection in include and f.detection in REWRITE_DETECTIONS and (p := _ml_path_of(f))}
    )
    if not paths:
        return RewriteFacts([], {}, {}, frozenset())
    want = pa.array(paths, type=pa.string())
    mls = snap.read("managed_ledgers", ("path", "ml_name", "topic", "version", "mzxid", "format"))
    ml_rows = list(_rows(mls.filter(pc.is_in(mls.column("path"), value_set=want))))
    ll = snap.read(
        "ledger_list",
        ("ml_path", "ledger_id", "entries", "size", "idx", "timestamp_ms", "is_last", "bookkeeper_deleted"),
    )
    ll = ll.filter(pc.is_in(ll.column("ml_path"), value_set=want))
    entries = {
        (str(r["ml_path"]), int(r["ledger_id"])): (r["entries"], r["size"]) for r in _rows(ll) if r["ledger_id"] >= 0
    }
    owners = snap.read("bundle_owners", ("namespace", "lower", "upper"))
    owned: dict[str, list[tuple[int, int]]] = {}
    for r in _rows(owners):
        owned.setdefault(str(r["namespace"]), []).append((int(r["lower"]), int(r["upper"])))
    loaded = frozenset(str(t) for t in snap.read("loaded_topics", ("topic",)).column("topic").to_pylist())
    owned_t = {k: tuple(sorted(v)) for k, v in owned.items()}
    return RewriteFacts(ml_rows, entries, owned_t, loaded, tuple(r for r in _rows(ll) if r["ledger_id"] >= 0))


def _ledger_lists(
    rows: Iterable[dict[str, Any]], ledgers: dict[int, LedgerFact]
) -> dict[str, tuple[ListedLedger, ...]]:
    """Per managed-ledger path, its list as the retention rule takes it (the audit's ``int_ledgers``): the last
    ledger with BookKeeper's last entry id + 1, length and ctime."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_path.setdefault(str(r["ml_path"]), []).append(r)
    out: dict[str, tuple[ListedLedger, ...]] = {}
    for path, rs in by_path.items():
        listed = []
        for r in sorted(rs, key=lambda x: int(x["idx"])):
            lid, f = int(r["ledger_id"]), ledgers.get(int(r["ledger_id"]))
            bk = (f.last_entry_id, f.length, f.ctime_ms) if f is not None else (None, None, None)
            last = bk if r["is_last"] else None
            listed.append(
                listed_ledger(lid, r["entries"], r["size"], r["timestamp_ms"], bool(r["bookkeeper_deleted"]), last)
            )
        out[path] = tuple(listed)
    return out


def _retention(snap: Snapshot, ml_rows: Sequence[dict[str, Any]], rules: RuleParams) -> dict[str, Retention | None]:
    """Per managed-ledger path, the retention its broker applies (:func:`pulsar_ops.repair.rules.resolve_retention`
    on the snapshot's namespace and topic policies); None when the plan cannot know the broker defaults."""
    if not ml_rows:
        return {}
    if rules.default_retention_time_minutes is None or rules.default_retention_size_mb is None:
        return {str(r["path"]): None for r in ml_rows}
    defaults = (rules.default_retention_time_minutes, rules.default_retention_size_mb)
    ns_t = snap.read("namespaces", ("namespace", "retention_time_minutes", "retention_size_mb"))
    ns = {str(r["namespace"]): (r["retention_time_minutes"], r["retention_size_mb"]) for r in _rows(ns_t)}
    tp_t = snap.read("topic_policies", ("scope", "topic", "retention_time_minutes", "retention_size_mb"))
    scoped: dict[tuple[str, str], RetentionPair] = {
        (str(r["topic"]), str(r["scope"])): (r["retention_time_minutes"], r["retention_size_mb"]) for r in _rows(tp_t)
    }

    def topic_pair(topic: str) -> RetentionPair | None:
        return topic_policy_pair(scoped.get((topic, "local")), scoped.get((topic, "global")))

    out: dict[str, Retention | None] = {}
    for r in ml_rows:
        ml = names.ml_name_from_path(str(r["path"]))
        base_name, idx = names.partition_suffix(ml.local_name)
        base = topic_pair(f"persistent://{ml.namespace}/{base_name}") if idx >= 0 else None
        out[str(r["path"])] = resolve_retention(topic_pair(ml.topic), base, ns.get(ml.namespace), defaults)
    return out


_UNDECODABLE_TOPIC = re.compile(
    r"^/(managed-ledgers|admin/partitioned-topics|schemas)/(.+?)(/persistent|/non-persistent)?/([^/]+)$"
)


def _policy_topic_namespaces(snap: Snapshot) -> frozenset[str]:
    """Namespaces whose topic-level policies may live in ``__change_events``, by the one rule
    (:func:`pulsar_ops.pulsar_names.is_topic_policies_topic`, read as expired_retention_unloaded.sql's
    ``policy_topics_ns`` reads it): a managed-ledger znode of it or of a partition, or its persistent
    partitioned-topic node, decodable or not; or the namespace's ``/managed-ledgers`` scope not read completely.
    :func:`pulsar_ops.repair.live_facts.topic_policies_unknown` asks the same of the live tree at apply."""
    is_it = pulsar_names.is_topic_policies_topic
    out: set[str] = set()
    for ns, local in _cols(snap, "managed_ledgers", ("namespace", "local_name")):
        if is_it(str(local)):
            out.add(str(ns))
    for ns, local, topic in _cols(snap, "partitioned_topics", ("namespace", "local_name", "topic")):
        if is_it(str(local)) and str(topic).startswith("persistent://"):
            out.add(str(ns))
    # int_undecodable's namespace (the same lazy pattern) and decoded local name of the znodes that do not decode
    where = ds.field("kind").isin(["managed-ledger", "partitioned-topic"]) & ~ds.field("decode_error").is_null()
    for (path,) in _cols(snap, "znodes", ("path",), where):
        m = _UNDECODABLE_TOPIC.match(str(path))
        if m is None or (m.group(1) == "admin/partitioned-topics" and m.group(3) != "/persistent"):
            continue
        try:
            local = names.decode(m.group(4))
        except DecodeError:
            continue  # the audit's try_url_decode: NULL
        if is_it(local):
            out.add(m.group(2))
    for store, scope, ok in _cols(snap, "scopes", ("store", "scope", "complete")):
        if store == LOCAL and str(scope).startswith(MANAGED_LEDGERS_ROOT + "/") and not ok:
            out.add(str(scope)[len(MANAGED_LEDGERS_ROOT) + 1 :])
    return frozenset(out)


def _ownership_unknown(snap: Snapshot) -> str | None:
    """Why bundle ownership is not (all) in /namespace znodes, by the snapshot's manifest (None: it is)."""
    lm = snap.manifest.load_manager
    if pulsar_names.ownership_in_zk(lm):
        return None
    return f"load manager {lm.get('kind')!r} at scrape time: ownership is kept outside /namespace znodes"


def _absence_facts(
    snap: Snapshot, rw: RewriteFacts, include: frozenset[str], ledgers: dict[int, LedgerFact]
) -> dict[str, Any]:
    """The drop rule's absence facts, for the ledgers listed by the managed ledgers a dangling-ledger rewrites: a
    ledger is present when its metadata decoded (``bk_ledgers``) or a znode at one of its paths does not."""
    if "dangling-ledger" not in include or not rw.ml_rows:
        return {}
    found, why = _ledger_znodes(snap, (lid for (_p, lid) in rw.list_entries))
    for lid, paths in found.items():
        if lid in ledgers and ledgers[lid].path not in paths:
            found[lid] = (*paths, ledgers[lid].path)
    return {"ledger_znodes": found, "ledgers_unknown": why}


def _ledger_znodes(snap: Snapshot, ids: Iterable[int]) -> tuple[dict[int, tuple[str, ...]], str | None]:
    """Per ledger id, which of its metadata paths are znodes of the snapshot (decodable or not: a znode that does
    not decode exists), as ``LiveFacts.present`` reads them live; and why an absent one proves nothing: the ledgers
    scope was not read completely or not recorded (dangling-ledger's ``listing_incomplete``, from int_blocking)."""
    root = snap.manifest.ledgers_root
    paths = {lid: ledger_paths(lid, root) for lid in sorted(set(ids))}
    want = sorted({p for ps in paths.values() for p in ps})
    found: set[str] = set()
    if want:
        hits = _cols(snap, "znodes", ("store", "path"), ds.field("path").isin(_strings(want)))
        found = {str(p) for st, p in hits if st == LOCAL}
    sc = snap.read("scopes", ("scope", "complete"))
    rows = [r for r in _rows(sc) if r["scope"] == LEDGERS_SCOPE]
    why = None
    if not rows:
        why = f"the snapshot did not record the scope {LEDGERS_SCOPE}: a ledger's absence is not confirmed"
    elif not all(r["complete"] for r in rows):
        why = f"the snapshot's scope {LEDGERS_SCOPE} is incomplete: a ledger's absence is not confirmed"
    return {lid: tuple(p for p in ps if p in found) for lid, ps in paths.items()}, why


_LISTED_NS = re.compile(r"^persistent://(.+)/[^/]+$")  # the audit's namespace of a listed topic (regexp_extract)


def _listed_ns(topic: str) -> str:
    m = _LISTED_NS.match(topic)
    return m.group(1) if m else ""


def _scope_read(rows: Sequence[dict[str, Any]], scope: str, store: str | None = None) -> bool:
    """Read completely: some row says complete and none incomplete (the audit's ``count_if`` pair)."""
    mine = [r for r in rows if r["scope"] == scope and (store is None or r["store"] == store)]
    return any(r["complete"] for r in mine) and all(r["complete"] for r in mine)


def _service_units(
    snap: Snapshot, registered: Sequence[str], bad: Sequence[dict[str, Any]]
) -> list[tuple[str, str, int, int, str]]:
    """``int_service_units``: (namespace, bundle_range, lower, upper, ownership) per /service_unit_state value
    read, by :func:`pulsar_ops.pulsar_names.service_unit_ownership`; a value that does not decode is unknown."""
    out: list[tuple[str, str, int, int, str]] = []
    su = snap.read("service_unit_states", ("namespace", "bundle_range", "lower", "upper", "state", "dst_broker"))
    for r in _rows(su):
        own = pulsar_names.service_unit_ownership(r["state"], r["dst_broker"], registered=registered)
        out.append((str(r["namespace"]), str(r["bundle_range"]), int(r["lower"]), int(r["upper"]), own))
    for r in bad:
        m = re.match(r"^/service_unit_state/(.+)/([^/]+)$", str(r["path"]))
        if r["kind"] != "service-unit-state" or m is None:
            continue
        rg = m.group(2)
        try:  # the audit's conv(substr(..)): a range it cannot read bounds nothing
            out.append((m.group(1), rg, int(rg[2:10], 16), int(rg[13:21], 16), "unknown"))
        except ValueError:
            continue
    return out


def _ownership(snap: Snapshot) -> Ownership:
    """Bundle ownership as expired_retention_unloaded.sql reads it (its ``admin`` row, ``owners``, ``sus_unknown``
    and int_ownership_source), for :func:`pulsar_ops.repair.rules.topic_load_problem`."""
    lm = snap.manifest.load_manager or {}
    scopes = list(_rows(snap.read("scopes", ("store", "scope", "complete"))))
    listed = [(str(r["topic"]), r["bundle"]) for r in _rows(snap.read("loaded_topics", ("topic", "bundle")))]
    owner_rows = list(_rows(snap.read("bundle_owners", ("namespace", "bundle_range", "lower", "upper"))))
    owned: dict[str, set[tuple[int, int]]] = {}
    for r in owner_rows:
        owned.setdefault(str(r["namespace"]), set()).add((int(r["lower"]), int(r["upper"])))
    zk_bundles = {(str(r["namespace"]), str(r["bundle_range"])) for r in owner_rows}
    ownership_known = (
        pulsar_names.ownership_in_zk(lm)
        and _scope_read(scopes, "/namespace")
        and all((_listed_ns(t), b) in zk_bundles for t, b in listed if b is not None)
    )
    # the znodes that do not decode among those the judgement reads: service units, policies, local policies
    kinds = ["service-unit-state", "namespace", "local-policies"]
    where = ds.field("kind").isin(kinds) & ~ds.field("decode_error").is_null()
    bad = list(_rows(snap.read("znodes", ("path", "kind", "decode_error"), where)))
    units = _service_units(snap, sorted((lm.get("registrations") or {}).keys()), bad)
    sus_owned = {(ns, rg) for ns, rg, _lo, _hi, own in units if own == "owned"}
    channel = "/managed-ledgers/" + pulsar_names.SERVICE_UNIT_STATE_TOPIC_ML
    no_channel = (
        snap.read("managed_ledgers", ("path",), ds.field("path") == channel).num_rows
        + snap.read("znodes", ("path",), ds.field("path") == channel).num_rows
        == 0
    )
    system_ml_read = not any(
        r["store"] == "local"
        and r["scope"] in ("/managed-ledgers", "/managed-ledgers/pulsar/system")
        and not r["complete"]
        for r in scopes
    )
    sus_known = (
        pulsar_names.service_unit_table_view(lm)[0]
        and _scope_read(scopes, pulsar_names.SERVICE_UNIT_STATE_ROOT, "local")
        and system_ml_read
        and no_channel
        and all(
            (_listed_ns(t), b) in sus_owned
            for t, b in listed
            if b is not None and pulsar_names.system_namespace_reason(_listed_ns(t)) is None
        )
    )
    in_flight: dict[str, set[tuple[int, int]]] = {}
    if sus_known:
        for ns, _rg, lo, hi, own in units:
            if own != "unowned":
                (owned if own == "owned" else in_flight).setdefault(ns, set()).add((lo, hi))
    prefix = {"namespace": len("/admin/policies/"), "local-policies": len("/admin/local-policies/")}
    unknown = frozenset(str(r["path"])[prefix[str(r["kind"])] :] for r in bad if r["kind"] in prefix)
    why = None
    if not (ownership_known or sus_known):
        why = (
            "bundle ownership is not known from the snapshot (not all in /namespace znodes read completely, nor in "
            "/service_unit_state)"
        )
    return Ownership(
        owned={k: tuple(sorted(v)) for k, v in owned.items()},
        in_flight={k: tuple(sorted(v)) for k, v in in_flight.items()},
        loaded_topics=frozenset(t for t, _ in listed),
        unowned_unknown=why,
        all_answered=snap.manifest.admin_scraped,
        bundles_unknown=unknown,
    )


# The scope whose completeness confirms a ledger's absence: the audit's (dangling_ledger.sql, int_blocking)
LEDGERS_SCOPE = "/ledgers"


def load_facts(
    snap: Snapshot,
    findings: Iterable[Finding],
    ledgers: dict[int, LedgerFact],
    include: frozenset[str] = frozenset(),
    *,
    rules: RuleParams | None = None,
    now_ms: int | None = None,
) -> SnapshotFacts:
    """Facts for the plannable orphan-ledger and znode-leak findings, and the opt-in detections ``include``."""
    findings = list(findings)
    rw = _rewrite_facts(snap, findings, include)
    wanted = [f for f in findings if f.plannable and f.detection in ("orphan-ledger", "znode-leak")]
    roots = {f.path for f in wanted if f.detection == "znode-leak" and f.path}

    owners = sorted({str(f.evidence.get("owner")) for f in wanted if f.detection == "orphan-ledger"})
    owner_set = pa.array(owners, type=pa.string())
    mls = snap.read("managed_ledgers", ("path", "ml_name", "topic", "version", "mzxid"))
    mls = mls.filter(
        pc.or_(pc.is_in(mls.column("ml_name"), value_set=owner_set), pc.is_in(mls.column("topic"), value_set=owner_set))
    )
    ml_rows = list(_rows(mls))
    ml_paths = {r["path"] for r in ml_rows}
    exact_rw = {str(r["path"]) for r in rw.ml_rows}
    curs = snap.read(
        "cursors",
        (
            "path", "ml_path", "version", "mzxid", "subscription", "is_system", "cursors_ledger_id",
            "mark_delete_ledger_id", "mark_delete_entry_id", "last_active_ms",
        ),
    )  # fmt: skip
    curs = curs.filter(
        pc.is_in(curs.column("ml_path"), value_set=pa.array(sorted(ml_paths | exact_rw), type=pa.string()))
    )
    cursor_rows = list(_rows(curs))
    schemas = snap.read("schema_index", ("path", "schema_id", "version", "mzxid"))
    schemas = schemas.filter(pc.is_in(schemas.column("schema_id"), value_set=owner_set))
    schema_rows = {r["schema_id"]: r for r in _rows(schemas)}
    exact = ml_paths | {r["path"] for r in cursor_rows} | {r["path"] for r in schema_rows.values()} | exact_rw
    zrows = _znode_rows(snap, exact, roots)

    sha: dict[str, str] = {}
    mtimes: dict[str, int] = {}
    subtrees: dict[str, list[SubtreeZnode]] = {}
    for z in zrows:
        zref = ZnodeRef(str(z["store"]), str(z["path"]), int(z["version"]), int(z["mzxid"]), z["data_sha256"])
        if z["store"] == "local" and z["path"] in exact:
            sha[z["path"]] = z["data_sha256"]
            mtimes[z["path"]] = int(z["mtime_ms"])
        for root in _ancestors_in(str(z["path"]), roots):
            subtrees.setdefault(root, []).append(
                SubtreeZnode(
                    znode=zref,
                    mtime_ms=int(z["mtime_ms"]),
                    ephemeral_owner=int(z["ephemeral_owner"] or 0),
                    data_length=int(z["data_length"] or 0),
                )
            )

    def ref(row: dict[str, Any]) -> ZnodeRef:
        return ZnodeRef("local", str(row["path"]), int(row["version"]), int(row["mzxid"]), sha.get(row["path"]))

    cursor_facts = {
        str(r["path"]): CursorFact(
            znode=ref(r),
            ml_path=str(r["ml_path"]),
            subscription=str(r["subscription"]),
            is_system=bool(r["is_system"]),
            cursors_ledger_id=int(r["cursors_ledger_id"]),
            mark_delete=None
            if r["mark_delete_ledger_id"] is None
            else (
                int(r["mark_delete_ledger_id"]),
                -1 if r["mark_delete_entry_id"] is None else int(r["mark_delete_entry_id"]),
            ),
            last_active_ms=None if r["last_active_ms"] is None else int(r["last_active_ms"]),
            mtime_ms=mtimes.get(str(r["path"])),
        )
        for r in cursor_rows
        if r["ml_path"] in exact_rw
    }

    cursors: dict[str, list[ZnodeRef]] = {}
    for r in cursor_rows:
        cursors.setdefault(str(r["ml_path"]), []).append(ref(r))
    listed = _listed_in(snap, (str(z["path"]) for z in zrows if _ancestors_in(str(z["path"]), roots)))
    referenced, watermark = _referenced(snap, {f.ledger_id for f in wanted if f.ledger_id is not None})
    trim_ids = {lid: ml for (ml, lid) in rw.list_entries if lid in ledgers}
    elsewhere, _ = _referenced(snap, set(trim_ids), exclude_lists=set(trim_ids.values()))
    rules = rules if rules is not None else RuleParams()
    return SnapshotFacts(
        rules=rules,
        now_ms=now_ms if now_ms is not None else snap.manifest.finished_at_ms,
        ledger_lists=_ledger_lists(rw.list_rows, ledgers),
        retention=_retention(snap, rw.ml_rows, rules),
        ledgers_root=snap.manifest.ledgers_root,
        leak_tree=load_leak_tree(snap, roots),
        ml_listed=listed,
        referenced_ledgers=referenced,
        referenced_elsewhere=elsewhere,
        cursor_facts=cursor_facts,
        watermark=watermark,
        snapshot_id=snap.manifest.snapshot_id,
        ledgers=ledgers,
        managed_ledgers={str(r["ml_name"]): ref(r) for r in [*ml_rows, *rw.ml_rows]},
        ml_name_by_topic={str(r["topic"]): str(r["ml_name"]) for r in ml_rows},
        ml_formats={str(r["path"]): str(r["format"]) for r in rw.ml_rows},
        list_entries=rw.list_entries,
        owned_ranges=rw.owned_ranges,
        loaded_topics=rw.loaded_topics,
        policy_topic_namespaces=_policy_topic_namespaces(snap) if rw.ml_rows else frozenset(),
        ownership_unknown=_ownership_unknown(snap),
        **_absence_facts(snap, rw, include, ledgers),
        ownership=_ownership(snap) if rw.ml_rows else None,
        cursors={k: tuple(v) for k, v in cursors.items()},
        schema_locators={k: ref(r) for k, r in schema_rows.items()},
        subtrees={k: tuple(v) for k, v in subtrees.items()},
    )
