-- undecodable-znode: a znode that was read but whose value does not decode (docs/detections.md "Scopes and
-- uncertainty"). Reported once each, never plannable. It exists: a ledger whose znode does not decode is not
-- dangling and not an orphan candidate (owner and age unknown); `blocks` says what its unknown content holds
-- back from planning (and the blocked findings name this path).
WITH refs AS (
    -- only the references of undecodable ledger ids (a semi-join against the small int_undecodable), not a
    -- DISTINCT of every reference: 2.3 s -> 0.2 s at 600,000 topics
    SELECT DISTINCT r.ledger_id FROM int_references r
    WHERE r.ledger_id IN (SELECT /*+ BROADCAST(u) */ u.ledger_id FROM int_undecodable u WHERE u.ledger_id IS NOT NULL)
)
SELECT
    'undecodable-znode' AS detection,
    'warning' AS severity,
    u.ledger_id AS ledger_id,
    u.topic AS topic,
    CAST(NULL AS STRING) AS subscription,
    u.path AS path,
    u.namespace AS namespace,
    false AS plannable,
    CAST(0 AS BIGINT) AS bytes,
    concat('cannot decode ', u.kind, ' znode: ', u.reason) AS reason,
    to_json(named_struct(
        'kind', u.kind,
        'store', u.store,
        'code', u.code,
        'error', u.reason,
        'referenced', CASE WHEN u.ledger_id IS NOT NULL THEN r.ledger_id IS NOT NULL END,
        'blocks', CASE
            WHEN u.kind = 'bk-ledger' THEN 'this ledger: not planned (owner and age unknown), never called missing'
            WHEN u.kind = 'managed-ledger' THEN concat(
                'orphan planning for ledgers of managed ledger ', u.ml_name, ' and for leaks holding it'
            )
            WHEN u.kind = 'cursor' THEN concat('orphan planning for ledgers of topic ', u.topic)
            WHEN u.kind = 'schema' THEN concat('orphan planning for ledgers of schema ', u.schema_id)
            WHEN u.kind = 'namespace' THEN concat(
                'expired-retention calls for topics of ', u.namespace,
                ' (retention and bundles unknown); it still proves the namespace exists; leaks holding it are not planned'
            )
            WHEN u.kind = 'local-policies' THEN concat(
                'expired-retention calls and bundle-data leaks of ', u.namespace,
                ' (its bundles are unknown); leaks holding it are not planned'
            )
            WHEN u.kind = 'topic-policies' THEN concat('expired-retention calls for ', u.topic, ' (retention unknown)')
            WHEN u.kind IN ('tenant', 'partitioned-topic')
                THEN 'nothing: it still proves its owner exists; leaks holding it are not planned'
            ELSE 'leaks holding it are not planned'
        END
    )) AS evidence
FROM int_undecodable u
LEFT JOIN refs r ON r.ledger_id = u.ledger_id
