-- log_ledgers: per scanned entry log, its (ledger, log) pairs in one pass: the pairs of live ledgers summed into
-- one row (ledger_id NULL), each pair of a dead ledger a row of its own. Written once to Parquet
-- (etl.storage_stage), after storage_ledgers and before the storage detections: stale_logs (each log's live
-- bytes, the deleted ledgers it still holds) and unreclaimed-ledger-data (where a deleted ledger's bytes are) read
-- these few rows instead of the scans' 9 M pairs at 600,000 topics, one pass each.
-- Dead: the (bookie, ledger) of storage_ledgers whose metadata is absent and whose znode is not an undecodable
-- one; live: the rest (a pair's ledger is in storage_ledgers by construction). `pairs`: the rows summed.
WITH dead AS (
    -- few where GC runs, so broadcast: the pairs are never shuffled by ledger to judge each one
    SELECT bookie_id, ledger_id FROM storage_ledgers WHERE NOT metadata AND NOT undecodable
)
SELECT /*+ BROADCAST(d) */
    l.bookie_id,
    l.ledger_dir,
    l.log_id,
    d.ledger_id,
    sum(l.bytes) AS bytes,
    count(*) AS pairs
FROM stg_scan_entry_log_ledgers l
-- joined on the ledger id alone, a 64-bit key, the bookie compared on a match only: as a join key the bookie id
-- string would be copied and hashed for each of the 9 M pairs at 600,000 topics; `(...) IS NOT DISTINCT FROM true`
-- keeps it out of the keys (dead is a row per (bookie, ledger): at most one match)
LEFT JOIN dead d ON d.ledger_id = l.ledger_id AND (d.bookie_id = l.bookie_id) IS NOT DISTINCT FROM true
GROUP BY l.bookie_id, l.ledger_dir, l.log_id, d.ledger_id
