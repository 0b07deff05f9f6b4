-- stale-entry-log: an entry log whose live fraction (bytes of ledgers whose metadata exists, over its data bytes)
-- is below the minor or major compaction threshold and whose mtime is older than that kind's interval plus
-- gcWaitTime: GC should already have compacted or deleted it (docs/detections.md "stale-entry-log").
-- `path` is `<bookie>:<ledger_dir>/<file>`. GarbageCollectorThread (runWithFlags, doCompactEntryLogs) compacts a
-- log whose usage is below the threshold of the kind that runs, a kind running when both its interval and
-- threshold are > 0, at most once per interval on a gcWaitTime tick; a log whose ledgers are all gone is deleted
-- by doGcEntryLogs at the next tick. The log being written (reason 'active...'), transactional-compaction files and
-- skipped files are never judged; neither is anything when /ledgers was not scraped completely (a ledger that
-- looks deleted may only be unread).
-- Each bookie is judged on its own GC settings (stg_scan_bookies gc_*: its scraped server_config, else the
-- bookkeeper.conf its scan read, else the audit's; model/gc_settings.py, the resolution the plan uses); a bookie
-- whose settings do not validate (NULL) is not judged.
-- Likely cause, from what the scan and the snapshot show:
--   compaction-disabled            the kind that would act has interval or threshold <= 0 (a threshold <= 0 is
--                                  judged against Pulsar's default, 0.2 minor / 0.5 major)
--   disk-past-warn-threshold       the bookie's disk usage (snapshot `bookies`, HTTP info) is past
--                                  diskUsageWarnThreshold: LedgerDirsMonitor suspends major compaction (past
--                                  diskUsageThreshold, minor too)
--   deleted-ledgers-in-local-index ledgers of this log whose metadata is gone are still in the bookie's local index:
--                                  ledger GC (ScanAndCompareGarbageCollector) has not removed them, so GC still
--                                  counts their bytes as live
--   gc-behind                      none of these: GC has not run or fails on this directory
WITH logs AS (
    SELECT bookie_id, ledger_dir, log_id, min(file) AS file, min(mtime_ms) AS mtime_ms,
        max(data_bytes) AS data_bytes, max(file_bytes) AS file_bytes, min(read_via) AS read_via
    FROM stg_scan_entry_logs
    WHERE read_via <> 'skipped' AND NOT coalesce(compacting, false) AND NOT startswith(coalesce(reason, ''), 'active')
        AND data_bytes > 0
    GROUP BY bookie_id, ledger_dir, log_id
),
dead AS (
    -- the (bookie, ledger) on the scanned disks whose metadata is absent and whose znode is not an undecodable one,
    -- from storage_ledgers (the pairs aggregated and joined with the metadata once, before the storage detections:
    -- sql/storage/1_storage_ledgers.sql): few where GC runs, so broadcast, and the (ledger, log) pairs are never
    -- shuffled by ledger to judge each one
    SELECT bookie_id, ledger_id FROM storage_ledgers WHERE NOT metadata AND NOT undecodable
),
held AS (
    -- a pair is live when its ledger's metadata exists (or its znode is an undecodable one); the wide columns (the
    -- managed ledger names) are read back below only for the few logs found stale
    SELECT /*+ BROADCAST(d) */
        l.bookie_id, l.ledger_dir, l.log_id, l.ledger_id, l.bytes,
        d.ledger_id IS NULL AS live
    FROM stg_scan_entry_log_ledgers l
    LEFT JOIN dead d ON d.bookie_id = l.bookie_id AND d.ledger_id = l.ledger_id
),
per_log AS (
    SELECT
        h.bookie_id, h.ledger_dir, h.log_id,
        coalesce(sum(CASE WHEN h.live THEN h.bytes END), 0) AS live_bytes,
        count_if(h.live) AS live_ledger_count
    FROM held h
    GROUP BY h.bookie_id, h.ledger_dir, h.log_id
),
in_index AS (
    -- the pairs of deleted ledgers (few) still in the bookie's local index
    SELECT
        h.bookie_id, h.ledger_dir, h.log_id,
        count(*) AS deleted_in_index,
        array_sort(collect_list(h.ledger_id)) AS deleted_in_index_ids
    FROM held h
    JOIN (
        SELECT /*+ BROADCAST(d) */ i.bookie_id, i.ledger_id
        FROM stg_scan_local_index i
        JOIN dead d ON d.bookie_id = i.bookie_id AND d.ledger_id = i.ledger_id
        WHERE coalesce(i.exists, true)
        GROUP BY i.bookie_id, i.ledger_id
    ) x ON x.bookie_id = h.bookie_id AND x.ledger_id = h.ledger_id
    WHERE NOT h.live
    GROUP BY h.bookie_id, h.ledger_dir, h.log_id
),
measured AS (
    SELECT /*+ BROADCAST(sb, blk) */
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
    SELECT
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
),
ml AS (
    SELECT ml_name, min(topic) AS topic, min(namespace) AS namespace FROM stg_managed_ledgers GROUP BY ml_name
),
stale_pairs AS (
    -- the live pairs of the stale logs (a row per stale log: broadcast)
    SELECT /*+ BROADCAST(c) */ l.bookie_id, l.ledger_dir, l.log_id, l.ledger_id, l.bytes
    FROM stg_scan_entry_log_ledgers l
    JOIN caused c ON c.bookie_id = l.bookie_id AND c.ledger_dir = l.ledger_dir AND c.log_id = l.log_id
),
stale_live AS (
    SELECT p.bookie_id, p.ledger_dir, p.log_id, p.ledger_id, p.bytes, b.ml_name
    FROM stale_pairs p
    LEFT JOIN (
        SELECT ledger_id, min(ml_name) AS ml_name FROM stg_bk_ledgers b
        WHERE EXISTS (SELECT 1 FROM stale_pairs s WHERE s.ledger_id = b.ledger_id)
        GROUP BY ledger_id
    ) b ON b.ledger_id = p.ledger_id
    LEFT JOIN (SELECT ledger_id FROM int_undecodable WHERE ledger_id IS NOT NULL GROUP BY ledger_id) u
        ON u.ledger_id = p.ledger_id
    WHERE b.ledger_id IS NOT NULL OR u.ledger_id IS NOT NULL
),
top_live AS (
    SELECT
        bookie_id, ledger_dir, log_id,
        slice(reverse(array_sort(collect_list(named_struct('bytes', bytes, 'ledger_id', ledger_id, 'ml_name', ml_name)))), 1, 10)
            AS top_live
    FROM stale_live
    GROUP BY bookie_id, ledger_dir, log_id
),
keepers AS (
    SELECT t.bookie_id, t.ledger_dir, t.log_id, explode(t.top_live) AS l FROM top_live t
),
described AS (
    -- the ledgers keeping the rest of it alive (the 10 biggest), with their topics and namespace retention
    SELECT
        k.bookie_id, k.ledger_dir, k.log_id,
        reverse(array_sort(collect_list(named_struct(
            'bytes', k.l.bytes,
            'ledger_id', k.l.ledger_id,
            'topic', ml.topic,
            'retention_time_minutes', ns.retention_time_minutes,
            'retention_size_mb', ns.retention_size_mb
        )))) AS keeping
    FROM keepers k
    LEFT JOIN ml ON ml.ml_name = k.l.ml_name
    LEFT JOIN stg_namespaces ns ON ns.namespace = ml.namespace
    GROUP BY k.bookie_id, k.ledger_dir, k.log_id
)
SELECT
    'stale-entry-log' AS detection,
    CASE WHEN c.disk_usage > c.disk_usage_warn_threshold THEN 'critical' ELSE 'warning' END AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    CAST(NULL AS STRING) AS topic,
    CAST(NULL AS STRING) AS subscription,
    concat(c.bookie_id, ':', c.ledger_dir, '/', c.file) AS path,
    CAST(NULL AS STRING) AS namespace,
    false AS plannable,
    c.data_bytes - c.live_bytes AS bytes,
    concat(
        'entry log ', c.file, ' on bookie ', c.bookie_id, ' (', c.ledger_dir, ') is ',
        CAST(round(c.live_fraction * 100, 1) AS STRING), '% live, below the ', c.kind, ' compaction threshold, and ',
        CAST(c.age_ms DIV 60000 AS STRING), ' min old: GC should have ',
        CASE WHEN c.live_bytes = 0 THEN 'deleted' ELSE 'compacted' END, ' it; likely cause: ',
        array_join(CASE WHEN size(c.causes0) = 0 THEN array('gc-behind') ELSE c.causes0 END, ', ')
    ) AS reason,
    to_json(named_struct(
        'bookie', c.bookie_id,
        'ledger_dir', c.ledger_dir,
        'entry_log_id', c.log_id,
        'file', c.file,
        'data_bytes', c.data_bytes,
        'file_bytes', c.file_bytes,
        'live_bytes', c.live_bytes,
        'live_fraction', c.live_fraction,
        'mtime_ms', c.mtime_ms,
        'age_ms', c.age_ms,
        'kind', c.kind,
        'threshold', CASE WHEN c.kind = 'minor' THEN c.minor_threshold ELSE c.major_threshold END,
        'interval_ms', CASE WHEN c.kind = 'minor' THEN c.minor_interval_ms ELSE c.major_interval_ms END,
        'due_after_ms', c.due_after_ms,
        'causes', CASE WHEN size(c.causes0) = 0 THEN array('gc-behind') ELSE c.causes0 END,
        'disk_usage', c.disk_usage,
        'deleted_in_local_index', c.deleted_in_index_ids,
        'index_status', c.index_status,
        'gc_settings_source', c.gc_settings_source,
        'live_ledgers', c.live_ledger_count,
        'keeping_alive', d.keeping
    )) AS evidence
FROM caused c
LEFT JOIN described d ON d.bookie_id = c.bookie_id AND d.ledger_dir = c.ledger_dir AND d.log_id = c.log_id
