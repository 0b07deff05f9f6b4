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
UNION ALL
-- a transaction store whose opener is gone (int_transaction_stores): a pending-ack store whose origin topic or
-- subscription no longer exists (MLPendingAckStoreProvider opens it only for that subscription), or a coordinator
-- log whose coordinator id is not below the transaction_coordinator_assign partitions (TransactionMetadataStoreService
-- starts only those coordinators). Pulsar's own: never an unloaded topic, never planned; reported so an operator
-- looks at it
SELECT
    'system-metadata' AS detection,
    'info' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    ts.topic AS topic,
    CAST(NULL AS STRING) AS subscription,
    ts.path AS path,
    ts.namespace AS namespace,
    false AS plannable,
    coalesce(m.total_size, CAST(0 AS BIGINT)) AS bytes,
    concat(
        CASE WHEN ts.kind = 'pending-ack' THEN 'transaction pending-ack store' ELSE 'transaction coordinator log' END,
        ' whose opener is gone (',
        CASE ts.opener_state
            WHEN 'topic-gone' THEN concat('no managed ledger of its origin topic ', ts.opener)
            WHEN 'subscription-gone' THEN concat('no subscription of ', ts.opener, ' makes its name')
            ELSE concat(
                'coordinator ', substr(ts.opener, 69),
                ' is not assigned: transaction_coordinator_assign has fewer partitions'
            )
        END,
        '): no broker opens it, but it is Pulsar metadata: never a leak, never planned'
    ) AS reason,
    to_json(named_struct(
        'transaction_store', ts.kind,
        'opener', ts.opener,
        'opener_state', ts.opener_state,
        'in_use', ts.in_use,
        'system_reason', ${system_topic_reason:ts.namespace:m.local_name}
    )) AS evidence
FROM int_transaction_stores ts
LEFT JOIN stg_managed_ledgers m ON m.path = ts.path
WHERE ts.opener_state IN ('topic-gone', 'subscription-gone', 'unassigned')
