-- ttl-expires-delayed: a message delayed longer than the TTL can expire before delivery (docs/detections.md).
-- Expiry acks by publish time (PersistentMessageExpiryMonitor); publish rejects delays beyond the effective
-- maximum (AbstractTopic.isExceedMaximumDeliveryDelay). At risk: TTL > 0, delayed delivery active, and the
-- maximum delay unbounded (0) or longer than the TTL.
-- Namespace level: TTL = message_ttl_seconds when > 0 else the broker default; delayed delivery null ->
-- broker default; maximum delay = delayed_delivery_policies.maxDeliveryDelayInMillis when the namespace has
-- that object (0 when it lacks the key), else the broker's delayedDeliveryMaxDelayInMillis.
-- Topic policies: one finding per topic whose own values change the namespace's verdict
-- (evidence.effect = creates-risk | removes-risk; removes-risk findings are info: the topic is exempt).
WITH ns AS (
    SELECT /*+ BROADCAST(p) */
        n.namespace,
        n.path,
        CASE WHEN n.message_ttl_seconds > 0 THEN n.message_ttl_seconds ELSE p.ttl_duration_default_seconds END
            AS ttl_seconds,
        CASE WHEN n.message_ttl_seconds > 0 THEN 'namespace' ELSE 'broker' END AS ttl_source,
        coalesce(n.delayed_delivery_active, p.delayed_delivery_enabled) AS delayed_active,
        coalesce(n.delayed_delivery_tick_ms, p.delayed_delivery_tick_ms) AS tick_ms,
        coalesce(n.delayed_delivery_max_delay_ms, p.delayed_delivery_max_delay_ms) AS max_delay_ms,
        CASE WHEN n.delayed_delivery_max_delay_ms IS NOT NULL THEN 'namespace' ELSE 'broker' END AS max_delay_source
    FROM stg_namespaces n
    CROSS JOIN params p
),
ns_risk AS (
    SELECT
        ns.*,
        ns.ttl_seconds > 0 AND ns.delayed_active AND (ns.max_delay_ms <= 0 OR ns.max_delay_ms > ns.ttl_seconds * 1000)
            AS at_risk
    FROM ns
),
tp AS (
    SELECT
        t.namespace,
        t.topic,
        min(t.path) AS path,
        coalesce(
            max(CASE WHEN t.scope = 'local' THEN t.message_ttl_seconds END),
            max(CASE WHEN t.scope = 'global' THEN t.message_ttl_seconds END)
        ) AS ttl,
        coalesce(
            max(CASE WHEN t.scope = 'local' THEN CAST(t.delayed_delivery_active AS INT) END),
            max(CASE WHEN t.scope = 'global' THEN CAST(t.delayed_delivery_active AS INT) END)
        ) AS delayed,
        coalesce(
            max(CASE WHEN t.scope = 'local' THEN t.delayed_delivery_tick_ms END),
            max(CASE WHEN t.scope = 'global' THEN t.delayed_delivery_tick_ms END)
        ) AS tick,
        coalesce(
            max(CASE WHEN t.scope = 'local' THEN t.delayed_delivery_max_delay_ms END),
            max(CASE WHEN t.scope = 'global' THEN t.delayed_delivery_max_delay_ms END)
        ) AS max_delay
    FROM stg_topic_policies t
    WHERE t.message_ttl_seconds IS NOT NULL OR t.delayed_delivery_active IS NOT NULL
        OR t.delayed_delivery_max_delay_ms IS NOT NULL
    GROUP BY t.namespace, t.topic
),
topic_risk AS (
    SELECT /*+ BROADCAST(p, n) */
        tp.namespace,
        tp.topic,
        tp.path,
        CASE WHEN tp.ttl IS NOT NULL THEN tp.ttl ELSE coalesce(n.ttl_seconds, p.ttl_duration_default_seconds) END
            AS ttl_seconds,
        CASE WHEN tp.ttl IS NOT NULL THEN 'topic' ELSE coalesce(n.ttl_source, 'broker') END AS ttl_source,
        CASE
            WHEN tp.delayed IS NOT NULL THEN tp.delayed = 1
            ELSE coalesce(n.delayed_active, p.delayed_delivery_enabled)
        END AS delayed_active,
        coalesce(tp.tick, n.tick_ms, p.delayed_delivery_tick_ms) AS tick_ms,
        coalesce(tp.max_delay, n.max_delay_ms, p.delayed_delivery_max_delay_ms) AS max_delay_ms,
        CASE WHEN tp.max_delay IS NOT NULL THEN 'topic' ELSE coalesce(n.max_delay_source, 'broker') END
            AS max_delay_source,
        coalesce(n.at_risk, false) AS ns_at_risk
    FROM tp
    CROSS JOIN params p
    LEFT JOIN ns_risk n ON n.namespace = tp.namespace
),
topic_findings AS (
    SELECT
        t.*,
        t.ttl_seconds > 0 AND t.delayed_active AND (t.max_delay_ms <= 0 OR t.max_delay_ms > t.ttl_seconds * 1000)
            AS at_risk
    FROM topic_risk t
)
SELECT
    'ttl-expires-delayed' AS detection,
    'warning' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    CAST(NULL AS STRING) AS topic,
    CAST(NULL AS STRING) AS subscription,
    n.path AS path,
    n.namespace AS namespace,
    false AS plannable,
    CAST(0 AS BIGINT) AS bytes,
    concat(
        'message TTL ', CAST(n.ttl_seconds AS STRING), ' s (', n.ttl_source,
        ') can expire delayed messages before delivery: maximum delay ',
        CASE WHEN n.max_delay_ms <= 0 THEN 'unbounded' ELSE concat(CAST(n.max_delay_ms AS STRING), ' ms') END,
        ' (', n.max_delay_source, ')'
    ) AS reason,
    to_json(named_struct(
        'ttl_seconds', n.ttl_seconds,
        'ttl_source', n.ttl_source,
        'max_delay_ms', n.max_delay_ms,
        'max_delay_source', n.max_delay_source,
        'delayed_delivery_active', n.delayed_active,
        'tick_ms', n.tick_ms,
        'effect', 'namespace'
    )) AS evidence
FROM ns_risk n
WHERE n.at_risk
UNION ALL
SELECT
    'ttl-expires-delayed' AS detection,
    CASE WHEN t.at_risk THEN 'warning' ELSE 'info' END AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    t.topic AS topic,
    CAST(NULL AS STRING) AS subscription,
    t.path AS path,
    t.namespace AS namespace,
    false AS plannable,
    CAST(0 AS BIGINT) AS bytes,
    CASE
        WHEN t.at_risk THEN concat(
            'topic policy: message TTL ', CAST(t.ttl_seconds AS STRING), ' s (', t.ttl_source,
            ') can expire delayed messages before delivery: maximum delay ',
            CASE WHEN t.max_delay_ms <= 0 THEN 'unbounded' ELSE concat(CAST(t.max_delay_ms AS STRING), ' ms') END,
            ' (', t.max_delay_source, ')'
        )
        ELSE 'topic policy removes the namespace TTL / delayed-delivery risk for this topic'
    END AS reason,
    to_json(named_struct(
        'ttl_seconds', t.ttl_seconds,
        'ttl_source', t.ttl_source,
        'max_delay_ms', t.max_delay_ms,
        'max_delay_source', t.max_delay_source,
        'delayed_delivery_active', t.delayed_active,
        'tick_ms', t.tick_ms,
        'effect', CASE WHEN t.at_risk THEN 'creates-risk' ELSE 'removes-risk' END
    )) AS evidence
FROM topic_findings t
WHERE t.at_risk <> t.ns_at_risk
