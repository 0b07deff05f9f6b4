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
    -- the topic level, pivoted by bookie: a row per (class, bookie_no DIV 8, topic) with the bytes (b0..b7) and
    -- ledgers (n0..n7) on each of the 8 bookies numbered (bookie_no DIV 8) * 8 + 0..7. A topic's rows in one task
    -- (storage_ledgers' files are split by ledger) merge before the shuffle: keyed by (bookie, topic) they merged
    -- almost nothing (a ledger's ~3 replicas are on different bookies; 2.27 M -> 1.74 M rows per task at 600,000
    -- topics), keyed by (class, topic) 2.27 M -> 0.37 M. Keyed by one struct: Spark's fast (two-level) hash map
    -- takes flat keys only, and with ~374 K topics per task it overflowed, every row then hashed twice (its string
    -- copied for the first). Shuffle 130.6 -> 62.6 MB, owners 10.6/9.1 -> 7.3/6.3 task-CPU s at 600,000 topics
    SELECT
        named_struct(
            'orphan', CASE WHEN class = 'orphan' THEN 4 ELSE 0 END, 'hi', bookie_no DIV 8, 'topic', topic
        ) AS tk,
        sum(CASE WHEN bookie_no % 8 = 0 THEN bytes END) AS b0,
        count_if(bookie_no % 8 = 0) AS n0,
        sum(CASE WHEN bookie_no % 8 = 1 THEN bytes END) AS b1,
        count_if(bookie_no % 8 = 1) AS n1,
        sum(CASE WHEN bookie_no % 8 = 2 THEN bytes END) AS b2,
        count_if(bookie_no % 8 = 2) AS n2,
        sum(CASE WHEN bookie_no % 8 = 3 THEN bytes END) AS b3,
        count_if(bookie_no % 8 = 3) AS n3,
        sum(CASE WHEN bookie_no % 8 = 4 THEN bytes END) AS b4,
        count_if(bookie_no % 8 = 4) AS n4,
        sum(CASE WHEN bookie_no % 8 = 5 THEN bytes END) AS b5,
        count_if(bookie_no % 8 = 5) AS n5,
        sum(CASE WHEN bookie_no % 8 = 6 THEN bytes END) AS b6,
        count_if(bookie_no % 8 = 6) AS n6,
        sum(CASE WHEN bookie_no % 8 = 7 THEN bytes END) AS b7,
        count_if(bookie_no % 8 = 7) AS n7
    FROM storage_ledgers
    WHERE class IN ('live', 'orphan')
    GROUP BY named_struct(
        'orphan', CASE WHEN class = 'orphan' THEN 4 ELSE 0 END, 'hi', bookie_no DIV 8, 'topic', topic
    )
),
topic_top AS (
    -- per (class, bookie_no DIV 8): each of the 8 bookies' topic count and top N (the same key as `top` below),
    -- from its topics with a row there (n > 0): 630 K rows sorted for this aggregate, not 3.6 M
    SELECT
        tk.orphan AS orphan,
        tk.hi AS hi,
        count_if(n0 > 0) AS g0,
        min_by(
            named_struct('name', tk.topic, 'bytes', b0, 'ledgers', n0),
            named_struct('neg_bytes', -b0, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n0 > 0) AS t0,
        count_if(n1 > 0) AS g1,
        min_by(
            named_struct('name', tk.topic, 'bytes', b1, 'ledgers', n1),
            named_struct('neg_bytes', -b1, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n1 > 0) AS t1,
        count_if(n2 > 0) AS g2,
        min_by(
            named_struct('name', tk.topic, 'bytes', b2, 'ledgers', n2),
            named_struct('neg_bytes', -b2, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n2 > 0) AS t2,
        count_if(n3 > 0) AS g3,
        min_by(
            named_struct('name', tk.topic, 'bytes', b3, 'ledgers', n3),
            named_struct('neg_bytes', -b3, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n3 > 0) AS t3,
        count_if(n4 > 0) AS g4,
        min_by(
            named_struct('name', tk.topic, 'bytes', b4, 'ledgers', n4),
            named_struct('neg_bytes', -b4, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n4 > 0) AS t4,
        count_if(n5 > 0) AS g5,
        min_by(
            named_struct('name', tk.topic, 'bytes', b5, 'ledgers', n5),
            named_struct('neg_bytes', -b5, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n5 > 0) AS t5,
        count_if(n6 > 0) AS g6,
        min_by(
            named_struct('name', tk.topic, 'bytes', b6, 'ledgers', n6),
            named_struct('neg_bytes', -b6, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n6 > 0) AS t6,
        count_if(n7 > 0) AS g7,
        min_by(
            named_struct('name', tk.topic, 'bytes', b7, 'ledgers', n7),
            named_struct('neg_bytes', -b7, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')),
            ${storage_top_n}
        ) FILTER (WHERE n7 > 0) AS t7
    FROM topics
    GROUP BY tk.orphan, tk.hi
),
topic_parts AS (
    -- back to a row per (part, ...): a bookie number with no topic row has no group (groups = 0), dropped below
    SELECT explode(array(
            named_struct('part', (hi * 8 + 0) * 8 + orphan + 2, 'groups', g0, 'top', t0),
            named_struct('part', (hi * 8 + 1) * 8 + orphan + 2, 'groups', g1, 'top', t1),
            named_struct('part', (hi * 8 + 2) * 8 + orphan + 2, 'groups', g2, 'top', t2),
            named_struct('part', (hi * 8 + 3) * 8 + orphan + 2, 'groups', g3, 'top', t3),
            named_struct('part', (hi * 8 + 4) * 8 + orphan + 2, 'groups', g4, 'top', t4),
            named_struct('part', (hi * 8 + 5) * 8 + orphan + 2, 'groups', g5, 'top', t5),
            named_struct('part', (hi * 8 + 6) * 8 + orphan + 2, 'groups', g6, 'top', t6),
            named_struct('part', (hi * 8 + 7) * 8 + orphan + 2, 'groups', g7, 'top', t7)
        )) AS p
    FROM topic_top
),
grouped AS (
    -- a group per (part, name): part = bookie_no * 8 + (4 for orphan bytes) + level (0 tenant, 1 namespace,
    -- 2 topic); the tenant and namespace levels here, the topic level's from topic_parts
    SELECT
        bc + CASE WHEN grouping(tenant) = 0 THEN 0 ELSE 1 END AS part,
        CASE WHEN grouping(tenant) = 0 THEN tenant ELSE namespace END AS name,
        sum(bytes) AS bytes,
        CAST(sum(ledgers) AS BIGINT) AS ledgers
    FROM ns
    GROUP BY GROUPING SETS ((bc, tenant), (bc, namespace))
),
top AS (
    -- each group's top N in the aggregate itself (min_by keeps the N least keys, bytes descending then name, as a
    -- bounded heap): no shuffle and sort of every group (3.6 M topic groups at 600,000 topics) for a window.
    -- The key orders a NULL name first among equal bytes (row_number's ORDER BY name: NULLS FIRST) on both engines.
    -- Grouped by one integer (`part`): the aggregate sorts its input rows by it, a radix sort of the key's prefix,
    -- where (bookie_id, class, level) compared strings sharing a prefix
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
    UNION ALL
    SELECT p.part, p.groups, p.top FROM topic_parts WHERE p.groups > 0
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
