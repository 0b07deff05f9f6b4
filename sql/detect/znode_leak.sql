-- znode-leak: metadata subtrees left behind by deleted tenants, namespaces and topics (docs/detections.md).
-- One finding per subtree root to delete (the roots: int_znode_leaks); evidence.leak = the sub-kind;
-- znodes/bytes of the subtree from int_subtrees. Plannable when the newest mtime in the subtree is older than
-- min_age_ms, the relevant scopes are complete and (managed-ledgers leaks) no managed ledger in it still has a
-- ledger list. A subtree holding an undecodable znode is never planned (what it holds is unknown).
WITH schema_ledgers AS (
    -- only the schema leak roots' locators (a broadcast semi-join with the few roots), not every schema's
    SELECT path, array_sort(collect_set(ledger_id)) AS ledgers FROM stg_schema_index
    WHERE path IN (SELECT /*+ BROADCAST(z) */ z.path FROM int_znode_leaks z WHERE z.leak = 'schema')
    GROUP BY path
),
undecodable_ancestors AS (
    -- every ancestor-or-self prefix of an undecodable znode (an equi-join key for "the subtree holds it")
    SELECT prefix, min(path) AS znode
    FROM (
        SELECT path, array_join(slice(split(path, '/'), 1, k + 1), '/') AS prefix
        FROM (SELECT path, explode(sequence(1, size(split(path, '/')) - 1)) AS k FROM int_undecodable)
    )
    GROUP BY prefix
),
measured AS (
    SELECT /*+ BROADCAST(p, blk, st, ua) */
        l.*,
        coalesce(st.znodes, CAST(1 AS BIGINT)) AS znodes,
        coalesce(st.bytes, CAST(0 AS BIGINT)) AS bytes,
        st.newest_mtime_ms,
        p.now_ms - st.newest_mtime_ms AS idle_ms,
        p.min_age_ms,
        filter(
            blk.incomplete_scopes,
            s -> array_contains(l.required, s)
                OR (l.scope_root IS NOT NULL
                    AND (s = l.scope_root OR left(s, length(l.scope_root) + 1) = concat(l.scope_root, '/')))
        ) AS blocked_scopes,
        sl.ledgers AS schema_ledgers,
        ua.znode AS undecodable_znode
    FROM int_znode_leaks l
    CROSS JOIN params p
    CROSS JOIN int_blocking blk
    LEFT JOIN int_subtrees st ON st.prefix = l.path
    LEFT JOIN schema_ledgers sl ON l.leak = 'schema' AND sl.path = l.path
    LEFT JOIN undecodable_ancestors ua ON ua.prefix = l.path
    -- Pulsar's own tenants, namespaces and topics are never a leak (pulsar_ops/pulsar_names.py; system-metadata)
    WHERE l.system_reason IS NULL
),
decided AS (
    SELECT
        m.*,
        CASE
            WHEN m.undecodable_znode IS NOT NULL
                THEN concat('subtree holds undecodable znode ', m.undecodable_znode, ': what it holds is unknown')
            WHEN m.held_topics > 0
                THEN concat('holds ', CAST(m.held_topics AS STRING), ' topics with ledgers; delete the topics first')
            WHEN m.newest_mtime_ms IS NULL
                THEN 'subtree not in the znode inventory: age unknown'
            WHEN ${leak_too_young:m}
                THEN concat('modified ', CAST(m.idle_ms AS STRING), ' ms ago, younger than min-age ',
                            CAST(m.min_age_ms AS STRING), ' ms')
            WHEN size(m.blocked_scopes) > 0
                THEN concat('incomplete scope(s): ', array_join(m.blocked_scopes, ', '))
        END AS blocker
    FROM measured m
)
SELECT
    'znode-leak' AS detection,
    'warning' AS severity,
    CAST(NULL AS BIGINT) AS ledger_id,
    CAST(NULL AS STRING) AS topic,
    CAST(NULL AS STRING) AS subscription,
    d.path AS path,
    d.namespace AS namespace,
    d.blocker IS NULL AS plannable,
    d.bytes AS bytes,
    coalesce(d.blocker, concat(d.leak, ' leak: owner is gone')) AS reason,
    to_json(named_struct(
        'leak', d.leak,
        'znodes', d.znodes,
        'bytes', d.bytes,
        'newest_mtime_ms', d.newest_mtime_ms,
        'held_topics', d.held_topics,
        'ledgers', d.schema_ledgers,
        'note', CASE WHEN d.leak = 'schema'
            THEN 'a non-persistent topic of the same name shares this schema; check it is gone too' END,
        'blocked_scopes', d.blocked_scopes,
        'undecodable_znode', d.undecodable_znode
    )) AS evidence
FROM decided d
