-- stg_cursor_properties: Mark-delete LongProperties (kind=long) and cursorProperties (kind=string) of every cursor.
-- Rename/cast only. Source: the snapshot table `cursor_properties` (registered as src_cursor_properties).
SELECT
    CAST(cursor_path AS STRING) AS cursor_path,
    CAST(topic AS STRING) AS topic,
    CAST(subscription AS STRING) AS subscription,
    CAST(kind AS STRING) AS kind,
    CAST(name AS STRING) AS name,
    CAST(value AS STRING) AS value,
    CAST(bucket_ledger_id AS BIGINT) AS bucket_ledger_id
FROM src_cursor_properties
