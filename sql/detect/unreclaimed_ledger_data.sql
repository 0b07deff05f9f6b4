-- unreclaimed-ledger-data: bytes on a scanned bookie of a ledger whose metadata is absent from /ledgers
-- (docs/detections.md "unreclaimed-ledger-data"). One finding per (bookie, ledger); `path` is the bookie id.
-- Claimed only when
--   * /ledgers was scraped completely and the ledger's znode is not an undecodable one (int_undecodable): an
--     error is never evidence of absence;
--   * the scan started at or after the scrape finished, and the oldest entry log holding the ledger was last
--     written before the scrape started. Its bytes then existed before the scrape, so the ledger was created
--     before it; its metadata was absent when the scrape read /ledgers, so it had been deleted by then; and the
--     bytes were still on disk when the scan read them, after that. A ledger created after the scrape started
--     (bytes only in logs written since) or a scan that ran before the scrape (the ledger may have been deleted
--     between the two, its bytes legitimately waiting for the next GC run) is not reported.
-- Stage (evidence.in_local_index): the bookie's local `ledgers` index still lists it, so ledger GC
-- (ScanAndCompareGarbageCollector.gc) has not run or fails; else it is only in entry logs, waiting for
-- GarbageCollectorThread.doGcEntryLogs to delete a log whose ledgers are all gone, or for compaction. NULL when
-- the scan could not read the index.
WITH logs AS (
    -- one row per (bookie, ledger dir, log id): a transactional-compaction file may share its id. Only the logs
    -- holding a dead ledger's pairs (log_ledgers' rows with a ledger id, broadcast when it counted few rows): not
    -- every log's file name grouped and shuffled to describe a few
    SELECT e.bookie_id, e.ledger_dir, e.log_id, min(e.file) AS file, min(e.mtime_ms) AS mtime_ms
    FROM stg_scan_entry_logs e
    WHERE e.read_via <> 'skipped'
        AND EXISTS (
            SELECT ${broadcast_if_small:x:log_ledgers} 1 FROM log_ledgers x
            WHERE x.ledger_id >= 0 AND x.bookie_id = e.bookie_id AND x.ledger_dir = e.ledger_dir AND x.log_id = e.log_id
        )
    GROUP BY e.bookie_id, e.ledger_dir, e.log_id
),
absent AS (
    -- the per-log detail of those ledgers: log_ledgers (sql/storage/2_log_ledgers.sql, written once before the
    -- storage detections) holds each dead (bookie, ledger)'s pairs as rows of their own, so this reads those few
    -- rows, not the scans' (ledger, log) pairs; `logs` is a row per entry log (few, broadcast)
    SELECT /*+ BROADCAST(g) */
        l.bookie_id,
        l.ledger_id,
        sum(l.bytes) AS bytes,
        min(g.mtime_ms) AS oldest_mtime_ms,
        array_sort(collect_list(named_struct(
            'ledger_dir', l.ledger_dir, 'entry_log_id', l.log_id, 'file', g.file, 'bytes', l.bytes,
            'mtime_ms', g.mtime_ms
        ))) AS logs
    FROM log_ledgers l
    JOIN logs g ON g.bookie_id = l.bookie_id AND g.ledger_dir = l.ledger_dir AND g.log_id = l.log_id
    WHERE l.ledger_id >= 0
    GROUP BY l.bookie_id, l.ledger_id
),
referenced AS (
    -- the references of the ledgers on the scanned disks whose metadata is absent and whose znode is not an
    -- undecodable one: log_ledgers' rows with a ledger id (sql/storage/2_log_ledgers.sql splits them from
    -- storage_ledgers, the pairs aggregated and joined with the metadata once; every dead (bookie, ledger) has a
    -- pair), few where GC runs, so broadcast when log_ledgers counted few rows, not the ledger lists and cursors
    -- shuffled to them (a superset of absent's ledgers: each is LEFT JOINed from absent below)
    SELECT r.ledger_id, min(r.topic) AS topic, min(r.namespace) AS namespace
    FROM (
        SELECT ledger_id, topic, namespace FROM stg_ledger_list
        UNION ALL
        SELECT cursors_ledger_id AS ledger_id, topic, namespace FROM stg_cursors WHERE cursors_ledger_id >= 0
    ) r
    WHERE r.ledger_id IN (
        SELECT ${broadcast_if_small:x:log_ledgers} x.ledger_id FROM log_ledgers x WHERE x.ledger_id >= 0
    )
    GROUP BY r.ledger_id
),
listed AS (
    -- the dead (bookie, ledger)s the bookie's local index lists: indexed (sql/storage/3_indexed.sql, the index read
    -- once for the storage SQL; a byte gap's row matches no absent row below)
    SELECT bookie_id, ledger_id FROM indexed WHERE listed
),
judged AS (
    -- referenced and listed: rows of the dead ledgers (few: broadcast)
    SELECT /*+ BROADCAST(sb, sp, blk, r, i) */
        a.*,
        sb.index_status,
        sb.started_at_ms AS scan_started_at_ms,
        sb.started_at_ms - a.oldest_mtime_ms AS age_ms,
        -- the bookie's own GC settings (stg_scan_bookies: as stale-entry-log judges it; model/gc_settings.py),
        -- the audit's when they do not validate: they grade the severity only, never the claim
        coalesce(sb.gc_wait_time_ms, sp.gc_wait_time_ms) AS gc_wait_time_ms,
        coalesce(sb.minor_interval_ms, sp.minor_interval_ms) AS minor_interval_ms,
        coalesce(sb.major_interval_ms, sp.major_interval_ms) AS major_interval_ms,
        CASE WHEN sb.gc_wait_time_ms IS NULL THEN 'audit' ELSE sb.gc_settings_source END AS gc_settings_source,
        sp.snapshot_started_at_ms,
        sp.snapshot_finished_at_ms,
        CASE
            WHEN sb.index_status <> 'read' THEN CAST(NULL AS BOOLEAN)
            ELSE i.ledger_id IS NOT NULL
        END AS in_local_index,
        r.topic AS referenced_by_topic,
        r.namespace AS referenced_namespace
    FROM absent a
    JOIN stg_scan_bookies sb ON sb.bookie_id = a.bookie_id
    CROSS JOIN scan_params sp
    CROSS JOIN int_blocking blk
    LEFT JOIN referenced r ON r.ledger_id = a.ledger_id
    LEFT JOIN listed i ON i.bookie_id = a.bookie_id AND i.ledger_id = a.ledger_id
    WHERE NOT array_contains(blk.incomplete_scopes, '/ledgers')
        AND sb.started_at_ms >= sp.snapshot_finished_at_ms
        AND a.oldest_mtime_ms < sp.snapshot_started_at_ms
)
SELECT
    'unreclaimed-ledger-data' AS detection,
    CASE
        WHEN j.age_ms > j.gc_wait_time_ms + j.major_interval_ms AND j.bytes >= 1073741824 THEN 'critical'
        WHEN j.age_ms > j.gc_wait_time_ms + j.minor_interval_ms THEN 'warning'
        WHEN j.age_ms > j.gc_wait_time_ms AND j.bytes >= 1073741824 THEN 'warning'
        ELSE 'info'
    END AS severity,
    j.ledger_id AS ledger_id,
    j.referenced_by_topic AS topic,
    CAST(NULL AS STRING) AS subscription,
    j.bookie_id AS path,
    j.referenced_namespace AS namespace,
    false AS plannable,
    j.bytes AS bytes,
    concat(
        CAST(j.bytes AS STRING), ' bytes of deleted ledger ', CAST(j.ledger_id AS STRING), ' on bookie ', j.bookie_id,
        CASE
            WHEN j.in_local_index THEN ': still in its local ledger index (ledger GC has not run or fails)'
            WHEN NOT j.in_local_index THEN ': only in entry logs (waiting for log deletion or compaction)'
            ELSE ' (its local ledger index was not read)'
        END,
        CASE
            WHEN j.referenced_by_topic IS NOT NULL
                THEN concat('; topic ', j.referenced_by_topic, ' still references it (dangling): its data may still be recoverable')
            ELSE ''
        END
    ) AS reason,
    to_json(named_struct(
        'bookie', j.bookie_id,
        'logs', j.logs,
        'log_count', size(j.logs),
        'oldest_log_mtime_ms', j.oldest_mtime_ms,
        'age_ms', j.age_ms,
        'in_local_index', j.in_local_index,
        'stage', CASE
            WHEN j.in_local_index THEN 'local-index'
            WHEN NOT j.in_local_index THEN 'entry-logs-only'
        END,
        'index_status', j.index_status,
        'dangling', j.referenced_by_topic IS NOT NULL,
        'referenced_by_topic', j.referenced_by_topic,
        'gc_wait_time_ms', j.gc_wait_time_ms,
        'gc_settings_source', j.gc_settings_source,
        'scan_started_at_ms', j.scan_started_at_ms,
        'snapshot_started_at_ms', j.snapshot_started_at_ms,
        'snapshot_finished_at_ms', j.snapshot_finished_at_ms
    )) AS evidence
FROM judged j
