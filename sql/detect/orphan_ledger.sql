-- orphan-ledger: a bk_ledgers row whose ledger_id is not in R (docs/detections.md "orphan-ledger").
-- kind from the custom metadata; owner/topic/namespace resolved through the snapshot tables (never
-- re-encoded here); when the owner is gone its names are derived from the metadata string itself.
-- Plannable only when kind is Pulsar-owned and known, nothing it depends on is undecodable (its managed
-- ledger's info or cursors, its schema locator: int_undecodable), old enough, below the watermark, scopes
-- complete.
-- Old enough: the age is counted from the ledger znode's ctime (ZooKeeper's clock), or from the metadata's own
-- ctime when that is later; both rendered from pulsar_ops/repair/rules.py (orphan_created_ms, the rule's own
-- definition: ${orphan_created:ROW}, ${orphan_ctime_source:ROW}, ${orphan_too_young:ROW}).
WITH classified AS (
    SELECT
        b.*,
        -- the one ledger-kind rule, rendered from pulsar_ops/formats/ledger_kind.py
        ${ledger_kind:b} AS kind
    FROM stg_bk_ledgers b
    -- the ledgers no reference names, found by int_unmatched_ledgers on ids alone; broadcast when measured small,
    -- so BookKeeper's 2 M wide rows are filtered where they are read instead of shuffled for an anti-join
    WHERE EXISTS (
        SELECT ${broadcast_if_small:u:int_unmatched_ledgers} 1 FROM int_unmatched_ledgers u
        WHERE u.ledger_id = b.ledger_id AND u.side = 'bookkeeper'
    )
),
owned AS (
    SELECT
        c.*,
        CASE
            WHEN c.kind IN ${ml_owned_kinds} THEN c.ml_name
            WHEN c.kind = 'schema' THEN c.schema_id
            WHEN c.kind = 'compacted' THEN c.compacted_topic
        END AS owner
    FROM classified c
),
ml_by_name AS (
    SELECT ml_name, min(topic) AS topic, min(namespace) AS namespace FROM stg_managed_ledgers GROUP BY ml_name
),
ml_by_topic AS (
    SELECT topic, min(namespace) AS namespace FROM stg_managed_ledgers GROUP BY topic
),
schema_by_id AS (
    SELECT schema_id, min(topic) AS topic, min(namespace) AS namespace FROM stg_schema_index GROUP BY schema_id
),
resolved AS (
    SELECT
        o.*,
        CASE
            WHEN o.kind IN ${ml_owned_kinds} THEN ml.ml_name IS NOT NULL
            WHEN o.kind = 'schema' THEN si.schema_id IS NOT NULL
            WHEN o.kind = 'compacted' THEN mt.topic IS NOT NULL
            ELSE false  -- unowned / pulsar-unknown: no owner, so no owner exists
        END AS owner_exists,
        CASE
            WHEN o.kind IN ${ml_owned_kinds} THEN coalesce(
                ml.topic,
                concat(
                    'persistent://',
                    nullif(regexp_extract(o.owner, '^(.+)/persistent/[^/]+$', 1), ''),
                    '/',
                    try_url_decode(nullif(regexp_extract(o.owner, '/persistent/([^/]+)$', 1), ''))
                )
            )
            WHEN o.kind = 'schema' THEN coalesce(
                si.topic,
                concat(
                    'persistent://',
                    nullif(regexp_extract(o.owner, '^(.+)/[^/]+$', 1), ''),
                    '/',
                    try_url_decode(nullif(regexp_extract(o.owner, '/([^/]+)$', 1), ''))
                )
            )
            WHEN o.kind = 'compacted' THEN o.owner
        END AS owner_topic,
        CASE
            WHEN o.kind IN ${ml_owned_kinds} THEN coalesce(
                ml.namespace, nullif(regexp_extract(o.owner, '^(.+)/persistent/[^/]+$', 1), '')
            )
            WHEN o.kind = 'schema' THEN coalesce(
                si.namespace, nullif(regexp_extract(o.owner, '^(.+)/[^/]+$', 1), '')
            )
            WHEN o.kind = 'compacted' THEN coalesce(
                mt.namespace, nullif(regexp_extract(o.owner, '^[a-z-]+://(.+)/[^/]+$', 1), '')
            )
        END AS owner_namespace
    FROM owned o
    LEFT JOIN ml_by_name ml ON o.kind IN ${ml_owned_kinds} AND ml.ml_name = o.owner
    LEFT JOIN schema_by_id si ON o.kind = 'schema' AND si.schema_id = o.owner
    LEFT JOIN ml_by_topic mt ON o.kind = 'compacted' AND mt.topic = o.owner
),
undecodable_ml AS (
    SELECT ml_name, min(path) AS znode FROM int_undecodable WHERE ml_name IS NOT NULL GROUP BY ml_name
),
undecodable_topic AS (
    SELECT topic, min(path) AS znode FROM int_undecodable
    WHERE topic IS NOT NULL AND kind IN ('managed-ledger', 'cursor') GROUP BY topic
),
undecodable_schema AS (
    SELECT schema_id, min(path) AS znode FROM int_undecodable WHERE schema_id IS NOT NULL GROUP BY schema_id
),
judged AS (
    SELECT /*+ BROADCAST(p, w, blk, uml, ut, us) */
        r.*,
        coalesce(uml.znode, ut.znode, us.znode) AS undecodable_dependency,
        p.now_ms - ${orphan_created:r} AS age_ms,
        ${orphan_created:r} AS aged_from_ms,
        ${orphan_ctime_source:r} AS ctime_source,
        p.min_age_ms,
        w.watermark,
        filter(
            array(
                '/ledgers', '/managed-ledgers', '/schemas',
                concat('/managed-ledgers/', r.owner_namespace), concat('/schemas/', r.owner_namespace)
            ),
            s -> array_contains(blk.incomplete_scopes, s)
        ) AS blocked_scopes
    FROM resolved r
    LEFT JOIN undecodable_ml uml ON r.kind IN ${ml_owned_kinds} AND uml.ml_name = r.owner
    LEFT JOIN undecodable_topic ut
        ON r.kind IN ('data', 'cursor', 'bucket', 'compacted') AND ut.topic = r.owner_topic
    LEFT JOIN undecodable_schema us ON r.kind = 'schema' AND us.schema_id = r.owner
    CROSS JOIN params p
    CROSS JOIN int_watermark w
    CROSS JOIN int_blocking blk
),
decided AS (
    SELECT
        j.*,
        CASE
            -- the kinds a plan may delete: rules.PLANNABLE_LEDGER_KINDS
            WHEN j.kind NOT IN ${plannable_ledger_kinds}
                THEN concat('kind ', j.kind, ': not a known Pulsar ledger kind; never planned')
            -- a ledger of Pulsar's own topic (pulsar_ops/pulsar_names.py) is never planned, even when its owner is gone
            WHEN ${system_topic_reason:j.owner_namespace:j.owner_local} IS NOT NULL
                THEN concat('a ledger of Pulsar own topic ', j.owner_topic, ' (',
                            ${system_topic_reason:j.owner_namespace:j.owner_local}, '); never planned')
            WHEN j.undecodable_dependency IS NOT NULL
                THEN concat(
                    'depends on undecodable znode ', j.undecodable_dependency,
                    ' (its references are unknown); not evidence of absence'
                )
            WHEN ${orphan_too_young:j}
                THEN CASE
                    WHEN j.age_ms IS NULL THEN 'the creation time of its znode is unknown: its age cannot be told'
                    ELSE concat(
                        'younger than min-age: age ', CAST(j.age_ms AS STRING), ' ms (', j.ctime_source, ' ctime) < ',
                        CAST(j.min_age_ms AS STRING), ' ms'
                    )
                END
            WHEN j.watermark IS NULL
                THEN 'no referenced ledgers: watermark unknown'
            WHEN j.ledger_id >= j.watermark
                THEN concat(
                    'ledger id ', CAST(j.ledger_id AS STRING), ' at or above the watermark ',
                    CAST(j.watermark AS STRING), ' (may be in flight)'
                )
            WHEN size(j.blocked_scopes) > 0
                THEN concat('incomplete scope(s): ', array_join(j.blocked_scopes, ', '))
        END AS blocker
    FROM (SELECT *, regexp_extract(coalesce(owner_topic, ''), '[^/]+$', 0) AS owner_local FROM judged) j
)
SELECT
    'orphan-ledger' AS detection,
    CASE WHEN d.kind = 'unowned' THEN 'info' ELSE 'warning' END AS severity,
    d.ledger_id AS ledger_id,
    d.owner_topic AS topic,
    CAST(NULL AS STRING) AS subscription,
    d.path AS path,
    d.owner_namespace AS namespace,
    d.blocker IS NULL AS plannable,
    d.length AS bytes,
    coalesce(
        d.blocker,
        concat(
            'unreferenced ', d.kind, ' ledger of ',
            CASE WHEN d.owner_exists THEN 'an existing' ELSE 'a deleted' END, ' owner'
        )
    ) AS reason,
    to_json(named_struct(
        'kind', d.kind,
        'owner', d.owner,
        'owner_exists', d.owner_exists,
        'cursor', d.cursor_name,
        'state', d.state,
        'ctime_ms', d.aged_from_ms,
        'ctime_source', d.ctime_source,
        'age_ms', d.age_ms,
        'bookies', d.bookies,
        'format_version', d.format_version,
        'watermark', d.watermark,
        'blocked_scopes', d.blocked_scopes,
        'undecodable_dependency', d.undecodable_dependency
    )) AS evidence
FROM decided d
