-- int_references: the referenced ledgers R (docs/detections.md), one row per reference.
-- ref = data | cursor | compacted | bucket | schema; `size` only for ledger-list rows.
SELECT
    ledger_id, 'data' AS ref, topic, CAST(NULL AS STRING) AS subscription, ml_path AS path, namespace,
    size, bookkeeper_deleted
FROM stg_ledger_list
UNION ALL
-- a cursor's own ledger and its compacted-topic ledger from one read of the cursors (two rows per cursor, k = 0
-- and 1, kept where the ledger is set), not one read each
SELECT
    CASE WHEN k = 0 THEN cursors_ledger_id ELSE compacted_topic_ledger END AS ledger_id,
    CASE WHEN k = 0 THEN 'cursor' ELSE 'compacted' END AS ref,
    topic, subscription, path, namespace, CAST(NULL AS BIGINT) AS size, false AS bookkeeper_deleted
FROM (
    SELECT
        topic, subscription, path, namespace, cursors_ledger_id, compacted_topic_ledger,
        explode(array(0, 1)) AS k
    FROM stg_cursors
    WHERE cursors_ledger_id <> -1 OR compacted_topic_ledger IS NOT NULL
) c
WHERE (k = 0 AND cursors_ledger_id <> -1) OR (k = 1 AND compacted_topic_ledger IS NOT NULL)
UNION ALL
SELECT
    cp.bucket_ledger_id AS ledger_id, 'bucket' AS ref, cp.topic, cp.subscription, cp.cursor_path AS path,
    c.namespace, CAST(NULL AS BIGINT) AS size, false AS bookkeeper_deleted
FROM stg_cursor_properties cp
-- the namespaces of only the cursors that hold a bucket (a semi-join against the small property list), not a
-- hash table of every cursor (at 600,000 topics Spark broadcast all 1 M cursors' paths for it)
LEFT JOIN (
    SELECT path, namespace FROM stg_cursors
    WHERE path IN (SELECT cursor_path FROM stg_cursor_properties WHERE bucket_ledger_id IS NOT NULL)
) c ON c.path = cp.cursor_path
WHERE cp.bucket_ledger_id IS NOT NULL
UNION ALL
SELECT
    ledger_id, 'schema' AS ref, topic, CAST(NULL AS STRING) AS subscription, path, namespace,
    CAST(NULL AS BIGINT) AS size, false AS bookkeeper_deleted
FROM stg_schema_index
