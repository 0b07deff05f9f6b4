-- ledger_gaps: per closed ledger with entries, each scanned bookie of its ensembles that holds nothing of it (no bytes
-- in storage_ledgers, no row in its local ledger index): the candidates of ledger-data-missing
-- (sql/detect/ledger_data_missing.sql holds the rule: striping, flushInterval, offloaded ledgers), a row per
-- (ledger, bookie). Written once to Parquet (etl.storage_shared) before the storage detections and its rows
-- counted: few where bookies hold what their ensembles say, so the detection reads BookKeeper's wide metadata and
-- the ledger lists back for these rows alone by broadcast (the broadcast_if_small macro), not by shuffling the 2-3 M
-- ledgers of 600,000 topics to join a handful. Only bookies whose scan is complete (no log skipped) and whose local
-- index was read are judged: an incomplete scan or an unread index is never evidence of absence.
WITH scanned AS (
    -- each bookie judged gets a number n: bit (n % 62) of word (n DIV 62) in the masks below
    SELECT bookie_id, started_at_ms, row_number() OVER (ORDER BY bookie_id) - 1 AS n
    FROM stg_scan_bookies WHERE complete AND index_status = 'read'
),
members AS (
    -- ids and bookies only: ledger-data-missing reads the wide metadata back for the few (ledger, bookie) pairs left
    SELECT b.ledger_id, explode(array_distinct(b.bookies)) AS member
    FROM stg_bk_ledgers b
    WHERE b.state = 'CLOSED' AND b.last_entry_id >= 0
),
held AS (
    -- what each bookie holds of a ledger: bytes (storage_ledgers: a row per (bookie, ledger) of the (ledger, log)
    -- pairs, written once before the storage detections by sql/storage/1_storage_ledgers.sql, narrower than the
    -- pairs) or a row in its local index
    SELECT ledger_id, bookie_id FROM storage_ledgers
    UNION ALL
    SELECT ledger_id, bookie_id FROM stg_scan_local_index
),
bits AS (
    -- a ledger's judged members and the judged bookies holding it, as bits (scanned is a few rows: broadcast)
    SELECT /*+ BROADCAST(s) */
        m.ledger_id, s.n DIV 62 AS word, CAST(pow(2, s.n % 62) AS BIGINT) AS expected, CAST(0 AS BIGINT) AS held
    FROM members m
    JOIN scanned s ON s.bookie_id = m.member
    UNION ALL
    SELECT /*+ BROADCAST(s) */
        h.ledger_id, s.n DIV 62 AS word, CAST(0 AS BIGINT) AS expected, CAST(pow(2, s.n % 62) AS BIGINT) AS held
    FROM held h
    JOIN scanned s ON s.bookie_id = h.bookie_id
),
per_ledger AS (
    -- per ledger, the members holding nothing of it: one aggregate by ledger id over 64-bit masks. An anti-join
    -- of the (ledger, bookie) members with the held pairs shuffled and sorted both (5.7 M + 18.2 M rows keyed by a
    -- bookie id string at 600,000 topics); an aggregate's map side merges a ledger's rows of one file first
    -- (storage_ledgers is written grouped by ledger)
    SELECT ledger_id, word, bit_or(expected) & ~bit_or(held) AS missing
    FROM bits
    GROUP BY ledger_id, word
)
-- (ledger, scanned bookie of its ensembles) with no bytes and no index row of it on that bookie
SELECT /*+ BROADCAST(s) */ p.ledger_id, s.bookie_id, s.started_at_ms
FROM per_ledger p
JOIN scanned s ON s.n DIV 62 = p.word AND (p.missing & CAST(pow(2, s.n % 62) AS BIGINT)) <> 0
WHERE p.missing <> 0
