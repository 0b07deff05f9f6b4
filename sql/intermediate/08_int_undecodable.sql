-- int_undecodable: every znode that was read but whose value does not decode (docs/detections.md,
-- "Scopes and uncertainty"). It EXISTS, with unknown content: it is never called missing, and only what
-- depends on its content is blocked. Columns name what it can affect:
--   ledger_id  (a ledger znode)             -> that ledger exists; not plannable (owner and age unknown)
--   ml_name    (a managed-ledger info, or a cursor: its managed ledger) -> ledgers naming that managed ledger
--   topic      (same, as the topic name; a partitioned-topic znode; a schema locator) -> that topic
--   schema_id  (a schema locator)           -> that schema's ledgers
--   tenant / namespace (policies znodes)    -> that tenant / namespace exists
--   namespace (policies, local policies)    -> its bundles or retention are unknown: no expired-retention call
--   topic      (a topic-policies znode)     -> that topic's retention is unknown
WITH located AS (
    SELECT
        z.*,
        -- the znode that names the topic: a managed ledger (a cursor's parent), partitioned topic or schema
        CASE
            WHEN z.kind = 'managed-ledger' THEN z.path
            WHEN z.kind = 'cursor' THEN z.parent
            WHEN z.kind IN ('partitioned-topic', 'schema') THEN z.path
        END AS topic_path
    FROM stg_znodes z
    WHERE z.decode_error IS NOT NULL
),
named AS (
    SELECT
        l.*,
        -- <root>/<namespace>[/persistent|/non-persistent]/<encoded local name> (a non-persistent partitioned topic
        -- names its schema's persistent:// topic)
        regexp_extract(
            l.topic_path,
            '^/(managed-ledgers|admin/partitioned-topics|schemas)/(.+?)(/persistent|/non-persistent)?/[^/]+$', 2
        ) AS topic_namespace,
        try_url_decode(regexp_extract(l.topic_path, '/([^/]+)$', 1)) AS topic_local
    FROM located l
)
SELECT
    n.store,
    n.path,
    n.kind,
    n.decode_error AS code,
    coalesce(e.reason, n.decode_error) AS reason,
    CASE WHEN n.kind = 'bk-ledger' THEN CAST(regexp_replace(
        regexp_extract(n.path, '(/[0-9]{2,3}(/[0-9]{4})+/L[0-9]{4}|/L[0-9]{10,19})$', 1), '[/L]', ''
    ) AS BIGINT) END AS ledger_id,
    CASE WHEN n.kind IN ('managed-ledger', 'cursor') THEN substr(n.topic_path, 18) END AS ml_name,
    CASE
        WHEN n.topic_path IS NOT NULL THEN concat('persistent://', n.topic_namespace, '/', n.topic_local)
        WHEN n.kind = 'topic-policies' THEN concat(
            regexp_extract(n.path, '^/admin/topic-policies/[^/]+/(.+)/([^/]+)/([^/]+)$', 2), '://',
            regexp_extract(n.path, '^/admin/topic-policies/[^/]+/(.+)/([^/]+)/([^/]+)$', 1), '/',
            try_url_decode(regexp_extract(n.path, '/([^/]+)$', 1))
        )
    END AS topic,
    CASE WHEN n.kind = 'schema' THEN substr(n.path, 10) END AS schema_id,
    CASE WHEN n.kind = 'tenant' THEN substr(n.path, 17) END AS tenant,
    CASE
        WHEN n.kind = 'namespace' THEN substr(n.path, 17)
        WHEN n.kind = 'local-policies' THEN substr(n.path, 23)
        WHEN n.kind = 'topic-policies' THEN regexp_extract(n.path, '^/admin/topic-policies/[^/]+/(.+)/[^/]+/[^/]+$', 1)
        WHEN n.topic_path IS NOT NULL THEN n.topic_namespace
    END AS namespace
FROM named n
LEFT JOIN (SELECT store, path, min(reason) AS reason FROM stg_scrape_errors GROUP BY store, path) e
    ON e.store = n.store AND e.path = n.path
