-- stg_clusters: /admin/clusters/<cluster> (ClusterData JSON).
-- Rename/cast only. Source: the snapshot table `clusters` (registered as src_clusters).
SELECT
    CAST(path AS STRING) AS path,
    CAST(cluster AS STRING) AS cluster,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(json AS STRING) AS json
FROM src_clusters
