-- stg_bundle_owners: Ephemeral bundle ownership under /namespace/<namespace>/<range>.
-- Rename/cast only. Source: the snapshot table `bundle_owners` (registered as src_bundle_owners).
SELECT
    CAST(path AS STRING) AS path,
    CAST(namespace AS STRING) AS namespace,
    CAST(bundle_range AS STRING) AS bundle_range,
    CAST(lower AS BIGINT) AS lower,
    CAST(upper AS BIGINT) AS upper,
    CAST(ephemeral_owner AS BIGINT) AS ephemeral_owner,
    CAST(native_url AS STRING) AS native_url,
    CAST(http_url AS STRING) AS http_url,
    CAST(disabled AS BOOLEAN) AS disabled,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length
FROM src_bundle_owners
