-- stg_scan_bookies: one row per --bookie-scan, from its validated manifest.json (audit/bookie_scans.py).
-- `complete` false: a log was skipped for an error, or a directory of the bookie's configuration was left out
-- (scan-bookie --bookie-config; ScanInfo.covers_bookie); `index_status` other than 'read': the local index is unknown.
-- Source: src_scan_bookies (a literal relation registered from Python; empty without scans).
SELECT
    CAST(bookie_id AS STRING) AS bookie_id,
    CAST(scan_dir AS STRING) AS scan_dir,
    CAST(complete AS BOOLEAN) AS complete,
    CAST(index_status AS STRING) AS index_status,
    CAST(started_at_ms AS BIGINT) AS started_at_ms,
    CAST(finished_at_ms AS BIGINT) AS finished_at_ms
FROM src_scan_bookies
