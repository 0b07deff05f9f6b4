-- int_transaction_stores: every transaction store, judged by what opens it (never by a topic load of its own: a
-- store is never a topic, never in broker-stats/topics), one row each
-- (the stores, their openers and the openers' bundles: int_transaction_openers):
-- * a pending-ack store <origin>-<subscription>__transaction_pending_ack (MLPendingAckStore
--   .getTransactionPendingAckStoreSuffix; MLPendingAckStoreProvider opens it for the subscription of the origin
--   topic the broker has loaded): its opener is the origin topic whose subscription's cursor makes that name;
-- * coordinator N's log pulsar/system/__transaction_log_N (MLTransactionLogImpl): opened by
--   TransactionMetadataStoreService on the broker that owns the bundle of
--   persistent://pulsar/system/transaction_coordinator_assign-partition-N (its opener), for N below the
--   partitions initialize-cluster-metadata gave that topic.
-- opener_state: 'present'; 'topic-gone' (no managed ledger of that origin, its namespace listed completely) or
-- 'subscription-gone' (the origin exists, no cursor makes the name); 'unassigned' (N >= the assign topic's
-- partitions, its node read); 'unknown'.
-- in_use: 'yes' (the origin is loaded / the coordinator's bundle is owned), 'no' (the origin is judged unloaded,
-- or the bundle unowned, by the same evidence expired-retention-unloaded uses: /namespace znodes or
-- /service_unit_state when each is the truth, the brokers' listings), else 'unknown'.
WITH scopes_seen AS (
    SELECT
        count_if(scope = '/namespace' AND complete) > 0 AND count_if(scope = '/namespace' AND NOT complete) = 0
            AS namespace_complete,
        collect_set(
            CASE WHEN store = 'admin' AND complete AND scope LIKE 'broker-stats/topics/%'
                THEN regexp_extract(scope, '^broker-stats/topics/(.+)$', 1) END
        ) AS answered,
        count_if(store = 'admin' AND scope LIKE 'broker-stats/topics/%') > 0 AS per_broker,
        coalesce((SELECT max(sus_known) FROM int_ownership_source), false) AS sus_known
    FROM stg_scopes
),
owners_of AS (
    -- the opener's bundle owners, both sources in one aggregate per store: each aggregate below is a max or a
    -- count tested > 0, so the rows the second join multiplies change none of them. One aggregate for the
    -- /namespace owners and another for /service_unit_state's read int_transaction_openers once more and
    -- joined it once more: at 50,000 topics 17 -> 15 stages, 58 -> 47 generated classes
    SELECT /*+ BROADCAST(bo, su) */
        l.path,
        max(regexp_extract(coalesce(bo.http_url, ''), '^[A-Za-z][A-Za-z0-9+.-]*://([^/]+)', 1)) AS znode_owner,
        count(bo.namespace) > 0 AS znode_owned,
        max(CASE WHEN su.ownership = 'owned' THEN su.owner_broker END) AS sus_owner,
        count_if(su.ownership = 'owned') > 0 AS sus_owned,
        count_if(su.ownership = 'unknown') > 0 AS sus_unknown
    FROM int_transaction_openers l
    LEFT JOIN stg_bundle_owners bo ON bo.namespace = l.opener_ns AND bo.lower = l.lower AND bo.upper = l.upper
    LEFT JOIN int_service_units su ON su.namespace = l.opener_ns AND su.lower = l.lower AND su.upper = l.upper
    GROUP BY l.path
),
judged AS (
    SELECT /*+ BROADCAST(p, f) */
        l.path, l.namespace, l.topic, l.kind, l.opener, l.opener_state,
        EXISTS (
            SELECT ${broadcast_if_small:lt:stg_loaded_topics} 1 FROM stg_loaded_topics lt WHERE lt.topic = l.opener
        ) AS opener_loaded,
        l.lower IS NOT NULL AS bundle_known,
        o.znode_owned OR (f.sus_known AND o.sus_owned) AS owned,
        CASE WHEN o.znode_owned THEN nullif(o.znode_owner, '') WHEN f.sus_known THEN o.sus_owner END AS owner_broker,
        (p.ownership_in_zk AND f.namespace_complete AND NOT o.znode_owned)
            OR (f.sus_known AND NOT o.sus_owned AND NOT o.sus_unknown) AS unowned,
        p.admin_scraped AS all_answered, f.per_broker, f.answered
    FROM int_transaction_openers l
    JOIN owners_of o ON o.path = l.path
    CROSS JOIN params p
    CROSS JOIN scopes_seen f
)
SELECT
    path, namespace, topic, kind, opener, opener_state, owner_broker,
    CASE
        WHEN opener_state IN ('topic-gone', 'subscription-gone', 'unassigned') THEN 'no'
        WHEN opener_state = 'unknown' OR NOT bundle_known THEN 'unknown'
        -- a coordinator log: in use while the coordinator's bundle is owned
        WHEN kind = 'coordinator-log' AND owned THEN 'yes'
        WHEN kind = 'coordinator-log' AND unowned THEN 'no'
        WHEN kind = 'coordinator-log' THEN 'unknown'
        -- a pending-ack store: in use while its origin topic is loaded
        WHEN opener_loaded THEN 'yes'
        WHEN unowned THEN 'no'
        WHEN owned AND per_broker AND array_contains(answered, owner_broker) THEN 'no'
        WHEN all_answered THEN 'no'
        ELSE 'unknown'
    END AS in_use
FROM judged
