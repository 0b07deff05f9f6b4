-- stg_ledger_list: ManagedLedgerInfo.ledgerInfo entries, one row per ledger in a topic's ledger list.
-- Rename/cast only. Source: the snapshot table `ledger_list` (registered as src_ledger_list).
SELECT
    CAST(ml_path AS STRING) AS ml_path,
    CAST(topic AS STRING) AS topic,
    CAST(namespace AS STRING) AS namespace,
    CAST(idx AS INT) AS idx,
    CAST(ledger_id AS BIGINT) AS ledger_id,
    CAST(entries AS BIGINT) AS entries,
    CAST(size AS BIGINT) AS size,
    CAST(timestamp_ms AS BIGINT) AS timestamp_ms,
    CAST(is_last AS BOOLEAN) AS is_last,
    CAST(offloaded AS BOOLEAN) AS offloaded,
    CAST(bookkeeper_deleted AS BOOLEAN) AS bookkeeper_deleted,
    CAST(offload_timestamp_ms AS BIGINT) AS offload_timestamp_ms
FROM src_ledger_list
