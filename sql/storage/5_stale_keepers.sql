-- stale_keepers: per stale entry log (stale_logs, sql/storage/4_stale_logs.sql), the live ledgers keeping the rest
-- of it alive, its 10 biggest (by bytes, then ledger id): stale-entry-log's `keeping_alive`
-- (sql/detect/stale_entry_log.sql). Written once to Parquet (etl.storage_stage) before the storage detections and
-- its rows counted: the detection then looks the metadata and managed ledgers of these few ledgers up by broadcast
-- when few, instead of shuffling BookKeeper's ledgers and the managed ledgers (2-3 M and 615,104 rows at 600,000
-- topics) to name a handful, and the scans' 9 M (ledger, log) pairs are read once, not twice.
-- Live: the pair's ledger has metadata or an undecodable znode, i.e. its (bookie, ledger) is not one of the dead
-- of storage_ledgers (sql/storage/1_storage_ledgers.sql), as 2_log_ledgers.sql splits them.
WITH dead AS (
    -- log_ledgers' rows with a ledger id (2_log_ledgers.sql splits the dead (bookie, ledger)s of storage_ledgers
    -- from the live, a row per dead pair), not a read of storage_ledgers' 9 M rows at 600,000 topics; few where
    -- GC runs, so broadcast (only tested with NOT EXISTS: no DISTINCT)
    SELECT bookie_id, ledger_id FROM log_ledgers WHERE ledger_id IS NOT NULL
),
stale_pairs AS (
    -- the pairs of the stale logs (a row per stale log: broadcast); the log ids alone (a 64-bit key) first, so
    -- the pairs of the other logs are dropped before the join on (bookie, directory, log) hashes their strings
    SELECT /*+ BROADCAST(c) */ l.bookie_id, l.ledger_dir, l.log_id, l.ledger_id, l.bytes
    FROM stg_scan_entry_log_ledgers l
    JOIN stale_logs c ON c.bookie_id = l.bookie_id AND c.ledger_dir = l.ledger_dir AND c.log_id = l.log_id
    WHERE l.log_id IN (SELECT /*+ BROADCAST(s) */ s.log_id FROM stale_logs s)
),
top_live AS (
    SELECT
        p.bookie_id, p.ledger_dir, p.log_id,
        slice(reverse(array_sort(collect_list(named_struct('bytes', p.bytes, 'ledger_id', p.ledger_id)))), 1, 10)
            AS top_live
    FROM stale_pairs p
    WHERE NOT EXISTS (
        SELECT /*+ BROADCAST(d) */ 1 FROM dead d WHERE d.bookie_id = p.bookie_id AND d.ledger_id = p.ledger_id
    )
    GROUP BY p.bookie_id, p.ledger_dir, p.log_id
),
keepers AS (
    SELECT t.bookie_id, t.ledger_dir, t.log_id, explode(t.top_live) AS k FROM top_live t
)
SELECT bookie_id, ledger_dir, log_id, k.ledger_id AS ledger_id, k.bytes AS bytes FROM keepers
