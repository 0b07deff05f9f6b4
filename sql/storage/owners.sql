-- storage owners: per scanned bookie, the top N (the storage_top_n macro: etl.storage's top_n as a literal) tenants,
-- namespaces and topics by bytes, for live and for orphan bytes (an orphan's owner is the topic its custom metadata
-- names). `groups` is how many there are in all, so the output can say "top N of M". Top-N in Spark: findings.json
-- never holds every topic.
WITH ns AS (
    -- the namespace and tenant levels: aggregated by (bookie and class packed: `bc`, namespace, tenant) first, few
    -- groups, so the map side merges nearly every row before the shuffle (a tenant is a function of its namespace;
    -- grouping by both assumes nothing), then the two levels from these few rows (GROUPING SETS)
    SELECT
        bookie_no * 8 + CASE WHEN class = 'orphan' THEN 4 ELSE 0 END AS bc,
        namespace,
        tenant,
        sum(bytes) AS bytes,
        count(*) AS ledgers
    FROM storage_ledgers
    WHERE class IN ('live', 'orphan')
    GROUP BY bookie_no * 8 + CASE WHEN class = 'orphan' THEN 4 ELSE 0 END, namespace, tenant
),
topics AS (
    -- the topic level: its rows shuffled by (part, topic) and aggregated once after the shuffle, with no partial
    -- aggregate before it (9 M rows, 3.6 M groups at 600,000 topics: spread by ledger over the Parquet files, a
    -- map-side aggregate merged almost nothing). One GROUPING SETS over the three levels expanded the 9 M rows to
    -- 27 M and hashed each level's string: owners 13.6-15.8 -> 9.7-10.4 task-CPU s at 600,000 topics (shuffle
    -- 158 -> 140 MB). The bookie, class and level packed into one integer (`part`): fewer bytes per shuffled row
    SELECT /*+ REPARTITION(part, topic) */
        bookie_no * 8 + CASE WHEN class = 'orphan' THEN 4 ELSE 0 END + 2 AS part,
        topic,
        bytes
    FROM storage_ledgers
    WHERE class IN ('live', 'orphan')
),
grouped AS (
    -- a group per (part, name): part = bookie_no * 8 + (4 for orphan bytes) + level (0 tenant, 1 namespace, 2 topic)
    SELECT
        bc + CASE WHEN grouping(tenant) = 0 THEN 0 ELSE 1 END AS part,
        CASE WHEN grouping(tenant) = 0 THEN tenant ELSE namespace END AS name,
        sum(bytes) AS bytes,
        CAST(sum(ledgers) AS BIGINT) AS ledgers
    FROM ns
    GROUP BY GROUPING SETS ((bc, tenant), (bc, namespace))
    UNION ALL
    SELECT part, topic AS name, sum(bytes) AS bytes, count(*) AS ledgers
    FROM topics
    GROUP BY part, topic
),
top AS (
    -- each group's top N in the aggregate itself (min_by keeps the N least keys, bytes descending then name, as a
    -- bounded heap): no shuffle and sort of every group (3.6 M topic groups at 600,000 topics) for a window.
    -- The key orders a NULL name first among equal bytes (row_number's ORDER BY name: NULLS FIRST) on both engines.
    -- Grouped by one integer (`part`): the aggregate sorts its 3.6 M input rows by it, a radix sort of the key's
    -- prefix, where (bookie_id, class, level) compared strings sharing a prefix
    SELECT
        part,
        count(*) AS groups,
        min_by(
            named_struct('name', name, 'bytes', bytes, 'ledgers', ledgers),
            named_struct('neg_bytes', -bytes, 'named', name IS NOT NULL, 'name', coalesce(name, '')),
            ${storage_top_n}
        ) AS top
    FROM grouped
    GROUP BY part
),
ranked AS (
    SELECT
        t.part,
        t.groups,
        explode(transform(
            t.top, (x, k) -> named_struct('name', x.name, 'bytes', x.bytes, 'ledgers', x.ledgers, 'rank', k + 1)
        )) AS e
    FROM top t
),
bookies AS (
    -- the bookie of a number: stg_scan_bookies numbers the scans (storage_ledgers' bookie_no is the same column)
    SELECT bookie_id, bookie_no FROM stg_scan_bookies
)
SELECT /*+ BROADCAST(b) */
    b.bookie_id,
    CASE WHEN r.part % 8 >= 4 THEN 'orphan' ELSE 'live' END AS class,
    CASE r.part % 4 WHEN 0 THEN 'tenant' WHEN 1 THEN 'namespace' ELSE 'topic' END AS level,
    r.e.name AS name,
    r.e.bytes AS bytes,
    r.e.ledgers AS ledgers,
    CAST(r.e.rank AS INT) AS rank,
    r.groups
FROM ranked r
JOIN bookies b ON b.bookie_no = r.part DIV 8
