-- stg_cursors: One row per durable cursor znode (ManagedCursorInfo).
-- Rename/cast only. Source: the snapshot table `cursors` (registered as src_cursors).
SELECT
    CAST(path AS STRING) AS path,
    CAST(ml_path AS STRING) AS ml_path,
    CAST(topic AS STRING) AS topic,
    CAST(namespace AS STRING) AS namespace,
    CAST(encoded_name AS STRING) AS encoded_name,
    CAST(subscription AS STRING) AS subscription,
    CAST(is_system AS BOOLEAN) AS is_system,
    CAST(cursors_ledger_id AS BIGINT) AS cursors_ledger_id,
    CAST(mark_delete_ledger_id AS BIGINT) AS mark_delete_ledger_id,
    CAST(mark_delete_entry_id AS BIGINT) AS mark_delete_entry_id,
    CAST(last_active_ms AS BIGINT) AS last_active_ms,
    CAST(range_count AS INT) AS range_count,
    CAST(batch_index_count AS INT) AS batch_index_count,
    CAST(compacted_topic_ledger AS BIGINT) AS compacted_topic_ledger,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(compression AS STRING) AS compression
FROM src_cursors
