-- stg_topic_policies: /admin/topic-policies/{global,local}/<namespace>/<domain>/<encodedName> (newest Pulsar only).
-- Rename/cast only. Source: the snapshot table `topic_policies` (registered as src_topic_policies).
SELECT
    CAST(path AS STRING) AS path,
    CAST(scope AS STRING) AS scope,
    CAST(namespace AS STRING) AS namespace,
    CAST(topic AS STRING) AS topic,
    CAST(retention_time_minutes AS BIGINT) AS retention_time_minutes,
    CAST(retention_size_mb AS BIGINT) AS retention_size_mb,
    CAST(message_ttl_seconds AS BIGINT) AS message_ttl_seconds,
    CAST(delayed_delivery_active AS BOOLEAN) AS delayed_delivery_active,
    CAST(delayed_delivery_tick_ms AS BIGINT) AS delayed_delivery_tick_ms,
    CAST(delayed_delivery_max_delay_ms AS BIGINT) AS delayed_delivery_max_delay_ms,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(json AS STRING) AS json
FROM src_topic_policies
