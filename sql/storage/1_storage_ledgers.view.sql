-- storage_ledgers: one row per (scanned bookie, ledger) with bytes on that bookie, the class of those bytes and
-- their owner. A view over storage_groups (1_storage_groups.sql, written once), registered as SQL, not written (a
-- `.view.sql` file: sql/README.md; but for a storage stage read as one partition, whose session interprets
-- expressions: there each reader's join cost more than one write): each group row turned into a row per bookie of
-- its group whose bit is in `held`, where it is read. A reader's filter on the ledger's columns (metadata,
-- undecodable, ...) reaches the Parquet scan of storage_groups below this explode.
-- Columns: bookie_id, ledger_id, bytes (that bookie's: the group row's slot bookie_no % 8), class, kind,
-- metadata, undecodable, topic, namespace, tenant (storage_groups' header), bookie_no (the bookie's rank by id among
-- the scans).
-- Class: storage_groups' (live, orphan: decided per ledger), else what depends on the bookie, decided here and
-- nowhere else:
--   unreclaimed   metadata absent from a completely scraped /ledgers, the znode not an undecodable one, the
--                 ledger's oldest log on this bookie written before the scrape started (its bit in `old`) and this
--                 bookie's scan started after the scrape finished (the unreclaimed-ledger-data rule: an error is
--                 never evidence of absence);
--   unattributed  the rest.
WITH bookies AS (
    -- `hi`, `slot`, `bit`: the bookie's group of 8 (bookie_no DIV 8), its place in it and that place's bit
    SELECT bookie_id, started_at_ms, bookie_no, bookie_no DIV 8 AS hi, bookie_no % 8 AS slot,
        CASE bookie_no % 8
            WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 4 WHEN 3 THEN 8
            WHEN 4 THEN 16 WHEN 5 THEN 32 WHEN 6 THEN 64 ELSE 128
        END AS bit
    FROM stg_scan_bookies
)
-- a broadcast join with the bookies (a row per scan), up to 8 matches a row; the params and blocking scopes one row
SELECT /*+ BROADCAST(sb, sp, blk) */
    sb.bookie_id,
    g.ledger_id,
    CASE sb.slot
        WHEN 0 THEN g.b0 WHEN 1 THEN g.b1 WHEN 2 THEN g.b2 WHEN 3 THEN g.b3
        WHEN 4 THEN g.b4 WHEN 5 THEN g.b5 WHEN 6 THEN g.b6 WHEN 7 THEN g.b7
    END AS bytes,
    CASE
        WHEN g.class IS NOT NULL THEN g.class
        WHEN NOT g.metadata AND NOT g.undecodable
            AND NOT array_contains(blk.incomplete_scopes, '/ledgers')
            AND sb.started_at_ms >= sp.snapshot_finished_at_ms
            AND (g.old & sb.bit) <> 0 THEN 'unreclaimed'
        ELSE 'unattributed'
    END AS class,
    g.kind,
    g.metadata,
    g.undecodable,
    g.topic,
    g.namespace,
    g.tenant,
    sb.bookie_no
FROM storage_groups g
JOIN bookies sb ON sb.hi = g.hi AND (g.held & sb.bit) <> 0
CROSS JOIN scan_params sp
CROSS JOIN int_blocking blk
