-- int_range_ledgers: the ledger-list rows (int_ledgers) of the topics whose cursors ack-holes judges: durable,
-- non-system cursors whose acknowledged ranges are in their znode (cursors_ledger_id = -1, range_count > 0).
-- ack-holes joins them five times (each range's lower and upper ledger, the mark-delete ledger, the last range's
-- upper ledger, the ledgers it pins). As a CTE of ack-holes Spark planned the cut of int_ledgers (1.74 M rows at
-- 600,000 topics) once per reference, each with its own shuffles: five scans, ten exchanges. Written once here;
-- few rows in a healthy cluster, so ack-holes broadcasts it when its write counted few (etl.broadcastable).
SELECT l.ml_path, l.ledger_id, l.is_last, l.size, l.entries_before, l.timestamp_ms
FROM int_ledgers l
WHERE l.ml_path IN (SELECT u.ml_path FROM int_user_cursors u WHERE u.cursors_ledger_id = -1 AND u.range_count > 0)
