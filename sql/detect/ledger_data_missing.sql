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
-- them), nor for an offloaded ledger whose BookKeeper copy was deleted (offloadContext.bookkeeperDeleted).
-- The ledger's age is its metadata ctime, else (v1/v2 metadata, v3 written with storeCtime off) its znode's ctime:
-- `ctime_ms` of the snapshot is that fallback, and `evidence.ctime_source` says which one judged it. A znode never
-- predates the ledger it describes, so the fallback can only withhold a claim, never make one early.
WITH scanned AS (
    -- each bookie judged gets a number n: bit (n % 62) of word (n DIV 62) in the masks below
    SELECT bookie_id, started_at_ms, row_number() OVER (ORDER BY bookie_id) - 1 AS n
    FROM stg_scan_bookies WHERE complete AND index_status = 'read'
),
members AS (
    -- ids and bookies only: the wide metadata is read back for the few (ledger, bookie) pairs left below
    SELECT b.ledger_id, explode(array_distinct(b.bookies)) AS member
    FROM stg_bk_ledgers b
    WHERE b.state = 'CLOSED' AND b.last_entry_id >= 0
),
held AS (
    -- what each bookie holds of a ledger: bytes (storage_ledgers: a row per (bookie, ledger) of the (ledger, log)
    -- pairs, written once before the storage detections by sql/storage/1_storage_ledgers.sql, narrower than the
    -- pairs) or a row in its local index
    SELECT ledger_id, bookie_id FROM storage_ledgers
    UNION ALL
    SELECT ledger_id, bookie_id FROM stg_scan_local_index
),
bits AS (
    -- a ledger's judged members and the judged bookies holding it, as bits (scanned is a few rows: broadcast)
    SELECT /*+ BROADCAST(s) */
        m.ledger_id, s.n DIV 62 AS word, CAST(pow(2, s.n % 62) AS BIGINT) AS expected, CAST(0 AS BIGINT) AS held
    FROM members m
    JOIN scanned s ON s.bookie_id = m.member
    UNION ALL
    SELECT /*+ BROADCAST(s) */
        h.ledger_id, s.n DIV 62 AS word, CAST(0 AS BIGINT) AS expected, CAST(pow(2, s.n % 62) AS BIGINT) AS held
    FROM held h
    JOIN scanned s ON s.bookie_id = h.bookie_id
),
per_ledger AS (
    -- per ledger, the members holding nothing of it: one aggregate by ledger id over 64-bit masks. An anti-join
    -- of the (ledger, bookie) members with the held pairs shuffled and sorted both (5.7 M + 18.2 M rows keyed by a
    -- bookie id string at 600,000 topics); an aggregate's map side merges a ledger's rows of one file first
    -- (storage_ledgers is written grouped by ledger)
    SELECT ledger_id, word, bit_or(expected) & ~bit_or(held) AS missing
    FROM bits
    GROUP BY ledger_id, word
),
absent_here AS (
    -- (ledger, scanned bookie of its ensembles) with no bytes and no index row of it on that bookie
    SELECT /*+ BROADCAST(s) */ p.ledger_id, s.bookie_id, s.started_at_ms
    FROM per_ledger p
    JOIN scanned s ON s.n DIV 62 = p.word AND (p.missing & CAST(pow(2, s.n % 62) AS BIGINT)) <> 0
    WHERE p.missing <> 0
),
closed AS (
    SELECT /*+ BROADCAST(sp) */
        b.ledger_id,
        b.path AS ledger_path,
        b.ml_name,
        b.length,
        b.last_entry_id,
        b.ensemble_size,
        b.write_quorum,
        b.ack_quorum,
        b.ctime_ms,
        b.metadata_ctime_ms IS NULL AS ctime_from_znode,
        b.ensembles_json,
        a.bookie_id,
        a.started_at_ms AS scan_started_at_ms,
        sp.flush_interval_ms
    FROM absent_here a
    JOIN stg_bk_ledgers b ON b.ledger_id = a.ledger_id
    CROSS JOIN scan_params sp
    WHERE b.ctime_ms <= a.started_at_ms - sp.flush_interval_ms
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
        s.ack_quorum, s.ctime_ms, s.ctime_from_znode, s.bookie_id, s.scan_started_at_ms,
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
        array_sort(collect_list(named_struct(
            'first_entry_id', first_entry, 'last_entry_id', last_entry, 'positions', positions
        ))) AS segments
    FROM holding
    WHERE holds
    GROUP BY ledger_id, bookie_id
),
listed AS (
    -- per ledger, what the ledger lists say of it in one pass: the topic naming it and whether one of them says
    -- it was offloaded with its BookKeeper copy deleted. A semi-join of the ledger lists with the missing pairs
    -- planned the whole chain above (the members' anti-join, BookKeeper's metadata) a second time
    SELECT
        ledger_id, min(topic) AS topic, min(namespace) AS namespace,
        coalesce(bool_or(offloaded AND bookkeeper_deleted), false) AS bookkeeper_deleted
    FROM stg_ledger_list
    GROUP BY ledger_id
),
missing AS (
    SELECT x.*, o.topic AS listed_topic, o.namespace AS listed_namespace
    FROM expected x
    LEFT JOIN listed o ON o.ledger_id = x.ledger_id
    WHERE NOT coalesce(o.bookkeeper_deleted, false)
),
ml AS (
    SELECT ml_name, min(topic) AS topic, min(namespace) AS namespace FROM stg_managed_ledgers GROUP BY ml_name
)
SELECT
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
