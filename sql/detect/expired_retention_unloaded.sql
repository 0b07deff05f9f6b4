-- expired-retention-unloaded: ledgers an unloaded topic's broker would trim now (docs/detections.md). The unloaded
-- topics and their retention: int_unloaded_retention (sql/intermediate/18_int_unloaded_retention.sql).
-- Not loaded: the topic's bundle (CRC32 of the full name in the namespace's boundaries) has no ownership znode
-- (and /namespace was read completely), or the broker that owns it listed its loaded topics and the topic is not
-- among loaded_topics. A bundle whose owner's listing is missing (an empty body, an error, no answer) is
-- unknown: none of its topics is judged. Snapshots without a scope row per broker (older scrapes), and bundles
-- without an ownership znode when /namespace was not read completely, are judged only when every broker
-- answered (manifest admin_scraped). A topic any broker lists (with or without a bundle) is never judged, nor one
-- whose hash another ownership, or a service unit in flight, covers (rules.topic_load_problem, the planner's rule;
-- pinned by tests/unit/repair/test_topic_loaded_rule.py). Retention: topic policy, else the
-- namespace's (null dimension -> broker default), else the broker defaults. Candidates: ledgers before the
-- slowest cursor's mark-delete ledger L (+ L when fully consumed); all ledgers without cursors; the last
-- ledger only when BookKeeper shows entries; offloaded ledgers without a BookKeeper copy are skipped.
-- The retention cut is a prefix: it stops at the first candidate that satisfies neither rule.
-- When a load frees each ledger (ManagedLedgerImpl.initialize re-opens the last ledger and stamps it with the
-- load time): the earlier ones at the first trim after the load; the last one at the first trim only when the
-- retention time is 0 or the size rule takes it, else one retention period after the load.
WITH slowest AS (
    -- the slowest cursor's mark-delete position: the lowest ledger, then the lowest entry in it (one pass)
    SELECT ml_path, md_ledger, min(coalesce(mark_delete_entry_id, CAST(-1 AS BIGINT))) AS md_entry
    FROM (
        SELECT
            c.ml_path, c.mark_delete_ledger_id, c.mark_delete_entry_id,
            min(c.mark_delete_ledger_id) OVER (PARTITION BY c.ml_path) AS md_ledger
        FROM stg_cursors c
        WHERE c.mark_delete_ledger_id IS NOT NULL
            -- only the unloaded topics' cursors (a broadcast semi-join when they are few)
            AND EXISTS (
                SELECT ${broadcast_if_small:ur:int_unloaded_retention} 1 FROM int_unloaded_retention ur
                WHERE ur.path = c.ml_path
            )
    ) c
    WHERE mark_delete_ledger_id = md_ledger
    GROUP BY ml_path, md_ledger
),
topic_ledgers AS (
    -- every ledger of an unloaded topic, with the topic's total size; after a load the re-read last ledger
    -- counts with its BookKeeper length (initializeBookKeeper). The topic's retention columns ride along to
    -- the finding (grouped with ml_path below) instead of a second join with the retention, which re-ran the
    -- bundle and retention resolution of every managed ledger (5.9-7.2 s -> 4.3-4.5 s at 600,000 topics)
    SELECT ${broadcast_if_small:r:int_unloaded_retention}
        l.*, r.rt, r.rs, r.topic AS r_topic, r.namespace AS r_namespace, r.owned, r.owner_broker, r.bundle_range,
        r.retention_source, r.ownership_source,
        -- the rule's per-ledger predicate is rendered from pulsar_ops/repair/rules.py, the one definition the
        -- planner and apply call too (trim_candidate_sql, retention_expired_sql, at_first_trim_sql)
        coalesce(${trim_candidate:l:s}, false) AS candidate
    FROM int_ledgers l
    JOIN int_unloaded_retention r ON r.path = l.ml_path
    LEFT JOIN slowest s ON s.ml_path = l.ml_path
),
sized AS (
    -- the topic's total size and the candidates' sizes up to each ledger, in one window (one sort of the topic's
    -- ledgers: a sum over the whole list and one over the candidates before the cut differ only in their frame),
    -- before keeping the candidates
    SELECT
        c.ml_path, c.idx, c.ledger_id, c.is_last, c.size, c.timestamp_ms, c.rt, c.rs, c.total_size,
        c.r_topic, c.r_namespace, c.owned, c.owner_broker, c.bundle_range, c.retention_source, c.ownership_source,
        coalesce(
            c.rs >= 0 AND c.total_size - coalesce(c.candidates_size, CAST(0 AS BIGINT)) >= c.rs * 1048576,
            false
        ) AS by_size
    FROM (
        SELECT
            l.*,
            sum(coalesce(l.size, CAST(0 AS BIGINT))) OVER (
                PARTITION BY l.ml_path ORDER BY l.idx ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
            ) AS total_size,
            sum(CASE WHEN l.candidate THEN l.size END) OVER (
                PARTITION BY l.ml_path ORDER BY l.idx ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
            ) AS candidates_size
        FROM topic_ledgers l
    ) c
    WHERE c.candidate
),
walked AS (
    SELECT /*+ BROADCAST(p) */
        s.*,
        ${retention_expired:s:p} AS expired,
        ${at_first_trim:s} AS at_first_trim
    FROM sized s
    CROSS JOIN params p
),
cut AS (
    SELECT
        w.*,
        min(CASE WHEN NOT w.expired THEN w.idx END) OVER (PARTITION BY w.ml_path) AS first_kept
    FROM walked w
),
trimmed AS (
    SELECT
        ml_path, r_topic, r_namespace, owned, owner_broker, bundle_range, rt, rs, retention_source, ownership_source,
        array_sort(collect_list(ledger_id)) AS ledger_ids,
        array_sort(collect_list(CASE WHEN at_first_trim THEN ledger_id END)) AS first_trim_ids,
        array_sort(collect_list(CASE WHEN NOT at_first_trim THEN ledger_id END)) AS after_retention_ids,
        count(*) AS ledgers,
        sum(size) AS bytes,
        sum(CASE WHEN at_first_trim THEN size ELSE CAST(0 AS BIGINT) END) AS first_trim_bytes,
        min(timestamp_ms) AS oldest_ms
    FROM cut
    WHERE expired AND (first_kept IS NULL OR idx < first_kept)
    GROUP BY ml_path, r_topic, r_namespace, owned, owner_broker, bundle_range, rt, rs, retention_source,
        ownership_source
)
SELECT /*+ BROADCAST(p) */
    'expired-retention-unloaded' AS detection,
    'warning' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    t.r_topic AS topic,
    CAST(NULL AS STRING) AS subscription,
    t.ml_path AS path,
    t.r_namespace AS namespace,
    false AS plannable,
    coalesce(t.bytes, CAST(0 AS BIGINT)) AS bytes,
    concat(
        'topic not loaded (',
        CASE WHEN t.owned THEN 'not in loaded_topics'
            WHEN t.ownership_source = 'service-unit-state' THEN 'bundle not Owned in /service_unit_state'
            WHEN p.ownership_in_zk THEN 'bundle unowned'
            ELSE 'no broker lists it loaded' END, '): ',
        CAST(t.ledgers AS STRING), ' ledger(s) past retention are kept until it is loaded',
        CASE WHEN t.retention_source = 'topic-unknown'
            THEN '; its namespace has __change_events, so a topic-level retention may apply: only a load (the broker applies it) may trim'
            ELSE '' END,
        CASE WHEN size(t.after_retention_ids) > 0
            THEN concat('; a load frees ', CAST(size(t.first_trim_ids) AS STRING),
                        ' at its first trim and the last ledger one retention period after the load')
            ELSE '' END
    ) AS reason,
    to_json(named_struct(
        'ledger_ids', t.ledger_ids,
        'first_trim_ledger_ids', t.first_trim_ids,
        'after_retention_ledger_ids', t.after_retention_ids,
        'first_trim_bytes', t.first_trim_bytes,
        'after_load_ms', CASE WHEN size(t.after_retention_ids) > 0 THEN t.rt * 60000 END,
        'oldest_age_ms', p.now_ms - t.oldest_ms,
        'retention_time_minutes', t.rt,
        'retention_size_mb', t.rs,
        'retention_source', t.retention_source,
        'bundle', t.bundle_range,
        'owned', t.owned,
        'owner_broker', t.owner_broker,
        'ownership_source', t.ownership_source,
        -- the transaction stores this topic opens (int_transaction_stores: a pending-ack store is in use while its
        -- origin topic is loaded); never findings of their own
        'transaction_stores', ts.stores
    )) AS evidence
FROM trimmed t
CROSS JOIN params p
LEFT JOIN (
    SELECT
        opener,
        array_sort(collect_list(named_struct('store', topic, 'in_use', in_use, 'opener_state', opener_state)))
            AS stores
    FROM int_transaction_stores
    WHERE kind = 'pending-ack'
    GROUP BY opener
) ts ON ts.opener = t.r_topic
