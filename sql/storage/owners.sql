-- storage owners: per scanned bookie, the top N (the storage_top_n macro: etl.storage's top_n as a literal) tenants,
-- namespaces and topics by bytes, for live and for orphan bytes (an orphan's owner is the topic its custom metadata
-- names). `groups` is how many there are in all, so the output can say "top N of M". Top-N in Spark: findings.json
-- never holds every topic.
-- Read from storage_groups (sql/storage/1_storage_groups.sql): a row per (ledger, group of 8 bookies: `hi`) with
-- each bookie's bytes (b0..b7) and the bits of those holding the ledger (`held`), the class decided per ledger
-- ('live' and 'orphan' are, the only classes counted here): 2.2 M rows at 600,000 topics, not a row per (bookie,
-- ledger) (9.1 M). A bookie's bytes are b(bookie_no % 8) of its group's rows, its ledgers the rows with its bit set
WITH ns_groups AS (
    -- the namespace and tenant levels: aggregated by (group and class packed: `hc`, namespace, tenant) first, few
    -- groups, so the map side merges nearly every row before the shuffle (a tenant is a function of its namespace;
    -- grouping by both assumes nothing), each bookie of the group its bytes and ledgers
    SELECT
        hi * 8 + CASE WHEN class = 'orphan' THEN 4 ELSE 0 END AS hc,
        namespace,
        tenant,
        sum(b0) AS b0,
        count_if((held & 1) <> 0) AS n0,
        sum(b1) AS b1,
        count_if((held & 2) <> 0) AS n1,
        sum(b2) AS b2,
        count_if((held & 4) <> 0) AS n2,
        sum(b3) AS b3,
        count_if((held & 8) <> 0) AS n3,
        sum(b4) AS b4,
        count_if((held & 16) <> 0) AS n4,
        sum(b5) AS b5,
        count_if((held & 32) <> 0) AS n5,
        sum(b6) AS b6,
        count_if((held & 64) <> 0) AS n6,
        sum(b7) AS b7,
        count_if((held & 128) <> 0) AS n7
    FROM storage_groups
    WHERE class IN ('live', 'orphan')
    GROUP BY hi * 8 + CASE WHEN class = 'orphan' THEN 4 ELSE 0 END, namespace, tenant
),
ns_parts AS (
    -- a row per (bookie and class packed: `bc` = bookie_no * 8 + (4 for orphan bytes), namespace, tenant) with
    -- ledgers there
    SELECT namespace, tenant, explode(array(
            named_struct('bc', ((hc DIV 8) * 8 + 0) * 8 + hc % 8, 'bytes', b0, 'ledgers', n0),
            named_struct('bc', ((hc DIV 8) * 8 + 1) * 8 + hc % 8, 'bytes', b1, 'ledgers', n1),
            named_struct('bc', ((hc DIV 8) * 8 + 2) * 8 + hc % 8, 'bytes', b2, 'ledgers', n2),
            named_struct('bc', ((hc DIV 8) * 8 + 3) * 8 + hc % 8, 'bytes', b3, 'ledgers', n3),
            named_struct('bc', ((hc DIV 8) * 8 + 4) * 8 + hc % 8, 'bytes', b4, 'ledgers', n4),
            named_struct('bc', ((hc DIV 8) * 8 + 5) * 8 + hc % 8, 'bytes', b5, 'ledgers', n5),
            named_struct('bc', ((hc DIV 8) * 8 + 6) * 8 + hc % 8, 'bytes', b6, 'ledgers', n6),
            named_struct('bc', ((hc DIV 8) * 8 + 7) * 8 + hc % 8, 'bytes', b7, 'ledgers', n7)
        )) AS p
    FROM ns_groups
),
ns AS (
    SELECT p.bc AS bc, namespace, tenant, p.bytes AS bytes, p.ledgers AS ledgers
    FROM ns_parts
    WHERE p.ledgers > 0
),
topics AS (
    -- the topic level, per (class, bookie_no DIV 8, topic): the bytes (b0..b7) and ledgers (n0..n7) on each of the 8
    -- bookies numbered (bookie_no DIV 8) * 8 + 0..7, storage_groups' rows summed as they are. A topic's rows in one
    -- task (storage_groups' files are split by ledger) merge before the shuffle: keyed by (class, topic), ~374 K
    -- topics per task at 600,000 topics. Keyed by one struct: Spark's fast (two-level) hash map takes flat keys only,
    -- and with that many topics per task it overflowed, every row then hashed twice (its string copied for the first)
    SELECT
        named_struct(
            'orphan', CASE WHEN class = 'orphan' THEN 4 ELSE 0 END, 'hi', hi, 'topic', topic
        ) AS tk,
        sum(b0) AS b0,
        count_if((held & 1) <> 0) AS n0,
        sum(b1) AS b1,
        count_if((held & 2) <> 0) AS n1,
        sum(b2) AS b2,
        count_if((held & 4) <> 0) AS n2,
        sum(b3) AS b3,
        count_if((held & 8) <> 0) AS n3,
        sum(b4) AS b4,
        count_if((held & 16) <> 0) AS n4,
        sum(b5) AS b5,
        count_if((held & 32) <> 0) AS n5,
        sum(b6) AS b6,
        count_if((held & 64) <> 0) AS n6,
        sum(b7) AS b7,
        count_if((held & 128) <> 0) AS n7
    FROM storage_groups
    WHERE class IN ('live', 'orphan')
    GROUP BY named_struct(
        'orphan', CASE WHEN class = 'orphan' THEN 4 ELSE 0 END, 'hi', hi, 'topic', topic
    )
),
topic_structs AS (
    -- each bookie's value and key for the top N below built here, in a projection (generated code), not per row
    -- inside topic_top's aggregate (a sort-based one: min_by(x, key, N) evaluates its arguments interpreted). 600,000
    -- topics, warm, in turns: owners 5.45 / 5.40 -> 5.08 / 4.77 task-CPU s, the same rows
    SELECT
        tk.orphan AS orphan,
        tk.hi AS hi,
        n0 > 0 AS f0,
        named_struct('name', tk.topic, 'bytes', b0, 'ledgers', n0) AS v0,
        named_struct('neg_bytes', -b0, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k0,
        n1 > 0 AS f1,
        named_struct('name', tk.topic, 'bytes', b1, 'ledgers', n1) AS v1,
        named_struct('neg_bytes', -b1, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k1,
        n2 > 0 AS f2,
        named_struct('name', tk.topic, 'bytes', b2, 'ledgers', n2) AS v2,
        named_struct('neg_bytes', -b2, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k2,
        n3 > 0 AS f3,
        named_struct('name', tk.topic, 'bytes', b3, 'ledgers', n3) AS v3,
        named_struct('neg_bytes', -b3, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k3,
        n4 > 0 AS f4,
        named_struct('name', tk.topic, 'bytes', b4, 'ledgers', n4) AS v4,
        named_struct('neg_bytes', -b4, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k4,
        n5 > 0 AS f5,
        named_struct('name', tk.topic, 'bytes', b5, 'ledgers', n5) AS v5,
        named_struct('neg_bytes', -b5, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k5,
        n6 > 0 AS f6,
        named_struct('name', tk.topic, 'bytes', b6, 'ledgers', n6) AS v6,
        named_struct('neg_bytes', -b6, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k6,
        n7 > 0 AS f7,
        named_struct('name', tk.topic, 'bytes', b7, 'ledgers', n7) AS v7,
        named_struct('neg_bytes', -b7, 'named', tk.topic IS NOT NULL, 'name', coalesce(tk.topic, '')) AS k7
    FROM topics
),
topic_top AS (
    -- per (class, bookie_no DIV 8): each of the 8 bookies' topic count and top N (the same key as `top` below),
    -- from its topics with a row there (f: n > 0): 630 K rows sorted for this aggregate, not 3.6 M
    SELECT
        orphan,
        hi,
        count_if(f0) AS g0,
        min_by(v0, k0, ${storage_top_n}) FILTER (WHERE f0) AS t0,
        count_if(f1) AS g1,
        min_by(v1, k1, ${storage_top_n}) FILTER (WHERE f1) AS t1,
        count_if(f2) AS g2,
        min_by(v2, k2, ${storage_top_n}) FILTER (WHERE f2) AS t2,
        count_if(f3) AS g3,
        min_by(v3, k3, ${storage_top_n}) FILTER (WHERE f3) AS t3,
        count_if(f4) AS g4,
        min_by(v4, k4, ${storage_top_n}) FILTER (WHERE f4) AS t4,
        count_if(f5) AS g5,
        min_by(v5, k5, ${storage_top_n}) FILTER (WHERE f5) AS t5,
        count_if(f6) AS g6,
        min_by(v6, k6, ${storage_top_n}) FILTER (WHERE f6) AS t6,
        count_if(f7) AS g7,
        min_by(v7, k7, ${storage_top_n}) FILTER (WHERE f7) AS t7
    FROM topic_structs
    GROUP BY orphan, hi
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
    -- the bookie of a number: stg_scan_bookies numbers the scans (storage_groups' `hi` is its bookie_no DIV 8)
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
