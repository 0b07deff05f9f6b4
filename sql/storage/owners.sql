-- storage owners: per scanned bookie, the top N (storage_params.top_n) tenants, namespaces and topics by bytes,
-- for live and for orphan bytes (an orphan's owner is the topic its custom metadata names). `groups` is how many
-- there are in all, so the output can say "top N of M". Top-N in Spark: findings.json never holds every topic.
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
ranked AS (
    SELECT
        g.*,
        row_number() OVER (PARTITION BY bookie_id, class, level ORDER BY bytes DESC, name) AS rank,
        count(*) OVER (PARTITION BY bookie_id, class, level) AS groups
    FROM grouped g
)
SELECT /*+ BROADCAST(p) */ r.bookie_id, r.class, r.level, r.name, r.bytes, r.ledgers, r.rank, r.groups
FROM ranked r
CROSS JOIN storage_params p
WHERE r.rank <= p.top_n
