-- stale_logs: the entry logs stale-entry-log reports (sql/detect/stale_entry_log.sql holds the rule's comment:
-- thresholds, intervals, gcWaitTime, causes), one row per log with its measure and likely causes. Written once to
-- Parquet (etl.storage_stage) before the storage detections: stale-entry-log reads it twice (the logs, and the
-- live pairs of those logs), and as a view Spark planned the per-log aggregate over the scans' 9 M (ledger, log)
-- pairs once per reference. Each log's live and dead pairs come from log_ledgers (sql/storage/2_log_ledgers.sql).
WITH logs AS (
    SELECT bookie_id, ledger_dir, log_id, min(file) AS file, min(mtime_ms) AS mtime_ms,
        max(data_bytes) AS data_bytes, max(file_bytes) AS file_bytes, min(read_via) AS read_via
    FROM stg_scan_entry_logs
    WHERE read_via <> 'skipped' AND NOT coalesce(compacting, false) AND NOT startswith(coalesce(reason, ''), 'active')
        AND data_bytes > 0
    GROUP BY bookie_id, ledger_dir, log_id
),
per_log AS (
    -- a pair is live when its ledger's metadata exists (or its znode is an undecodable one): log_ledgers
    -- (sql/storage/2_log_ledgers.sql) holds each log's live pairs summed, and its dead pairs one by one
    SELECT bookie_id, ledger_dir, log_id, bytes AS live_bytes, pairs AS live_ledger_count
    FROM log_ledgers
    WHERE ledger_id IS NULL
),
in_index AS (
    -- the pairs of deleted ledgers (few) still in the bookie's local index (x: a row per such (bookie, ledger),
    -- few where GC runs: broadcast)
    SELECT /*+ BROADCAST(x) */
        h.bookie_id, h.ledger_dir, h.log_id,
        sum(h.pairs) AS deleted_in_index,
        array_sort(collect_list(h.ledger_id)) AS deleted_in_index_ids
    FROM log_ledgers h
    JOIN (
        -- indexed (sql/storage/3_indexed.sql): the index read once for the storage SQL, a row per dead or byte-gap
        -- (bookie, ledger) it lists; a byte gap (its ledger has metadata) matches no dead pair of log_ledgers
        SELECT bookie_id, ledger_id FROM indexed WHERE listed
    ) x ON x.bookie_id = h.bookie_id AND x.ledger_id = h.ledger_id
    GROUP BY h.bookie_id, h.ledger_dir, h.log_id
),
measured AS (
    -- per_log: a row per log at most (log_ledgers broadcast when it counted few rows); in_index: the logs holding
    -- deleted ledgers still in the index (few, as x)
    SELECT /*+ BROADCAST(sb, blk, x) */ ${broadcast_if_small:p:log_ledgers}
        g.*,
        coalesce(p.live_bytes, 0) AS live_bytes,
        coalesce(x.deleted_in_index, 0) AS deleted_in_index,
        coalesce(x.deleted_in_index_ids, array()) AS deleted_in_index_ids,
        coalesce(p.live_ledger_count, 0) AS live_ledger_count,
        coalesce(p.live_bytes, 0) / g.data_bytes AS live_fraction,
        sb.started_at_ms - g.mtime_ms AS age_ms,
        sb.index_status,
        sb.gc_settings_source,
        sb.gc_wait_time_ms,
        CASE WHEN sb.minor_threshold > 0 THEN sb.minor_threshold ELSE 0.2 END AS minor_t,
        CASE WHEN sb.major_threshold > 0 THEN sb.major_threshold ELSE 0.5 END AS major_t,
        sb.minor_threshold > 0 AND sb.minor_interval_ms > 0 AS minor_enabled,
        sb.major_threshold > 0 AND sb.major_interval_ms > 0 AS major_enabled,
        sb.minor_threshold,
        sb.major_threshold,
        sb.minor_interval_ms,
        sb.major_interval_ms,
        sb.disk_usage_warn_threshold,
        sb.disk_usage_threshold
    FROM logs g
    JOIN stg_scan_bookies sb ON sb.bookie_id = g.bookie_id
    LEFT JOIN per_log p ON p.bookie_id = g.bookie_id AND p.ledger_dir = g.ledger_dir AND p.log_id = g.log_id
    LEFT JOIN in_index x ON x.bookie_id = g.bookie_id AND x.ledger_dir = g.ledger_dir AND x.log_id = g.log_id
    CROSS JOIN int_blocking blk
    WHERE NOT array_contains(blk.incomplete_scopes, '/ledgers') AND sb.gc_wait_time_ms IS NOT NULL
),
kinded AS (
    SELECT
        m.*,
        CASE
            WHEN m.live_fraction < m.minor_t AND m.minor_enabled THEN 'minor'
            WHEN m.live_fraction < m.major_t AND m.major_enabled THEN 'major'
            WHEN m.live_fraction < m.minor_t THEN 'minor'
            WHEN m.live_fraction < m.major_t THEN 'major'
        END AS kind
    FROM measured m
),
due AS (
    SELECT
        k.*,
        CASE WHEN k.kind = 'minor' THEN k.minor_enabled ELSE k.major_enabled END AS kind_enabled,
        k.gc_wait_time_ms + CASE
            WHEN k.kind = 'minor' AND k.minor_enabled THEN k.minor_interval_ms
            WHEN k.kind = 'major' AND k.major_enabled THEN k.major_interval_ms
            ELSE 0
        END AS due_after_ms
    FROM kinded k
    WHERE k.kind IS NOT NULL
),
stale AS (
    -- bk: a row per bookie (broadcast: a sort-merge join shuffled both sides by bookie id)
    SELECT /*+ BROADCAST(bk) */
        d.*,
        CASE WHEN bk.total_bytes > 0 THEN 1.0 - bk.free_bytes / bk.total_bytes END AS disk_usage
    FROM due d
    LEFT JOIN (
        SELECT bookie_id, min(free_bytes) AS free_bytes, max(total_bytes) AS total_bytes FROM stg_bookies
        GROUP BY bookie_id
    ) bk ON bk.bookie_id = d.bookie_id
    WHERE d.age_ms > d.due_after_ms
),
caused AS (
    SELECT
        s.*,
        filter(
            array(
                CASE WHEN NOT s.kind_enabled THEN 'compaction-disabled' END,
                CASE
                    WHEN s.disk_usage > s.disk_usage_threshold
                        OR (s.kind = 'major' AND s.disk_usage > s.disk_usage_warn_threshold)
                        THEN 'disk-past-warn-threshold'
                END,
                CASE WHEN s.deleted_in_index > 0 THEN 'deleted-ledgers-in-local-index' END
            ),
            c -> c IS NOT NULL
        ) AS causes0
    FROM stale s
)
SELECT * FROM caused
