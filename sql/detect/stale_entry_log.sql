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
-- The stale logs and their measure come from the shared view `stale_logs` (sql/storage/2_stale_logs.sql).
WITH ml AS (
    SELECT ml_name, min(topic) AS topic, min(namespace) AS namespace FROM stg_managed_ledgers GROUP BY ml_name
),
stale_pairs AS (
    -- the live pairs of the stale logs (a row per stale log: broadcast)
    SELECT /*+ BROADCAST(c) */ l.bookie_id, l.ledger_dir, l.log_id, l.ledger_id, l.bytes
    FROM stg_scan_entry_log_ledgers l
    JOIN stale_logs c ON c.bookie_id = l.bookie_id AND c.ledger_dir = l.ledger_dir AND c.log_id = l.log_id
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
FROM stale_logs c
LEFT JOIN described d ON d.bookie_id = c.bookie_id AND d.ledger_dir = c.ledger_dir AND d.log_id = c.log_id
