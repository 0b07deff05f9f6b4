-- storage oldest logs: per scanned bookie, the N (the storage_top_n macro) oldest entry logs (mtime, then log id;
-- non-compacting, read), their bytes by class, live fraction (live bytes / data bytes) and the live ledgers that
-- pin them (GarbageCollectorThread.doGcEntryLogs deletes a log only once none of its ledgers is live; compaction
-- keeps it while its live fraction is above the thresholds), each with its topic and the retention policies
-- that keep it (namespace policy; the topic's own policy when set, local scope over global).
-- Its few rows in few stages (13 -> 6 at 600,000 topics; each stage new generated code): the entry logs and the
-- topic policies each in one task, the small sides broadcast, and no shuffle.
WITH logs AS (
    -- the scans' entry logs (a row per log: 71,542 at 600,000 topics) in one partition without a shuffle
    -- (COALESCE(1)): this aggregate and the window below read them as they are, where each shuffled them
    SELECT bookie_id, ledger_dir, log_id, min(file) AS file, min(mtime_ms) AS mtime_ms, sum(data_bytes) AS data_bytes
    FROM (
        SELECT /*+ COALESCE(1) */ bookie_id, ledger_dir, log_id, file, mtime_ms, data_bytes, read_via, compacting
        FROM stg_scan_entry_logs
    ) e
    WHERE read_via <> 'skipped' AND NOT compacting
    GROUP BY bookie_id, ledger_dir, log_id
),
oldest AS (
    -- N as a literal (the storage_top_n macro: the audit's top_n), not a cross join with a one-row view of it, a
    -- cartesian product that shuffled its output
    SELECT *
    FROM (
        SELECT l.*, row_number() OVER (PARTITION BY bookie_id ORDER BY mtime_ms, log_id, ledger_dir) AS rank
        FROM logs l
    ) x
    WHERE x.rank <= ${storage_top_n}
),
pairs AS (
    -- the pairs of the few oldest logs (top_n per bookie: broadcast, so the (ledger, log) pairs are not shuffled).
    -- Joined on the log id alone, a 64-bit key, with the bookie and directory compared on the few matches: an
    -- equality of the strings would be a join key (9 M pairs at 600,000 topics each copying and hashing two
    -- strings); `(...) IS NOT DISTINCT FROM true` keeps it out of the keys
    SELECT /*+ BROADCAST(o) */ o.bookie_id, o.ledger_dir, o.log_id, p.ledger_id, p.bytes
    FROM stg_scan_entry_log_ledgers p
    JOIN oldest o ON o.log_id = p.log_id
        AND (o.bookie_id = p.bookie_id AND o.ledger_dir = p.ledger_dir) IS NOT DISTINCT FROM true
),
topic_policy AS (
    SELECT topic, min(named_struct('s', CASE WHEN scope = 'local' THEN 0 ELSE 1 END,
        'minutes', retention_time_minutes, 'mb', retention_size_mb)) AS p
    FROM (
        SELECT /*+ COALESCE(1) */ topic, scope, retention_time_minutes, retention_size_mb FROM stg_topic_policies
    ) t
    WHERE retention_time_minutes IS NOT NULL OR retention_size_mb IS NOT NULL
    GROUP BY topic
),
pinned AS (
    -- those pairs broadcast too: storage_ledgers (a row per bookie and ledger) is read, not shuffled, and joined on
    -- the ledger id alone (as `pairs`: its 9 M rows' bookie ids are compared only on a match); the namespaces and
    -- topic policies broadcast (a row per namespace, per topic with a retention policy of its own: the few matches
    -- were shuffled by topic for a sort-merge join with the policies)
    SELECT /*+ BROADCAST(p, n, tp) */
        p.bookie_id, p.ledger_dir, p.log_id, p.ledger_id, p.bytes, s.class, s.topic, s.namespace, s.kind,
        n.retention_time_minutes AS ns_retention_minutes, n.retention_size_mb AS ns_retention_mb,
        tp.p.minutes AS topic_retention_minutes, tp.p.mb AS topic_retention_mb
    FROM pairs p
    JOIN storage_ledgers s ON s.ledger_id = p.ledger_id AND (s.bookie_id = p.bookie_id) IS NOT DISTINCT FROM true
    LEFT JOIN stg_namespaces n ON s.class = 'live' AND n.namespace = s.namespace
    LEFT JOIN topic_policy tp ON s.class = 'live' AND tp.topic = s.topic
)
-- the pinned rows broadcast (a few thousand): the oldest logs joined and aggregated in their one partition
SELECT /*+ BROADCAST(q) */
    o.bookie_id,
    o.rank,
    o.ledger_dir,
    o.log_id,
    o.file,
    o.mtime_ms,
    o.data_bytes,
    coalesce(sum(CASE WHEN q.class = 'live' THEN q.bytes END), CAST(0 AS BIGINT)) AS live_bytes,
    coalesce(sum(CASE WHEN q.class = 'orphan' THEN q.bytes END), CAST(0 AS BIGINT)) AS orphan_bytes,
    coalesce(sum(CASE WHEN q.class = 'unreclaimed' THEN q.bytes END), CAST(0 AS BIGINT)) AS unreclaimed_bytes,
    coalesce(sum(CASE WHEN q.class = 'unattributed' THEN q.bytes END), CAST(0 AS BIGINT)) AS unattributed_bytes,
    count(q.ledger_id) AS ledgers,
    count_if(q.class = 'live') AS live_ledgers,
    slice(array_sort(
        filter(collect_list(CASE WHEN q.class = 'live' THEN named_struct(
            'neg_bytes', -q.bytes, 'ledger_id', q.ledger_id, 'bytes', q.bytes, 'kind', q.kind, 'topic', q.topic,
            'namespace', q.namespace, 'ns_retention_minutes', q.ns_retention_minutes,
            'ns_retention_mb', q.ns_retention_mb, 'topic_retention_minutes', q.topic_retention_minutes,
            'topic_retention_mb', q.topic_retention_mb
        ) END), x -> x IS NOT NULL)
    ), 1, 10) AS pinned_by
FROM oldest o
LEFT JOIN pinned q ON q.bookie_id = o.bookie_id AND q.ledger_dir = o.ledger_dir AND q.log_id = o.log_id
GROUP BY o.bookie_id, o.rank, o.ledger_dir, o.log_id, o.file, o.mtime_ms, o.data_bytes
