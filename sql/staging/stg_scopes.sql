-- stg_scopes: Every subtree the scraper walked and whether it was read completely. Incomplete scopes block planning.
-- Rename/cast only. Source: the snapshot table `scopes` (registered as src_scopes).
SELECT
    CAST(store AS STRING) AS store,
    CAST(scope AS STRING) AS scope,
    CAST(complete AS BOOLEAN) AS complete,
    CAST(znodes AS BIGINT) AS znodes,
    CAST(error_code AS STRING) AS error_code,
    CAST(error AS STRING) AS error
FROM src_scopes
