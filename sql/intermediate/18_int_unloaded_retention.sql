-- int_unloaded_retention: the managed ledgers expired-retention-unloaded judges (docs/detections.md), each with its
-- topic's bundle, owner and retention: the topics not loaded (below), with the retention that applies to them.
-- Written once, so the detection joins the ledger lists (int_ledgers: 1.74 M rows at 600,000 topics) and the
-- cursors (1.04 M) to few rows, broadcast when measured small (etl.broadcastable), instead of shuffling and sorting
-- both whole for a merge join with every managed ledger's resolution (an unloaded topic is the exception: 650 of
-- 51,000 managed ledgers at 50,000 topics).
--
-- Not loaded: the topic's bundle (CRC32 of the full name in the namespace's boundaries) has no ownership znode
-- (and /namespace was read completely), or the broker that owns it listed its loaded topics and the topic is not
-- among loaded_topics. A bundle whose owner's listing is missing (an empty body, an error, no answer) is
-- unknown: none of its topics is judged. Snapshots without a scope row per broker (older scrapes), and bundles
-- without an ownership znode when /namespace was not read completely, are judged only when every broker
-- answered (manifest admin_scraped). A topic any broker lists (with or without a bundle) is never judged, nor one
-- whose hash another ownership, or a service unit in flight, covers (rules.topic_load_problem, the planner's rule;
-- pinned by tests/unit/repair/test_topic_loaded_rule.py). Retention: topic policy, else the
-- namespace's (null dimension -> broker default), else the broker defaults.
WITH scopes_seen AS (
    -- one pass over the scopes (three scalar subqueries and a DISTINCT before: a job or a shuffle each).
    -- answered: the brokers whose loaded-topic listing is complete, by id (host:port, as /admin/v2/brokers lists
    -- them)
    SELECT
        count_if(store = 'admin' AND scope LIKE 'broker-stats/topics/%') > 0 AS per_broker,
        count_if(scope = '/namespace' AND complete) > 0 AND count_if(scope = '/namespace' AND NOT complete) = 0
            AS namespace_complete,
        collect_set(
            CASE WHEN store = 'admin' AND complete AND scope LIKE 'broker-stats/topics/%'
                THEN regexp_extract(scope, '^broker-stats/topics/(.+)$', 1) END
        ) AS answered
    FROM stg_scopes
),
admin AS (
    -- all_answered: every broker listed its topics; per_broker: one admin scope row per broker's listing
    -- (http_sources.py); ownership_known: /namespace was read completely, so a missing ownership znode is absence,
    -- unless a broker lists a topic loaded in a bundle without one (ownership kept elsewhere, e.g. the extensible
    -- load manager's system topic, or taken after the walk): then a missing znode proves nothing either
    SELECT /*+ BROADCAST(f) */
        p.admin_scraped AS all_answered,
        f.per_broker,
        f.answered,
        -- /service_unit_state is the truth about bundle ownership (int_ownership_source, one row)
        coalesce((SELECT max(sus_known) FROM int_ownership_source), false) AS sus_known,
        -- ownership_in_zk: the registrations say the modular load manager keeps ownership in /namespace znodes
        -- (snapshot manifest load_manager, pulsar_ops/pulsar_names.py load_manager_kind): under the extensible
        -- load manager (PIP-192: ownership in the system topic loadbalancer-service-unit-state, or opt-in
        -- /service_unit_state), or mid-migration to it, an absent /namespace znode is never evidence of unowned
        p.ownership_in_zk
            AND f.namespace_complete
            AND (
                SELECT count(*)
                FROM stg_loaded_topics lt
                WHERE lt.bundle IS NOT NULL AND NOT EXISTS (
                    SELECT /*+ BROADCAST(bo) */ 1 FROM stg_bundle_owners bo
                    WHERE bo.bundle_range = lt.bundle
                        AND bo.namespace = regexp_extract(lt.topic, '^persistent://(.+)/[^/]+$', 1)
                )
            ) = 0
            AS ownership_known
    FROM params p
    CROSS JOIN scopes_seen f
),
bundled AS (
    SELECT /*+ BROADCAST(b) */ m.path, m.topic, m.base_topic, m.namespace, b.bundle_range, b.lower, b.upper
    FROM stg_managed_ledgers m
    LEFT JOIN int_bundles b
        ON b.namespace = m.namespace
        AND crc32(m.topic) >= b.lower
        AND (crc32(m.topic) < b.upper OR (b.is_last AND crc32(m.topic) <= b.upper))
    -- what Pulsar creates for itself is never an unloaded topic (pulsar_ops/pulsar_names.py): system topics are
    -- loaded, and trimmed, by the brokers that use them; the transaction stores (pending-ack stores, coordinator
    -- logs) are opened by the broker that has their origin topic loaded or owns their coordinator's bundle, never
    -- through a topic load (MLPendingAckStoreProvider, TransactionMetadataStoreService)
    WHERE ${system_topic_reason:m.namespace:m.local_name} IS NULL
),
-- namespaces whose topic-level policies we cannot read: with the default SystemTopicBasedTopicPoliciesService
-- they are messages of <tenant>/<ns>/__change_events (SystemTopicNames.NAMESPACE_EVENTS_LOCAL_NAME), and
-- LegacyAwareTopicPoliciesService routes a namespace that has that topic there even when the metadata-store
-- service is configured. One rule (pulsar_ops/pulsar_names.py is_topic_policies_topic, rendered as
-- ${topic_policies_topic:LOCAL}; the planner and apply ask the same, tests/unit/repair/test_topic_policies_rule.py):
-- a managed-ledger znode of that topic or of a partition (decodable or not: int_undecodable), or its persistent
-- partitioned-topic node (decodable or not), or the namespace's /managed-ledgers scope not read completely (a
-- failed read is never absence). Its topics' retention is unknown at topic level (retention_source
-- 'topic-unknown'); no admin call reads a topic's policies without loading it, so they are never read here
policy_topics_ns AS (
    SELECT namespace FROM stg_managed_ledgers WHERE ${topic_policies_topic:local_name}
    UNION
    SELECT namespace FROM stg_partitioned_topics
    WHERE ${topic_policies_topic:local_name} AND topic LIKE 'persistent://%'
    UNION
    SELECT namespace FROM (
        -- the local name after 'persistent://<namespace>/' (NULL when the name does not decode)
        SELECT namespace, substr(topic, length(namespace) + 15) AS local_name
        FROM int_undecodable
        WHERE kind = 'managed-ledger'
            -- '/admin/partitioned-topics/' is 26 characters: a persistent node, not a non-persistent one
            OR (kind = 'partitioned-topic' AND substr(path, length(namespace) + 27, 12) = '/persistent/')
    ) u
    WHERE ${topic_policies_topic:u.local_name}
    UNION
    SELECT substr(scope, 18) AS namespace FROM stg_scopes
    WHERE store = 'local' AND scope LIKE '/managed-ledgers/%' AND NOT complete
),
owners AS (
    -- the broker an ownership znode names: host:port of its httpUrl. Upstream (pulsar-broker OwnershipCache, its
    -- selfOwnerInfo) writes PulsarService.getSafeWebServiceAddress() there, and the broker's id (its
    -- lookupServiceAddress, /loadbalance/brokers/<id>) is that address's host:port. No httpUrl: owner unknown.
    SELECT
        namespace, lower, upper,
        max(regexp_extract(coalesce(http_url, ''), '^[A-Za-z][A-Za-z0-9+.-]*://([^/]+)', 1)) AS owner_broker,
        'namespace-znode' AS ownership_source
    FROM stg_bundle_owners
    GROUP BY namespace, lower, upper
    UNION ALL
    -- the extensible load manager's metadata-store table view, when it is the truth (int_ownership_source): a
    -- bundle Owned by a registered broker (dstBroker is its id)
    SELECT
        su.namespace, su.lower, su.upper, max(su.owner_broker) AS owner_broker,
        'service-unit-state' AS ownership_source
    FROM int_service_units su
    WHERE su.ownership = 'owned' AND coalesce((SELECT max(sus_known) FROM int_ownership_source), false)
    GROUP BY su.namespace, su.lower, su.upper
),
-- every range rules.topic_load_problem takes as owned or in flight: each /namespace ownership znode and, when
-- /service_unit_state is the truth, each service unit that is not free (in_flight: neither owned nor free: in
-- flight, Init, an unregistered owner, or undecodable). A topic whose hash one of them covers is loaded or unknown
-- (a bundle in motion is in use), whatever the listings say, even when it is not the bundle the policies'
-- boundaries compute (ownership taken before a split the policies show, or the other way round). Only tested with
-- NOT EXISTS, as an anti-join broadcast (a row per bundle): it replaced an existence join with the in-flight units
-- of the computed bundle, so it adds no join, no shuffle, and the optimizer's size estimate (a product of the
-- sides per existence join) stays far below the one-partition plan's bound (tests/spark/test_plan_shape.py)
covering AS (
    SELECT namespace, lower, upper, false AS in_flight FROM stg_bundle_owners
    UNION ALL
    SELECT su.namespace, su.lower, su.upper, su.ownership = 'unknown' AS in_flight
    FROM int_service_units su
    WHERE su.ownership <> 'unowned' AND coalesce((SELECT max(sus_known) FROM int_ownership_source), false)
),
-- undecodable policies, local policies or topic policies: the topic's bundle or retention is unknown, so it is
-- not judged (the undecodable-znode finding names what it holds back). Only tested with NOT EXISTS: no DISTINCT.
unknown_ns AS (
    SELECT namespace FROM int_undecodable WHERE kind IN ('namespace', 'local-policies')
),
unknown_topic AS (
    SELECT topic FROM int_undecodable WHERE kind = 'topic-policies'
),
unloaded AS (
    SELECT /*+ BROADCAST(a, o) */
        t.*,
        o.namespace IS NOT NULL AS owned,
        nullif(o.owner_broker, '') AS owner_broker,
        CASE WHEN o.namespace IS NOT NULL THEN o.ownership_source
            WHEN a.sus_known THEN 'service-unit-state'
            WHEN a.ownership_known THEN 'namespace-znode' END AS ownership_source
    FROM bundled t
    CROSS JOIN admin a
    LEFT JOIN owners o ON o.namespace = t.namespace AND o.lower = t.lower AND o.upper = t.upper
    -- a topic a broker lists is loaded, with or without a bundle: one existence join serves both branches (a NOT
    -- EXISTS of its own would be an anti-join pushed below the one-partition read, with two shuffles)
    WHERE CASE WHEN EXISTS (
            SELECT ${broadcast_if_small:lt:stg_loaded_topics} 1 FROM stg_loaded_topics lt WHERE lt.topic = t.topic
        ) THEN false ELSE (
            -- unowned: no ownership znode (/namespace the truth), or no Owned value in /service_unit_state (the
            -- metadata-store table view the truth: no value, Free or Deleted)
            (o.namespace IS NULL AND (a.ownership_known OR a.sus_known))
            -- owned, and its owner listed its topics (or every broker did)
            OR CASE
                WHEN o.namespace IS NOT NULL AND a.per_broker THEN array_contains(a.answered, o.owner_broker)
                ELSE a.all_answered
            END
        ) END
        -- no other ownership, and no service unit in flight, covers its hash (NamespaceBundle.includes: the last
        -- bundle's upper bound inclusive, pulsar_ops/formats/policies.py in_bundle). For an unowned topic that
        -- is any covering range: the computed bundle's own ownership would have made it owned
        AND NOT EXISTS (
            SELECT /*+ BROADCAST(cv) */ 1 FROM covering cv
            WHERE cv.namespace = t.namespace AND crc32(t.topic) >= cv.lower
                AND (crc32(t.topic) < cv.upper OR (cv.upper = 4294967295 AND crc32(t.topic) = cv.upper))
                AND (cv.in_flight OR cv.lower IS DISTINCT FROM t.lower OR cv.upper IS DISTINCT FROM t.upper)
        )
        AND NOT EXISTS (SELECT /*+ BROADCAST(un) */ 1 FROM unknown_ns un WHERE un.namespace = t.namespace)
        AND NOT EXISTS (SELECT /*+ BROADCAST(ut) */ 1 FROM unknown_topic ut WHERE ut.topic = t.topic)
        AND NOT EXISTS (SELECT /*+ BROADCAST(ub) */ 1 FROM unknown_topic ub WHERE ub.topic = t.base_topic)
),
topic_retention AS (
    SELECT
        topic,
        coalesce(
            max(CASE WHEN scope = 'local' THEN retention_time_minutes END),
            max(CASE WHEN scope = 'global' THEN retention_time_minutes END)
        ) AS rt,
        coalesce(
            max(CASE WHEN scope = 'local' THEN retention_size_mb END),
            max(CASE WHEN scope = 'global' THEN retention_size_mb END)
        ) AS rs
    FROM stg_topic_policies
    WHERE retention_time_minutes IS NOT NULL OR retention_size_mb IS NOT NULL
    GROUP BY topic
),
retention AS (
    SELECT /*+ BROADCAST(p, n, pe) */ ${broadcast_if_small:tp:stg_topic_policies}
        ${broadcast_if_small:tb:stg_topic_policies}
        u.*,
        CASE
            WHEN pe.namespace IS NOT NULL THEN 'topic-unknown'
            WHEN coalesce(tp.topic, tb.topic) IS NOT NULL THEN 'topic'
            WHEN n.retention_time_minutes IS NOT NULL OR n.retention_size_mb IS NOT NULL THEN 'namespace'
            ELSE 'broker'
        END AS retention_source,
        CASE
            WHEN coalesce(tp.topic, tb.topic) IS NOT NULL
                THEN coalesce(CASE WHEN tp.topic IS NOT NULL THEN tp.rt ELSE tb.rt END,
                              p.default_retention_time_minutes)
            ELSE coalesce(n.retention_time_minutes, p.default_retention_time_minutes)
        END AS rt,
        CASE
            WHEN coalesce(tp.topic, tb.topic) IS NOT NULL
                THEN coalesce(CASE WHEN tp.topic IS NOT NULL THEN tp.rs ELSE tb.rs END,
                              p.default_retention_size_mb)
            ELSE coalesce(n.retention_size_mb, p.default_retention_size_mb)
        END AS rs
    FROM unloaded u
    CROSS JOIN params p
    LEFT JOIN stg_namespaces n ON n.namespace = u.namespace
    LEFT JOIN topic_retention tp ON tp.topic = u.topic
    LEFT JOIN topic_retention tb ON tb.topic = u.base_topic AND u.base_topic <> u.topic
    LEFT JOIN policy_topics_ns pe ON pe.namespace = u.namespace
)
SELECT
    path, topic, namespace, bundle_range, owned, owner_broker, ownership_source, retention_source, rt, rs
FROM retention
