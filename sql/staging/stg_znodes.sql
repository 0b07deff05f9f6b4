-- stg_znodes: Every znode read, with its full Stat: the generic inventory.
-- Rename/cast only. Source: the snapshot table `znodes` (registered as src_znodes).
SELECT
    CAST(store AS STRING) AS store,
    CAST(path AS STRING) AS path,
    CAST(parent AS STRING) AS parent,
    CAST(name AS STRING) AS name,
    CAST(depth AS INT) AS depth,
    CAST(version AS INT) AS version,
    CAST(cversion AS INT) AS cversion,
    CAST(aversion AS INT) AS aversion,
    CAST(czxid AS BIGINT) AS czxid,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(pzxid AS BIGINT) AS pzxid,
    CAST(ctime_ms AS BIGINT) AS ctime_ms,
    CAST(mtime_ms AS BIGINT) AS mtime_ms,
    CAST(data_length AS INT) AS data_length,
    CAST(num_children AS INT) AS num_children,
    CAST(ephemeral_owner AS BIGINT) AS ephemeral_owner,
    CAST(data_sha256 AS STRING) AS data_sha256,
    CAST(kind AS STRING) AS kind,
    CAST(decode_error AS STRING) AS decode_error
FROM src_znodes
