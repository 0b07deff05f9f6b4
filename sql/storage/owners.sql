-- storage owners: per scanned bookie, the top N (the storage_top_n macro: etl.storage's top_n as a literal) tenants,
-- namespaces and topics by bytes, for live and for orphan bytes (an orphan's owner is the topic its custom metadata
-- names). `groups` is how many there are in all, so the output can say "top N of M". Top-N in Spark: findings.json
-- never holds every topic.
WITH grouped AS (
    -- one read of storage_ledgers for the three levels (GROUPING SETS), not one per level (UNION ALL of three).
    -- The bookie is its number (storage_ledgers' bookie_no), the class a boolean, the level an integer: only the
    -- name is a string among the keys
    SELECT
        bookie_no,
        class = 'orphan' AS orphan,
        CASE WHEN grouping(tenant) = 0 THEN 0 WHEN grouping(namespace) = 0 THEN 1 ELSE 2 END AS lvl,
        CASE WHEN grouping(tenant) = 0 THEN tenant WHEN grouping(namespace) = 0 THEN namespace ELSE topic END AS name,
        sum(bytes) AS bytes,
        count(*) AS ledgers
    FROM storage_ledgers
    WHERE class IN ('live', 'orphan')
    GROUP BY GROUPING SETS ((bookie_no, class, tenant), (bookie_no, class, namespace), (bookie_no, class, topic))
),
top AS (
    -- each group's top N in the aggregate itself (min_by keeps the N least keys, bytes descending then name, as a
    -- bounded heap): no shuffle and sort of every group (3.6 M topic groups at 600,000 topics) for a window.
    -- The key orders a NULL name first among equal bytes (row_number's ORDER BY name: NULLS FIRST) on both engines.
    -- Grouped by one integer (bookie, class and level packed: `part`): the aggregate sorts its 3.6 M input rows by
    -- it, a radix sort of the key's prefix, where (bookie_id, class, level) compared strings sharing a prefix
    SELECT
        bookie_no * 8 + CASE WHEN orphan THEN 4 ELSE 0 END + lvl AS part,
        count(*) AS groups,
        min_by(
            named_struct('name', name, 'bytes', bytes, 'ledgers', ledgers),
            named_struct('neg_bytes', -bytes, 'named', name IS NOT NULL, 'name', coalesce(name, '')),
            ${storage_top_n}
        ) AS top
    FROM grouped
    GROUP BY bookie_no * 8 + CASE WHEN orphan THEN 4 ELSE 0 END + lvl
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
