-- int_ledgers: the ledger lists with the values the broker would use for each ledger.
-- The last (open) ledger of an unloaded topic has no entries/size/timestamp in ZooKeeper: take its
-- BookKeeper last_entry_id + 1, length and ctime instead. `entries_before` = entries of earlier ledgers
-- (a position (L, e) is entry number entries_before(L) + e of the topic).
SELECT
    l.ml_path,
    l.topic,
    l.namespace,
    l.idx,
    l.ledger_id,
    l.is_last,
    l.offloaded,
    l.bookkeeper_deleted,
    l.size AS list_size,
    b.last_entry_id AS bk_last_entry_id,
    CASE WHEN l.is_last THEN b.last_entry_id + 1 ELSE coalesce(l.entries, CAST(0 AS BIGINT)) END AS entries,
    CASE WHEN l.is_last THEN b.length ELSE coalesce(l.size, CAST(0 AS BIGINT)) END AS size,
    CASE WHEN l.is_last THEN b.ctime_ms ELSE l.timestamp_ms END AS timestamp_ms,
    coalesce(
        sum(CASE WHEN l.is_last THEN b.last_entry_id + 1 ELSE coalesce(l.entries, CAST(0 AS BIGINT)) END) OVER (
            PARTITION BY l.ml_path ORDER BY l.idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ),
        CAST(0 AS BIGINT)
    ) AS entries_before
FROM stg_ledger_list l
LEFT JOIN (SELECT ledger_id, min(last_entry_id) AS last_entry_id, min(length) AS length, min(ctime_ms) AS ctime_ms
           FROM stg_bk_ledgers GROUP BY ledger_id) b
    ON b.ledger_id = l.ledger_id
