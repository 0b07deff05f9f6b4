-- int_user_cursors: the durable, non-system cursors of non-system topics, the cursors ack-holes,
-- inactive-subscription, int_cursor_backlog and the ack-ranges coverage judge. System cursors and system topics
-- are those of the registry of Pulsar's own names (pulsar_ops/pulsar_names.py, docs/detections.md "Pulsar's own
-- names"), rendered here by the ${system_cursor_reason:..} and ${system_topic_reason:..} macros. Joined with the managed ledgers once here instead of once per
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
    AND ${system_cursor_reason:c.subscription} IS NULL
    AND ${system_topic_reason:m.namespace:m.local_name} IS NULL
