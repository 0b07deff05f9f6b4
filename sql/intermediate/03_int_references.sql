-- int_references: the referenced ledgers R (docs/detections.md), one row per reference: its ledger id and whether
-- it is an offloaded ledger-list row BookKeeper has deleted (`bookkeeper_deleted`).
-- Ids only: its readers need no more (int_watermark, int_unmatched_ledgers, undecodable-znode), and
-- dangling-ledger reads the owner, path and size of only the few references int_unmatched_ledgers leaves it.
-- At 600,000 topics the topic, subscription, path and namespace strings of 2.2 M references were most of this
-- write (6.1-6.9 s -> 2.3-3.1 s).
-- Reference kinds, as dangling-ledger spells them out: data (ledger lists), cursor (a cursor's own ledger),
-- compacted (a cursor's compacted-topic ledger), bucket (a delayed-delivery bucket snapshot), schema.
SELECT ledger_id, bookkeeper_deleted
FROM stg_ledger_list
UNION ALL
-- a cursor's own ledger and its compacted-topic ledger from one read of the cursors (two rows per cursor, k = 0
-- and 1, kept where the ledger is set), not one read each
SELECT
    CASE WHEN k = 0 THEN cursors_ledger_id ELSE compacted_topic_ledger END AS ledger_id,
    false AS bookkeeper_deleted
FROM (
    SELECT cursors_ledger_id, compacted_topic_ledger, explode(array(0, 1)) AS k
    FROM stg_cursors
    WHERE cursors_ledger_id <> -1 OR compacted_topic_ledger IS NOT NULL
) c
WHERE (k = 0 AND cursors_ledger_id <> -1) OR (k = 1 AND compacted_topic_ledger IS NOT NULL)
UNION ALL
SELECT bucket_ledger_id AS ledger_id, false AS bookkeeper_deleted
FROM stg_cursor_properties
WHERE bucket_ledger_id IS NOT NULL
UNION ALL
SELECT ledger_id, false AS bookkeeper_deleted
FROM stg_schema_index
