-- stg_bookies: Bookies from /ledgers/available and, when scraped, their HTTP info.
-- Rename/cast only. Source: the snapshot table `bookies` (registered as src_bookies).
SELECT
    CAST(bookie_id AS STRING) AS bookie_id,
    CAST(readonly AS BOOLEAN) AS readonly,
    CAST(free_bytes AS BIGINT) AS free_bytes,
    CAST(total_bytes AS BIGINT) AS total_bytes
FROM src_bookies
