-- dangling-ledger: a reference in R whose ledger id is absent from bk_ledgers (docs/detections.md).
-- Not dangling: offloaded ledger-list rows with bookkeeper_deleted = true, and negative ids (sentinels).
-- critical; only a warning when /ledgers itself is incomplete (absence cannot be confirmed).
WITH refs AS (
    SELECT ledger_id, ref, topic, subscription, path, namespace, max(size) AS size
    FROM int_references
    WHERE ledger_id >= 0 AND NOT bookkeeper_deleted
    GROUP BY ledger_id, ref, topic, subscription, path, namespace
),
missing AS (
    SELECT /*+ BROADCAST(blk) */
        r.*, array_contains(blk.incomplete_scopes, '/ledgers') AS listing_incomplete, blk.incomplete_scopes
    FROM refs r
    CROSS JOIN int_blocking blk
    WHERE NOT EXISTS (SELECT 1 FROM stg_bk_ledgers b WHERE b.ledger_id = r.ledger_id)
        -- a ledger znode that exists but does not decode is not missing
        AND NOT EXISTS (SELECT 1 FROM int_undecodable u WHERE u.ledger_id = r.ledger_id)
)
SELECT
    'dangling-ledger' AS detection,
    CASE WHEN m.listing_incomplete THEN 'warning' ELSE 'critical' END AS severity,
    m.ledger_id AS ledger_id,
    m.topic AS topic,
    m.subscription AS subscription,
    m.path AS path,
    m.namespace AS namespace,
    false AS plannable,
    coalesce(m.size, CAST(0 AS BIGINT)) AS bytes,
    CASE
        WHEN m.listing_incomplete THEN 'ledger listing incomplete: cannot confirm absence'
        ELSE concat('referenced ', m.ref, ' ledger has no BookKeeper metadata')
    END AS reason,
    to_json(named_struct(
        'ref', m.ref,
        'size', m.size,
        'blocked_scopes', CASE WHEN m.listing_incomplete THEN array('/ledgers') ELSE array() END
    )) AS evidence
FROM missing m
