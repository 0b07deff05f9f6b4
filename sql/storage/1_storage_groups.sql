-- storage_groups: the scanned bytes per ledger and group of 8 bookies, with the class and owner of the ledger:
-- one row per (ledger, bookie_no DIV 8) with bytes of the ledger on a bookie of that group (2,181,625 rows at
-- 600,000 topics with six scans, where a row per (bookie, ledger) was 9,100,644). Written once to Parquet
-- (etl.storage_stage), before the storage detections: the 9 M (ledger, log) pairs of 600,000 topics are aggregated
-- and joined with the metadata once, not once per query. storage_ledgers (1_storage_ledgers.view.sql), a view over
-- it that is never written, has a row per (bookie, ledger) for the queries that read one.
-- Columns:
--   ledger_id     the ledger;
--   hi            the group: bookie_no DIV 8, where `bookie_no` is the bookie's rank by bookie_id among the scans
--                 (1, 2, ...; stg_scan_bookies numbers them): integers, not the bookie's string (an integer sort key
--                 is radix-sorted; bookie ids sharing a prefix, as 10.20.0.11:3181 and 10.20.0.12:3181, made every
--                 comparison a string comparison);
--   held          bit (bookie_no % 8) set for each bookie of the group with bytes of the ledger (1, 2, 4, ... 128);
--   old           of those, the bits of the bookies with a pair of the ledger in a log last written before the
--                 scrape started (scan_params.snapshot_started_at_ms): the per-bookie part of `unreclaimed`;
--   b0..b7        each bookie's bytes of the ledger (slot bookie_no % 8), NULL when that bookie holds none. Bytes:
--                 sum of `entry_log_ledgers.bytes` (L + 4 per entry, as upstream's EntryLogMetadata counts). The
--                 scanner writes no pairs for skipped logs or transactional-compaction files, so per bookie these sum
--                 to the `data_bytes` of its non-compacting entry logs (the capacity invariant
--                 tests/spark/test_capacity.py checks);
--   class         the class decided per ledger: 'live' or 'orphan' (below); NULL when it depends on the bookie:
--                 'unreclaimed' or 'unattributed', decided by storage_ledgers alone (the unreclaimed rule lives
--                 there and nowhere else);
--   kind          the first reference's kind (data, cursor, compacted, bucket, schema), else the ledger kind its
--                 metadata gives (formats/ledger_kind), else NULL;
--   metadata      the ledger's znode is in stg_bk_ledgers; `undecodable`: its znode is an undecodable one
--                 (int_undecodable). Neither: the ledger looks deleted (unreclaimed-ledger-data's candidates,
--                 stale-entry-log's dead bytes);
--   topic, namespace, tenant   the owner: the referencing topic (live), else the topic its metadata names.
-- Class (exactly one per (bookie, ledger); storage_ledgers):
--   live          BookKeeper metadata present and a reference names the ledger (ledger list, cursor ledger,
--                 compacted-topic ledger, delayed-delivery bucket, schema): owner = the referencing topic;
--   orphan        metadata present, no reference, a Pulsar ledger kind (custom metadata `application=pulsar`),
--                 and no scope incomplete (int_blocking): owner = the topic its custom metadata names
--                 (`pulsar/managed-ledger`, schema id, compacted topic), as orphan-ledger derives it;
--   unreclaimed   metadata absent from a completely scraped /ledgers, the znode not an undecodable one, the
--                 ledger's oldest log on that bookie written before the scrape started and the bookie's scan
--                 started after it finished (the unreclaimed-ledger-data rule: an error is never evidence of
--                 absence);
--   unattributed  the rest: metadata present but the owner unknown (not a Pulsar ledger, or a scope incomplete
--                 so absence of a reference proves nothing), or metadata not seen but absence not provable.
-- Written per group, not exploded to a row per (bookie, ledger) before the write (600,000 topics, the query alone,
-- warm, /tmp/storage19/h.py: 20.90 / 20.65 -> 17.36 / 17.37 task-CPU s, cold 24.80 -> 18.78; 67.8 -> 66.8 MB).
WITH logs AS (
    SELECT bookie_id, ledger_dir, log_id, hash(bookie_id, ledger_dir, log_id) AS h, min(mtime_ms) AS mtime_ms
    FROM stg_scan_entry_logs
    WHERE read_via <> 'skipped' AND NOT compacting
    GROUP BY bookie_id, ledger_dir, log_id
),
pairs AS (
    -- `logs` has a row per entry log (a bookie's disk over its logSizeLimit, 1 GiB by default) and the scans one
    -- per bookie: broadcast, so the (ledger, log) pairs are not shuffled by log before their aggregate by ledger.
    -- Distributed by ledger alone: the aggregate by (ledger, group of bookies) below and the join by ledger after it
    -- need no other shuffle, so the pairs cross the network once (9 M rows at 600,000 topics). Both joins keyed by a
    -- number, the hash of the strings (`h`), the strings compared on a match, `(...) IS NOT DISTINCT FROM true`
    -- keeping that out of the keys (as byte_gaps.sql does): the broadcast side is a table of numbers
    SELECT /*+ BROADCAST(k, g), REPARTITION(ledger_id) */ k.bookie_no, l.ledger_id, l.bytes, g.mtime_ms
    FROM stg_scan_entry_log_ledgers l
    -- bookie_id is unique among the scans (audit/bookie_scans.read_scans refuses two scans of one bookie)
    JOIN (SELECT bookie_id, bookie_no, hash(bookie_id) AS h FROM stg_scan_bookies) k
        ON k.h = hash(l.bookie_id) AND (k.bookie_id = l.bookie_id) IS NOT DISTINCT FROM true
    LEFT JOIN logs g
        ON g.h = hash(l.bookie_id, l.ledger_dir, l.log_id)
        AND (g.bookie_id = l.bookie_id AND g.ledger_dir = l.ledger_dir AND g.log_id = l.log_id)
        IS NOT DISTINCT FROM true
),
on_disk AS (
    -- the pairs aggregated per (ledger, group of 8 bookies), pivoted by bookie: `held`, the bits of the bookies with
    -- pairs of the ledger; `old`, of those with a pair in a log older than the scrape's start (the per-bookie part
    -- of `unreclaimed`: the oldest log before it); b0..b7 each bookie's bytes. With at most 8 bookies a ledger is one
    -- row (2.2 M at 600,000 topics, not 9.1 M): a fourth of the rows aggregated by hash, sorted and merged with the
    -- ledgers; storage_ledgers (1_storage_ledgers.view.sql) turns each row back into one per bookie holding the ledger
    -- (its bit in `held`) where it is read.
    -- 600,000 topics, the query alone, warm, in turns with one merge join per input and a row per (bookie, ledger):
    -- 24.29 / 23.89 -> 21.14 / 21.44 task-CPU s, the same rows (8 bookies a row; 4: 22.37; each bookie's oldest log
    -- as a column, not the bit: 22.73). At 50,000 topics, whose session runs without generated code, it costs more
    SELECT /*+ BROADCAST(sp) */ p.ledger_id, p.bookie_no DIV 8 AS hi,
        bit_or(CASE p.bookie_no % 8
            WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 4 WHEN 3 THEN 8
            WHEN 4 THEN 16 WHEN 5 THEN 32 WHEN 6 THEN 64 ELSE 128
        END) AS held,
        bit_or(CASE WHEN p.mtime_ms < sp.snapshot_started_at_ms THEN CASE p.bookie_no % 8
            WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 2 THEN 4 WHEN 3 THEN 8
            WHEN 4 THEN 16 WHEN 5 THEN 32 WHEN 6 THEN 64 ELSE 128
        END ELSE 0 END) AS old,
        sum(CASE WHEN p.bookie_no % 8 = 0 THEN p.bytes END) AS b0,
        sum(CASE WHEN p.bookie_no % 8 = 1 THEN p.bytes END) AS b1,
        sum(CASE WHEN p.bookie_no % 8 = 2 THEN p.bytes END) AS b2,
        sum(CASE WHEN p.bookie_no % 8 = 3 THEN p.bytes END) AS b3,
        sum(CASE WHEN p.bookie_no % 8 = 4 THEN p.bytes END) AS b4,
        sum(CASE WHEN p.bookie_no % 8 = 5 THEN p.bytes END) AS b5,
        sum(CASE WHEN p.bookie_no % 8 = 6 THEN p.bytes END) AS b6,
        sum(CASE WHEN p.bookie_no % 8 = 7 THEN p.bytes END) AS b7
    FROM pairs p
    CROSS JOIN scan_params sp
    GROUP BY p.ledger_id, p.bookie_no DIV 8
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
ledger_keys AS (
    -- Everything that depends on the ledger alone is derived once per ledger (2.3 M at 600,000 topics), before the
    -- one merge join with the (bookie, ledger) rows (9 M): the references, the metadata znodes and the undecodable
    -- ones were three merge joins on that side, each copying the row with its strings so far into a new one.
    -- One row per ledger a reference, a metadata znode or an undecodable znode names: the first reference by kind
    -- (data, cursor, compacted, bucket, schema), then topic (one owner per ledger), and whether a znode of it is
    -- an undecodable one
    SELECT ledger_id, min(o) AS o, max(u) AS u
    FROM (
        SELECT ledger_id, named_struct('prio', prio, 'topic', topic, 'namespace', namespace, 'kind', kind) AS o,
            false AS u
        FROM refs
        UNION ALL
        SELECT ledger_id, NULL AS o, false AS u FROM stg_bk_ledgers WHERE ledger_id IS NOT NULL
        UNION ALL
        SELECT ledger_id, NULL AS o, true AS u FROM int_undecodable WHERE ledger_id IS NOT NULL
    ) k
    GROUP BY ledger_id
),
bk AS (
    SELECT b.ledger_id, ${ledger_kind:b} AS kind, b.component, b.ml_name, b.schema_id, b.compacted_topic
    FROM stg_bk_ledgers b
),
ledger_meta AS (
    -- per ledger (and per metadata znode of it: a ledger's two znodes, flat and hierarchical, give two rows)
    SELECT
        k.ledger_id,
        k.o.prio IS NOT NULL AS owned,
        b.ledger_id IS NOT NULL AS metadata,
        k.u AS undecodable,
        b.ledger_id IS NOT NULL AND k.o.prio IS NOT NULL AS live,
        b.ledger_id IS NOT NULL AND b.kind NOT IN ('unowned', 'pulsar-unknown') AS orphan_kind,
        CASE WHEN k.o.prio IS NOT NULL THEN k.o.kind WHEN b.ledger_id IS NOT NULL THEN b.kind END AS kind,
        k.o.topic AS owner_topic,
        k.o.namespace AS owner_namespace,
        CASE
            WHEN instr(k.o.namespace, '/') > 1 THEN substring(k.o.namespace, 1, instr(k.o.namespace, '/') - 1)
        END AS owner_tenant,
        CASE
            WHEN k.o.prio IS NOT NULL THEN CAST(NULL AS STRING)
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
    FROM ledger_keys k
    LEFT JOIN bk b ON b.ledger_id = k.ledger_id
),
ledger_info AS (
    SELECT
        m.ledger_id, m.owned, m.metadata, m.undecodable, m.live, m.orphan_kind, m.kind,
        CASE WHEN m.owned THEN m.owner_topic ELSE m.meta_topic END AS topic,
        CASE
            WHEN m.owned THEN m.owner_namespace
            ELSE nullif(regexp_extract(m.meta_topic, '^[a-z-]+://(.+)/[^/]+$', 1), '')
        END AS namespace,
        m.owner_tenant
    FROM ledger_meta m

)
-- one merge join by ledger (a ledger in no reference, metadata or undecodable znode: no metadata, no owner), and a
-- row per (ledger, group of 8 bookies) written: storage_ledgers (1_storage_ledgers.view.sql) turns it into a row per
-- bookie holding the ledger where it is read, and decides there what depends on the bookie (the unreclaimed rule)
SELECT /*+ BROADCAST(blk) */
    d.ledger_id, d.hi, d.held, d.old, d.b0, d.b1, d.b2, d.b3, d.b4, d.b5, d.b6, d.b7,
    CASE
        WHEN i.live THEN 'live'
        WHEN i.orphan_kind AND size(blk.incomplete_scopes) = 0 THEN 'orphan'
    END AS class,
    i.kind,
    coalesce(i.metadata, false) AS metadata,
    coalesce(i.undecodable, false) AS undecodable,
    i.topic,
    i.namespace,
    -- the namespace's first segment when it is not empty (what '^([^/]+)/' extracts), without a regular
    -- expression: the owner's, derived once per ledger above, else derived here (a ledger no reference owns)
    CASE
        WHEN i.owned THEN i.owner_tenant
        WHEN instr(i.namespace, '/') > 1 THEN substring(i.namespace, 1, instr(i.namespace, '/') - 1)
    END AS tenant
FROM on_disk d
LEFT JOIN ledger_info i ON i.ledger_id = d.ledger_id
CROSS JOIN int_blocking blk
