-- stg_namespaces: /admin/policies/<namespace> (Policies JSON), V2 and V1.
-- Rename/cast only. Source: the snapshot table `namespaces` (registered as src_namespaces).
SELECT
    CAST(path AS STRING) AS path,
    CAST(tenant AS STRING) AS tenant,
    CAST(namespace AS STRING) AS namespace,
    CAST(is_v1 AS BOOLEAN) AS is_v1,
    CAST(cluster AS STRING) AS cluster,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(retention_time_minutes AS BIGINT) AS retention_time_minutes,
    CAST(retention_size_mb AS BIGINT) AS retention_size_mb,
    CAST(message_ttl_seconds AS BIGINT) AS message_ttl_seconds,
    CAST(delayed_delivery_active AS BOOLEAN) AS delayed_delivery_active,
    CAST(delayed_delivery_tick_ms AS BIGINT) AS delayed_delivery_tick_ms,
    CAST(delayed_delivery_max_delay_ms AS BIGINT) AS delayed_delivery_max_delay_ms,
    CAST(subscription_expiration_minutes AS BIGINT) AS subscription_expiration_minutes,
    bundle_boundaries,
    CAST(num_bundles AS INT) AS num_bundles,
    CAST(deleted AS BOOLEAN) AS deleted,
    CAST(json AS STRING) AS json
FROM src_namespaces
