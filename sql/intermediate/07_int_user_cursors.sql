-- int_user_cursors: the durable, non-system cursors of non-system topics, the cursors ack-holes,
-- inactive-subscription, int_cursor_backlog and the ack-ranges coverage judge. A system topic
-- (docs/detections.md "System topics"): a local name starting with `__`, a transaction pending-ack or buffer
-- snapshot topic, or any topic of `pulsar/system`. Joined with the managed ledgers once here instead of once per
-- consumer (ack-holes alone joined them three times).
SELECT
    c.path,
    c.ml_path,
    c.topic,
    c.namespace,
    c.subscription,
    c.cursors_ledger_id,
    c.mark_delete_ledger_id,
    c.mark_delete_entry_id,
    c.last_active_ms,
    c.mtime_ms,
    c.range_count
FROM stg_cursors c
JOIN stg_managed_ledgers m ON m.path = c.ml_path
WHERE NOT c.is_system
    AND NOT (
        left(m.local_name, 2) = '__'
        OR right(m.local_name, 25) = '__transaction_pending_ack'
        OR right(m.local_name, 29) = '__transaction_buffer_snapshot'
        OR m.namespace = 'pulsar/system'
    )
