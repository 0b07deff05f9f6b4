-- ledger_gaps: per closed ledger with entries, each judged bookie of its ensembles that holds nothing of it: no
-- bytes (byte_gaps, sql/storage/2_byte_gaps.sql) and no row in its local ledger index. The candidates of
-- ledger-data-missing (sql/detect/ledger_data_missing.sql holds the rule: striping, flushInterval, offloaded
-- ledgers), a row per (ledger, bookie). Written once to Parquet (etl.storage_shared) before the storage detections
-- and its rows counted: few where bookies hold what their ensembles say, so the detection reads BookKeeper's wide
-- metadata and the ledger lists back for these rows alone by broadcast (the broadcast_if_small macro), not by
-- shuffling the 2-3 M ledgers of 600,000 topics to join a handful.
WITH indexed AS (
    -- the byte gaps the local index lists: the index (9 M rows at 600,000 topics) is read, and the byte gaps
    -- broadcast to it when few, not shuffled
    SELECT i.bookie_id, i.ledger_id
    FROM stg_scan_local_index i
    WHERE EXISTS (
        SELECT ${broadcast_if_small:g:byte_gaps} 1 FROM byte_gaps g
        WHERE g.bookie_id = i.bookie_id AND g.ledger_id = i.ledger_id
    )
)
SELECT g.ledger_id, g.bookie_id, g.started_at_ms
FROM byte_gaps g
WHERE NOT EXISTS (SELECT 1 FROM indexed x WHERE x.bookie_id = g.bookie_id AND x.ledger_id = g.ledger_id)
