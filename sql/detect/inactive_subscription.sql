-- inactive-subscription: a durable, non-system cursor of a non-system topic whose last activity
-- (last_active_ms, else the cursor znode mtime) is older than now - inactive_after_ms (docs/detections.md).
-- Backlog: int_cursor_backlog (entries after the mark-delete position; BookKeeper values for the open ledger).
-- The activity and the idleness are the delete-subscription rule's own (pulsar_ops/repair/rules.py
-- subscription_active_ms, is_subscription_idle), rendered: a lastActive of 0 is not recorded, never idle since 1970.
WITH user_cursors AS (
    SELECT c.*, ${subscription_active:c} AS active_ms
    FROM int_user_cursors c
),
inactive AS (
    SELECT /*+ BROADCAST(p) */ u.*
    FROM user_cursors u
    CROSS JOIN params p
    WHERE ${subscription_idle:u:p}
)
SELECT /*+ BROADCAST(p) */
    'inactive-subscription' AS detection,
    'warning' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    i.topic AS topic,
    i.subscription AS subscription,
    i.path AS path,
    i.namespace AS namespace,
    false AS plannable,
    coalesce(b.backlog_bytes, CAST(0 AS BIGINT)) AS bytes,
    concat('no activity for ', CAST(CAST((p.now_ms - i.active_ms) / 3600000 AS BIGINT) AS STRING), ' h') AS reason,
    to_json(named_struct(
        'last_active_ms', i.active_ms,
        'last_active_source', CASE WHEN i.last_active_ms IS NULL THEN 'znode-mtime' ELSE 'cursor' END,
        'inactive_ms', p.now_ms - i.active_ms,
        'backlog_entries', coalesce(b.backlog_entries, CAST(0 AS BIGINT)),
        'backlog_bytes', coalesce(b.backlog_bytes, CAST(0 AS BIGINT))
    )) AS evidence
FROM inactive i
CROSS JOIN params p
LEFT JOIN int_cursor_backlog b ON b.path = i.path
