-- ledger_gaps: per closed ledger with entries, each judged bookie of its ensembles that holds nothing of it: no
-- bytes (byte_gaps, sql/storage/2_byte_gaps.sql) and no row in its local ledger index. The candidates of
-- ledger-data-missing (sql/detect/ledger_data_missing.sql holds the rule: striping, flushInterval, offloaded
-- ledgers), a row per (ledger, bookie) with the ledger's metadata (a row per BookKeeper row of it). Written once to
-- Parquet (etl.storage_stage) before the storage detections and its rows counted: few where bookies hold what their
-- ensembles say, so BookKeeper's wide metadata is read for these rows alone by broadcast here (the
-- broadcast_if_small macro), not by shuffling the 2-3 M ledgers of 600,000 topics to join a handful, and the
-- detection reads the ledger lists and managed ledgers back for them.
SELECT ${broadcast_if_small:g:byte_gaps}
    g.ledger_id,
    g.bookie_id,
    g.started_at_ms,
    b.path AS ledger_path,
    b.ml_name,
    b.length,
    b.last_entry_id,
    b.ensemble_size,
    b.write_quorum,
    b.ack_quorum,
    b.ctime_ms,
    b.metadata_ctime_ms,
    b.ensembles_json
FROM byte_gaps g
-- the gap's ledger's metadata, wide (ledger-data-missing's evidence): read here, once, for the gaps alone (their
-- ledger ids: a row per BookKeeper row of the ledger), broadcast when byte_gaps counted few rows, not by
-- ledger-data-missing, whose second read of BookKeeper's ledgers (the gaps' managed ledgers) it saves
JOIN stg_bk_ledgers b ON b.ledger_id = g.ledger_id
WHERE NOT EXISTS (
    -- the byte gaps the local index lists (indexed, sql/storage/3_indexed.sql: the index read once for the storage
    -- SQL, a row per listed gap; few, so broadcast when its write counted few rows)
    SELECT ${broadcast_if_small:x:indexed} 1 FROM indexed x
    WHERE x.bookie_id = g.bookie_id AND x.ledger_id = g.ledger_id
)
