-- ledger_gaps: per closed ledger with entries, each judged bookie of its ensembles that holds nothing of it: no
-- bytes (byte_gaps, sql/storage/2_byte_gaps.sql) and no row in its local ledger index. The candidates of
-- ledger-data-missing (sql/detect/ledger_data_missing.sql holds the rule: striping, flushInterval, offloaded
-- ledgers), a row per (ledger, bookie). Written once to Parquet (etl.storage_stage) before the storage detections
-- and its rows counted: few where bookies hold what their ensembles say, so the detection reads BookKeeper's wide
-- metadata and the ledger lists back for these rows alone by broadcast (the broadcast_if_small macro), not by
-- shuffling the 2-3 M ledgers of 600,000 topics to join a handful.
SELECT g.ledger_id, g.bookie_id, g.started_at_ms
FROM byte_gaps g
WHERE NOT EXISTS (
    -- the byte gaps the local index lists (indexed, sql/storage/3_indexed.sql: the index read once for the storage
    -- SQL, a row per listed gap; few, so broadcast when its write counted few rows)
    SELECT ${broadcast_if_small:x:indexed} 1 FROM indexed x
    WHERE x.bookie_id = g.bookie_id AND x.ledger_id = g.ledger_id
)
