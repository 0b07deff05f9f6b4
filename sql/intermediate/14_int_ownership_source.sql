-- int_ownership_source: one row: whether bundle ownership may be read from /service_unit_state (int_service_units)
-- as the whole truth (sus_known), and why not. Which table view the brokers use is broker configuration
-- (loadManagerServiceUnitStateTableViewClassName), never written to ZooKeeper, so it is inferred, and only when
-- nothing contradicts it:
-- * the manifest: every registration names the extensible load manager and /service_unit_state exists
--   (params.service_unit_table_view: pulsar_ops/pulsar_names.py service_unit_table_view);
-- * /service_unit_state was read completely (a failed listing: an unknown scope);
-- * no managed ledger of persistent://pulsar/system/loadbalancer-service-unit-state, and its namespace listed
--   completely: the system-topic table view (ServiceUnitStateTableViewImpl, upstream's default) creates that topic,
--   and ServiceUnitStateTableViewSyncer opens both views while migrating from one to the other, so a cluster that
--   has it may keep ownership in the topic (or be mid-migration): the znodes are then not the truth;
-- * no broker lists a topic loaded in a bundle /service_unit_state does not say is owned.
WITH scopes AS (
    SELECT
        count_if(scope = '/service_unit_state' AND complete) > 0
            AND count_if(scope = '/service_unit_state' AND NOT complete) = 0 AS sus_read,
        count_if(scope IN ('/managed-ledgers', '/managed-ledgers/pulsar/system') AND NOT complete) = 0
            AS system_ml_read
    FROM stg_scopes
    WHERE store = 'local'
),
evidence AS (
    SELECT /*+ BROADCAST(p) */
        p.service_unit_table_view AS manifest_ok,
        s.sus_read,
        s.system_ml_read,
        (
            SELECT count(*) FROM stg_managed_ledgers m
            WHERE m.path = '/managed-ledgers/pulsar/system/persistent/loadbalancer-service-unit-state'
        ) + (
            SELECT count(*) FROM stg_znodes z
            WHERE z.path = '/managed-ledgers/pulsar/system/persistent/loadbalancer-service-unit-state'
        ) = 0 AS no_system_topic,
        (
            SELECT count(*)
            FROM (
                SELECT bundle, regexp_extract(topic, '^persistent://(.+)/[^/]+$', 1) AS ns
                FROM stg_loaded_topics
                WHERE bundle IS NOT NULL
            ) lt
            -- not the heartbeat / SLA-monitor namespaces, nor pulsar/system: ExtensibleLoadManagerImpl.assign gives
            -- those to a fixed broker (getHeartbeatOrSLAMonitorBrokerId) or the channel owner (internal topics)
            -- without a value in the table
            WHERE ${system_namespace_reason:lt.ns} IS NULL AND NOT EXISTS (
                SELECT 1 FROM int_service_units su
                WHERE su.bundle_range = lt.bundle AND su.ownership = 'owned' AND su.namespace = lt.ns
            )
        ) = 0 AS listings_agree
    FROM params p
    CROSS JOIN scopes s
)
SELECT
    manifest_ok AND sus_read AND system_ml_read AND no_system_topic AND listings_agree AS sus_known,
    CASE
        WHEN NOT manifest_ok THEN 'not the extensible load manager with /service_unit_state'
        WHEN NOT sus_read THEN '/service_unit_state was not read completely'
        WHEN NOT system_ml_read THEN 'pulsar/system managed ledgers were not listed completely'
        WHEN NOT no_system_topic THEN 'the topic of the system-topic table view exists (ownership may live there, or a migration)'
        WHEN NOT listings_agree THEN 'a broker lists a topic loaded in a bundle /service_unit_state does not own'
    END AS why_not
FROM evidence
