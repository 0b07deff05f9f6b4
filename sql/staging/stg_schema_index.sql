-- stg_schema_index: SchemaLocator index entries under /schemas: one row per schema version.
-- Rename/cast only. Source: the snapshot table `schema_index` (registered as src_schema_index).
SELECT
    CAST(path AS STRING) AS path,
    CAST(schema_id AS STRING) AS schema_id,
    CAST(namespace AS STRING) AS namespace,
    CAST(topic AS STRING) AS topic,
    CAST(version AS INT) AS version,
    CAST(mzxid AS BIGINT) AS mzxid,
    CAST(latest_version AS BIGINT) AS latest_version,
    CAST(schema_version AS BIGINT) AS schema_version,
    CAST(ledger_id AS BIGINT) AS ledger_id,
    CAST(entry_id AS BIGINT) AS entry_id
FROM src_schema_index
