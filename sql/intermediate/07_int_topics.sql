-- int_topics: managed ledgers with the system-topic flag of docs/detections.md ("System topics").
SELECT
    m.*,
    (
        left(m.local_name, 2) = '__'
        OR right(m.local_name, 25) = '__transaction_pending_ack'
        OR right(m.local_name, 29) = '__transaction_buffer_snapshot'
        OR m.namespace = 'pulsar/system'
    ) AS is_system_topic
FROM stg_managed_ledgers m
