-- storage_ledgers: one row per (scanned bookie, ledger) with bytes on that bookie, the class of those bytes and
-- their owner. Written once to Parquet (etl.storage_stage), before the storage detections, and read by them and
-- by the other storage/*.sql queries: the 9 M (ledger, log) pairs of 600,000 topics are aggregated and joined
-- with the metadata once, not once per query.
-- `bookie_no`: the bookie's rank by bookie_id among the scans (1, 2, ...; stg_scan_bookies numbers them). The
-- pairs are aggregated by (bookie_no, ledger_id), integers, not by the bookie's string, and owners.sql groups and
-- sorts by it (an integer sort key is radix-sorted; bookie ids sharing a prefix, as 10.20.0.11:3181 and
-- 10.20.0.12:3181, made every comparison a string comparison).
-- `metadata`: the ledger's znode is in stg_bk_ledgers; `undecodable`: its znode is an undecodable one
-- (int_undecodable). Neither: the ledger looks deleted (unreclaimed-ledger-data's candidates, stale-entry-log's
-- dead bytes).
-- Bytes: sum of `entry_log_ledgers.bytes` (L + 4 per entry, as upstream's EntryLogMetadata counts). The scanner
-- writes no pairs for skipped logs or transactional-compaction files, so per bookie these sum to the
-- `data_bytes` of its non-compacting entry logs (the capacity invariant tests/spark/test_capacity.py checks).
-- Class (exactly one per row):
--   live          BookKeeper metadata present and a reference names the ledger (ledger list, cursor ledger,
--                 compacted-topic ledger, delayed-delivery bucket, schema): owner = the referencing topic;
--   orphan        metadata present, no reference, a Pulsar ledger kind (custom metadata `application=pulsar`),
--                 and no scope incomplete (int_blocking): owner = the topic its custom metadata names
--                 (`pulsar/managed-ledger`, schema id, compacted topic), as orphan-ledger derives it;
--   unreclaimed   metadata absent from a completely scraped /ledgers, the znode not an undecodable one, the
--                 ledger's oldest log written before the scrape started and the scan started after it finished
--                 (the unreclaimed-ledger-data rule: an error is never evidence of absence);
--   unattributed  the rest: metadata present but the owner unknown (not a Pulsar ledger, or a scope incomplete
--                 so absence of a reference proves nothing), or metadata not seen but absence not provable.
WITH bookies AS (
    -- bookie_id is unique among the scans (audit/bookie_scans.read_scans refuses two scans of one bookie)
    SELECT bookie_id, started_at_ms, bookie_no FROM stg_scan_bookies
),
logs AS (
    SELECT bookie_id, ledger_dir, log_id, hash(bookie_id, ledger_dir, log_id) AS h, min(mtime_ms) AS mtime_ms
    FROM stg_scan_entry_logs
    WHERE read_via <> 'skipped' AND NOT compacting
    GROUP BY bookie_id, ledger_dir, log_id
),
pairs AS (
    -- `logs` has a row per entry log (a bookie's disk over its logSizeLimit, 1 GiB by default) and `bookies` one
    -- per scan: broadcast, so the (ledger, log) pairs are not shuffled by log before their aggregate by ledger.
    -- Distributed by ledger alone: the aggregate by (bookie, ledger) below and the joins by ledger after it need no
    -- other shuffle, so the pairs cross the network once, not twice (9 M rows at 600,000 topics, about one per
    -- bookie and ledger). Both joins keyed by a number, the hash of the strings (`h`), the strings compared on a
    -- match, `(...) IS NOT DISTINCT FROM true` keeping that out of the keys (as byte_gaps.sql does): as keys, the
    -- bookie id and ledger directory of each pair were copied into a key row and hashed there; by hash the broadcast
    -- side is a table of numbers. The same rows; 25.10 / 25.06 -> 24.12 / 23.92 task-CPU s at 600,000 topics
    SELECT /*+ BROADCAST(k, g), REPARTITION(ledger_id) */ k.bookie_no, l.ledger_id, l.bytes, g.mtime_ms
    FROM stg_scan_entry_log_ledgers l
    JOIN (SELECT bookie_id, bookie_no, hash(bookie_id) AS h FROM bookies) k
        ON k.h = hash(l.bookie_id) AND (k.bookie_id = l.bookie_id) IS NOT DISTINCT FROM true
    LEFT JOIN logs g
        ON g.h = hash(l.bookie_id, l.ledger_dir, l.log_id)
        AND (g.bookie_id = l.bookie_id AND g.ledger_dir = l.ledger_dir AND g.log_id = l.log_id)
        IS NOT DISTINCT FROM true
),
on_disk AS (
    SELECT p.bookie_no, p.ledger_id, sum(p.bytes) AS bytes, min(p.mtime_ms) AS oldest_mtime_ms
    FROM pairs p
    GROUP BY p.bookie_no, p.ledger_id
),
refs AS (
    SELECT ledger_id, 0 AS prio, 'data' AS kind, topic, namespace FROM stg_ledger_list
    UNION ALL
    SELECT cursors_ledger_id AS ledger_id, 1 AS prio, 'cursor' AS kind, topic, namespace
    FROM stg_cursors WHERE cursors_ledger_id >= 0
    UNION ALL
    SELECT compacted_topic_ledger AS ledger_id, 2 AS prio, 'compacted' AS kind, topic, namespace
    FROM stg_cursors WHERE compacted_topic_ledger IS NOT NULL
    UNION ALL
    SELECT p.bucket_ledger_id AS ledger_id, 3 AS prio, 'bucket' AS kind, p.topic,
        regexp_extract(p.topic, '^[a-z-]+://(.+)/[^/]+$', 1) AS namespace
    FROM stg_cursor_properties p WHERE p.bucket_ledger_id IS NOT NULL
    UNION ALL
    SELECT ledger_id, 4 AS prio, 'schema' AS kind, topic, namespace FROM stg_schema_index
),
owner_min AS (
    -- the first reference by kind (data, cursor, compacted, bucket, schema), then topic: one owner per ledger
    SELECT ledger_id, min(named_struct('prio', prio, 'topic', topic, 'namespace', namespace, 'kind', kind)) AS o
    FROM refs r
    GROUP BY ledger_id
),
owner AS (
    -- the owner's tenant (the namespace's first segment when it is not empty: what '^([^/]+)/' extracts, without a
    -- regular expression) once per owned ledger (2.2 M at 600,000 topics), not once per (bookie, ledger) row
    SELECT ledger_id, o,
        CASE WHEN instr(o.namespace, '/') > 1 THEN substring(o.namespace, 1, instr(o.namespace, '/') - 1) END AS tenant
    FROM owner_min
),
bk AS (
    -- the topic the metadata names is derived (regular expressions) only for a ledger no reference owns, below
    SELECT b.ledger_id, ${ledger_kind:b} AS kind, b.component, b.ml_name, b.schema_id, b.compacted_topic
    FROM stg_bk_ledgers b
),
undecodable AS (
    SELECT DISTINCT u.ledger_id FROM int_undecodable u WHERE u.ledger_id IS NOT NULL
),
joined AS (
    SELECT /*+ BROADCAST(sb, sp, blk) */
        sb.bookie_id,
        d.bookie_no,
        d.ledger_id,
        d.bytes,
        CASE
            WHEN b.ledger_id IS NOT NULL AND o.ledger_id IS NOT NULL THEN 'live'
            WHEN b.ledger_id IS NOT NULL AND b.kind NOT IN ('unowned', 'pulsar-unknown')
                AND size(blk.incomplete_scopes) = 0 THEN 'orphan'
            WHEN b.ledger_id IS NULL AND u.ledger_id IS NULL
                AND NOT array_contains(blk.incomplete_scopes, '/ledgers')
                AND sb.started_at_ms >= sp.snapshot_finished_at_ms
                AND d.oldest_mtime_ms < sp.snapshot_started_at_ms THEN 'unreclaimed'
            ELSE 'unattributed'
        END AS class,
        CASE
            WHEN o.ledger_id IS NOT NULL THEN o.o.kind
            WHEN b.ledger_id IS NOT NULL THEN b.kind
        END AS kind,
        o.ledger_id IS NOT NULL AS owned,
        b.ledger_id IS NOT NULL AS metadata,
        u.ledger_id IS NOT NULL AS undecodable,
        o.o.topic AS owner_topic,
        o.o.namespace AS owner_namespace,
        o.tenant AS owner_tenant,
        CASE
            WHEN o.ledger_id IS NOT NULL THEN CAST(NULL AS STRING)
            WHEN b.component = 'managed-ledger' THEN concat(
                'persistent://',
                nullif(regexp_extract(b.ml_name, '^(.+)/persistent/[^/]+$', 1), ''),
                '/',
                try_url_decode(nullif(regexp_extract(b.ml_name, '/persistent/([^/]+)$', 1), ''))
            )
            WHEN b.schema_id IS NOT NULL THEN concat(
                'persistent://',
                nullif(regexp_extract(b.schema_id, '^(.+)/[^/]+$', 1), ''),
                '/',
                try_url_decode(nullif(regexp_extract(b.schema_id, '/([^/]+)$', 1), ''))
            )
            ELSE b.compacted_topic
        END AS meta_topic
    -- the joins by ledger first, the bookies, params and blocking scopes after them: the rows sorted for the joins
    -- (9 M at 600,000 topics) are the aggregate's four numbers, not those with the bookie's id, its scan start and
    -- the scopes' array copied into each (the same rows: every on_disk row has its bookie, and one row each)
    FROM on_disk d
    LEFT JOIN owner o ON o.ledger_id = d.ledger_id
    LEFT JOIN bk b ON b.ledger_id = d.ledger_id
    LEFT JOIN undecodable u ON u.ledger_id = d.ledger_id
    JOIN bookies sb ON sb.bookie_no = d.bookie_no
    CROSS JOIN scan_params sp
    CROSS JOIN int_blocking blk
),
classified AS (
    -- the columns the storage SQL reads (each is written for 9 M rows at 600,000 topics)
    SELECT
        j.bookie_id,
        j.ledger_id,
        j.bytes,
        j.class,
        j.kind,
        j.metadata,
        j.undecodable,
        CASE WHEN j.owned THEN j.owner_topic ELSE j.meta_topic END AS topic,
        CASE
            WHEN j.owned THEN j.owner_namespace
            ELSE nullif(regexp_extract(j.meta_topic, '^[a-z-]+://(.+)/[^/]+$', 1), '')
        END AS namespace,
        j.bookie_no,
        j.owned,
        j.owner_tenant
    FROM joined j
)
SELECT
    c.bookie_id, c.ledger_id, c.bytes, c.class, c.kind, c.metadata, c.undecodable, c.topic, c.namespace,
    -- the namespace's first segment when it is not empty (what '^([^/]+)/' extracts), without a regular
    -- expression: the owner's, derived once per ledger above, else derived here (a ledger no reference owns)
    CASE
        WHEN c.owned THEN c.owner_tenant
        WHEN instr(c.namespace, '/') > 1 THEN substring(c.namespace, 1, instr(c.namespace, '/') - 1)
    END AS tenant,
    c.bookie_no
FROM classified c
