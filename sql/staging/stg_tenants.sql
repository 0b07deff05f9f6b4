-- stg_tenants: /admin/policies/<tenant> (TenantInfo JSON).
-- Rename/cast only. Source: the snapshot table `tenants` (registered as src_tenants).
SELECT
    CAST(path AS STRING) AS path,
    CAST(tenant AS STRING) AS tenant,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(json AS STRING) AS json
FROM src_tenants
