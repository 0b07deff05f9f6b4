-- int_znode_leaks: the candidate subtree roots of znode-leak (docs/detections.md), one row per root: which leak
-- (`leak`), the namespace, the scopes whose listing must be complete (`required`), the root whose own scopes count
-- (`scope_root`) and how many of its topics still have ledgers (`held_topics`). Small by construction (one row per
-- leftover); `system_reason`: why the root is Pulsar's own (the registry, pulsar_ops/pulsar_names.py), never a
-- leak (znode-leak skips it; system-metadata reports it). Materialised so int_subtrees measures only these roots and znode-leak joins them by broadcast.
-- A policies znode that exists but does not decode still proves its tenant/namespace exists; a managed
-- ledger or partitioned-topic znode that does not decode still proves its topic exists.
-- the known tenants, namespaces and topics are only ever tested with (NOT) EXISTS: UNION ALL, no DISTINCT (each
-- DISTINCT was an aggregate, an exchange and a Spark job per use)
WITH tenants_known AS (
    SELECT tenant FROM stg_tenants
    UNION ALL
    SELECT tenant FROM int_undecodable WHERE tenant IS NOT NULL
),
ns_known AS (
    SELECT namespace FROM stg_namespaces
    UNION ALL
    SELECT namespace FROM int_undecodable WHERE kind = 'namespace'
),
-- the topics that have a managed ledger: anti-joined as two lists, not their DISTINCT union (an aggregate and a
-- shuffle of every topic name, twice): 5.0-6.4 s -> 3.5-3.9 s at 600,000 topics
ml_topics AS (
    SELECT base_topic AS topic FROM stg_managed_ledgers
),
-- a managed ledger that does not decode still names its topic: a partition's is its partitioned topic's, by the
-- canonical index TopicName.getPartitionIndex reads (no sign, no leading zero), as base_topic above and
-- safety.prove_leak's partition_suffix (tests/zk/test_leak_proof_rule.py pins the two); wider only beyond int32
undecodable_ml_topics AS (
    SELECT regexp_replace(topic, '-partition-(0|[1-9][0-9]*)$', '') AS topic FROM int_undecodable
    WHERE kind = 'managed-ledger' AND topic IS NOT NULL
),
-- the topics a partitioned-topic znode proves, as a schema names them (no domain: a non-persistent partitioned
-- topic shares the schema of the persistent name, SchemaRegistryService keys schemas by tenant/ns/topic)
partitioned_known AS (
    SELECT regexp_replace(topic, '^non-persistent://', 'persistent://') AS topic FROM stg_partitioned_topics
    UNION ALL
    SELECT topic FROM int_undecodable WHERE kind = 'partitioned-topic' AND topic IS NOT NULL
),
-- the managed-ledgers directories of tenants and namespaces, each with how many of its topics still have
-- ledgers (held: 1 on a managed ledger's row with ledgers, else 0), in one aggregate each: a directory's path is
-- '/managed-ledgers/' and its name, so grouping the listed directories with the managed ledgers' own rows both
-- deduplicates them and counts the held topics. A DISTINCT union joined with a count per tenant or namespace
-- was an aggregate and a join more, each: at 50,000 topics 21 -> 17 stages, 70 -> 62 generated classes
ml_tenant_dirs AS (
    SELECT path, tenant, CAST(sum(held) AS BIGINT) AS held_topics
    FROM (
        SELECT path, name AS tenant, CAST(0 AS BIGINT) AS held
        FROM stg_znodes WHERE parent = '/managed-ledgers' AND depth = 2
        UNION ALL
        SELECT concat('/managed-ledgers/', tenant) AS path, tenant,
            CAST(CASE WHEN ledger_count > 0 THEN 1 ELSE 0 END AS BIGINT) AS held
        FROM stg_managed_ledgers
    ) x
    GROUP BY path, tenant
),
ml_ns_dirs AS (
    SELECT path, namespace, CAST(sum(held) AS BIGINT) AS held_topics
    FROM (
        SELECT parent AS path, substr(parent, 18) AS namespace, CAST(0 AS BIGINT) AS held
        FROM stg_znodes
        WHERE name = 'persistent' AND depth IN (4, 5) AND parent LIKE '/managed-ledgers/%'
            AND right(parent, 11) <> '/persistent'
        UNION ALL
        SELECT path, substr(path, 18) AS namespace, CAST(0 AS BIGINT) AS held
        FROM stg_znodes
        WHERE depth = 3 AND parent LIKE '/managed-ledgers/%' AND num_children = 0
        UNION ALL
        SELECT concat('/managed-ledgers/', namespace) AS path, namespace,
            CAST(CASE WHEN ledger_count > 0 THEN 1 ELSE 0 END AS BIGINT) AS held
        FROM stg_managed_ledgers
    ) x
    GROUP BY path, namespace
),
bundle_ns_dirs AS (
    SELECT DISTINCT regexp_extract(path, '^(.*)/[^/]+$', 1) AS path, namespace FROM stg_bundle_data
)
-- 1. managed-ledgers subtrees of deleted tenants (one finding per tenant) ...
SELECT
    'managed-ledgers-tenant' AS leak, d.path, CAST(NULL AS STRING) AS namespace,
    array('/admin/policies', '/managed-ledgers') AS required, d.path AS scope_root,
    d.held_topics,
    ${system_tenant_reason:d.tenant} AS system_reason
FROM ml_tenant_dirs d
WHERE NOT EXISTS (SELECT /*+ BROADCAST(t) */ 1 FROM tenants_known t WHERE t.tenant = d.tenant)
UNION ALL
-- ... and of deleted namespaces of live tenants
SELECT
    'managed-ledgers-namespace' AS leak, d.path, d.namespace,
    array('/admin/policies', '/managed-ledgers') AS required, d.path AS scope_root,
    d.held_topics,
    ${system_namespace_reason:d.namespace} AS system_reason
FROM ml_ns_dirs d
WHERE NOT EXISTS (SELECT /*+ BROADCAST(n) */ 1 FROM ns_known n WHERE n.namespace = d.namespace)
    AND EXISTS (SELECT /*+ BROADCAST(t) */ 1 FROM tenants_known t WHERE t.tenant = split_part(d.namespace, '/', 1))
UNION ALL
-- 2. partitioned-topic nodes without any managed ledger of their partitions
SELECT
    'partitioned-topic' AS leak, pt.path, pt.namespace,
    array('/admin/policies', '/admin/partitioned-topics', '/managed-ledgers',
          concat('/managed-ledgers/', pt.namespace)) AS required,
    CAST(NULL AS STRING) AS scope_root, CAST(0 AS BIGINT) AS held_topics,
    ${system_topic_reason:pt.namespace:pt.local_name} AS system_reason
FROM stg_partitioned_topics pt
-- a non-persistent partitioned topic has no managed ledger by design: never a leak candidate
WHERE pt.topic LIKE 'persistent://%'
    AND NOT EXISTS (SELECT 1 FROM ml_topics m WHERE m.topic = pt.topic)
    AND NOT EXISTS (SELECT /*+ BROADCAST(m) */ 1 FROM undecodable_ml_topics m WHERE m.topic = pt.topic)
UNION ALL
-- 3. schema locators whose topic has neither a managed ledger nor a partitioned node
SELECT
    'schema' AS leak, s.path, min(s.namespace) AS namespace,
    array('/admin/policies', '/schemas', concat('/schemas/', min(s.namespace)), '/managed-ledgers',
          concat('/managed-ledgers/', min(s.namespace)), '/admin/partitioned-topics') AS required,
    CAST(NULL AS STRING) AS scope_root, CAST(0 AS BIGINT) AS held_topics,
    min(${system_topic_reason:s.namespace:sl}) AS system_reason
FROM (SELECT *, regexp_extract(topic, '[^/]+$', 0) AS sl FROM stg_schema_index) s
WHERE NOT EXISTS (SELECT 1 FROM ml_topics m WHERE m.topic = s.topic)
    AND NOT EXISTS (SELECT /*+ BROADCAST(m) */ 1 FROM undecodable_ml_topics m WHERE m.topic = s.topic)
    AND NOT EXISTS (SELECT 1 FROM partitioned_known pt WHERE pt.topic = s.topic)
GROUP BY s.path
UNION ALL
-- 4. bundle-data
SELECT
    'bundle-data' AS leak, bd.path, bd.namespace,
    array('/admin/policies', '/loadbalance/bundle-data') AS required,
    CAST(NULL AS STRING) AS scope_root, CAST(0 AS BIGINT) AS held_topics,
    ${system_namespace_reason:bd.namespace} AS system_reason
FROM (
    -- a. directories of namespaces without policies
    SELECT d.path, d.namespace
    FROM bundle_ns_dirs d
    WHERE NOT EXISTS (SELECT /*+ BROADCAST(n) */ 1 FROM ns_known n WHERE n.namespace = d.namespace)
    UNION ALL
    -- b. data of a live namespace for a range that is not one of its bundles
    SELECT x.path, x.namespace
    FROM stg_bundle_data x
    -- the namespace's bundles are known only from its decoded policies and local policies
    WHERE EXISTS (SELECT /*+ BROADCAST(n) */ 1 FROM stg_namespaces n WHERE n.namespace = x.namespace)
        AND NOT EXISTS (
            SELECT /*+ BROADCAST(u) */ 1 FROM int_undecodable u
            WHERE u.kind = 'local-policies' AND u.namespace = x.namespace
        )
        AND NOT EXISTS (
            SELECT /*+ BROADCAST(b) */ 1 FROM int_bundles b
            WHERE b.namespace = x.namespace
                AND (
                    (b.lower = x.lower AND b.upper = x.upper)
                    -- hex ranges, case folded as ASCII (not lower(): formats/ascii_case.py)
                    OR ${ascii_lower:b.bundle_range} = ${ascii_lower:x.bundle_range}
                )
        )
) bd
UNION ALL
-- 5. local policies of namespaces without policies
SELECT
    'local-policies' AS leak, lp.path, lp.namespace,
    array('/admin/policies', '/admin/local-policies') AS required,
    CAST(NULL AS STRING) AS scope_root, CAST(0 AS BIGINT) AS held_topics,
    ${system_namespace_reason:lp.namespace} AS system_reason
FROM (
    SELECT path, namespace FROM stg_local_policies
    -- one whose value does not decode still exists: reported, never planned (it holds an undecodable znode)
    UNION ALL
    SELECT path, namespace FROM int_undecodable WHERE kind = 'local-policies'
) lp
WHERE NOT EXISTS (SELECT /*+ BROADCAST(n) */ 1 FROM ns_known n WHERE n.namespace = lp.namespace)
