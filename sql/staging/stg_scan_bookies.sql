-- stg_scan_bookies: one row per --bookie-scan, from its validated manifest.json (audit/bookie_scans.py).
-- `bookie_no`: the bookie's rank by bookie_id among the scans (1, 2, ...), numbered once (etl.scan_bookies_sql):
-- the storage SQL aggregates by it and names the bookie back from it.
-- `complete` false: a log was skipped for an error, or a directory of the bookie's configuration was left out
-- (scan-bookie --bookie-config; ScanInfo.covers_bookie); `index_status` other than 'read': the local index is unknown.
-- gc_*: the GC settings that bookie is judged with (its scraped server_config, else the bookkeeper.conf its scan
-- read, else the audit's: model/gc_settings.py, the plan's resolution; all NULL when they do not validate).
-- Source: src_scan_bookies (a literal relation registered from Python; empty without scans).
SELECT
    CAST(bookie_id AS STRING) AS bookie_id,
    CAST(bookie_no AS INT) AS bookie_no,
    CAST(scan_dir AS STRING) AS scan_dir,
    CAST(complete AS BOOLEAN) AS complete,
    CAST(index_status AS STRING) AS index_status,
    CAST(started_at_ms AS BIGINT) AS started_at_ms,
    CAST(finished_at_ms AS BIGINT) AS finished_at_ms,
    CAST(gc_settings_source AS STRING) AS gc_settings_source,
    CAST(gc_wait_time_ms AS BIGINT) AS gc_wait_time_ms,
    CAST(minor_threshold AS DOUBLE) AS minor_threshold,
    CAST(minor_interval_ms AS BIGINT) AS minor_interval_ms,
    CAST(major_threshold AS DOUBLE) AS major_threshold,
    CAST(major_interval_ms AS BIGINT) AS major_interval_ms,
    CAST(disk_usage_warn_threshold AS DOUBLE) AS disk_usage_warn_threshold,
    CAST(disk_usage_threshold AS DOUBLE) AS disk_usage_threshold
FROM src_scan_bookies
