-- int_watermark: one row, max(R). NULL when nothing is referenced (then no orphan is plannable).
SELECT max(ledger_id) AS watermark
FROM int_references
