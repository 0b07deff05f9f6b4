-- stg_local_policies: /admin/local-policies/<namespace> (LocalPolicies JSON).
-- Rename/cast only. Source: the snapshot table `local_policies` (registered as src_local_policies).
SELECT
    CAST(path AS STRING) AS path,
    CAST(namespace AS STRING) AS namespace,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    bundle_boundaries,
    CAST(json AS STRING) AS json
FROM src_local_policies
