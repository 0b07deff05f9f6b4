"""The names Pulsar creates for itself: ONE registry, used by the scrape, the audit's SQL and the repair rules.

Nothing named here is ever a leak, an orphan, an idle subscription or an unloaded topic, and no repair action
touches it: where such a thing is broken it is reported as its own finding (``system-metadata``), never planned.
Each entry cites the upstream (apache/pulsar) file it follows; the names are taken from upstream, not guessed.

Predicates return a reason string (``None`` = not Pulsar's own). The SQL renderers return the same rule as a
Spark/DuckDB expression over column expressions (expanded in ``sql/`` by ``pulsar_ops.audit.sql_files``:
``${system_topic_reason:NS:LOCAL}``, ``${system_namespace_reason:NS}``, ``${system_cursor_reason:NAME}``,
``${transaction_store_kind:NS:LOCAL}``); a test runs both on generated names in DuckDB and requires the same
answers (tests/unit/test_pulsar_names.py). The SQL uses only ``left``/``right``/``=``/``regexp_extract`` with
``^...$`` anchors, which mean the same in Spark (Java regex) and DuckDB (RE2) for names without line breaks
(Pulsar's ``NamespaceName``/``TopicName`` validation admits none in namespace names).

Pure: stdlib and ``pulsar_ops.formats`` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Literal

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.names import decode

# --- namespaces -------------------------------------------------------------------------------------------------

# pulsar-common org/apache/pulsar/common/naming/NamespaceName.java: SYSTEM_NAMESPACE = get("pulsar", "system")
SYSTEM_TENANT = "pulsar"
SYSTEM_NAMESPACE = "pulsar/system"
# pulsar-broker org/apache/pulsar/broker/namespace/NamespaceService.java: HEARTBEAT_NAMESPACE_PATTERN
# "pulsar/[^/]+/([^:]+:\d+)" (V1, pulsar/<cluster>/<broker host:port>), HEARTBEAT_NAMESPACE_PATTERN_V2
# "pulsar/([^:]+:\d+)" (pulsar/<broker host:port>), SLA_NAMESPACE_PATTERN "sla-monitor/[^/]+/([^:]+:\d+)"; used with
# Matcher.matches() (whole name) by isSystemServiceNamespace. The V2 pattern's [^:]+ also admits "/", so it
# covers the V1 shape; both are kept for the reason text.
SLA_MONITOR_TENANT = "sla-monitor"
_HEARTBEAT_V1 = r"^pulsar/[^/]+/[^:]+:[0-9]+$"
_HEARTBEAT_V2 = r"^pulsar/[^:]+:[0-9]+$"
_SLA_MONITOR = r"^sla-monitor/[^/]+/[^:]+:[0-9]+$"

# pulsar-functions org/apache/pulsar/functions/worker/WorkerConfig.java and conf/functions_worker.yml: the
# functions worker's defaults pulsarFunctionsNamespace "public/functions" with its topics functionAssignmentTopicName
# "assignments", clusterCoordinationTopicName "coordinate", functionMetadataTopicName "metadata" (configurable:
# only the defaults are recognised).
FUNCTIONS_NAMESPACE = "public/functions"
FUNCTIONS_TOPICS: tuple[str, ...] = ("assignments", "coordinate", "metadata")

# --- topics -----------------------------------------------------------------------------------------------------

# pulsar-common org/apache/pulsar/common/naming/SystemTopicNames.java
NAMESPACE_EVENTS_LOCAL_NAME = "__change_events"  # topic policies (SystemTopicBasedTopicPoliciesService)
TRANSACTION_BUFFER_SNAPSHOT = "__transaction_buffer_snapshot"
TRANSACTION_BUFFER_SNAPSHOT_SEGMENTS = "__transaction_buffer_snapshot_segments"
TRANSACTION_BUFFER_SNAPSHOT_INDEXES = "__transaction_buffer_snapshot_indexes"
# SystemTopicNames.EVENTS_TOPIC_NAMES (isEventSystemTopic compares the partitioned topic's local name)
EVENTS_TOPIC_NAMES: tuple[str, ...] = (
    NAMESPACE_EVENTS_LOCAL_NAME,
    TRANSACTION_BUFFER_SNAPSHOT,
    TRANSACTION_BUFFER_SNAPSHOT_SEGMENTS,
    TRANSACTION_BUFFER_SNAPSHOT_INDEXES,
)
# SystemTopicNames.PENDING_ACK_STORE_SUFFIX; pulsar-broker .../transaction/pendingack/impl/MLPendingAckStore.java
# getTransactionPendingAckStoreSuffix: "<origin topic>-<subscription>__transaction_pending_ack", same namespace
PENDING_ACK_STORE_SUFFIX = "__transaction_pending_ack"
# SystemTopicNames.TRANSACTION_COORDINATOR_ASSIGN: persistent://pulsar/system/transaction_coordinator_assign, the
# partitioned topic whose partition N's bundle owner runs coordinator N (TransactionMetadataStoreService
# .handleTcClientConnect checks ownership of getPartition(N)); its partitions never get a managed ledger.
TRANSACTION_COORDINATOR_ASSIGN_LOCAL_NAME = "transaction_coordinator_assign"
TRANSACTION_COORDINATOR_ASSIGN = f"persistent://{SYSTEM_NAMESPACE}/{TRANSACTION_COORDINATOR_ASSIGN_LOCAL_NAME}"
# SystemTopicNames.TRANSACTION_COORDINATOR_LOG and pulsar-transaction/coordinator .../impl/MLTransactionLogImpl.java
# TRANSACTION_LOG_PREFIX: coordinator N's log is the managed ledger pulsar/system/persistent/__transaction_log_N
TRANSACTION_LOG_PREFIX = "__transaction_log_"
# pulsar-broker .../loadbalance/extensions/channel/ServiceUnitStateChannelImpl.java (and
# ServiceUnitStateTableViewImpl.java) TOPIC; ExtensibleLoadManagerImpl.java BROKER_LOAD_DATA_STORE_TOPIC,
# TOP_BUNDLES_LOAD_DATA_STORE_TOPIC: the extensible load manager's system topics, all in pulsar/system
ELM_SERVICE_UNIT_STATE_TOPIC = f"persistent://{SYSTEM_NAMESPACE}/loadbalancer-service-unit-state"
ELM_SYSTEM_TOPIC_LOCAL_NAMES: tuple[str, ...] = (
    "loadbalancer-service-unit-state",
    "loadbalancer-broker-load-data",
    "loadbalancer-top-bundles-load-data",
)

# --- cursors ----------------------------------------------------------------------------------------------------

# pulsar-broker .../service/persistent/MessageDeduplication.java: the dedup cursor "pulsar.dedup"
DEDUP_CURSOR = "pulsar.dedup"
# pulsar-broker .../compaction/Compactor.java COMPACTION_SUBSCRIPTION
COMPACTION_CURSOR = "__compaction"
# SystemTopicNames.PENDING_ACK_STORE_CURSOR_NAME: the pending-ack store's own cursor
PENDING_ACK_STORE_CURSOR = "__pending_ack_state"
# MLTransactionLogImpl.TRANSACTION_SUBSCRIPTION_NAME: the coordinator log's cursor
TRANSACTION_LOG_CURSOR = "transaction.subscription"
# pulsar-broker .../ServiceConfiguration.java replicatorPrefix = "pulsar.repl"; PersistentReplicator names its
# cursor "<replicatorPrefix>.<remote cluster>" (configurable: only the default prefix is recognised)
REPLICATOR_CURSOR_PREFIX = "pulsar.repl."

SYSTEM_CURSOR_NAMES: dict[str, str] = {
    DEDUP_CURSOR: "deduplication cursor (MessageDeduplication)",
    COMPACTION_CURSOR: "compaction cursor (Compactor.COMPACTION_SUBSCRIPTION)",
    PENDING_ACK_STORE_CURSOR: "pending-ack store cursor (SystemTopicNames.PENDING_ACK_STORE_CURSOR_NAME)",
    TRANSACTION_LOG_CURSOR: "transaction log cursor (MLTransactionLogImpl.TRANSACTION_SUBSCRIPTION_NAME)",
}
SYSTEM_CURSOR_PREFIXES: dict[str, str] = {
    REPLICATOR_CURSOR_PREFIX: "geo-replication cursor (ServiceConfiguration.replicatorPrefix)",
}

# --- metadata-store paths ---------------------------------------------------------------------------------------

# ExtensibleLoadManagerImpl.java ELECTION_ROOT; the registrations (BrokerRegistryImpl) are BrokerLookupData JSON
# under /loadbalance/brokers/<id>, which name loadManagerClassName (a LocalBrokerData of the modular load manager
# has no such field)
ELM_LEADER_PATH = "/loadbalance/extension/leader"
# .../extensions/channel/ServiceUnitStateMetadataStoreTableViewImpl.java PATH_PREFIX: ownership under
# /service_unit_state/<tenant>/<ns>/<0x..._0x...> when the metadata-store table view is configured
SERVICE_UNIT_STATE_ROOT = "/service_unit_state"
# .../extensions/channel/ServiceUnitState.java: Owned is dstBroker's (terminal) ownership; Assigning, Releasing and
# Splitting are in flight (ServiceUnitState.isInFlightState: the bundle is moving between brokers, in use); Free and
# Deleted are semi-terminal, no broker owns the bundle; Init is what an absent value reads as
# (ServiceUnitStateData.state(null)), stored it says nothing about an owner
SERVICE_UNIT_OWNED_STATE = "Owned"
SERVICE_UNIT_IN_FLIGHT_STATES: tuple[str, ...] = ("Assigning", "Releasing", "Splitting")
SERVICE_UNIT_FREE_STATES: tuple[str, ...] = ("Free", "Deleted")
# ServiceUnitStateTableViewImpl.TOPIC: the system-topic table view's topic. Its managed ledger exists once any broker
# ran that table view (or ServiceUnitStateTableViewSyncer, which opens both views while migrating)
SERVICE_UNIT_STATE_TOPIC_ML = "pulsar/system/persistent/loadbalancer-service-unit-state"
ELM_CLASS_NAMES: frozenset[str] = frozenset(
    {
        "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl",
        "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerWrapper",
    }
)
# the load managers that keep ownership in /namespace znodes (OwnershipCache), should a registration name one
ZK_OWNERSHIP_CLASS_NAMES: frozenset[str] = frozenset(
    {
        "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
        "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerWrapper",
        "org.apache.pulsar.broker.loadbalance.impl.SimpleLoadManagerImpl",
    }
)
# pulsar-broker org/apache/pulsar/PulsarClusterMetadataSetup.java (initialize-cluster-metadata) writes, besides
# the cluster, the tenants "public" and "pulsar", the namespaces "public/default" and "pulsar/system", and the
# partitioned-topic metadata of TRANSACTION_COORDINATOR_ASSIGN with --initial-num-transaction-coordinators
# partitions (default 16), whether transactions are enabled or not.
CLUSTER_SETUP_TENANTS: tuple[str, ...] = ("public", SYSTEM_TENANT)
CLUSTER_SETUP_NAMESPACES: tuple[str, ...] = ("public/default", SYSTEM_NAMESPACE)
CLUSTER_SETUP_PARTITIONED_TOPICS: tuple[str, ...] = (TRANSACTION_COORDINATOR_ASSIGN,)
DEFAULT_TRANSACTION_COORDINATORS = 16

# --- reasons (the same text in Python and SQL; no single quotes) ------------------------------------------------

R_SYSTEM_NAMESPACE = "Pulsar system namespace pulsar/system (NamespaceName.SYSTEM_NAMESPACE)"
R_HEARTBEAT_V1 = "broker heartbeat namespace pulsar/<cluster>/<broker> (NamespaceService.HEARTBEAT_NAMESPACE_PATTERN)"
R_HEARTBEAT_V2 = "broker heartbeat namespace pulsar/<broker> (NamespaceService.HEARTBEAT_NAMESPACE_PATTERN_V2)"
R_SLA_MONITOR = "SLA-monitor namespace sla-monitor/<cluster>/<broker> (NamespaceService.SLA_NAMESPACE_PATTERN)"
R_EVENTS = "Pulsar events system topic (SystemTopicNames.EVENTS_TOPIC_NAMES: topic policies, transaction buffer)"
R_PENDING_ACK = "transaction pending-ack store (SystemTopicNames.PENDING_ACK_STORE_SUFFIX)"
R_FUNCTIONS = "functions worker topic of public/functions (WorkerConfig defaults)"
R_SYSTEM_TENANT = "Pulsar system tenant pulsar (NamespaceName.SYSTEM_NAMESPACE, initialize-cluster-metadata)"
R_SLA_TENANT = "SLA-monitor tenant (NamespaceService.SLA_NAMESPACE_PROPERTY)"
R_ELM_PATH = "extensible load manager state (ExtensibleLoadManagerImpl, ServiceUnitStateMetadataStoreTableViewImpl)"
R_RESERVED = "local name starts with __, the prefix of the topics Pulsar names for itself (SystemTopicNames)"

_NAMESPACE_RULES: tuple[tuple[str, str], ...] = (  # (anchored regex, reason), first match
    (_HEARTBEAT_V1, R_HEARTBEAT_V1),
    (_HEARTBEAT_V2, R_HEARTBEAT_V2),
    (_SLA_MONITOR, R_SLA_MONITOR),
)
# the roots under which a path names a tenant / namespace / topic (pulsar_ops.scrape.classify, the walk's roots)
_NAMED_ROOTS: tuple[str, ...] = (
    "/managed-ledgers",
    "/admin/policies",
    "/admin/local-policies",
    "/admin/partitioned-topics",
    "/admin/topic-policies",
    "/schemas",
    "/namespace",
    "/loadbalance/bundle-data",
)
_NAMESPACE_RES = tuple((re.compile(p), r) for p, r in _NAMESPACE_RULES)
_PARTITION_TAIL = re.compile(r"-partition-[0-9]+$")
_PARTITION_TAIL_SQL = "-partition-[0-9]+$"
_TC_LOG_SQL = f"^{TRANSACTION_LOG_PREFIX}(0|[1-9][0-9]*)$"
_TC_LOG = re.compile(_TC_LOG_SQL)

TransactionStoreKind = Literal["pending-ack", "coordinator-log"]


def system_namespace_reason(namespace: str) -> str | None:
    """Why ``namespace`` (``tenant/ns`` or ``property/cluster/ns``) is Pulsar's own, or None."""
    if namespace == SYSTEM_NAMESPACE:
        return R_SYSTEM_NAMESPACE
    for rx, reason in _NAMESPACE_RES:
        if rx.match(namespace):  # anchored ^...$, like Matcher.matches() for names without line breaks
            return reason
    return None


def is_heartbeat_namespace(namespace: str) -> bool:
    """A broker heartbeat or SLA-monitor namespace (NamespaceService patterns): brokers own it without namespace
    policies, so its metadata never has the owner a user namespace has."""
    return any(rx.match(namespace) for rx, _ in _NAMESPACE_RES)


def system_tenant_reason(tenant: str) -> str | None:
    """Why a whole tenant is Pulsar's own: ``pulsar`` (NamespaceName.SYSTEM_NAMESPACE's tenant, created by
    initialize-cluster-metadata, and the tenant of the heartbeat namespaces) and ``sla-monitor``
    (NamespaceService.SLA_NAMESPACE_PROPERTY)."""
    if tenant == SYSTEM_TENANT:
        return R_SYSTEM_TENANT
    if tenant == SLA_MONITOR_TENANT:
        return R_SLA_TENANT
    return None


def system_path_reason(path: str) -> str | None:
    """Why a metadata-store path names Pulsar's own tenant, namespace or topic (or something below one), else
    None: a managed-ledger tenant/namespace/topic/cursor, a partitioned-topic node, a schema, bundle data, local
    policies, topic policies or ownership of a system name; the extensible load manager's znodes. Topic names in
    paths are decoded (``Codec.encode``); an undecodable one is judged by its namespace only."""
    if path == ELM_LEADER_PATH or path.startswith((ELM_LEADER_PATH + "/", SERVICE_UNIT_STATE_ROOT + "/")):
        return R_ELM_PATH
    if path == SERVICE_UNIT_STATE_ROOT:
        return R_ELM_PATH
    for root in _NAMED_ROOTS:
        if path.startswith(root + "/"):
            seg = path[len(root) + 1 :].split("/")
            if root == "/schemas" and len(seg) == 3:  # /schemas/<tenant>/<ns>/<encoded base name>: no domain
                seg = [seg[0], seg[1], "persistent", seg[2]]
            return _segments_reason(seg)
    return None


def _segments_reason(seg: list[str]) -> str | None:
    if not seg or not seg[0]:
        return None
    if len(seg) == 1:
        return system_tenant_reason(seg[0])
    if seg[0] in ("global", "local") and len(seg) >= 3:  # /admin/topic-policies/<scope>/...
        seg = seg[1:]
    domains = ("persistent", "non-persistent")
    for n in (2, 3):  # V2 tenant/ns, V1 property/cluster/ns
        if len(seg) < n:
            continue
        ns = "/".join(seg[:n])
        reason = system_namespace_reason(ns)
        if reason is not None:
            return reason
        rest = seg[n:]
        if len(rest) >= 2 and rest[0] in domains:
            local = _decode_or_none(rest[1])
            reason = system_topic_reason(ns, local) if local is not None else None
            if reason is not None:
                return reason
    return None


def _decode_or_none(encoded: str) -> str | None:
    try:
        return decode(encoded)
    except DecodeError:
        return None


def _strip_partition(local_name: str) -> str:
    """The local name without a ``-partition-<digits>`` tail (what ``TopicName.getPartitionedTopicName`` strips;
    broader than ``TopicName.getPartitionIndex`` for non-canonical digits, which only widens the registry)."""
    return _PARTITION_TAIL.sub("", local_name, count=1)


def system_topic_reason(namespace: str, local_name: str) -> str | None:
    """Why the topic ``<namespace>/<local_name>`` (decoded local name) is Pulsar's own, or None.

    Follows ``SystemTopicNames.isSystemTopic`` (events topics by partitioned local name, the transaction internal
    names) and ``BrokerService.isSystemTopic`` (every topic of a system-service namespace), plus the functions
    worker's default topics and any local name starting with ``__``.
    """
    ns_reason = system_namespace_reason(namespace)
    if ns_reason is not None:
        return ns_reason
    if _strip_partition(local_name) in EVENTS_TOPIC_NAMES:
        return R_EVENTS
    if local_name.endswith(PENDING_ACK_STORE_SUFFIX):
        return R_PENDING_ACK
    if namespace == FUNCTIONS_NAMESPACE and _strip_partition(local_name) in FUNCTIONS_TOPICS:
        return R_FUNCTIONS
    if local_name.startswith("__"):
        return R_RESERVED
    return None


# --- topic policies outside the metadata store ---------------------------------------------------------------
# pulsar-broker .../systopic/NamespaceEventsSystemTopicFactory.java: SystemTopicBasedTopicPoliciesService (the
# default topicPoliciesServiceClassName) keeps a namespace's topic policies as messages of
# getEventsTopicName(ns) = persistent://<ns>/__change_events, read back through a reader of that topic (of every
# partition, should it be partitioned); LegacyAwareTopicPoliciesService routes a namespace to it whenever
# checkSystemTopicExists(ns, TOPIC_POLICY) finds the managed ledger of that topic or of its partition 0
# (TopicResources.persistentTopicExists), whatever service is configured. Messages live only in managed ledgers,
# so the question is whether a managed ledger of the topic or of a partition exists: its znode (decodable or not),
# or the partitioned-topic node, which only widens it. A partition is any "-partition-<digits>" tail
# (_strip_partition), wider than TopicName.getPartitionIndex's canonical index: a wider match only makes more
# namespaces unknown. The one definition for the audit's SQL (${topic_policies_topic:LOCAL}), the planner's
# snapshot facts and apply's live facts (repair/snapshot_facts.py _policy_topic_namespaces, repair/live_facts.py
# topic_policies_unknown); tests/unit/repair/test_topic_policies_rule.py pins them.


def is_topic_policies_topic(local_name: str) -> bool:
    """Whether a persistent topic's decoded local name is ``__change_events`` or one of its partitions: where a
    namespace's topic policies may be kept outside the metadata store."""
    return _strip_partition(local_name) == NAMESPACE_EVENTS_LOCAL_NAME


def system_topic_reason_of(topic: str) -> str | None:
    """:func:`system_topic_reason` of a full ``persistent://...`` (or ``non-persistent://``) topic name."""
    rest = topic.split("://", 1)[1] if "://" in topic else topic
    if "/" not in rest:
        return None
    namespace, local = rest.rsplit("/", 1) if rest.count("/") <= 2 else _split_v1(rest)
    return system_topic_reason(namespace, local)


def _split_v1(rest: str) -> tuple[str, str]:
    parts = rest.split("/", 3)  # TopicName: at most 4 pieces; a V1 local name may hold "/"
    return "/".join(parts[:3]), parts[3]


def system_cursor_reason(name: str) -> str | None:
    """Why cursor ``name`` (plain or as stored, URL-encoded) is Pulsar's own, or None."""
    reason = _cursor_reason_plain(name)
    if reason is None and ("%" in name or "+" in name):
        try:
            plain = decode(name)
        except DecodeError:
            return None
        reason = _cursor_reason_plain(plain)
    return reason


def _cursor_reason_plain(name: str) -> str | None:
    exact = SYSTEM_CURSOR_NAMES.get(name)
    if exact is not None:
        return exact
    for prefix, reason in SYSTEM_CURSOR_PREFIXES.items():
        if name.startswith(prefix):
            return reason
    return None


def is_system_cursor(name: str) -> bool:
    """True for Pulsar's own cursors (dedup, replicator, compaction, transaction); encoded or plain names."""
    return system_cursor_reason(name) is not None


def transaction_store_kind(namespace: str, local_name: str) -> TransactionStoreKind | None:
    """Which transaction store a managed ledger is: a pending-ack store (opened by the broker that has its origin
    topic loaded, MLPendingAckStoreProvider) or coordinator N's log (opened by the broker owning the bundle of
    ``transaction_coordinator_assign-partition-N``, TransactionMetadataStoreService); None for neither."""
    if local_name.endswith(PENDING_ACK_STORE_SUFFIX):
        return "pending-ack"
    if namespace == SYSTEM_NAMESPACE and coordinator_id(local_name) is not None:
        return "coordinator-log"
    return None


def coordinator_id(local_name: str) -> int | None:
    """N of ``__transaction_log_N`` (a canonical non-negative decimal: TransactionCoordinatorID's long), else None."""
    m = _TC_LOG.match(local_name)
    return int(m.group(1)) if m else None


def coordinator_assign_partition(tc_id: int) -> str:
    """The topic whose bundle owner runs coordinator ``tc_id`` (``TRANSACTION_COORDINATOR_ASSIGN.getPartition``)."""
    return f"{TRANSACTION_COORDINATOR_ASSIGN}-partition-{tc_id}"


def pending_ack_origin_candidates(local_name: str) -> list[str]:
    """The local names the origin topic of a pending-ack store may have: ``<origin>-<sub>__transaction_pending_ack``
    is ambiguous where origin or subscription hold ``-``, so every prefix ending before a ``-`` (longest first).
    The store is in use while ANY of them is loaded (the wider reading: fewer findings)."""
    if not local_name.endswith(PENDING_ACK_STORE_SUFFIX):
        return []
    stem = local_name[: -len(PENDING_ACK_STORE_SUFFIX)]
    return [stem[:i] for i in range(len(stem) - 1, 0, -1) if stem[i] == "-"]


def is_elm_class(class_name: str | None) -> bool:
    """True when a broker registration's ``loadManagerClassName`` names the extensible load manager."""
    return class_name is not None and class_name in ELM_CLASS_NAMES


LoadManagerKind = Literal["modular", "extensible", "mixed", "none", "unknown"]


def registration_class(data: bytes | None) -> str | None:
    """The ``loadManagerClassName`` a broker registration names (BrokerLookupData of the extensible load manager),
    ``""`` for a registration without one (LocalBrokerData of the modular load manager), None when the data is
    not a JSON object (unknown)."""
    if data is None:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    cls = doc.get("loadManagerClassName")
    return cls if isinstance(cls, str) else ""


def load_manager_kind(registrations: dict[str, str | None], extension_leader: bool) -> LoadManagerKind:
    """Which load manager keeps bundle ownership, from the registrations' classes (:func:`registration_class`
    of each ``/loadbalance/brokers/<id>``) and whether ``/loadbalance/extension/leader`` exists.

    ``modular``: every registration is a LocalBrokerData (ownership in ``/namespace`` znodes); ``extensible``:
    every one names the extensible load manager; ``mixed``: both (a migration, or a leftover ELM leader);
    ``none``: no registration and no ELM leader (no broker is up: nothing is loaded); ``unknown``: a registration
    that does not decode, or names another class."""
    classes = set(registrations.values())
    if None in classes:
        return "unknown"
    elm = {c for c in classes if c is not None and is_elm_class(c)}
    modular = {c for c in classes if c == "" or c in ZK_OWNERSHIP_CLASS_NAMES}
    other = classes - elm - modular
    if other:
        return "unknown"
    if elm and modular:
        return "mixed"
    if elm:
        return "extensible"
    if modular:
        return "mixed" if extension_leader else "modular"
    return "extensible" if extension_leader else "none"


def ownership_in_zk(load_manager: dict[str, object] | None) -> bool:
    """Whether a snapshot's ``/namespace`` ownership znodes are the whole truth about bundle ownership, from its
    manifest's ``load_manager`` (absent: a snapshot from before it was recorded, read as the modular load
    manager as those versions did). Only ``modular`` and ``none`` say yes."""
    if not load_manager:
        return True
    return load_manager.get("kind") in ("modular", "none")


ServiceUnitOwnership = Literal["owned", "unowned", "unknown"]


def service_unit_ownership(
    state: str | None, dst_broker: str | None, *, registered: Collection[str]
) -> ServiceUnitOwnership:
    """What one decoded ``/service_unit_state/<bundle>`` value says about its bundle, when the metadata-store table
    view is authoritative (:func:`service_unit_table_view`): ``owned`` when ``Owned`` by a registered broker
    (``dstBroker`` is the broker id, ``/loadbalance/brokers/<id>``), ``unowned`` when ``Free`` or ``Deleted``, else
    ``unknown`` (in flight: in use, never free; ``Init``; owned by a broker that is not registered). A missing value
    (the whole listing read) is unowned; a value that does not decode is unknown. The audit's SQL renders the same
    rule (:func:`service_unit_ownership_sql`)."""
    if state == SERVICE_UNIT_OWNED_STATE and dst_broker is not None and dst_broker in registered:
        return "owned"
    if state in SERVICE_UNIT_FREE_STATES:
        return "unowned"
    return "unknown"


def service_unit_table_view(load_manager: dict[str, object] | None) -> tuple[bool, str]:
    """Whether a snapshot's manifest allows reading bundle ownership from ``/service_unit_state`` (the metadata-store
    table view), with the reason. Which table view brokers use is broker configuration
    (``loadManagerServiceUnitStateTableViewClassName``), never written to ZooKeeper: the manifest can only rule it
    out. The audit adds the snapshot's own evidence (``/service_unit_state`` read completely, and no managed ledger
    of the system-topic table view's topic :data:`SERVICE_UNIT_STATE_TOPIC_ML`, which that view and the
    ServiceUnitStateTableViewSyncer create)."""
    if not load_manager:
        return False, "load manager not recorded"
    if load_manager.get("error"):
        return False, "load manager registrations unreadable"
    if load_manager.get("kind") != "extensible":
        return False, f"load manager is {load_manager.get('kind')}, not only the extensible one"
    if not load_manager.get("service_unit_state"):
        return False, "/service_unit_state does not exist (system-topic table view)"
    return True, "extensible load manager with /service_unit_state"


# --- SQL renderers ----------------------------------------------------------------------------------------------


def _q(s: str) -> str:
    assert "'" not in s, s
    return f"'{s}'"


def _in(expr: str, values: tuple[str, ...]) -> str:
    return f"{expr} IN ({', '.join(_q(v) for v in values)})"


def system_namespace_reason_sql(ns: str) -> str:
    """:func:`system_namespace_reason` as a SQL CASE over the namespace expression ``ns`` (NULL = not Pulsar's)."""
    whens = [f"WHEN {ns} = {_q(SYSTEM_NAMESPACE)} THEN {_q(R_SYSTEM_NAMESPACE)}"]
    whens += [f"WHEN regexp_extract({ns}, {_q(p)}, 0) <> '' THEN {_q(r)}" for p, r in _NAMESPACE_RULES]
    return "(CASE " + " ".join(whens) + " END)"


def heartbeat_namespace_sql(ns: str) -> str:
    """:func:`is_heartbeat_namespace` as a SQL boolean."""
    return "(" + " OR ".join(f"regexp_extract({ns}, {_q(p)}, 0) <> ''" for p, _ in _NAMESPACE_RULES) + ")"


def system_tenant_reason_sql(tenant: str) -> str:
    """:func:`system_tenant_reason` as a SQL CASE."""
    return (
        f"(CASE WHEN {tenant} = {_q(SYSTEM_TENANT)} THEN {_q(R_SYSTEM_TENANT)}"
        f" WHEN {tenant} = {_q(SLA_MONITOR_TENANT)} THEN {_q(R_SLA_TENANT)} END)"
    )


def system_topic_reason_sql(ns: str, local: str) -> str:
    """:func:`system_topic_reason` as a SQL CASE over a namespace and a decoded local-name expression.

    ``coalesce`` of the namespace's reason and the name's (the same value): the namespace's CASE (three regular
    expressions) appears once in the expression, so in the code Spark generates and the JIT compiles for each
    plan that renders it; ``CASE WHEN <it> IS NOT NULL THEN <it> ...`` held it twice."""
    base = f"regexp_replace({local}, {_q(_PARTITION_TAIL_SQL)}, '')"
    suffix = PENDING_ACK_STORE_SUFFIX
    return (
        f"coalesce({system_namespace_reason_sql(ns)},"
        f" (CASE WHEN {_in(base, EVENTS_TOPIC_NAMES)} THEN {_q(R_EVENTS)}"
        f" WHEN right({local}, {len(suffix)}) = {_q(suffix)} THEN {_q(R_PENDING_ACK)}"
        f" WHEN {ns} = {_q(FUNCTIONS_NAMESPACE)} AND {_in(base, FUNCTIONS_TOPICS)} THEN {_q(R_FUNCTIONS)}"
        f" WHEN left({local}, 2) = '__' THEN {_q(R_RESERVED)} END))"
    )


def topic_policies_topic_sql(local: str) -> str:
    """:func:`is_topic_policies_topic` as a SQL boolean over a decoded local-name expression."""
    return f"regexp_replace({local}, {_q(_PARTITION_TAIL_SQL)}, '') = {_q(NAMESPACE_EVENTS_LOCAL_NAME)}"


def system_cursor_reason_sql(name: str) -> str:
    """:func:`system_cursor_reason` as a SQL CASE over a DECODED cursor-name expression."""
    whens = [f"WHEN {name} = {_q(n)} THEN {_q(r)}" for n, r in SYSTEM_CURSOR_NAMES.items()]
    whens += [f"WHEN left({name}, {len(p)}) = {_q(p)} THEN {_q(r)}" for p, r in SYSTEM_CURSOR_PREFIXES.items()]
    return "(CASE " + " ".join(whens) + " END)"


def transaction_store_kind_sql(ns: str, local: str) -> str:
    """:func:`transaction_store_kind` as a SQL CASE (``'pending-ack'``, ``'coordinator-log'`` or NULL)."""
    suffix = PENDING_ACK_STORE_SUFFIX
    return (
        f"(CASE WHEN right({local}, {len(suffix)}) = {_q(suffix)} THEN 'pending-ack'"
        f" WHEN {ns} = {_q(SYSTEM_NAMESPACE)} AND regexp_extract({local}, {_q(_TC_LOG_SQL)}, 0) <> ''"
        " THEN 'coordinator-log' END)"
    )


def service_unit_ownership_sql(state: str, registered: str) -> str:
    """:func:`service_unit_ownership` of a decoded value as a SQL CASE (``registered``: a boolean expression, the
    value's dstBroker is a registered broker)."""
    return (
        f"(CASE WHEN {state} = {_q(SERVICE_UNIT_OWNED_STATE)} AND {registered} THEN 'owned'"
        f" WHEN {_in(state, SERVICE_UNIT_FREE_STATES)} THEN 'unowned' ELSE 'unknown' END)"
    )
