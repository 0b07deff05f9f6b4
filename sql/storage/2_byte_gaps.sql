-- byte_gaps: per closed ledger with entries, each judged bookie of its ensembles that has no bytes of it
-- (storage_groups): the candidates of ledger_gaps (sql/storage/4_ledger_gaps.sql), which then drops those the
-- bookie's local ledger index lists. A row per (ledger, bookie); written once to Parquet (etl.storage_stage) and
-- its rows counted, so indexed (sql/storage/3_indexed.sql) looks the few up in the local index by broadcast instead
-- of shuffling the index (9 M rows at 600,000 topics) into this aggregate. Only bookies whose scan is complete (no
-- log skipped) and whose local index was read are judged: an incomplete scan or an unread index is never evidence
-- of absence.
WITH scanned AS (
    -- each bookie judged is bit (bookie_no % 8) of its group of 8 (`hi`: bookie_no DIV 8, stg_scan_bookies'
    -- numbering), the masks storage_groups holds per (ledger, group): computed here for these few rows, not per
    -- member row (5.7 M at 600,000 topics); the bit of a bookie not judged is never set in `expected`, as it is no
    -- row here. `h`: the hash of its id, the key the members are joined on (a number: as a join key the id string of
    -- each member row would be copied and hashed; the ids themselves are compared on a match, `(...) IS NOT
    -- DISTINCT FROM true` keeping that out of the keys)
    SELECT
        bookie_id, hash(bookie_id) AS h, started_at_ms, bookie_no DIV 8 AS hi,
        CASE bookie_no % 8
            WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 4 WHEN 3 THEN 8
            WHEN 4 THEN 16 WHEN 5 THEN 32 WHEN 6 THEN 64 ELSE 128
        END AS bit
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
bits AS (
    -- a ledger's judged members as bits of their group (scanned is a few rows: broadcast), and the bookies holding
    -- bytes of it: storage_groups' `held`, already a mask per (ledger, group of 8), as written by
    -- sql/storage/1_storage_groups.sql (2.2 M rows at 600,000 topics, not a row per (bookie, ledger): 9.1 M). Its
    -- bits of bookies not judged are never in `expected`, so they take nothing away below
    SELECT /*+ BROADCAST(s) */
        m.ledger_id, s.hi, s.bit AS expected, 0 AS held
    FROM members m
    JOIN scanned s ON s.h = hash(m.member) AND (s.bookie_id = m.member) IS NOT DISTINCT FROM true
    UNION ALL
    SELECT g.ledger_id, g.hi, 0 AS expected, g.held
    FROM storage_groups g
),
per_ledger AS (
    -- per (ledger, group of 8), the judged members holding no bytes of it: one aggregate over the bit masks. An
    -- anti-join of the (ledger, bookie) members with the held pairs shuffled and sorted both (5.7 M + 18.2 M rows
    -- keyed by a bookie id string at 600,000 topics, with the local index's)
    SELECT ledger_id, hi, bit_or(expected) & ~bit_or(held) AS missing
    FROM bits
    GROUP BY ledger_id, hi
)
-- (ledger, judged bookie of its ensembles) with no bytes of it on that bookie
SELECT /*+ BROADCAST(s) */ p.ledger_id, s.bookie_id, s.started_at_ms
FROM per_ledger p
JOIN scanned s ON s.hi = p.hi AND (p.missing & s.bit) <> 0
WHERE p.missing <> 0
