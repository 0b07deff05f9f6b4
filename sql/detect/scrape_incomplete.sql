-- scrape-incomplete: one finding per scope the scraper could not read completely (docs/detections.md).
-- reason = the scope's own error, else its first scrape error (by znode path).
WITH errs AS (
    SELECT scope, count(*) AS errors, min_by(concat(path, ': ', reason), path) AS first_error
    FROM stg_scrape_errors
    GROUP BY scope
)
SELECT
    'scrape-incomplete' AS detection,
    'warning' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    CAST(NULL AS STRING) AS topic,
    CAST(NULL AS STRING) AS subscription,
    s.scope AS path,
    nullif(regexp_extract(s.scope, '^/(managed-ledgers|schemas)/(.+)$', 2), '') AS namespace,
    false AS plannable,
    CAST(0 AS BIGINT) AS bytes,
    coalesce(s.error, e.first_error, s.error_code, 'scope incomplete') AS reason,
    to_json(named_struct(
        'store', s.store,
        'error_code', s.error_code,
        'errors', coalesce(e.errors, CAST(0 AS BIGINT)),
        'znodes', s.znodes
    )) AS evidence
FROM stg_scopes s
LEFT JOIN errs e ON e.scope = s.scope
WHERE NOT s.complete
