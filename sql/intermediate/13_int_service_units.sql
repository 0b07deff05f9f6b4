-- int_service_units: one row per /service_unit_state/<namespace>/<range> znode read (the extensible load manager's
-- metadata-store table view, ServiceUnitStateMetadataStoreTableViewImpl; ServiceUnitStateData, ServiceUnitState),
-- with what it says about its bundle by the rule of pulsar_ops/pulsar_names.py (service_unit_ownership): 'owned'
-- (Owned by a registered broker: owner_broker is its id), 'unowned' (Free, Deleted) or 'unknown' (Assigning,
-- Releasing, Splitting: in flight, in use; Init; Owned by a broker that is not registered; a value that does not
-- decode: its content is unknown, for that bundle only). Whether the table is the truth: int_ownership_source.
SELECT
    s.namespace, s.bundle_range, s.lower, s.upper, s.state, s.dst_broker,
    ${service_unit_ownership:s.state:s.registered} AS ownership,
    CASE WHEN ${service_unit_ownership:s.state:s.registered} = 'owned' THEN s.dst_broker END AS owner_broker
FROM (
    SELECT /*+ BROADCAST(p) */ u.*, coalesce(array_contains(p.registered_brokers, u.dst_broker), false) AS registered
    FROM stg_service_unit_states u
    CROSS JOIN params p
) s
UNION ALL
SELECT
    regexp_extract(z.path, '^/service_unit_state/(.+)/[^/]+$', 1) AS namespace,
    regexp_extract(z.path, '/([^/]+)$', 1) AS bundle_range,
    CAST(conv(substr(regexp_extract(z.path, '/([^/]+)$', 1), 3, 8), 16, 10) AS BIGINT) AS lower,
    CAST(conv(substr(regexp_extract(z.path, '/([^/]+)$', 1), 14, 8), 16, 10) AS BIGINT) AS upper,
    CAST(NULL AS STRING) AS state,
    CAST(NULL AS STRING) AS dst_broker,
    'unknown' AS ownership,
    CAST(NULL AS STRING) AS owner_broker
FROM stg_znodes z
WHERE z.kind = 'service-unit-state' AND z.decode_error IS NOT NULL
