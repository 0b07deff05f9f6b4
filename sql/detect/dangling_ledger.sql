-- dangling-ledger: a reference in R whose ledger id is absent from bk_ledgers (docs/detections.md).
-- Not dangling: offloaded ledger-list rows with bookkeeper_deleted = true, and negative ids (sentinels).
-- critical; only a warning when /ledgers itself is incomplete (absence cannot be confirmed).
WITH dangling_ids AS (
    -- live references to ids BookKeeper has no metadata for, found on ids alone by int_unmatched_ledgers
    SELECT ledger_id FROM int_unmatched_ledgers WHERE side = 'reference'
),
dangling_buckets AS (
    SELECT cursor_path, topic, subscription, bucket_ledger_id FROM stg_cursor_properties
    WHERE bucket_ledger_id IN (SELECT ${broadcast_if_small:d:int_unmatched_ledgers} d.ledger_id FROM dangling_ids d)
),
-- each such reference as int_references' branches name it (03_int_references.sql), read only for those ids: a
-- broadcast semi-join when they were measured small, so no reference's strings are shuffled or written whole
wide AS (
    SELECT
        ledger_id, 'data' AS ref, topic, CAST(NULL AS STRING) AS subscription, ml_path AS path, namespace,
        size, bookkeeper_deleted
    FROM stg_ledger_list
    WHERE ledger_id IN (SELECT ${broadcast_if_small:d:int_unmatched_ledgers} d.ledger_id FROM dangling_ids d)
    UNION ALL
    SELECT
        CASE WHEN k = 0 THEN cursors_ledger_id ELSE compacted_topic_ledger END AS ledger_id,
        CASE WHEN k = 0 THEN 'cursor' ELSE 'compacted' END AS ref,
        topic, subscription, path, namespace, CAST(NULL AS BIGINT) AS size, false AS bookkeeper_deleted
    FROM (
        SELECT
            topic, subscription, path, namespace, cursors_ledger_id, compacted_topic_ledger,
            explode(array(0, 1)) AS k
        FROM stg_cursors
        WHERE cursors_ledger_id IN (
            SELECT ${broadcast_if_small:d:int_unmatched_ledgers} d.ledger_id FROM dangling_ids d
        )
            OR compacted_topic_ledger IN (
                SELECT ${broadcast_if_small:d:int_unmatched_ledgers} d.ledger_id FROM dangling_ids d
            )
    ) c
    WHERE (k = 0 AND cursors_ledger_id <> -1) OR (k = 1 AND compacted_topic_ledger IS NOT NULL)
    UNION ALL
    SELECT
        cp.bucket_ledger_id AS ledger_id, 'bucket' AS ref, cp.topic, cp.subscription, cp.cursor_path AS path,
        c.namespace, CAST(NULL AS BIGINT) AS size, false AS bookkeeper_deleted
    FROM dangling_buckets cp
    -- the namespaces of only the cursors holding such a bucket, not a hash table or a shuffle of every cursor
    LEFT JOIN (
        SELECT path, namespace FROM stg_cursors
        WHERE path IN (SELECT ${broadcast_if_small:b:int_unmatched_ledgers} b.cursor_path FROM dangling_buckets b)
    ) c ON c.path = cp.cursor_path
    UNION ALL
    SELECT
        ledger_id, 'schema' AS ref, topic, CAST(NULL AS STRING) AS subscription, path, namespace,
        CAST(NULL AS BIGINT) AS size, false AS bookkeeper_deleted
    FROM stg_schema_index
    WHERE ledger_id IN (SELECT ${broadcast_if_small:d:int_unmatched_ledgers} d.ledger_id FROM dangling_ids d)
),
refs AS (
    SELECT ledger_id, ref, topic, subscription, path, namespace, max(size) AS size
    FROM wide w
    -- a missing ledger as the drop rule decides it (rules.may_dangle, rendered)
    WHERE ${may_dangle:w}
        -- a cursor read for its dangling ledger also yields its other ledger (k = 0 and 1 above)
        AND ledger_id IN (SELECT ${broadcast_if_small:d:int_unmatched_ledgers} d.ledger_id FROM dangling_ids d)
    GROUP BY ledger_id, ref, topic, subscription, path, namespace
),
missing AS (
    SELECT /*+ BROADCAST(blk) */
        r.*, array_contains(blk.incomplete_scopes, '/ledgers') AS listing_incomplete, blk.incomplete_scopes
    FROM refs r
    CROSS JOIN int_blocking blk
    -- a ledger znode that exists but does not decode is not missing
    WHERE NOT EXISTS (SELECT /*+ BROADCAST(u) */ 1 FROM int_undecodable u WHERE u.ledger_id = r.ledger_id)
)
SELECT
    'dangling-ledger' AS detection,
    CASE WHEN m.listing_incomplete THEN 'warning' ELSE 'critical' END AS severity,
    m.ledger_id AS ledger_id,
    m.topic AS topic,
    m.subscription AS subscription,
    m.path AS path,
    m.namespace AS namespace,
    false AS plannable,
    coalesce(m.size, CAST(0 AS BIGINT)) AS bytes,
    CASE
        WHEN m.listing_incomplete THEN 'ledger listing incomplete: cannot confirm absence'
        ELSE concat('referenced ', m.ref, ' ledger has no BookKeeper metadata')
    END AS reason,
    to_json(named_struct(
        'ref', m.ref,
        'size', m.size,
        'blocked_scopes', CASE WHEN m.listing_incomplete THEN array('/ledgers') ELSE array() END
    )) AS evidence
FROM missing m
