-- int_bundles: one row per namespace bundle, from consecutive pairs of the boundaries the broker builds the
-- namespace's bundles from (NamespaceBundleFactory.loadBundles, pulsar-broker org/apache/pulsar/common/naming):
-- the local policies' bundles when /admin/local-policies/<ns> exists (a split writes those first), else
-- Policies.bundles, else one full-range bundle. A namespace whose policies or local policies do not decode has
-- unknown bundles: detections that need them exclude it (they read int_undecodable).
-- lower/upper are the unsigned 32-bit hash bounds as bigint; the last bundle's upper bound is inclusive.
WITH effective AS (
    SELECT
        n.namespace,
        CASE
            -- null only in snapshots scraped before local policies were decoded: the policies' bundles then
            WHEN lp.namespace IS NOT NULL AND lp.bundle_boundaries IS NOT NULL THEN lp.bundle_boundaries
            WHEN size(n.bundle_boundaries) >= 2 THEN n.bundle_boundaries
            ELSE array('0x00000000', '0xffffffff')
        END AS bundle_boundaries
    FROM stg_namespaces n
    LEFT JOIN stg_local_policies lp ON lp.namespace = n.namespace
),
pairs AS (
    SELECT
        namespace,
        i AS pos,
        element_at(bundle_boundaries, i) AS lower_hex,
        element_at(bundle_boundaries, i + 1) AS upper_hex,
        i = size(bundle_boundaries) - 1 AS is_last
    FROM (
        SELECT namespace, bundle_boundaries, explode(sequence(1, size(bundle_boundaries) - 1)) AS i
        FROM effective
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
