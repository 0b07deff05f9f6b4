"""Snapshot tables: names and columns, the single source for the writer, the Spark jobs and the SQL tests.

Conventions: every time is an int64 of milliseconds since the epoch and its column ends in ``_ms``; ledger ids
are int64 (ids above 2^31 are common); ``namespace`` is ``tenant/ns`` (V2) or ``property/cluster/ns`` (V1), the
key of ``/admin/policies/<namespace>``; ``topic`` is the decoded ``persistent://<namespace>/<localName>``;
``path`` is always the znode path as stored (URL-encoded segments) relative to the store's chroot.

Column types are small strings so that this module stays free of I/O libraries; ``snapshot.writer`` maps them
to Arrow types and the Spark jobs read them from Parquet.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMA_VERSION = 1

# Allowed column type spellings.
TYPES = frozenset({"string", "int64", "int32", "bool", "double", "list<string>", "list<int64>"})


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    doc: str = ""
    nullable: bool = True


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"{self.name}.{name}")


def _c(name: str, type_: str, doc: str = "", nullable: bool = True) -> Column:
    assert type_ in TYPES, type_
    return Column(name, type_, doc, nullable)


def _stat(prefix: str = "") -> tuple[Column, ...]:
    """The znode Stat fields every entity table carries (for compare-and-set preconditions)."""
    return (
        _c(f"{prefix}version", "int32", "znode data version (compare-and-set token)", False),
        _c(f"{prefix}mzxid", "int64", "zxid of the last modification", False),
        _c(f"{prefix}ctime_ms", "int64", "znode creation time", False),
        _c(f"{prefix}mtime_ms", "int64", "znode modification time", False),
        _c(f"{prefix}data_length", "int32", "bytes of znode data", False),
    )


ZNODES = Table(
    "znodes",
    "Every znode read, with its full Stat: the generic inventory.",
    (
        _c("store", "string", "local | config", False),
        _c("path", "string", "znode path", False),
        _c("parent", "string", "parent path ('' for /)", False),
        _c("name", "string", "last path segment as stored", False),
        _c("depth", "int32", "number of path segments", False),
        _c("version", "int32", "", False),
        _c("cversion", "int32", "", False),
        _c("aversion", "int32", "", False),
        _c("czxid", "int64", "", False),
        _c("mzxid", "int64", "", False),
        _c("pzxid", "int64", "", False),
        _c("ctime_ms", "int64", "", False),
        _c("mtime_ms", "int64", "", False),
        _c("data_length", "int32", "", False),
        _c("num_children", "int32", "", False),
        _c("ephemeral_owner", "int64", "session id of an ephemeral node, 0 otherwise", False),
        _c("data_sha256", "string", "hex sha256 of the exact bytes read", False),
        _c(
            "kind",
            "string",
            "managed-ledger | cursor | ml-dir | bk-ledger | bk-dir | bk-internal | schema | schema-dir | "
            "tenant | namespace | policies-dir | local-policies | local-policies-dir | partitioned-topic | "
            "partitioned-dir | cluster | bundle-owner | namespace-dir | bundle-data | bundle-data-dir | "
            "topic-policies | other",
            False,
        ),
        _c("decode_error", "string", "stable error code when the value could not be decoded"),
    ),
)

MANAGED_LEDGERS = Table(
    "managed_ledgers",
    "One row per topic znode under /managed-ledgers (ManagedLedgerInfo).",
    (
        _c("path", "string", "", False),
        _c("ml_name", "string", "managed-ledger name: <namespace>/persistent/<encodedLocalName>", False),
        _c("tenant", "string", "", False),
        _c("namespace", "string", "", False),
        _c("is_v1", "bool", "legacy cluster-scoped path", False),
        _c("encoded_name", "string", "", False),
        _c("local_name", "string", "decoded local name", False),
        _c("topic", "string", "persistent://<namespace>/<local_name>", False),
        _c("base_topic", "string", "topic without the -partition-N suffix", False),
        _c("partition", "int32", "partition index, -1 when not a partition", False),
        *_stat(),
        _c("format", "string", "binary | text | empty", False),
        _c("compression", "string", "NONE | LZ4 | ZLIB | ZSTD | SNAPPY", False),
        _c("ledger_count", "int32", "", False),
        _c("total_size", "int64", "sum of `size` over the ledger list", False),
        _c("last_ledger_id", "int64", "id of the last (current) ledger"),
        _c("terminated", "bool", "", False),
        _c("properties_json", "string", "managed-ledger properties as a JSON object", False),
    ),
)

LEDGER_LIST = Table(
    "ledger_list",
    "ManagedLedgerInfo.ledgerInfo entries, one row per ledger in a topic's ledger list.",
    (
        _c("ml_path", "string", "", False),
        _c("topic", "string", "", False),
        _c("namespace", "string", "", False),
        _c("idx", "int32", "position in the list, oldest first", False),
        _c("ledger_id", "int64", "", False),
        _c("entries", "int64", "absent for the open ledger"),
        _c("size", "int64", "absent for the open ledger"),
        _c("timestamp_ms", "int64", "close time; 0/absent for the open ledger"),
        _c("is_last", "bool", "last ledger of the list (the current one)", False),
        _c("offloaded", "bool", "offloadContext.complete", False),
        _c("bookkeeper_deleted", "bool", "offloadContext.bookkeeperDeleted", False),
        _c("offload_timestamp_ms", "int64", ""),
    ),
)

CURSORS = Table(
    "cursors",
    "One row per durable cursor znode (ManagedCursorInfo).",
    (
        _c("path", "string", "", False),
        _c("ml_path", "string", "", False),
        _c("topic", "string", "", False),
        _c("namespace", "string", "", False),
        _c("encoded_name", "string", "", False),
        _c("subscription", "string", "decoded cursor name", False),
        _c("is_system", "bool", "pulsar.dedup, pulsar.repl.*, __compaction, transaction cursors", False),
        _c("cursors_ledger_id", "int64", "-1 = no cursor ledger (znode authoritative)", False),
        _c("mark_delete_ledger_id", "int64", ""),
        _c("mark_delete_entry_id", "int64", ""),
        _c("last_active_ms", "int64", ""),
        _c("range_count", "int32", "individualDeletedMessages ranges stored in the znode", False),
        _c("batch_index_count", "int32", "batchedEntryDeletionIndexInfo entries", False),
        _c("compacted_topic_ledger", "int64", "LongProperty CompactedTopicLedger"),
        *_stat(),
        _c("compression", "string", "", False),
    ),
)

ACK_RANGES = Table(
    "ack_ranges",
    "ManagedCursorInfo.individualDeletedMessages: open-closed ranges (lower exclusive, upper inclusive).",
    (
        _c("cursor_path", "string", "", False),
        _c("topic", "string", "", False),
        _c("subscription", "string", "", False),
        _c("idx", "int32", "", False),
        _c("lower_ledger_id", "int64", "", False),
        _c("lower_entry_id", "int64", "", False),
        _c("upper_ledger_id", "int64", "", False),
        _c("upper_entry_id", "int64", "", False),
    ),
)

CURSOR_PROPERTIES = Table(
    "cursor_properties",
    "Mark-delete LongProperties (kind=long) and cursorProperties (kind=string) of every cursor.",
    (
        _c("cursor_path", "string", "", False),
        _c("topic", "string", "", False),
        _c("subscription", "string", "", False),
        _c("kind", "string", "long | string", False),
        _c("name", "string", "", False),
        _c("value", "string", "decimal string for long properties", False),
        _c("bucket_ledger_id", "int64", "snapshot ledger id of a #pulsar.internal.delayed.bucket_* key"),
    ),
)

BK_LEDGERS = Table(
    "bk_ledgers",
    "BookKeeper ledger metadata znodes under the ledgers root (any format version).",
    (
        _c("path", "string", "", False),
        _c("ledger_id", "int64", "", False),
        _c("layout", "string", "legacy (2-4-4) | long (3-4-4-4-4) | flat", False),
        _c("format_version", "int32", "1 | 2 | 3", False),
        _c("state", "string", "OPEN | IN_RECOVERY | CLOSED", False),
        _c("length", "int64", "", False),
        _c("last_entry_id", "int64", "", False),
        _c("ensemble_size", "int32", "", False),
        _c("write_quorum", "int32", "", False),
        _c("ack_quorum", "int32", "", False),
        _c("digest_type", "string", ""),
        _c("ctime_ms", "int64", "metadata ctime, else the znode ctime", False),
        _c("metadata_ctime_ms", "int64", "ctime field of the metadata when present"),
        _c("version", "int32", "", False),
        _c("mzxid", "int64", "", False),
        _c("znode_ctime_ms", "int64", "", False),
        _c("znode_mtime_ms", "int64", "", False),
        _c("data_length", "int32", "", False),
        _c("data_sha256", "string", "", False),
        _c("application", "string", "custom metadata `application`"),
        _c("component", "string", "custom metadata `component`"),
        _c("ml_name", "string", "custom metadata `pulsar/managed-ledger`"),
        _c("cursor_name", "string", "custom metadata `pulsar/cursor` (encoded)"),
        _c("schema_id", "string", "custom metadata `pulsar/schemaId`"),
        _c("compacted_topic", "string", "custom metadata `pulsar/compactedTopic`"),
        _c("custom_metadata_json", "string", "all custom metadata; non-UTF-8 values as 'base64:...'", False),
        _c("bookies", "list<string>", "distinct bookies over all ensembles", False),
        _c("ensembles_json", "string", "{firstEntryId: [bookie, ...]}", False),
    ),
)

SCHEMA_INDEX = Table(
    "schema_index",
    "SchemaLocator index entries under /schemas: one row per schema version.",
    (
        _c("path", "string", "", False),
        _c("schema_id", "string", "<namespace>/<encodedLocalName>", False),
        _c("namespace", "string", "", False),
        _c("topic", "string", "persistent://<namespace>/<decoded base name>", False),
        _c("version", "int32", "znode version", False),
        _c("mzxid", "int64", "", False),
        _c("latest_version", "int64", "SchemaLocator.info.version", False),
        _c("schema_version", "int64", "", False),
        _c("ledger_id", "int64", "", False),
        _c("entry_id", "int64", "", False),
    ),
)

TENANTS = Table(
    "tenants",
    "/admin/policies/<tenant> (TenantInfo JSON).",
    (_c("path", "string", "", False), _c("tenant", "string", "", False), *_stat(), _c("json", "string", "")),
)

NAMESPACES = Table(
    "namespaces",
    "/admin/policies/<namespace> (Policies JSON), V2 and V1.",
    (
        _c("path", "string", "", False),
        _c("tenant", "string", "", False),
        _c("namespace", "string", "", False),
        _c("is_v1", "bool", "", False),
        _c("cluster", "string", "V1 cluster segment"),
        *_stat(),
        _c("retention_time_minutes", "int64", "retention_policies.retentionTimeInMinutes; null = broker default"),
        _c("retention_size_mb", "int64", "retention_policies.retentionSizeInMB; null = broker default"),
        _c("message_ttl_seconds", "int64", "message_ttl_in_seconds; null/0 = broker default"),
        _c("delayed_delivery_active", "bool", "delayed_delivery_policies.active; null = broker default"),
        _c("delayed_delivery_tick_ms", "int64", "delayed_delivery_policies.tickTime"),
        _c(
            "delayed_delivery_max_delay_ms",
            "int64",
            "delayed_delivery_policies.maxDeliveryDelayInMillis (0 when the object lacks it); null = no object",
        ),
        _c("subscription_expiration_minutes", "int64", ""),
        _c("bundle_boundaries", "list<string>", "bundles.boundaries", False),
        _c("num_bundles", "int32", "", False),
        _c("deleted", "bool", "", False),
        _c("json", "string", "the Policies JSON as read", False),
    ),
)

LOCAL_POLICIES = Table(
    "local_policies",
    "/admin/local-policies/<namespace> (LocalPolicies JSON).",
    (
        _c("path", "string", "", False),
        _c("namespace", "string", "", False),
        *_stat(),
        _c(
            "bundle_boundaries",
            "list<string>",
            "the boundaries the broker builds the bundles from (bundles.boundaries; full range when bundles is null)",
            False,
        ),
        _c("json", "string", ""),
    ),
)

PARTITIONED_TOPICS = Table(
    "partitioned_topics",
    "/admin/partitioned-topics/<namespace>/persistent/<encodedName> (PartitionedTopicMetadata JSON).",
    (
        _c("path", "string", "", False),
        _c("tenant", "string", "", False),
        _c("namespace", "string", "", False),
        _c("encoded_name", "string", "", False),
        _c("local_name", "string", "", False),
        _c("topic", "string", "", False),
        _c("partitions", "int32", "", False),
        _c("deleted", "bool", "", False),
        *_stat(),
        _c("json", "string", ""),
    ),
)

CLUSTERS = Table(
    "clusters",
    "/admin/clusters/<cluster> (ClusterData JSON).",
    (_c("path", "string", "", False), _c("cluster", "string", "", False), *_stat(), _c("json", "string", "")),
)

BUNDLE_OWNERS = Table(
    "bundle_owners",
    "Ephemeral bundle ownership under /namespace/<namespace>/<range>.",
    (
        _c("path", "string", "", False),
        _c("namespace", "string", "", False),
        _c("bundle_range", "string", "0xXXXXXXXX_0xYYYYYYYY", False),
        _c("lower", "int64", "", False),
        _c("upper", "int64", "", False),
        _c("ephemeral_owner", "int64", "", False),
        _c("native_url", "string", ""),
        _c("http_url", "string", ""),
        _c("disabled", "bool", "", False),
        *_stat(),
    ),
)

BUNDLE_DATA = Table(
    "bundle_data",
    "/loadbalance/bundle-data/<namespace>/<range> (BundleData JSON).",
    (
        _c("path", "string", "", False),
        _c("namespace", "string", "", False),
        _c("bundle_range", "string", "", False),
        _c("lower", "int64", ""),
        _c("upper", "int64", ""),
        *_stat(),
    ),
)

SERVICE_UNIT_STATES = Table(
    "service_unit_states",
    "/service_unit_state/<namespace>/<range>: the extensible load manager's bundle ownership when its metadata-store "
    "table view is configured (ServiceUnitStateMetadataStoreTableViewImpl; ServiceUnitStateData JSON). A value "
    "that does not decode has no row (znodes.decode_error): that bundle's ownership is unknown.",
    (
        _c("path", "string", "", False),
        _c("namespace", "string", "", False),
        _c("bundle_range", "string", "0xXXXXXXXX_0xYYYYYYYY", False),
        _c("lower", "int64", "", False),
        _c("upper", "int64", "", False),
        _c("state", "string", "ServiceUnitState: Init|Free|Owned|Assigning|Releasing|Splitting|Deleted", False),
        _c("dst_broker", "string", "broker id (host:port) the state names as destination/owner"),
        _c("source_broker", "string", "broker id releasing or splitting it"),
        _c("version_id", "int64", "", False),
        _c("timestamp_ms", "int64", "", False),
        *_stat(),
    ),
)

TOPIC_POLICIES = Table(
    "topic_policies",
    "/admin/topic-policies/{global,local}/<namespace>/<domain>/<encodedName> (newest Pulsar only).",
    (
        _c("path", "string", "", False),
        _c("scope", "string", "global | local", False),
        _c("namespace", "string", "", False),
        _c("topic", "string", "", False),
        _c("retention_time_minutes", "int64", ""),
        _c("retention_size_mb", "int64", ""),
        _c("message_ttl_seconds", "int64", ""),
        _c("delayed_delivery_active", "bool", ""),
        _c("delayed_delivery_tick_ms", "int64", ""),
        _c("delayed_delivery_max_delay_ms", "int64", "delayedDeliveryMaxDelayInMillis"),
        *_stat(),
        _c("json", "string", ""),
    ),
)

SCOPES = Table(
    "scopes",
    "Every subtree the scraper walked and whether it was read completely. Incomplete scopes block planning.",
    (
        _c("store", "string", "local | config", False),
        _c("scope", "string", "subtree root path, e.g. /managed-ledgers/t/ns or /ledgers", False),
        _c("complete", "bool", "", False),
        _c("znodes", "int64", "znodes read below it", False),
        _c("error_code", "string", ""),
        _c("error", "string", ""),
    ),
)

SCRAPE_ERRORS = Table(
    "scrape_errors",
    "Every znode that could not be read (its scope is incomplete) or decoded (it exists, content unknown: "
    "the scope stays complete and znodes.decode_error is set), with the scope it belongs to.",
    (
        _c("store", "string", "", False),
        _c("path", "string", "", False),
        _c("scope", "string", "", False),
        _c("code", "string", "stable error code", False),
        _c("reason", "string", "", False),
    ),
)

LOADED_TOPICS = Table(
    "loaded_topics",
    "Topics loaded on a broker (admin broker-stats/topics); empty when the admin API was not scraped.",
    (_c("broker", "string", "", False), _c("topic", "string", "", False), _c("bundle", "string", "")),
)

BOOKIES = Table(
    "bookies",
    "Bookies from /ledgers/available and, when scraped, their HTTP info.",
    (
        _c("bookie_id", "string", "", False),
        _c("readonly", "bool", "", False),
        _c("free_bytes", "int64", ""),
        _c("total_bytes", "int64", ""),
    ),
)

TABLES: tuple[Table, ...] = (
    ZNODES,
    MANAGED_LEDGERS,
    LEDGER_LIST,
    CURSORS,
    ACK_RANGES,
    CURSOR_PROPERTIES,
    BK_LEDGERS,
    SCHEMA_INDEX,
    TENANTS,
    NAMESPACES,
    LOCAL_POLICIES,
    PARTITIONED_TOPICS,
    CLUSTERS,
    BUNDLE_OWNERS,
    BUNDLE_DATA,
    SERVICE_UNIT_STATES,
    TOPIC_POLICIES,
    SCOPES,
    SCRAPE_ERRORS,
    LOADED_TOPICS,
    BOOKIES,
)

BY_NAME: dict[str, Table] = {t.name: t for t in TABLES}

# Tables added after snapshots were already taken: an older snapshot has no directory for them; every reader
# (snapshot.reader, the audit's etl, the DuckDB benchmark) reads such a table as empty, and the audit says so
# (findings.json ``snapshot.tables_read_as_empty``). service_unit_states: its /service_unit_state was not read, so
# the audit's int_ownership_source finds that scope unknown (never "no bundle owned").
ADDED_TABLES: frozenset[str] = frozenset({SERVICE_UNIT_STATES.name})


def table(name: str) -> Table:
    return BY_NAME[name]
