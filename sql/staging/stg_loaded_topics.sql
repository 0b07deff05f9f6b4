-- stg_loaded_topics: Topics loaded on a broker (admin broker-stats/topics); empty when the admin API was not scraped.
-- Rename/cast only. Source: the snapshot table `loaded_topics` (registered as src_loaded_topics).
SELECT
    CAST(broker AS STRING) AS broker,
    CAST(topic AS STRING) AS topic,
    CAST(bundle AS STRING) AS bundle
FROM src_loaded_topics
