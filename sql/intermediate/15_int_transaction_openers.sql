-- int_transaction_openers: every transaction store with its opener, the opener's state and the opener's bundle
-- (one row each), the first half of int_transaction_stores (see there). Its own materialised view, not a CTE
-- of int_transaction_stores: Spark plans a CTE at each use, and int_transaction_stores uses these rows twice
-- (the bundle's owners, the judgement), so the cursor join naming each pending-ack store's subscription read the
-- cursors at each use (issue 33).
WITH stores AS (
    SELECT
        m.path, m.namespace, m.topic, m.local_name,
        ${transaction_store_kind:m.namespace:m.local_name} AS kind
    FROM stg_managed_ledgers m
    WHERE ${transaction_store_kind:m.namespace:m.local_name} IS NOT NULL
),
pending AS (
    -- a pending-ack store's origin, two ways, in one aggregate per store: the origin topic and subscription whose
    -- cursor makes the store's name (the cursor names its topic), else any managed ledger of the namespace whose
    -- topic name, a '-' and a subscription name make the store's name (two aggregates, each joined to the stores:
    -- at 50,000 topics 16 -> 14 stages, 44 -> 40 generated classes)
    SELECT path, max(cursor_origin) AS cursor_origin, max(topic_origin) AS topic_origin
    FROM (
        SELECT /*+ BROADCAST(s) */ s.path, c.topic AS cursor_origin, CAST(NULL AS STRING) AS topic_origin
        FROM stores s
        JOIN stg_cursors c
            ON c.namespace = s.namespace
            AND concat(c.topic, '-', c.subscription, '__transaction_pending_ack') = s.topic
        WHERE s.kind = 'pending-ack'
        UNION ALL
        SELECT /*+ BROADCAST(s) */ s.path, CAST(NULL AS STRING) AS cursor_origin, m.topic AS topic_origin
        FROM stores s
        JOIN stg_managed_ledgers m
            ON m.namespace = s.namespace
            AND m.path <> s.path
            AND left(s.topic, length(m.topic) + 1) = concat(m.topic, '-')
        WHERE s.kind = 'pending-ack'
    ) x
    GROUP BY path
),
assign AS (
    SELECT max(partitions) AS partitions, count(*) AS nodes
    FROM stg_partitioned_topics
    WHERE topic = 'persistent://pulsar/system/transaction_coordinator_assign'
),
ml_scopes AS (
    SELECT collect_set(CASE WHEN NOT complete THEN scope END) AS incomplete
    FROM stg_scopes
    WHERE store = 'local' AND scope LIKE '/managed-ledgers%'
),
openers AS (
    SELECT /*+ BROADCAST(a, sc) */
        s.path, s.namespace, s.topic, s.kind,
        CASE WHEN s.kind = 'pending-ack' THEN coalesce(pe.cursor_origin, pe.topic_origin)
            ELSE concat('persistent://pulsar/system/transaction_coordinator_assign-partition-',
                        CAST(CAST(substr(s.local_name, 19) AS BIGINT) AS STRING)) END AS opener,
        CASE
            WHEN s.kind = 'pending-ack' AND pe.cursor_origin IS NOT NULL THEN 'present'
            -- gone only when the namespace's managed ledgers and cursors were all read (an error is not absence)
            WHEN s.kind = 'pending-ack' AND (
                array_contains(sc.incomplete, '/managed-ledgers')
                OR array_contains(sc.incomplete, concat('/managed-ledgers/', s.namespace))
                OR EXISTS (
                    SELECT /*+ BROADCAST(u) */ 1 FROM int_undecodable u
                    WHERE u.namespace = s.namespace AND u.ml_name IS NOT NULL
                )
            ) THEN 'unknown'
            WHEN s.kind = 'pending-ack' AND pe.topic_origin IS NOT NULL THEN 'subscription-gone'
            WHEN s.kind = 'pending-ack' THEN 'topic-gone'
            WHEN a.nodes = 1 AND a.partitions > CAST(substr(s.local_name, 19) AS BIGINT) THEN 'present'
            WHEN a.nodes = 1 AND a.partitions IS NOT NULL THEN 'unassigned'
            ELSE 'unknown'
        END AS opener_state
    FROM stores s
    CROSS JOIN assign a
    CROSS JOIN ml_scopes sc
    LEFT JOIN pending pe ON pe.path = s.path
),
located AS (
    -- the opener's bundle (CRC32 of the full name in its namespace's boundaries, as expired-retention-unloaded)
    SELECT /*+ BROADCAST(b) */
        o.*,
        regexp_extract(o.opener, '^persistent://(.+)/[^/]+$', 1) AS opener_ns,
        b.lower, b.upper
    FROM openers o
    LEFT JOIN int_bundles b
        ON b.namespace = regexp_extract(o.opener, '^persistent://(.+)/[^/]+$', 1)
        AND crc32(o.opener) >= b.lower
        AND (crc32(o.opener) < b.upper OR (b.is_last AND crc32(o.opener) <= b.upper))
)
SELECT path, namespace, topic, kind, opener, opener_state, opener_ns, lower, upper
FROM located
