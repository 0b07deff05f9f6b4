-- storage owners: per scanned bookie, the top N (the storage_top_n macro: etl.storage's top_n as a literal) tenants,
-- namespaces and topics by bytes, for live and for orphan bytes (an orphan's owner is the topic its custom metadata
-- names). `groups` is how many there are in all, so the output can say "top N of M". Top-N in Spark: findings.json
-- never holds every topic.
WITH grouped AS (
    -- one read of storage_ledgers for the three levels (GROUPING SETS), not one per level (UNION ALL of three)
    SELECT
        bookie_id,
        class,
        CASE WHEN grouping(tenant) = 0 THEN 'tenant' WHEN grouping(namespace) = 0 THEN 'namespace' ELSE 'topic' END
            AS level,
        CASE WHEN grouping(tenant) = 0 THEN tenant WHEN grouping(namespace) = 0 THEN namespace ELSE topic END AS name,
        sum(bytes) AS bytes,
        count(*) AS ledgers
    FROM storage_ledgers
    WHERE class IN ('live', 'orphan')
    GROUP BY GROUPING SETS ((bookie_id, class, tenant), (bookie_id, class, namespace), (bookie_id, class, topic))
),
top AS (
    -- each group's top N in the aggregate itself (min_by keeps the N least keys, bytes descending then name, as a
    -- bounded heap): no shuffle and sort of every group (3.6 M topic groups at 600,000 topics) for a window.
    -- The key orders a NULL name first among equal bytes (row_number's ORDER BY name: NULLS FIRST) on both engines
    SELECT
        bookie_id,
        class,
        level,
        count(*) AS groups,
        min_by(
            named_struct('name', name, 'bytes', bytes, 'ledgers', ledgers),
            named_struct('neg_bytes', -bytes, 'named', name IS NOT NULL, 'name', coalesce(name, '')),
            ${storage_top_n}
        ) AS top
    FROM grouped
    GROUP BY bookie_id, class, level
),
ranked AS (
    SELECT
        t.bookie_id,
        t.class,
        t.level,
        t.groups,
        explode(transform(
            t.top, (x, k) -> named_struct('name', x.name, 'bytes', x.bytes, 'ledgers', x.ledgers, 'rank', k + 1)
        )) AS e
    FROM top t
)
SELECT r.bookie_id, r.class, r.level, r.e.name AS name, r.e.bytes AS bytes, r.e.ledgers AS ledgers,
    CAST(r.e.rank AS INT) AS rank, r.groups
FROM ranked r
