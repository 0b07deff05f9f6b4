-- ack-ranges-in-cursor-ledgers: durable, non-system cursors of non-system topics whose acknowledged ranges
-- live in their cursor ledger (cursors_ledger_id <> -1), so the snapshot cannot see their ack holes. Normal in a
-- running cluster: one coverage row per namespace (how many cursors, the backlog they sit on), not a finding
-- each (docs/detections.md, "ack-holes"). Backlog as inactive-subscription measures it.
WITH unknown AS (
    SELECT c.path, c.namespace, c.ml_path, c.mark_delete_ledger_id, c.mark_delete_entry_id
    FROM stg_cursors c
    JOIN int_topics t ON t.path = c.ml_path
    WHERE NOT c.is_system AND NOT t.is_system_topic AND c.cursors_ledger_id <> -1
),
backlog AS (
    SELECT
        u.path,
        sum(
            CASE
                WHEN u.mark_delete_ledger_id IS NULL OR l.ledger_id > u.mark_delete_ledger_id
                    THEN coalesce(l.entries, CAST(0 AS BIGINT))
                WHEN l.ledger_id = u.mark_delete_ledger_id
                    THEN greatest(coalesce(l.entries, CAST(0 AS BIGINT)) - (u.mark_delete_entry_id + 1),
                                  CAST(0 AS BIGINT))
                ELSE CAST(0 AS BIGINT)
            END
        ) AS backlog_entries,
        sum(
            CASE
                WHEN u.mark_delete_ledger_id IS NULL OR l.ledger_id >= u.mark_delete_ledger_id
                    THEN coalesce(l.size, CAST(0 AS BIGINT))
                ELSE CAST(0 AS BIGINT)
            END
        ) AS backlog_bytes
    FROM unknown u
    JOIN int_ledgers l ON l.ml_path = u.ml_path
    GROUP BY u.path
)
SELECT
    u.namespace AS namespace,
    count(*) AS cursors,
    sum(coalesce(b.backlog_entries, CAST(0 AS BIGINT))) AS backlog_entries,
    sum(coalesce(b.backlog_bytes, CAST(0 AS BIGINT))) AS backlog_bytes
FROM unknown u
LEFT JOIN backlog b ON b.path = u.path
GROUP BY u.namespace
