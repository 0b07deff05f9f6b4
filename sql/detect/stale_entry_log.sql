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
-- The stale logs and their measure come from the shared view `stale_logs` (sql/storage/4_stale_logs.sql), the live
-- ledgers keeping each alive from `stale_keepers` (sql/storage/5_stale_keepers.sql).
WITH bk AS (
    -- the managed ledger of each of the keepers' ledgers (stale_keepers, sql/storage/5_stale_keepers.sql: at most
    -- 10 a stale log, broadcast when it counted few rows): BookKeeper's ledgers are read, not shuffled
    SELECT b.ledger_id, min(b.ml_name) AS ml_name
    FROM stg_bk_ledgers b
    WHERE EXISTS (
        SELECT ${broadcast_if_small:k:stale_keepers} 1 FROM stale_keepers k WHERE k.ledger_id = b.ledger_id
    )
    GROUP BY b.ledger_id
),
keeper_topics AS (
    -- the topic of those managed ledgers alone, per keeper's ledger (bk read once: a second reference planned its
    -- read of BookKeeper's ledgers again); bk a row per keeper at most, broadcast when stale_keepers counted few rows
    SELECT ${broadcast_if_small:k:stale_keepers} k.ledger_id, min(m.topic) AS topic, min(m.namespace) AS namespace
    FROM stg_managed_ledgers m
    JOIN bk k ON k.ml_name = m.ml_name
    GROUP BY k.ledger_id
),
described AS (
    -- the ledgers keeping the rest of it alive (the 10 biggest), with their topics and namespace retention.
    -- keeper_topics holds a row per keeper at most, broadcast when stale_keepers counted few rows, and the namespaces
    -- (a row per namespace) always: adaptive execution broadcasts only after both sides of a join were shuffled
    SELECT ${broadcast_if_small:t:stale_keepers} /*+ BROADCAST(ns) */
        k.bookie_id, k.ledger_dir, k.log_id,
        reverse(array_sort(collect_list(named_struct(
            'bytes', k.bytes,
            'ledger_id', k.ledger_id,
            'topic', t.topic,
            'retention_time_minutes', ns.retention_time_minutes,
            'retention_size_mb', ns.retention_size_mb
        )))) AS keeping
    FROM stale_keepers k
    LEFT JOIN keeper_topics t ON t.ledger_id = k.ledger_id
    LEFT JOIN stg_namespaces ns ON ns.namespace = t.namespace
    GROUP BY k.bookie_id, k.ledger_dir, k.log_id
)
-- described: a row per stale log at most, broadcast when stale_logs counted few rows
SELECT ${broadcast_if_small:d:stale_logs}
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
