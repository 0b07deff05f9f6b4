-- ack-ranges-in-cursor-ledgers: durable, non-system cursors of non-system topics whose acknowledged ranges
-- live in their cursor ledger (cursors_ledger_id <> -1), so the snapshot cannot see their ack holes. Normal in a
-- running cluster: one coverage row per namespace (how many cursors, the backlog they sit on), not a finding
-- each (docs/detections.md, "ack-holes"). Backlog from int_cursor_backlog, as inactive-subscription has it.
WITH unknown AS (
    SELECT c.path, c.namespace
    FROM int_user_cursors c
    WHERE c.cursors_ledger_id <> -1
)
SELECT
    u.namespace AS namespace,
    count(*) AS cursors,
    sum(coalesce(b.backlog_entries, CAST(0 AS BIGINT))) AS backlog_entries,
    sum(coalesce(b.backlog_bytes, CAST(0 AS BIGINT))) AS backlog_bytes
FROM unknown u
LEFT JOIN int_cursor_backlog b ON b.path = u.path
GROUP BY u.namespace
