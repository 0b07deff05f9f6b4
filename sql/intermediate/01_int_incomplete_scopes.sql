-- int_incomplete_scopes: every scope that blocks planning, with its first error.
-- A scope recorded incomplete, or one of the global scopes the scraper did not record at all
-- ("an error is never evidence of absence": a scope nobody read is not known complete).
SELECT s.scope AS scope, coalesce(s.error, s.error_code, 'incomplete') AS error
FROM stg_scopes s
WHERE NOT s.complete
UNION ALL
SELECT g.scope AS scope, 'scope not scraped' AS error
FROM (
    VALUES ('/ledgers'), ('/managed-ledgers'), ('/schemas'), ('/admin/policies'), ('/admin/local-policies'),
        ('/admin/partitioned-topics'), ('/namespace'), ('/loadbalance/bundle-data')
) AS g (scope)
WHERE NOT EXISTS (SELECT 1 FROM stg_scopes s2 WHERE s2.scope = g.scope)
