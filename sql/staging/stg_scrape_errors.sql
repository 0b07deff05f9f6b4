-- stg_scrape_errors: Every znode that could not be read or decoded, with the scope it makes incomplete.
-- Rename/cast only. Source: the snapshot table `scrape_errors` (registered as src_scrape_errors).
SELECT
    CAST(store AS STRING) AS store,
    CAST(path AS STRING) AS path,
    CAST(scope AS STRING) AS scope,
    CAST(code AS STRING) AS code,
    CAST(reason AS STRING) AS reason
FROM src_scrape_errors
