-- byte_gaps: per closed ledger with entries, each judged bookie of its ensembles that has no bytes of it
-- (storage_ledgers): the candidates of ledger_gaps (sql/storage/4_ledger_gaps.sql), which then drops those the
-- bookie's local ledger index lists. A row per (ledger, bookie); written once to Parquet (etl.storage_stage) and
-- its rows counted, so indexed (sql/storage/3_indexed.sql) looks the few up in the local index by broadcast instead
-- of shuffling the index (9 M rows at 600,000 topics) into this aggregate. Only bookies whose scan is complete (no
-- log skipped) and whose local index was read are judged: an incomplete scan or an unread index is never evidence
-- of absence.
WITH scanned AS (
    -- each bookie judged is bit (n % 62) of word (n DIV 62) in the masks below, n = bookie_no - 1 (stg_scan_bookies'
    -- numbering: no window of its own, a row_number over the judged ran a one-partition shuffle for each of the three
    -- references: 8 -> 5 stages), computed here for these few rows, not per member or held row (15 M at 600,000
    -- topics); the bit of a bookie not judged is never set, as it is no row here. `h`: the hash of its id, the key the
    -- members and held rows are joined on (a number: as a join key the id string of each of those rows would be copied
    -- and hashed; the ids themselves are compared on a match, `(...) IS NOT DISTINCT FROM true` keeping that out of the
    -- keys): byte_gaps 6.5-6.7 -> 5.2-5.4 task-CPU s at 600,000 topics. The held rows are joined on `bookie_no`
    -- (stg_scan_bookies' numbering, storage_ledgers' column): an integer read and hashed per row
    SELECT
        bookie_id, bookie_no, hash(bookie_id) AS h, started_at_ms, (bookie_no - 1) DIV 62 AS word,
        CAST(pow(2, (bookie_no - 1) % 62) AS BIGINT) AS bit
    FROM stg_scan_bookies
    WHERE complete AND index_status = 'read'
),
members AS (
    -- ids and bookies only: ledger-data-missing reads the wide metadata back for the few (ledger, bookie) pairs left.
    -- A member listed twice sets its bit twice (bit_or): no array_distinct per ledger
    SELECT b.ledger_id, explode(b.bookies) AS member
    FROM stg_bk_ledgers b
    WHERE b.state = 'CLOSED' AND b.last_entry_id >= 0
),
held AS (
    -- the bookies holding bytes of a ledger (storage_ledgers: a row per (bookie, ledger) of the (ledger, log) pairs,
    -- written once before by sql/storage/1_storage_ledgers.sql, narrower than the pairs)
    SELECT ledger_id, bookie_no FROM storage_ledgers
),
bits AS (
    -- a ledger's judged members and the judged bookies holding it, as bits (scanned is a few rows: broadcast)
    SELECT /*+ BROADCAST(s) */
        m.ledger_id, s.word, s.bit AS expected, CAST(0 AS BIGINT) AS held
    FROM members m
    JOIN scanned s ON s.h = hash(m.member) AND (s.bookie_id = m.member) IS NOT DISTINCT FROM true
    UNION ALL
    SELECT /*+ BROADCAST(s) */
        h.ledger_id, s.word, CAST(0 AS BIGINT) AS expected, s.bit AS held
    FROM held h
    JOIN scanned s ON s.bookie_no = h.bookie_no
),
per_ledger AS (
    -- per ledger, the members holding no bytes of it: one aggregate by ledger id over 64-bit masks. An anti-join
    -- of the (ledger, bookie) members with the held pairs shuffled and sorted both (5.7 M + 18.2 M rows keyed by a
    -- bookie id string at 600,000 topics, with the local index's)
    SELECT ledger_id, word, bit_or(expected) & ~bit_or(held) AS missing
    FROM bits
    GROUP BY ledger_id, word
)
-- (ledger, judged bookie of its ensembles) with no bytes of it on that bookie
SELECT /*+ BROADCAST(s) */ p.ledger_id, s.bookie_id, s.started_at_ms
FROM per_ledger p
JOIN scanned s ON s.word = p.word AND (p.missing & s.bit) <> 0
WHERE p.missing <> 0
