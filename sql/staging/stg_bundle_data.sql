-- stg_bundle_data: /loadbalance/bundle-data/<namespace>/<range> (BundleData JSON).
-- Rename/cast only. Source: the snapshot table `bundle_data` (registered as src_bundle_data).
SELECT
    CAST(path AS STRING) AS path,
    CAST(namespace AS STRING) AS namespace,
    CAST(bundle_range AS STRING) AS bundle_range,
    CAST(lower AS BIGINT) AS lower,
    CAST(upper AS BIGINT) AS upper,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length
FROM src_bundle_data
