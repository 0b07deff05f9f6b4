"""What Pulsar itself writes, as the synthetic cluster writes it (pure): each payload cites the upstream file.

* ``pulsar initialize-cluster-metadata`` (``pulsar-broker/src/main/java/org/apache/pulsar/
  PulsarClusterMetadataSetup.java``): ``/bookies`` = ``{}`` (``ZkBookieRackAffinityMapping.BOOKIE_INFO_ROOT_PATH``),
  the cluster's ``ClusterData`` and the ``global`` marker cluster (an empty ``ClusterData``), the tenants ``public``
  and ``pulsar`` (``TenantInfoImpl(emptySet, {cluster})``), the namespaces ``public/default`` and ``pulsar/system``
  (``new Policies()`` with ``getBundles(16)`` and ``replication_clusters = {cluster}``), and the partitioned-topic
  metadata of ``persistent://pulsar/system/transaction_coordinator_assign`` with
  ``--initial-num-transaction-coordinators`` partitions (default 16). Those partitions never get a managed ledger
  (``TransactionMetadataStoreService`` opens the coordinator logs ``__transaction_log_<id>`` instead).
* The extensible load manager (PIP-192, ``pulsar-broker/.../loadbalance/extensions/``): each broker registers an
  ephemeral ``/loadbalance/brokers/<brokerId>`` holding ``BrokerLookupData`` (``data/BrokerLookupData.java``:
  the record's components in order, ``loadManagerClassName`` included); the leader is elected under
  ``/loadbalance/extension/leader`` (``ExtensibleLoadManagerImpl.ELECTION_ROOT``, a ``LeaderBroker`` value:
  ``LeaderElectionService``); bundle ownership lives in the system topic
  ``persistent://pulsar/system/loadbalancer-service-unit-state`` (``ServiceUnitStateChannelImpl.TOPIC``) or, with
  ``loadManagerServiceUnitStateTableViewClassName = ServiceUnitStateMetadataStoreTableViewImpl``, under
  ``/service_unit_state/<tenant>/<namespace>/<lower>_<upper>`` (``channel/
  ServiceUnitStateMetadataStoreTableViewImpl.java``: ``PATH_PREFIX`` + ``/`` + the service unit, validated by
  ``^/service_unit_state/.*/0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}$``), each a ``ServiceUnitStateData`` JSON
  (``channel/ServiceUnitStateData.java``). No ``/namespace/...`` ownership znode is written.
"""

from __future__ import annotations

from typing import Any

from pulsar_ops.testing import model_payloads as pay

SETUP_SOURCE = "pulsar-broker/src/main/java/org/apache/pulsar/PulsarClusterMetadataSetup.java"
ELM_SOURCE = (
    "pulsar-broker/src/main/java/org/apache/pulsar/broker/loadbalance/extensions/ExtensibleLoadManagerImpl.java"
)
LOOKUP_DATA_SOURCE = (
    "pulsar-broker/src/main/java/org/apache/pulsar/broker/loadbalance/extensions/data/BrokerLookupData.java"
)
SUS_TABLE_SOURCE = (
    "pulsar-broker/src/main/java/org/apache/pulsar/broker/loadbalance/extensions/channel/"
    "ServiceUnitStateMetadataStoreTableViewImpl.java"
)
SYSTEM_TOPIC_NAMES_SOURCE = "pulsar-common/src/main/java/org/apache/pulsar/common/naming/SystemTopicNames.java"
TOPIC_NAME_SOURCE = "pulsar-common/src/main/java/org/apache/pulsar/common/naming/TopicName.java"
TOPIC_POLICIES_SOURCE = (
    "pulsar-broker/src/main/java/org/apache/pulsar/broker/service/SystemTopicBasedTopicPoliciesService.java"
)
REPLICATOR_SOURCE = "pulsar-broker/src/main/java/org/apache/pulsar/broker/service/AbstractReplicator.java"

MODULAR_CLASS = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
EXTENSIBLE_CLASS = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
BROKER_VERSION = "3.3.2"

SYSTEM_NAMESPACE = "pulsar/system"
DEFAULT_NAMESPACE = "public/default"
INIT_TENANTS = ("public", "pulsar")
INIT_NAMESPACES = (DEFAULT_NAMESPACE, SYSTEM_NAMESPACE)
INIT_BUNDLES = 16  # PulsarClusterMetadataSetup.createNamespaceIfAbsent: getBundles(16)
TRANSACTION_COORDINATORS = 16  # --initial-num-transaction-coordinators default
TC_ASSIGN_PATH = "/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign"
BOOKIE_INFO_ROOT = "/bookies"
ELM_LEADER_PATH = "/loadbalance/extension/leader"
SERVICE_UNIT_STATE_ROOT = "/service_unit_state"
SERVICE_UNIT_STATE_TOPIC = "loadbalancer-service-unit-state"


def global_cluster_data() -> dict[str, Any]:
    """``ClusterData.builder().build()``: the ``global`` marker cluster, every URL unset."""
    doc = pay.cluster_data("global")
    for key in ("serviceUrl", "serviceUrlTls", "brokerServiceUrl", "brokerServiceUrlTls"):
        doc[key] = None
    return doc


def init_tenant(cluster: str) -> dict[str, Any]:
    """``new TenantInfoImpl(Collections.emptySet(), Collections.singleton(cluster))``."""
    return {"adminRoles": [], "allowedClusters": [cluster]}


def lookup_data(broker: str, start_ms: int) -> dict[str, Any]:
    """``BrokerLookupData`` as ``BrokerRegistryImpl`` registers it (components in declaration order)."""
    urls = pay.broker_urls(broker)
    return {
        "webServiceUrl": urls["httpUrl"],
        "webServiceUrlTls": urls["httpUrlTls"],
        "pulsarServiceUrl": urls["nativeUrl"],
        "pulsarServiceUrlTls": urls["nativeUrlTls"],
        "advertisedListeners": {},
        "protocols": {},
        "persistentTopicsEnabled": True,
        "nonPersistentTopicsEnabled": True,
        "loadManagerClassName": EXTENSIBLE_CLASS,
        "startTimestamp": start_ms,
        "brokerVersion": BROKER_VERSION,
        "properties": {},
    }


def leader_broker(broker_id: str, web_service_url: str) -> dict[str, Any]:
    """``LeaderBroker(brokerId, serviceUrl)``: the value ``LeaderElectionService`` proposes."""
    return {"brokerId": broker_id, "serviceUrl": web_service_url}


def service_unit_state(broker_id: str, timestamp_ms: int, version_id: int = 1) -> dict[str, Any]:
    """``ServiceUnitStateData`` of an owned bundle (state ``Owned``, no source broker, not forced)."""
    return {
        "state": "Owned",
        "dstBroker": broker_id,
        "sourceBroker": None,
        "splitServiceUnitToDestBroker": None,
        "force": False,
        "timestamp": timestamp_ms,
        "versionId": version_id,
    }


def service_unit_state_free(source_broker: str, timestamp_ms: int, version_id: int = 2) -> dict[str, Any]:
    """``ServiceUnitStateData`` of a bundle an unload released (``Releasing`` -> ``Free``: no destination broker,
    the releasing one as ``sourceBroker``; ServiceUnitStateChannelImpl's unload)."""
    return {
        "state": "Free",
        "dstBroker": None,
        "sourceBroker": source_broker,
        "splitServiceUnitToDestBroker": None,
        "force": False,
        "timestamp": timestamp_ms,
        "versionId": version_id,
    }


MLTC_SOURCE = (
    "pulsar-transaction/coordinator/src/main/java/org/apache/pulsar/transaction/coordinator/impl/"
    "MLTransactionLogImpl.java"
)
PENDING_ACK_SOURCE = (
    "pulsar-broker/src/main/java/org/apache/pulsar/broker/transaction/pendingack/impl/MLPendingAckStoreProvider.java"
)
