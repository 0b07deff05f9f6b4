-- stg_managed_ledgers: One row per topic znode under /managed-ledgers (ManagedLedgerInfo).
-- Rename/cast only. Source: the snapshot table `managed_ledgers` (registered as src_managed_ledgers).
SELECT
    CAST(path AS STRING) AS path,
    CAST(ml_name AS STRING) AS ml_name,
    CAST(tenant AS STRING) AS tenant,
    CAST(namespace AS STRING) AS namespace,
    CAST(is_v1 AS BOOLEAN) AS is_v1,
    CAST(encoded_name AS STRING) AS encoded_name,
    CAST(local_name AS STRING) AS local_name,
    CAST(topic AS STRING) AS topic,
    CAST(base_topic AS STRING) AS base_topic,
    CAST(partition AS INT) AS partition,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(format AS STRING) AS format,
    CAST(compression AS STRING) AS compression,
    CAST(ledger_count AS INT) AS ledger_count,
    CAST(total_size AS BIGINT) AS total_size,
    CAST(last_ledger_id AS BIGINT) AS last_ledger_id,
    CAST(terminated AS BOOLEAN) AS terminated,
    CAST(properties_json AS STRING) AS properties_json
FROM src_managed_ledgers
