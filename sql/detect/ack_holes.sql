-- ack-holes: individually acknowledged ranges pinning ledgers behind the mark-delete position
-- (docs/detections.md). Durable, non-system cursors of non-system topics only.
-- Only where the ranges are known (cursors_ledger_id = -1, the znode is authoritative): a finding when
-- range_count > 0. Cursors whose ranges live in their cursor ledger are counted per namespace by
-- sql/coverage/ack_ranges_in_cursor_ledgers.sql (one coverage line), never a finding each.
-- Positions count entries across the ledger list: entry (L, e) is number entries_before(L) + e.
WITH known AS (
    SELECT * FROM int_user_cursors WHERE cursors_ledger_id = -1 AND range_count > 0
),
-- the ledger lists of those cursors' topics (int_range_ledgers: every int_ledgers row a join below can match,
-- each joining on the cursor's own ml_path) are written once and broadcast when they counted few rows
ranges AS (
    SELECT ${broadcast_if_small:ll:int_range_ledgers} ${broadcast_if_small:lu:int_range_ledgers}
        r.cursor_path,
        max_by(r.upper_ledger_id, r.idx) AS last_upper_ledger,
        max_by(r.upper_entry_id, r.idx) AS last_upper_entry,
        sum((lu.entries_before + r.upper_entry_id) - (ll.entries_before + r.lower_entry_id)) AS covered,
        count(*) AS ranges_read
    FROM stg_ack_ranges r
    JOIN known k ON k.path = r.cursor_path
    LEFT JOIN int_range_ledgers ll ON ll.ml_path = k.ml_path AND ll.ledger_id = r.lower_ledger_id
    LEFT JOIN int_range_ledgers lu ON lu.ml_path = k.ml_path AND lu.ledger_id = r.upper_ledger_id
    GROUP BY r.cursor_path
),
-- each cursor's window, naming `ranges` once (named twice, Spark planned its scan, joins and aggregate twice),
-- then the bytes of the ledgers it pins: the closed ledgers from the mark-delete ledger to the last acknowledged
-- range's, summed per cursor
windowed AS (
    SELECT ${broadcast_if_small:lm:int_range_ledgers} ${broadcast_if_small:lu:int_range_ledgers}
        k.*,
        g.last_upper_ledger,
        g.last_upper_entry,
        (lu.entries_before + g.last_upper_entry) - (lm.entries_before + k.mark_delete_entry_id) - g.covered
            AS unacked_in_window,
        lm.timestamp_ms AS md_ledger_ts
    FROM known k
    LEFT JOIN ranges g ON g.cursor_path = k.path
    LEFT JOIN int_range_ledgers lm ON lm.ml_path = k.ml_path AND lm.ledger_id = k.mark_delete_ledger_id
    LEFT JOIN int_range_ledgers lu ON lu.ml_path = k.ml_path AND lu.ledger_id = g.last_upper_ledger
),
measured AS (
    SELECT ${broadcast_if_small:x:int_range_ledgers}
        w.path,
        any_value(w.topic) AS topic,
        any_value(w.subscription) AS subscription,
        any_value(w.namespace) AS namespace,
        any_value(w.range_count) AS range_count,
        any_value(w.mark_delete_ledger_id) AS mark_delete_ledger_id,
        any_value(w.mark_delete_entry_id) AS mark_delete_entry_id,
        any_value(w.unacked_in_window) AS unacked_in_window,
        any_value(w.md_ledger_ts) AS md_ledger_ts,
        sum(x.size) AS pinned_bytes
    FROM windowed w
    LEFT JOIN int_range_ledgers x
        ON x.ml_path = w.ml_path AND NOT x.is_last
        AND x.ledger_id >= w.mark_delete_ledger_id AND x.ledger_id <= w.last_upper_ledger
    GROUP BY w.path
)
SELECT /*+ BROADCAST(p) */
    'ack-holes' AS detection,
    CASE WHEN m.range_count * 5 >= p.max_unacked_ranges_metadata * 4 THEN 'warning' ELSE 'info' END AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    m.topic AS topic,
    m.subscription AS subscription,
    m.path AS path,
    m.namespace AS namespace,
    false AS plannable,
    coalesce(m.pinned_bytes, CAST(0 AS BIGINT)) AS bytes,
    concat(
        CAST(m.range_count AS STRING), ' acknowledged range(s) after the mark-delete position ',
        CAST(m.mark_delete_ledger_id AS STRING), ':', CAST(m.mark_delete_entry_id AS STRING),
        CASE WHEN m.range_count * 5 >= p.max_unacked_ranges_metadata * 4
            THEN '; near the metadata-store cap' ELSE '' END
    ) AS reason,
    to_json(named_struct(
        'range_count', m.range_count,
        'first_hole', concat(CAST(m.mark_delete_ledger_id AS STRING), ':',
                             CAST(m.mark_delete_entry_id + 1 AS STRING)),
        'first_hole_age_ms', p.now_ms - m.md_ledger_ts,
        'unacked_in_window', m.unacked_in_window,
        'pinned_bytes', coalesce(m.pinned_bytes, CAST(0 AS BIGINT)),
        'cap_metadata_store', p.max_unacked_ranges_metadata,
        'cap_cursor_ledger', p.max_unacked_ranges_persist,
        'near_cap', m.range_count * 5 >= p.max_unacked_ranges_metadata * 4
    )) AS evidence
FROM measured m
CROSS JOIN params p
