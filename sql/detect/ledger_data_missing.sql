-- ledger-data-missing: a closed ledger with entries whose ensembles and striping put entries on a scanned bookie,
-- while that bookie has no bytes of it in any entry log and no row in its local ledger index: under-replication
-- or lost data (docs/detections.md "ledger-data-missing"). Critical. One finding per (ledger, bookie); `path` is
-- the bookie id.
-- Striping (RoundRobinDistributionSchedule): in a segment of ensemble size E and write quorum Q, entry i is stored
-- on the ensemble positions (i + k) mod E, k = 0..Q-1, so position p holds i when pmod(p - i, E) < Q; a segment
-- runs from its first entry id to the next segment's first id - 1 (the last: to last_entry_id), and a segment
-- shorter than E entries leaves some positions empty.
-- Only from a bookie whose scan is complete (no log skipped) and whose local index was read: an incomplete scan
-- or an unread index is never evidence of absence. Not for a ledger created less than one flushInterval before
-- the scan started (its entries may still be in the bookie's write cache, DbLedgerStorage's checkpoint writes
-- them), nor for one a ledger list says was closed less than one flushInterval before the scan started, nor for an
-- offloaded ledger whose BookKeeper copy was deleted (offloadContext.bookkeeperDeleted).
-- The ledger's age is its metadata ctime, else (v1/v2 metadata, v3 written with storeCtime off) its znode's ctime:
-- `ctime_ms` of the snapshot is that fallback, as BookKeeper's own LedgerMetadata.getCtime() is (bookkeeper-server
-- LedgerMetadataSerDe.parseVersion3Config/parseVersion2Config: the metadata store's ctime when the metadata has
-- none), and `evidence.ctime_source` says which one judged it. A znode never predates the ledger it describes, so
-- the fallback can only withhold a claim, never make one early. A ctime <= 0 (unknown) makes no claim.
-- Not from a scan that started before the scrape finished (scan_params.snapshot_finished_at_ms): between the two a
-- ledger open at scan time may have been written and closed, and re-replication may have copied a fragment onto
-- the bookie and named it in the ensemble (bookkeeper-server LedgerFragmentReplicator.updateEnsembleInfo:
-- replaceEnsembleEntry after the copy); the metadata the scrape read then places entries on the bookie that the
-- earlier scan could not have seen. The order to use is scrape, then scan (audit/bookie_scans.py before_scrape).
WITH closed AS (
    -- (ledger, scanned bookie of its ensembles) with no bytes and no index row of it on that bookie, with the
    -- ledger's metadata: ledger_gaps (sql/storage/4_ledger_gaps.sql, written once before the storage detections: it
    -- read BookKeeper's 2-3 M ledgers at 600,000 topics for the gaps alone, a row per BookKeeper row of the ledger)
    SELECT /*+ BROADCAST(sp) */
        a.ledger_id,
        a.ledger_path,
        a.ml_name,
        a.length,
        a.last_entry_id,
        a.ensemble_size,
        a.write_quorum,
        a.ack_quorum,
        a.ctime_ms,
        a.metadata_ctime_ms IS NULL AS ctime_from_znode,
        a.ensembles_json,
        a.bookie_id,
        a.started_at_ms AS scan_started_at_ms,
        sp.flush_interval_ms
    FROM ledger_gaps a
    CROSS JOIN scan_params sp
    WHERE a.ctime_ms > 0 AND a.ctime_ms <= a.started_at_ms - sp.flush_interval_ms
        AND a.started_at_ms >= sp.snapshot_finished_at_ms
),
segments AS (
    SELECT
        c.*,
        array_sort(transform(
            map_entries(from_json(c.ensembles_json, 'MAP<STRING, ARRAY<STRING>>')),
            e -> named_struct('first', CAST(e.key AS BIGINT), 'members', e.value)
        )) AS sorted
    FROM closed c
),
placed AS (
    SELECT
        s.ledger_id, s.ledger_path, s.ml_name, s.length, s.last_entry_id, s.ensemble_size, s.write_quorum,
        s.ack_quorum, s.ctime_ms, s.ctime_from_znode, s.bookie_id, s.scan_started_at_ms, s.flush_interval_ms,
        s.seg.first AS first_entry,
        s.seg.last AS last_entry,
        -- the positions of this bookie in the segment's ensemble (0-based)
        filter(sequence(0, size(s.seg.members) - 1), p -> s.seg.members[p] = s.bookie_id) AS positions
    FROM (
        SELECT
            g.*,
            explode(transform(
                g.sorted,
                (x, k) -> named_struct(
                    'first', x.first,
                    'last', CASE WHEN k + 1 < size(g.sorted) THEN g.sorted[k + 1].first - 1 ELSE g.last_entry_id END,
                    'members', x.members
                )
            )) AS seg
        FROM segments g
    ) s
),
holding AS (
    SELECT
        p.*,
        CASE
            WHEN p.last_entry < p.first_entry OR size(p.positions) = 0 THEN false
            WHEN p.last_entry - p.first_entry + 1 >= p.ensemble_size THEN true
            ELSE exists(
                sequence(p.first_entry, p.last_entry),
                i -> exists(p.positions, q -> pmod(q - i, p.ensemble_size) < p.write_quorum)
            )
        END AS holds
    FROM placed p
),
expected AS (
    SELECT
        ledger_id, bookie_id,
        min(ledger_path) AS ledger_path, min(ml_name) AS ml_name, min(length) AS length,
        min(last_entry_id) AS last_entry_id, min(ensemble_size) AS ensemble_size,
        min(write_quorum) AS write_quorum, min(ack_quorum) AS ack_quorum, min(ctime_ms) AS ctime_ms,
        bool_or(ctime_from_znode) AS ctime_from_znode,
        min(scan_started_at_ms) AS scan_started_at_ms,
        min(flush_interval_ms) AS flush_interval_ms,
        array_sort(collect_list(named_struct(
            'first_entry_id', first_entry, 'last_entry_id', last_entry, 'positions', positions
        ))) AS segments
    FROM holding
    WHERE holds
    GROUP BY ledger_id, bookie_id
),
listed AS (
    -- per ledger of the gaps, what the ledger lists say of it in one pass: the topic naming it and whether one of
    -- them says it was offloaded with its BookKeeper copy deleted (a semi-join with the gaps' ids, written before:
    -- a semi-join with the missing pairs planned the whole chain above a second time)
    SELECT
        ledger_id, min(topic) AS topic, min(namespace) AS namespace,
        coalesce(bool_or(offloaded AND bookkeeper_deleted), false) AS bookkeeper_deleted,
        max(timestamp_ms) AS closed_at_ms
    FROM stg_ledger_list
    WHERE ledger_id IN (SELECT ${broadcast_if_small:g:ledger_gaps} g.ledger_id FROM ledger_gaps g)
    GROUP BY ledger_id
),
missing AS (
    -- listed: a row per gap's ledger at most, broadcast when ledger_gaps counted few rows (adaptive execution
    -- broadcasts only after both sides of a join were shuffled)
    SELECT ${broadcast_if_small:o:ledger_gaps} x.*, o.topic AS listed_topic, o.namespace AS listed_namespace
    FROM expected x
    LEFT JOIN listed o ON o.ledger_id = x.ledger_id
    WHERE NOT coalesce(o.bookkeeper_deleted, false)
        -- closed less than flushInterval before the scan started (its ledger list's timestamp: Pulsar's
        -- ManagedLedgerImpl stamps LedgerInfo.timestamp with clock.millis() when it closes or recovers a ledger): its
        -- last entries, and for a bookie that got its first entries last, its local index row too
        -- (bookkeeper-server LedgerMetadataIndex.set queues it until flush), may still be in the write cache
        AND coalesce(o.closed_at_ms, 0) <= x.scan_started_at_ms - x.flush_interval_ms
),
ml AS (
    -- the topic of the gaps' managed ledgers alone (their names from ledger_gaps, which read BookKeeper's metadata
    -- for the gaps' ids): the gaps broadcast when few, so the 615,104 managed ledgers of 600,000 topics are read, not
    -- shuffled
    SELECT m.ml_name, min(m.topic) AS topic, min(m.namespace) AS namespace
    FROM stg_managed_ledgers m
    WHERE EXISTS (
        SELECT ${broadcast_if_small:g:ledger_gaps} 1 FROM ledger_gaps g WHERE g.ml_name = m.ml_name
    )
    GROUP BY m.ml_name
)
-- ml: a managed ledger per gap's ledger at most, broadcast when ledger_gaps counted few rows
SELECT ${broadcast_if_small:ml:ledger_gaps}
    'ledger-data-missing' AS detection,
    'critical' AS severity,
    m.ledger_id AS ledger_id,
    coalesce(m.listed_topic, ml.topic) AS topic,
    CAST(NULL AS STRING) AS subscription,
    m.bookie_id AS path,
    coalesce(m.listed_namespace, ml.namespace) AS namespace,
    false AS plannable,
    m.length AS bytes,
    concat(
        'closed ledger ', CAST(m.ledger_id AS STRING), ' (entries 0..', CAST(m.last_entry_id AS STRING),
        ') stripes entries onto bookie ', m.bookie_id,
        ', which has no bytes of it and no local index row: under-replicated or lost'
    ) AS reason,
    to_json(named_struct(
        'bookie', m.bookie_id,
        'ledger_path', m.ledger_path,
        'ml_name', m.ml_name,
        'last_entry_id', m.last_entry_id,
        'ensemble_size', m.ensemble_size,
        'write_quorum', m.write_quorum,
        'ack_quorum', m.ack_quorum,
        'segments', m.segments,
        'ctime_ms', m.ctime_ms,
        'ctime_source', CASE WHEN m.ctime_from_znode THEN 'znode' ELSE 'metadata' END,
        'scan_started_at_ms', m.scan_started_at_ms
    )) AS evidence
FROM missing m
LEFT JOIN ml ON ml.ml_name = m.ml_name
