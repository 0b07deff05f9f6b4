-- stg_partitioned_topics: /admin/partitioned-topics/<namespace>/{persistent,non-persistent}/<encodedName> (PartitionedTopicMetadata JSON; `topic` carries the domain).
-- Rename/cast only. Source: the snapshot table `partitioned_topics` (registered as src_partitioned_topics).
SELECT
    CAST(path AS STRING) AS path,
    CAST(tenant AS STRING) AS tenant,
    CAST(namespace AS STRING) AS namespace,
    CAST(encoded_name AS STRING) AS encoded_name,
    CAST(local_name AS STRING) AS local_name,
    CAST(topic AS STRING) AS topic,
    CAST(partitions AS INT) AS partitions,
    CAST(deleted AS BOOLEAN) AS deleted,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(json AS STRING) AS json
FROM src_partitioned_topics
