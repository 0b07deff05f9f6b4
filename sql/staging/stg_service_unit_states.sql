-- stg_service_unit_states: /service_unit_state/<namespace>/<range>: the extensible load manager's bundle ownership when its metadata-store table view is configured (ServiceUnitStateMetadataStoreTableViewImpl; ServiceUnitStateData JSON). A value that does not decode has no row (znodes.decode_error): that bundle's ownership is unknown.
-- Rename/cast only. Source: the snapshot table `service_unit_states` (registered as src_service_unit_states).
SELECT
    CAST(path AS STRING) AS path,
    CAST(namespace AS STRING) AS namespace,
    CAST(bundle_range AS STRING) AS bundle_range,
    CAST(lower AS BIGINT) AS lower,
    CAST(upper AS BIGINT) AS upper,
    CAST(state AS STRING) AS state,
    CAST(dst_broker AS STRING) AS dst_broker,
    CAST(source_broker AS STRING) AS source_broker,
    CAST(version_id AS BIGINT) AS version_id,
    CAST(timestamp_ms AS BIGINT) AS timestamp_ms,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length
FROM src_service_unit_states
