-- stg_scan_local_index: the rows of each scanned bookie's local `ledgers` index (LedgerMetadataIndex).
-- Rename/cast only. Source: the scans' table `local_index` (src_scan_local_index; empty without scans).
SELECT
    CAST(bookie_id AS STRING) AS bookie_id,
    CAST(index_dir AS STRING) AS index_dir,
    CAST(ledger_id AS BIGINT) AS ledger_id,
    CAST(exists AS BOOLEAN) AS exists,
    CAST(fenced AS BOOLEAN) AS fenced,
    CAST(limbo AS BOOLEAN) AS limbo
FROM src_scan_local_index
