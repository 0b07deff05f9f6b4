-- int_subtrees: per znode prefix (depth 2..6) of the leak-prone trees, the znode count, summed data length
-- and newest mtime of the subtree rooted there (the /ledgers tree is never a leak target).
SELECT
    array_join(slice(split(path, '/'), 1, k + 1), '/') AS prefix,
    count(*) AS znodes,
    sum(CAST(data_length AS BIGINT)) AS bytes,
    max(mtime_ms) AS newest_mtime_ms
FROM (
    SELECT path, data_length, mtime_ms, explode(sequence(2, least(depth, 6))) AS k
    FROM stg_znodes
    WHERE depth >= 2
        AND (
            path LIKE '/managed-ledgers/%' OR path LIKE '/admin/partitioned-topics/%'
            OR path LIKE '/schemas/%' OR path LIKE '/loadbalance/bundle-data/%'
            OR path LIKE '/admin/local-policies/%'
        )
) p
GROUP BY array_join(slice(split(path, '/'), 1, k + 1), '/')
