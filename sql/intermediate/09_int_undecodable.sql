-- int_undecodable: every znode that was read but whose value does not decode (docs/detections.md,
-- "Scopes and uncertainty"). It EXISTS, with unknown content: it is never called missing, and only what
-- depends on its content is blocked. Columns name what it can affect:
--   ledger_id  (a ledger znode)             -> that ledger exists; not plannable (owner and age unknown)
--   ml_name    (a managed-ledger info, or a cursor: its managed ledger) -> ledgers naming that managed ledger
--   topic      (same, as the topic name; and a partitioned-topic znode) -> that topic's ledgers and leaks
--   schema_id  (a schema locator)           -> that schema's ledgers
--   tenant / namespace (policies znodes)    -> that tenant / namespace exists
SELECT
    z.store,
    z.path,
    z.kind,
    z.decode_error AS code,
    coalesce(e.reason, z.decode_error) AS reason,
    CASE WHEN z.kind = 'bk-ledger' THEN CAST(regexp_replace(
        regexp_extract(z.path, '(/[0-9]{2,3}(/[0-9]{4})+/L[0-9]{4}|/L[0-9]{10,19})$', 1), '[/L]', ''
    ) AS BIGINT) END AS ledger_id,
    CASE
        WHEN z.kind = 'managed-ledger' THEN substr(z.path, 18)
        WHEN z.kind = 'cursor' THEN substr(z.parent, 18)
    END AS ml_name,
    CASE
        WHEN z.kind = 'managed-ledger' THEN concat(
            'persistent://', regexp_extract(z.path, '^/managed-ledgers/(.+)/persistent/[^/]+$', 1), '/',
            try_url_decode(regexp_extract(z.path, '/persistent/([^/]+)$', 1))
        )
        WHEN z.kind = 'cursor' THEN concat(
            'persistent://', regexp_extract(z.parent, '^/managed-ledgers/(.+)/persistent/[^/]+$', 1), '/',
            try_url_decode(regexp_extract(z.parent, '/persistent/([^/]+)$', 1))
        )
        WHEN z.kind = 'partitioned-topic' THEN concat(
            'persistent://', regexp_extract(z.path, '^/admin/partitioned-topics/(.+)/persistent/[^/]+$', 1), '/',
            try_url_decode(regexp_extract(z.path, '/persistent/([^/]+)$', 1))
        )
        WHEN z.kind = 'schema' THEN concat(
            'persistent://', regexp_extract(z.path, '^/schemas/(.+)/[^/]+$', 1), '/',
            try_url_decode(regexp_extract(z.path, '/([^/]+)$', 1))
        )
    END AS topic,
    CASE WHEN z.kind = 'schema' THEN substr(z.path, 10) END AS schema_id,
    CASE WHEN z.kind = 'tenant' THEN substr(z.path, 17) END AS tenant,
    CASE
        WHEN z.kind = 'namespace' THEN substr(z.path, 17)
        WHEN z.kind = 'managed-ledger' THEN regexp_extract(z.path, '^/managed-ledgers/(.+)/persistent/[^/]+$', 1)
        WHEN z.kind = 'partitioned-topic'
            THEN regexp_extract(z.path, '^/admin/partitioned-topics/(.+)/persistent/[^/]+$', 1)
        WHEN z.kind = 'cursor' THEN regexp_extract(z.parent, '^/managed-ledgers/(.+)/persistent/[^/]+$', 1)
        WHEN z.kind = 'schema' THEN regexp_extract(z.path, '^/schemas/(.+)/[^/]+$', 1)
    END AS namespace
FROM stg_znodes z
LEFT JOIN (SELECT store, path, min(reason) AS reason FROM stg_scrape_errors GROUP BY store, path) e
    ON e.store = z.store AND e.path = z.path
WHERE z.decode_error IS NOT NULL
