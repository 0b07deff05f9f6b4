"""The static safety rules of a plan (:func:`action_problem`, :func:`plan_problems`: apply refuses a plan that breaks
one as a whole, before anything is journaled) and the leak proof (:func:`prove_leak`, per leak kind: the table in
``docs/repair.md``, "What is re-checked at delete time"), run on the snapshot by the planner and on the live tree by
apply. Pure. A read that fails, or a value that does not decode, is never evidence of absence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import names
from pulsar_ops.repair.actions import Action
from pulsar_ops.repair.facts import SubtreeNode, TreeReader
from pulsar_ops.strict import zk_path_problem

__all__ = ["SubtreeNode", "TreeReader"]

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
    from pulsar_ops.repair.registry import KINDS

    kind = KINDS.get(action.kind)
    if kind is None:
        return f"unknown action kind {action.kind!r}"
    return kind.shape(action, paths, ledgers_root)


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
