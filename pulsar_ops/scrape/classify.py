"""Pure path logic for the scraper: which walk roots live in which store, the `kind` of a znode path, and the
innermost completeness scope (docs/detections.md, "Scopes") a path belongs to. No I/O."""

from __future__ import annotations

import re
from typing import NamedTuple

from pulsar_ops.formats import ledger_path

LOCAL = "local"
CONFIG = "config"

MANAGED_LEDGERS = "/managed-ledgers"
SCHEMAS = "/schemas"
POLICIES = "/admin/policies"
LOCAL_POLICIES = "/admin/local-policies"
PARTITIONED = "/admin/partitioned-topics"
CLUSTERS = "/admin/clusters"
TOPIC_POLICIES = "/admin/topic-policies"
NAMESPACE = "/namespace"
BUNDLE_DATA = "/loadbalance/bundle-data"
# the extensible load manager's metadata-store table view (ServiceUnitStateMetadataStoreTableViewImpl.PATH_PREFIX)
SERVICE_UNIT_STATE = "/service_unit_state"

CONFIG_ROOTS: tuple[str, ...] = (POLICIES, PARTITIONED, CLUSTERS)
LOCAL_FIXED_ROOTS: tuple[str, ...] = (
    MANAGED_LEDGERS,
    SCHEMAS,
    LOCAL_POLICIES,
    NAMESPACE,
    BUNDLE_DATA,
    TOPIC_POLICIES,
    SERVICE_UNIT_STATE,
)

_DOMAINS = ("persistent", "non-persistent")
_RANGE_RE = re.compile(r"0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}")


def roots_for(store: str, ledgers_root: str, *, separate_config: bool) -> tuple[str, ...]:
    """The subtrees walked in one store. With one shared store, the config roots are walked once (as config)."""
    if store == CONFIG:
        return (*CONFIG_ROOTS, TOPIC_POLICIES) if separate_config else CONFIG_ROOTS
    return (MANAGED_LEDGERS, ledgers_root, *LOCAL_FIXED_ROOTS[1:])


def is_bundle_range(name: str) -> bool:
    return _RANGE_RE.fullmatch(name) is not None


def _under(path: str, root: str) -> list[str] | None:
    """Segments of ``path`` below ``root`` ([] for the root itself), or None when not under it."""
    if path == root:
        return []
    if path.startswith(root) and path[len(root)] == "/":
        return path[len(root) + 1 :].split("/")
    return None


class PathInfo(NamedTuple):
    """What a path is: its kind, its innermost scope, and the root it was found under.

    A NamedTuple (immutable, like the frozen dataclass it was): built once per znode, it costs a third."""

    kind: str
    scope: str
    root: str
    segments: tuple[str, ...]


def _ml_kind(s: list[str]) -> str:
    n = len(s)
    if n >= 3 and s[2] == "persistent":
        if n == 4:
            return "managed-ledger"
        if n == 5:
            return "cursor"
        return "ml-dir" if n == 3 else "other"
    if n >= 4 and s[3] == "persistent":
        if n == 5:
            return "managed-ledger"
        if n == 6:
            return "cursor"
        return "ml-dir" if n == 4 else "other"
    return "ml-dir" if n <= 3 else "other"


def _ml_scope(s: list[str]) -> str:
    """/managed-ledgers/<namespace>: V2 t/ns (persistent third), V1 p/c/ns; above that the listing scope."""
    n = len(s)
    if n < 2:
        return MANAGED_LEDGERS
    if n >= 3 and s[2] != "persistent":
        return f"{MANAGED_LEDGERS}/{s[0]}/{s[1]}/{s[2]}"
    return f"{MANAGED_LEDGERS}/{s[0]}/{s[1]}"


def _ledger_kind(path: str, s: list[str], ledgers_root: str) -> str:
    if not s:
        return "bk-dir"
    top = s[0]
    if ledger_path.is_special(top):
        return "bk-internal"
    child = ledger_path.classify_child(top)
    if child == "flat-leaf":
        return "bk-ledger" if len(s) == 1 else "other"
    if child == "legacy":
        return "bk-ledger" if len(s) == 3 else ("bk-dir" if len(s) < 3 else "other")
    if child == "long":
        return "bk-ledger" if len(s) == 5 else ("bk-dir" if len(s) < 5 else "other")
    return "other"


def classify(path: str, ledgers_root: str, num_children: int = 0) -> PathInfo:
    """Kind and innermost scope of ``path`` (kinds as documented on ``znodes.kind``)."""
    s = _under(path, MANAGED_LEDGERS)
    if s is not None:
        return PathInfo(_ml_kind(s), _ml_scope(s), MANAGED_LEDGERS, tuple(s))
    s = _under(path, ledgers_root)
    if s is not None:
        return PathInfo(_ledger_kind(path, s, ledgers_root), ledgers_root, ledgers_root, tuple(s))
    s = _under(path, SCHEMAS)
    if s is not None:
        scope = f"{SCHEMAS}/{s[0]}/{s[1]}" if len(s) >= 2 else SCHEMAS
        kind = "schema" if len(s) == 3 else ("schema-dir" if len(s) < 3 else "other")
        return PathInfo(kind, scope, SCHEMAS, tuple(s))
    s = _under(path, POLICIES)
    if s is not None:
        n = len(s)
        if n == 1:
            kind = "tenant"
        elif n == 2:
            kind = "namespace" if num_children == 0 else "policies-dir"
        elif n == 3:
            kind = "namespace"
        else:
            kind = "policies-dir" if n == 0 else "other"
        return PathInfo(kind, POLICIES, POLICIES, tuple(s))
    s = _under(path, LOCAL_POLICIES)
    if s is not None:
        n = len(s)
        if (n == 2 and num_children == 0) or n == 3:
            kind = "local-policies"
        else:
            kind = "local-policies-dir" if n <= 2 else "other"
        return PathInfo(kind, LOCAL_POLICIES, LOCAL_POLICIES, tuple(s))
    s = _under(path, PARTITIONED)
    if s is not None:
        n = len(s)
        # <ns>/<domain>/<topic>, V2 (t/ns) or V1 (p/c/ns): a persistent or non-persistent partitioned topic (the
        # broker writes both: NamespaceResources.PartitionedTopicResources#createPartitionedTopicAsync keys the
        # path by the topic's domain). A non-persistent one has no managed ledger, but proves its schema's topic.
        if (n == 4 and s[2] in _DOMAINS) or (n == 5 and s[3] in _DOMAINS):
            kind = "partitioned-topic"
        elif n <= 3 or (n == 4 and s[3] in _DOMAINS):
            kind = "partitioned-dir"
        else:
            kind = "other"
        return PathInfo(kind, PARTITIONED, PARTITIONED, tuple(s))
    s = _under(path, CLUSTERS)
    if s is not None:
        kind = "cluster" if len(s) == 1 else "other"
        return PathInfo(kind, CLUSTERS, CLUSTERS, tuple(s))
    s = _under(path, NAMESPACE)
    if s is not None:
        kind = "bundle-owner" if len(s) in (3, 4) and is_bundle_range(s[-1]) else "namespace-dir"
        return PathInfo(kind, NAMESPACE, NAMESPACE, tuple(s))
    s = _under(path, BUNDLE_DATA)
    if s is not None:
        kind = "bundle-data" if len(s) in (3, 4) and is_bundle_range(s[-1]) else "bundle-data-dir"
        return PathInfo(kind, BUNDLE_DATA, BUNDLE_DATA, tuple(s))
    s = _under(path, SERVICE_UNIT_STATE)
    if s is not None:
        # <tenant>/<ns>/<range> (V1: <p>/<c>/<ns>/<range>): NamespaceBundle.toString() below PATH_PREFIX
        kind = "service-unit-state" if len(s) in (3, 4) and is_bundle_range(s[-1]) else "service-unit-state-dir"
        return PathInfo(kind, SERVICE_UNIT_STATE, SERVICE_UNIT_STATE, tuple(s))
    s = _under(path, TOPIC_POLICIES)
    if s is not None:
        n = len(s)
        ok = n in (5, 6) and s[0] in ("global", "local")
        return PathInfo("topic-policies" if ok else "other", TOPIC_POLICIES, TOPIC_POLICIES, tuple(s))
    return PathInfo("other", path, path, ())
