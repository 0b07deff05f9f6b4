-- int_blocking: one row, the sorted array of scopes that block planning (empty when the snapshot is complete).
SELECT array_sort(collect_set(scope)) AS incomplete_scopes
FROM int_incomplete_scopes
