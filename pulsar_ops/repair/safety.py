"""The safety rules of a repair, enforced by ``apply`` itself whatever the plan file says. Pure.

Two layers:

* :func:`action_problem` checks one action against the rules the planner follows (static: no ZooKeeper
  access). A plan that breaks one is refused as a whole before anything is journaled: a plan file is an input
  like any other, and a recomputable checksum only catches accidents.

  - never ``/``, a top-level root, or any of the protected roots (``/admin/clusters``, ``/ledgers`` structure
    such as ``LAYOUT``, ``INSTANCEID``, ``available``, ``cookies``, ``underreplication``, ``idgen`` ...);
  - a ``delete-ledger-metadata`` action deletes exactly one znode, a ledger metadata znode under the plan's
    ledgers root, and its ``ledger_id`` is the id that path encodes;
  - a ``delete-subtree`` action's root has one of the shapes the ``znode-leak`` detection reports (below), in
    the store that shape lives in, and every znode it deletes lies inside that root;
  - a rewrite action changes the managed-ledger znode of the topic it names and checks only that topic's
    cursors: ``drop-missing-ledger`` changes nothing else and every ledger it removes from the list must be
    absent from ``/ledgers`` at apply; ``trim-unloaded`` also deletes the metadata znodes of exactly the ledgers
    it removes, and nothing else.

* :func:`prove_leak` re-proves, at delete time and against the live tree (through a :class:`TreeReader`), the
  condition that made a subtree a leak. Per leak kind (``docs/repair.md`` lists the same table):

  ======================== =============================================== ===================================
  leak                     root                                            re-proved just before the delete
  ======================== =============================================== ===================================
  managed-ledgers-tenant   ``/managed-ledgers/<tenant>``                   ``/admin/policies/<tenant>`` absent;
                                                                           no managed ledger inside lists a
                                                                           ledger
  managed-ledgers-namespace ``/managed-ledgers/<ns>`` (ns = t/n or t/c/n)  ``/admin/policies/<ns>`` absent (and
                                                                           ``t/c`` for a three-part ns); no
                                                                           managed ledger inside lists a ledger
  partitioned-topic        ``/admin/partitioned-topics/<ns>/persistent/<t>`` no managed ledger ``<t>`` or
                                                                           ``<t>-partition-N`` in ``<ns>``
  schema                   ``/schemas/<tenant>/<ns>/<t>``                  no managed ledger ``<t>`` /
                                                                           ``<t>-partition-N`` (V2 ``t/ns`` and
                                                                           every V1 ``t/<cluster>/ns``), no
                                                                           partitioned-topic node for it,
                                                                           persistent or non-persistent
  bundle-data              ``/loadbalance/bundle-data/<ns>[/<range>]``     namespace policies absent (a single
                                                                           range of a live namespace: not one
                                                                           of its bundles); no bundle owned
  local-policies           ``/admin/local-policies/<ns>``                  ``/admin/policies/<ns>`` absent
  ======================== =============================================== ===================================

  A read that fails, or a value that does not decode, is never evidence of absence: the action is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.repair import bookie_gc
from pulsar_ops.repair.actions import (
    KIND_BOOKIE_GC,
    KIND_DELETE_LEDGER,
    KIND_DELETE_SUBSCRIPTION,
    KIND_DELETE_SUBTREE,
    KIND_DROP_MISSING_LEDGER,
    KIND_LOAD_TOPIC,
    REWRITE_KINDS,
    ROLE_CURSOR,
    ROLE_MANAGED_LEDGER,
    ROLE_SCHEMA_LOCATOR,
    Action,
)
from pulsar_ops.strict import zk_path_problem

LOCAL = "local"
CONFIG = "config"

MANAGED_LEDGERS = "/managed-ledgers"
POLICIES = "/admin/policies"
LOCAL_POLICIES = "/admin/local-policies"
PARTITIONED = "/admin/partitioned-topics"
SCHEMAS = "/schemas"
BUNDLE_DATA = "/loadbalance/bundle-data"
OWNERSHIP = "/namespace"

# Subtree roots that are never deleted whatever a finding or a plan says (exact paths).
PROTECTED_ROOTS = frozenset(
    {
        "/",
        MANAGED_LEDGERS,
        "/admin",
        POLICIES,
        LOCAL_POLICIES,
        PARTITIONED,
        "/admin/clusters",
        "/admin/topic-policies",
        SCHEMAS,
        "/loadbalance",
        BUNDLE_DATA,
        "/loadbalance/brokers",
        OWNERSHIP,
        "/zookeeper",
        "/ledgers",
    }
)
# Trees nothing of pulsar-ops ever deletes a subtree in (prefixes, inclusive).
PROTECTED_TREES = ("/admin/clusters", "/zookeeper", "/loadbalance/brokers", OWNERSHIP, "/ledgers", "/stream")

LEAK_KINDS = (
    "managed-ledgers-tenant",
    "managed-ledgers-namespace",
    "partitioned-topic",
    "schema",
    "bundle-data",
    "local-policies",
)
DOMAINS = ("persistent", "non-persistent")
_BUNDLE_RANGE = re.compile(r"0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}")


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _parts(path: str, root: str) -> list[str]:
    return path[len(root) + 1 :].split("/")


@dataclass(frozen=True)
class LeakShape:
    """What a subtree root is, derived from the path alone (never from the plan's own fields)."""

    leak: str
    store: str
    namespace: str | None = None  # t/ns or t/c/ns
    tenant: str | None = None
    domain: str | None = None
    topic: str | None = None  # encoded local name (partitioned-topic, schema)
    bundle_range: str | None = None


def leak_shape(path: str) -> LeakShape | None:
    """The ``znode-leak`` kind a subtree root has, or None when no leak kind has that shape."""
    if zk_path_problem(path) is not None or path in PROTECTED_ROOTS:
        return None
    if any(within(path, t) for t in PROTECTED_TREES):
        return None
    if path.startswith(MANAGED_LEDGERS + "/"):
        p = _parts(path, MANAGED_LEDGERS)
        if len(p) == 1:
            return LeakShape("managed-ledgers-tenant", LOCAL, tenant=p[0])
        if len(p) in (2, 3) and p[-1] not in DOMAINS:
            return LeakShape("managed-ledgers-namespace", LOCAL, namespace="/".join(p), tenant=p[0])
        return None
    if path.startswith(PARTITIONED + "/"):
        p = _parts(path, PARTITIONED)
        if len(p) in (4, 5) and p[-2] == "persistent":
            return LeakShape(
                "partitioned-topic", CONFIG, namespace="/".join(p[:-2]), tenant=p[0], domain=p[-2], topic=p[-1]
            )
        return None
    if path.startswith(SCHEMAS + "/"):
        p = _parts(path, SCHEMAS)
        if len(p) == 3:
            return LeakShape("schema", LOCAL, namespace="/".join(p[:2]), tenant=p[0], topic=p[2])
        return None
    if path.startswith(BUNDLE_DATA + "/"):
        p = _parts(path, BUNDLE_DATA)
        if len(p) in (3, 4) and _BUNDLE_RANGE.fullmatch(p[-1]):
            return LeakShape("bundle-data", LOCAL, namespace="/".join(p[:-1]), tenant=p[0], bundle_range=p[-1])
        if len(p) in (2, 3) and not _BUNDLE_RANGE.fullmatch(p[-1]):
            return LeakShape("bundle-data", LOCAL, namespace="/".join(p), tenant=p[0])
        return None
    if path.startswith(LOCAL_POLICIES + "/"):
        p = _parts(path, LOCAL_POLICIES)
        if len(p) in (2, 3):
            return LeakShape("local-policies", LOCAL, namespace="/".join(p), tenant=p[0])
        return None
    return None


def _reference_problem(action: Action) -> str | None:
    for r in action.preconditions.references:
        z = r.znode
        problem = zk_path_problem(z.path)
        if problem is not None:
            return f"reference path {z.path!r} {problem}"
        allowed = {
            ROLE_MANAGED_LEDGER: MANAGED_LEDGERS,
            ROLE_CURSOR: MANAGED_LEDGERS,
            ROLE_SCHEMA_LOCATOR: SCHEMAS,
        }[r.role]
        if not z.path.startswith(allowed + "/"):
            return f"a {r.role} reference must lie under {allowed}, not {z.path}"
    return None


def action_problem(action: Action, *, ledgers_root: str) -> str | None:
    """Why ``action`` breaks a safety rule (None when it follows every rule). Static: reads nothing."""
    path = action.path
    problem = zk_path_problem(path)
    if problem is not None:
        return f"target path {path!r} {problem}"
    for z in action.preconditions.znodes:
        zp = zk_path_problem(z.path)
        if zp is not None:
            return f"znode path {z.path!r} {zp}"
        if z.store != action.store:
            return f"znode {z.path} is in store {z.store!r}, the action in {action.store!r}"
    paths = [z.path for z in action.preconditions.znodes]
    if len(set(paths)) != len(paths):
        return "the same znode is listed twice"
    if path in PROTECTED_ROOTS:
        return f"{path} is a protected root and is never deleted"
    if action.kind == KIND_DELETE_LEDGER:
        if action.store != LOCAL:
            return "ledger metadata lives in the local metadata store"
        lid = ledger_id_from_path(path, ledgers_root)
        if lid is None:
            return f"{path} is not a ledger metadata znode under {ledgers_root}"
        if lid != action.ledger_id:
            return f"ledger_id {action.ledger_id} does not match its path {path} (ledger {lid})"
        if paths != [path]:
            return f"a ledger action deletes exactly its ledger znode {path}, not {paths}"
        return _reference_problem(action)
    if action.kind == KIND_DELETE_SUBTREE:
        if action.ledger_id is not None or action.preconditions.references or action.preconditions.custom_metadata:
            return "a subtree action carries no ledger, references or custom metadata"
        if within(path, ledgers_root) or within(ledgers_root, path):
            return f"{path} overlaps the ledgers root {ledgers_root}; ledger metadata is only deleted per ledger"
        shape = leak_shape(path)
        if shape is None:
            return f"{path} is not the root of any znode-leak kind ({', '.join(LEAK_KINDS)})"
        if action.leak is not None and action.leak != shape.leak:
            return f"{path} is a {shape.leak} root, not {action.leak}"
        if action.store != shape.store:
            return f"{shape.leak} subtrees live in the {shape.store} store, not {action.store}"
        if path not in paths:
            return f"the subtree root {path} is not among the znodes it deletes"
        outside = [p for p in paths if not within(p, path)]
        if outside:
            return f"{outside[0]} lies outside the subtree {path}"
        return None
    if action.kind in REWRITE_KINDS:
        return _rewrite_problem(action, paths, ledgers_root)
    if action.kind == KIND_DELETE_SUBSCRIPTION:
        return _subscription_problem(action, paths, ledgers_root)
    if action.kind == KIND_LOAD_TOPIC:
        return _load_problem(action, paths)
    if action.kind == KIND_BOOKIE_GC:
        return bookie_gc.shape_problem(
            path, action.store, bool(paths), action.ledger_id, action.bookie_gc, ledgers_root
        )
    return f"unknown action kind {action.kind!r}"


def _admin_common(action: Action) -> tuple[str | None, tuple[names.MlName, str | None] | None]:
    """What every admin-API action shares: a local znode of its topic's managed ledger, nothing rewritten, no
    references, absent paths or custom metadata, and ``loads_topics`` set (the broker loads the topic).
    (problem, None) or (None, (managed ledger, encoded cursor name or None))."""
    call = action.admin
    assert call is not None
    if action.store != LOCAL or action.rewrite is not None or action.ledger_id is not None:
        return f"a {action.kind} action is a local znode, with no rewrite or ledger_id", None
    if action.preconditions.references or action.preconditions.absent or action.preconditions.custom_metadata:
        return f"a {action.kind} action carries no references, absent paths or custom metadata", None
    if not action.loads_topics:
        return f"a {action.kind} action goes through a broker, which loads the topic: loads_topics must say so", None
    try:
        ml, enc = names.split_ml_path(action.path)
        topic = names.parse_topic(call.topic)
    except DecodeError as e:
        return f"{action.path} / {call.topic}: {e.reason}", None
    if topic.ml_name != ml.ml_name:
        return f"{action.path} is not under the managed ledger of {call.topic}", None
    return None, (ml, enc)


def _load_problem(action: Action, paths: Sequence[str]) -> str | None:
    """A load-topic names the managed-ledger znode of its topic (its compare-and-set token) and nothing else."""
    if action.admin is None or action.admin.subscription is not None:
        return "a load-topic action names its topic and no subscription"
    problem, target = _admin_common(action)
    if problem is not None or target is None:
        return problem
    if target[1] is not None or list(paths) != [action.path]:
        return f"a load-topic action checks exactly the managed-ledger znode of {action.admin.topic}"
    return None


def _subscription_problem(action: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
    """A delete-subscription names a user cursor znode of its topic (never a system cursor: compaction,
    replication, deduplication, transactions) and backs up only that znode and its cursor ledger's metadata."""
    call = action.admin
    if call is None or call.subscription is None:
        return "a delete-subscription action names its topic and subscription"
    problem, target = _admin_common(action)
    if problem is not None or target is None:
        return problem
    enc = target[1]
    if enc is None or names.decode(enc, action.path) != call.subscription:
        return f"{action.path} is not the cursor znode of {call.subscription!r} on {call.topic}"
    if names.is_system_cursor(call.subscription):
        return f"{call.subscription!r} is a system cursor; it is never deleted"
    if not paths or paths[0] != action.path or len(paths) > 2:
        return "a delete-subscription action backs up its cursor znode (first) and at most its cursor ledger"
    if len(paths) == 2 and ledger_id_from_path(paths[1], ledgers_root) is None:
        return f"{paths[1]} is not a ledger metadata znode under {ledgers_root}"
    return None


def _rewrite_problem(action: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
    """A rewrite changes exactly one managed-ledger znode (the topic's), in the local store, and carries no
    references, custom metadata or ledger id; ``drop-missing-ledger`` requires every removed ledger's metadata
    paths to be absent and nothing else."""
    rw = action.rewrite
    if rw is None:
        return f"a {action.kind} action has no rewrite"
    if action.store != LOCAL:
        return "managed-ledger infos live in the local metadata store"
    if action.ledger_id is not None or action.preconditions.custom_metadata:
        return "a rewrite action carries no ledger_id or custom metadata"
    if rw.path != action.path or not paths or paths[0] != action.path:
        return f"a {action.kind} action rewrites its managed-ledger znode {action.path} (listed first)"
    for r in action.preconditions.references:
        if r.role != ROLE_CURSOR or not within(r.znode.path, action.path) or r.znode.path == action.path:
            return f"a rewrite only checks the cursors of its own managed ledger, not {r.znode.path}"
    try:
        ml = names.split_ml_path(action.path)
        topic = names.parse_topic(rw.topic)
    except DecodeError as e:
        return f"{action.path} / {rw.topic}: {e.reason}"
    if ml[1] is not None or topic.ml_name != ml[0].ml_name:
        return f"{action.path} is not the managed-ledger znode of {rw.topic}"
    ids = rw.ledger_ids
    if len(set(ids)) != len(ids):
        return "a ledger is removed twice"
    for p in action.preconditions.absent:
        lid = ledger_id_from_path(p, ledgers_root)
        if lid is None or lid not in ids:
            return f"absent path {p} is not the metadata znode of a removed ledger under {ledgers_root}"
    if action.kind == KIND_DROP_MISSING_LEDGER:
        if paths != [action.path]:
            return f"a drop-missing-ledger action changes exactly its managed-ledger znode, not {list(paths)}"
        found = {ledger_id_from_path(p, ledgers_root) for p in action.preconditions.absent}
        if found != set(ids):
            return "every ledger a drop-missing-ledger action removes must be required absent from BookKeeper"
        return None
    # trim-unloaded: it deletes exactly the metadata of the ledgers it removes from the list, nothing else
    if action.preconditions.absent:
        return "a trim-unloaded action deletes the ledgers it removes; it requires nothing absent"
    deleted = []
    for p in paths[1:]:
        lid = ledger_id_from_path(p, ledgers_root)
        if lid is None:
            return f"{p} is not a ledger metadata znode under {ledgers_root}"
        deleted.append(lid)
    if sorted(deleted) != sorted(ids):
        return "a trim-unloaded action deletes the metadata of exactly the ledgers it removes from the list"
    return None


def plan_problems(actions: Iterable[Action], *, ledgers_root: str) -> list[tuple[str, str]]:
    """(action id, problem) for every action that breaks a rule, plus duplicated targets."""
    out: list[tuple[str, str]] = []
    seen: dict[tuple[str, str], str] = {}
    for a in actions:
        problem = action_problem(a, ledgers_root=ledgers_root)
        if problem is not None:
            out.append((a.id, problem))
            continue
        for z in a.preconditions.znodes:
            other = seen.get((z.store, z.path))
            if other is not None and other != a.id:
                out.append((a.id, f"{z.path} is also deleted by action {other}"))
                break
            seen[(z.store, z.path)] = a.id
    return out


# --- re-proving a leak at delete time ------------------------------------------------------------------


class TreeReader(Protocol):
    """Live reads (the executor passes its ZooKeeper session). A failed read raises; it never means absent."""

    def exists(self, store: str, path: str) -> bool: ...

    def children(self, store: str, path: str) -> list[str] | None: ...

    def data(self, store: str, path: str) -> bytes | None: ...


@dataclass(frozen=True)
class SubtreeNode:
    """A znode of the subtree to delete: its bytes (live), or, on the snapshot, the ledger count the scraper
    decoded (``listed``) or why it could not (``undecodable``)."""

    path: str
    data: bytes
    listed: int | None = None
    undecodable: str | None = None


def _absent(reader: TreeReader, store: str, path: str, what: str) -> str | None:
    return f"{what} {path} exists again" if reader.exists(store, path) else None


def _no_topic(reader: TreeReader, domain_dir: str, encoded: str) -> str | None:
    """No managed ledger ``encoded`` nor a partition ``encoded-partition-N`` under ``domain_dir``."""
    for child in reader.children(LOCAL, domain_dir) or ():
        base, idx = names.partition_suffix(child)
        if child == encoded or (idx >= 0 and base == encoded):
            return f"managed ledger {domain_dir}/{child} exists for it"
    return None


def _namespace_absent(reader: TreeReader, ns: str) -> str | None:
    reason = _absent(reader, CONFIG, f"{POLICIES}/{ns}", "namespace policies")
    parts = ns.split("/")
    if reason is None and len(parts) == 3:  # t/x/y could also be inside the V2 namespace t/x
        reason = _absent(reader, CONFIG, f"{POLICIES}/{parts[0]}/{parts[1]}", "namespace policies")
    return reason


def _no_ledgers_listed(nodes: Sequence[SubtreeNode]) -> str | None:
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info

    for n in nodes:
        try:
            _ml, cursor = names.split_ml_path(n.path)
        except DecodeError:
            continue  # a directory level, not a managed ledger
        if cursor is not None:
            continue
        if n.undecodable is not None:
            return f"managed ledger {n.path} cannot be decoded ({n.undecodable}); not evidence of absence"
        count = n.listed
        if count is None:
            try:
                count = len(decode_managed_ledger_info(n.data, n.path).info.ledgers)
            except DecodeError as e:
                return f"managed ledger {n.path} cannot be decoded ({e.reason}); not evidence of absence"
        if count:
            return f"managed ledger {n.path} lists {count} ledger(s)"
    return None


def _bundle_problem(reader: TreeReader, shape: LeakShape, nodes: Sequence[SubtreeNode]) -> str | None:
    ns = shape.namespace
    assert ns is not None
    ranges = (
        [shape.bundle_range]
        if shape.bundle_range
        else [n.path.rsplit("/", 1)[1] for n in nodes if _BUNDLE_RANGE.fullmatch(n.path.rsplit("/", 1)[1])]
    )
    for r in ranges:
        owned = _absent(reader, LOCAL, f"{OWNERSHIP}/{ns}/{r}", "bundle ownership")
        if owned is not None:
            return owned
    policies = reader.data(CONFIG, f"{POLICIES}/{ns}")
    if policies is None:
        return None
    if shape.bundle_range is None:
        return f"namespace policies {POLICIES}/{ns} exist again"
    from pulsar_ops.formats.policies import (
        effective_boundaries,
        parse_bundle_range,
        parse_local_policies,
        parse_namespace_policies,
    )

    # the broker's bundles: local policies first, then Policies.bundles (NamespaceBundleFactory.loadBundles)
    local = reader.data(LOCAL, f"{LOCAL_POLICIES}/{ns}")
    where = f"{LOCAL_POLICIES}/{ns}" if local is not None else f"{POLICIES}/{ns}"
    try:
        if local is not None:
            bounds = parse_local_policies(local, where).bundle_boundaries
        else:
            bounds = effective_boundaries(parse_namespace_policies(policies, where).bundle_boundaries, None)
        lo, hi = parse_bundle_range(shape.bundle_range, shape.bundle_range)
        edges = [int(b, 16) for b in bounds]
    except (DecodeError, ValueError) as e:
        why = e.reason if isinstance(e, DecodeError) else str(e)
        return f"{where} cannot be decoded ({why}); the namespace's bundles are unknown, not evidence of absence"
    if any(edges[i] == lo and edges[i + 1] == hi for i in range(len(edges) - 1)):
        return f"{shape.bundle_range} is again a bundle of {ns} (by {where})"
    return None


def schema_topic_witnesses(namespace: str, topic: str) -> tuple[str, ...]:
    """The partitioned-topic metadata paths that prove a schema's topic exists: the persistent AND the
    non-persistent one (a schema is keyed ``tenant/ns/topic`` without the domain, so a live non-persistent
    partitioned topic owns it too; the broker keys its partitioned metadata by domain:
    ``NamespaceResources.PartitionedTopicResources``). Read by :func:`prove_leak`, which the planner runs on the
    snapshot and apply on the live tree."""
    return tuple(f"{PARTITIONED}/{namespace}/{d}/{topic}" for d in DOMAINS)


def prove_leak(action: Action, subtree: Sequence[SubtreeNode], reader: TreeReader) -> str | None:
    """Why the subtree is no longer a leak (None when the leak still holds). Reads through ``reader``."""
    shape = leak_shape(action.path)
    if shape is None:
        return f"{action.path} is not the root of any znode-leak kind"
    if shape.leak == "managed-ledgers-tenant":
        assert shape.tenant is not None
        return _absent(reader, CONFIG, f"{POLICIES}/{shape.tenant}", "tenant") or _no_ledgers_listed(subtree)
    if shape.leak == "managed-ledgers-namespace":
        assert shape.namespace is not None
        return _namespace_absent(reader, shape.namespace) or _no_ledgers_listed(subtree)
    if shape.leak == "partitioned-topic":
        assert shape.namespace is not None and shape.topic is not None
        return _no_topic(reader, f"{MANAGED_LEDGERS}/{shape.namespace}/persistent", shape.topic)
    if shape.leak == "schema":
        assert shape.namespace is not None and shape.topic is not None and shape.tenant is not None
        t, ns = shape.namespace.split("/")
        namespaces = [shape.namespace] + [
            f"{t}/{c}/{ns}" for c in reader.children(LOCAL, f"{MANAGED_LEDGERS}/{t}") or () if c != ns
        ]
        for n in namespaces:
            reason = _no_topic(reader, f"{MANAGED_LEDGERS}/{n}/persistent", shape.topic)
            if reason is not None:
                return reason
        for witness in schema_topic_witnesses(shape.namespace, shape.topic):
            reason = _absent(reader, CONFIG, witness, "partitioned-topic metadata")
            if reason is not None:
                return reason
        return None
    if shape.leak == "bundle-data":
        return _bundle_problem(reader, shape, subtree)
    if shape.leak == "local-policies":
        assert shape.namespace is not None
        return _namespace_absent(reader, shape.namespace)
    return f"no re-check is defined for {shape.leak}"
