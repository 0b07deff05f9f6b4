-- int_cursor_backlog: per durable, non-system cursor of a non-system topic, the backlog after its mark-delete
-- position over the ledger list (BookKeeper values for the open ledger, as int_ledgers gives them):
-- entries after the mark-delete position; bytes of the mark-delete ledger and every later one.
-- Used by inactive-subscription and the ack-ranges-in-cursor-ledgers coverage.
SELECT
    u.path,
    sum(
        CASE
            WHEN u.mark_delete_ledger_id IS NULL OR l.ledger_id > u.mark_delete_ledger_id
                THEN coalesce(l.entries, CAST(0 AS BIGINT))
            WHEN l.ledger_id = u.mark_delete_ledger_id
                THEN greatest(coalesce(l.entries, CAST(0 AS BIGINT)) - (u.mark_delete_entry_id + 1), CAST(0 AS BIGINT))
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
FROM int_user_cursors u
JOIN int_ledgers l ON l.ml_path = u.ml_path
GROUP BY u.path
