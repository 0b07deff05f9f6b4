-- int_bundles: one row per namespace bundle, from consecutive pairs of Policies.bundles.boundaries.
-- lower/upper are the unsigned 32-bit hash bounds as bigint; the last bundle's upper bound is inclusive.
WITH pairs AS (
    SELECT
        namespace,
        i AS pos,
        element_at(bundle_boundaries, i) AS lower_hex,
        element_at(bundle_boundaries, i + 1) AS upper_hex,
        i = size(bundle_boundaries) - 1 AS is_last
    FROM (
        SELECT namespace, bundle_boundaries, explode(sequence(1, size(bundle_boundaries) - 1)) AS i
        FROM stg_namespaces
        WHERE size(bundle_boundaries) >= 2
    ) x
)
SELECT
    namespace,
    pos,
    concat(lower_hex, '_', upper_hex) AS bundle_range,
    CAST(conv(substr(lower_hex, 3), 16, 10) AS BIGINT) AS lower,
    CAST(conv(substr(upper_hex, 3), 16, 10) AS BIGINT) AS upper,
    is_last
FROM pairs
