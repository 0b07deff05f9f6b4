-- stg_scan_entry_log_ledgers: bytes (sum of L + 4 per entry) of each ledger in each entry log of every scan.
-- Rename/cast only. Source: the scans' table `entry_log_ledgers` (src_scan_entry_log_ledgers; empty without scans).
SELECT
    CAST(bookie_id AS STRING) AS bookie_id,
    CAST(ledger_dir AS STRING) AS ledger_dir,
    CAST(log_id AS BIGINT) AS log_id,
    CAST(ledger_id AS BIGINT) AS ledger_id,
    CAST(bytes AS BIGINT) AS bytes
FROM src_scan_entry_log_ledgers
