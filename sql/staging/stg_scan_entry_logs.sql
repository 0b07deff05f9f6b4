-- stg_scan_entry_logs: one row per entry log file of every --bookie-scan (scan-bookie's entry_logs.parquet).
-- Rename/cast only. Source: the scans' table `entry_logs` (registered as src_scan_entry_logs; empty without scans).
SELECT
    CAST(bookie_id AS STRING) AS bookie_id,
    CAST(ledger_dir AS STRING) AS ledger_dir,
    CAST(log_id AS BIGINT) AS log_id,
    CAST(file AS STRING) AS file,
    CAST(file_bytes AS BIGINT) AS file_bytes,
    CAST(data_bytes AS BIGINT) AS data_bytes,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(inode AS BIGINT) AS inode,
    CAST(logger AS STRING) AS logger,
    CAST(header_version AS INT) AS header_version,
    CAST(read_via AS STRING) AS read_via,
    CAST(reason AS STRING) AS reason,
    CAST(ledgers AS INT) AS ledgers,
    CAST(compacting AS BOOLEAN) AS compacting
FROM src_scan_entry_logs
