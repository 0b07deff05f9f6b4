-- int_unmatched_ledgers: the ledger ids on one side only of BookKeeper's metadata and the references R, one row
-- each (a dangling id once per live reference to it).
-- side = 'bookkeeper': a BookKeeper ledger no reference names (orphan-ledger's candidates);
-- side = 'reference': a live reference (id >= 0, not an offloaded ledger BookKeeper has deleted:
-- rules.may_dangle, rendered, the drop rule's own test) to an id with
-- no BookKeeper metadata (dangling-ledger's candidates; a ledger whose znode does not decode is not in
-- stg_bk_ledgers, and dangling-ledger excludes it).
-- Ids and a side only: the two detections join their wide rows to these few ids (broadcast when measured small:
-- `${broadcast_if_small:...}`) instead of each shuffling 2 M wide rows for an anti-join of its own (at 600,000
-- topics the detections' shuffles 484 -> 273 MB, their task CPU 27-30 s -> 24 s).
SELECT
    coalesce(b.ledger_id, r.ledger_id) AS ledger_id,
    CASE WHEN r.ledger_id IS NULL THEN 'bookkeeper' ELSE 'reference' END AS side
FROM (SELECT ledger_id FROM stg_bk_ledgers) b
FULL OUTER JOIN int_references r ON r.ledger_id = b.ledger_id
WHERE r.ledger_id IS NULL OR (b.ledger_id IS NULL AND ${may_dangle:r})
