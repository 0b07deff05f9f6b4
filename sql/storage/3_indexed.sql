-- indexed: the rows of the scanned bookies' local ledger indexes the storage SQL asks about, in one pass over the
-- index (9 M rows at 600,000 topics; it was read three times: by ledger_gaps, stale_logs and
-- unreclaimed-ledger-data). A row per (bookie, ledger) listed in that bookie's index whose ledger is a byte gap's
-- (byte_gaps, sql/storage/2_byte_gaps.sql: 4_ledger_gaps.sql drops the gaps listed) or a dead ledger's (log_ledgers'
-- rows with a ledger id, sql/storage/2_log_ledgers.sql: 4_stale_logs.sql and unreclaimed-ledger-data look up the
-- dead (bookie, ledger)s listed). `listed`: one of its rows exists (`exists` NULL counts as existing), as stale_logs
-- and unreclaimed-ledger-data judge it; ledger_gaps counts any row.
-- Matched by ledger id alone, a 64-bit key (the index's rows are not each copied and hashed with their bookie id
-- string: 1.2-1.3 -> 0.35 task-CPU s at 600,000 topics), so it also holds those ledgers' rows on other bookies;
-- each reader joins on (bookie, ledger). Written once to Parquet (etl.storage_stage) before them; both sides are
-- few where bookies hold what their ensembles say and GC runs, so each is broadcast to the index when its write
-- counted few rows, not the index shuffled to them.
SELECT i.bookie_id, i.ledger_id, bool_or(coalesce(i.exists, true)) AS listed
FROM stg_scan_local_index i
WHERE i.ledger_id IN (SELECT ${broadcast_if_small:g:byte_gaps} g.ledger_id FROM byte_gaps g)
    OR i.ledger_id IN (
        SELECT ${broadcast_if_small:d:log_ledgers} d.ledger_id FROM log_ledgers d WHERE d.ledger_id IS NOT NULL
    )
GROUP BY i.bookie_id, i.ledger_id
