-- system-metadata: metadata of Pulsar's own tenants, namespaces and topics (the registry,
-- pulsar_ops/pulsar_names.py, docs/detections.md "Pulsar's own names") whose owner looks gone, the shape a
-- znode-leak would have. Never a leak and never planned: reported (info) so an operator looks at it. Not reported,
-- because upstream makes them so by design: a system topic's partitioned-topic node or schema without a managed
-- ledger (the transaction coordinator assign topic that initialize-cluster-metadata writes never gets one:
-- PulsarClusterMetadataSetup, TransactionMetadataStoreService) and the heartbeat / SLA-monitor namespaces, which
-- brokers own without namespace policies (NamespaceService.isSystemServiceNamespace).
SELECT /*+ BROADCAST(st) */
    'system-metadata' AS detection,
    'info' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    CAST(NULL AS STRING) AS topic,
    CAST(NULL AS STRING) AS subscription,
    l.path AS path,
    l.namespace AS namespace,
    false AS plannable,
    coalesce(st.bytes, CAST(0 AS BIGINT)) AS bytes,
    concat(l.leak, ' without its owner, but it is Pulsar metadata (', l.system_reason, '): never a leak, never planned')
        AS reason,
    to_json(named_struct(
        'leak', l.leak,
        'system_reason', l.system_reason,
        'znodes', coalesce(st.znodes, CAST(1 AS BIGINT)),
        'held_topics', l.held_topics
    )) AS evidence
FROM int_znode_leaks l
LEFT JOIN int_subtrees st ON st.prefix = l.path
WHERE l.system_reason IS NOT NULL
    AND l.leak NOT IN ('partitioned-topic', 'schema')
    AND NOT coalesce(${heartbeat_namespace:l.namespace}, false)
