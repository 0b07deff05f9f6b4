-- stg_ack_ranges: ManagedCursorInfo.individualDeletedMessages: open-closed ranges (lower exclusive, upper inclusive).
-- Rename/cast only. Source: the snapshot table `ack_ranges` (registered as src_ack_ranges).
SELECT
    CAST(cursor_path AS STRING) AS cursor_path,
    CAST(topic AS STRING) AS topic,
    CAST(subscription AS STRING) AS subscription,
    CAST(idx AS INT) AS idx,
    CAST(lower_ledger_id AS BIGINT) AS lower_ledger_id,
    CAST(lower_entry_id AS BIGINT) AS lower_entry_id,
    CAST(upper_ledger_id AS BIGINT) AS upper_ledger_id,
    CAST(upper_entry_id AS BIGINT) AS upper_entry_id
FROM src_ack_ranges
