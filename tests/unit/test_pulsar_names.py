"""The registry of Pulsar's own names: the upstream names it must know, and one definition in Python and SQL (the
SQL rendered from it run in DuckDB gives the same reasons for generated names)."""

from __future__ import annotations

import functools

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops import pulsar_names as pn
from pulsar_ops.audit.sql_files import expand_macros


@pytest.mark.parametrize(
    ("namespace", "local", "system"),
    [
        ("pulsar/system", "transaction_coordinator_assign-partition-3", True),
        ("pulsar/system", "__transaction_log_0", True),
        ("pulsar/system", "loadbalancer-service-unit-state", True),
        ("pulsar/us-west/10.0.0.1:8080", "healthcheck", True),  # heartbeat V1
        ("pulsar/broker-1.example:8080", "healthcheck", True),  # heartbeat V2
        ("sla-monitor/us-west/10.0.0.1:8080", "t", True),
        ("t/ns", "__change_events", True),
        ("t/ns", "__change_events-partition-2", True),
        ("t/ns", "__transaction_buffer_snapshot", True),
        ("t/ns", "__transaction_buffer_snapshot_segments", True),
        ("t/ns", "orders-partition-1-sub-a__transaction_pending_ack", True),
        ("public/functions", "assignments", True),
        ("t/ns", "__anything", True),
        ("t/ns", "orders", False),
        ("t/ns", "change_events", False),
        ("pulsar/default", "x", False),
        ("public/other", "assignments", False),
        ("pulsar/cluster/ns", "x", False),  # V1 namespace of the pulsar tenant without a broker address
    ],
)
def test_system_topics(namespace: str, local: str, system: bool) -> None:
    assert (pn.system_topic_reason(namespace, local) is not None) is system


def test_the_coordinator_assign_topic_is_what_cluster_setup_writes() -> None:
    assert pn.CLUSTER_SETUP_PARTITIONED_TOPICS == ("persistent://pulsar/system/transaction_coordinator_assign",)
    assert pn.system_topic_reason_of(pn.TRANSACTION_COORDINATOR_ASSIGN) == pn.R_SYSTEM_NAMESPACE
    assert pn.coordinator_assign_partition(5) == "persistent://pulsar/system/transaction_coordinator_assign-partition-5"
    assert pn.system_topic_reason_of("persistent://t/ns/orders") is None
    assert pn.system_topic_reason_of("persistent://t/c/ns/__change_events") == pn.R_EVENTS  # V1


@pytest.mark.parametrize(
    ("name", "system"),
    [
        ("pulsar.dedup", True),
        ("pulsar.repl.us-east", True),
        ("pulsar.repl.us%2Deast", True),
        ("__compaction", True),
        ("__pending_ack_state", True),
        ("transaction.subscription", True),
        ("my-sub", False),
        ("pulsar.replicated", False),
        ("bad%zz", False),
    ],
)
def test_system_cursors(name: str, system: bool) -> None:
    assert pn.is_system_cursor(name) is system
    assert (pn.system_cursor_reason(name) is not None) is system


def test_transaction_stores() -> None:
    assert pn.transaction_store_kind("t/ns", "orders-s__transaction_pending_ack") == "pending-ack"
    assert pn.transaction_store_kind("pulsar/system", "__transaction_log_12") == "coordinator-log"
    assert pn.transaction_store_kind("pulsar/system", "__transaction_log_012") is None
    assert pn.transaction_store_kind("t/ns", "__transaction_log_1") is None
    assert pn.coordinator_id("__transaction_log_7") == 7
    assert pn.pending_ack_origin_candidates("a-b-c-sub__transaction_pending_ack") == ["a-b-c", "a-b", "a"]
    assert pn.pending_ack_origin_candidates("orders") == []


def test_load_manager_class() -> None:
    assert pn.is_elm_class("org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl")
    assert not pn.is_elm_class("org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl")
    assert not pn.is_elm_class(None)


_ALPHA = "abcz09-_.:/%"
_PIECES = st.sampled_from(
    [
        "pulsar",
        "system",
        "sla-monitor",
        "public",
        "functions",
        "__change_events",
        "__transaction_buffer_snapshot",
        "__transaction_log_",
        "__transaction_pending_ack",
        "-partition-",
        "assignments",
        "10.0.0.1:8080",
        "__",
        "/",
        ":",
        "0",
        "12",
        "-",
    ]
)
_NAME = st.lists(st.one_of(_PIECES, st.text(alphabet=_ALPHA, max_size=4)), max_size=5).map("".join)
_CURSOR = st.lists(
    st.one_of(st.sampled_from(["pulsar.repl.", "pulsar.dedup", "__compaction", "transaction.subscription"]), _NAME),
    max_size=2,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(_NAME, _NAME, _CURSOR), min_size=1, max_size=25))
def test_python_and_sql_agree(rows: list[tuple[str, str, str]]) -> None:
    _agree(rows)


CURATED = [
    ("t/ns", "__change_events-partition-12", "pulsar.repl.x"),
    ("t/ns", "__change_events-partition-", "pulsar.repl"),
    ("t/ns", "__transaction_buffer_snapshot_indexes-partition-3", "__compaction"),
    ("pulsar/system", "__transaction_log_012", "transaction.subscription"),
    ("pulsar/system", "__transaction_log_10", "x"),
    ("pulsar/c1/10.0.0.1:8080", "healthcheck", "pulsar.dedup"),
    ("pulsar/b.example:80", "x", "pulsar.dedup2"),
    ("pulsar/b.example:80a", "x", ""),
    ("sla-monitor/c/h:1", "x", "__pending_ack_state"),
    ("sla-monitor/h:1", "x", "y"),
    ("public/functions", "metadata-partition-0", "s"),
    ("public/functions", "metadata2", "s"),
    ("t/ns", "a-s__transaction_pending_ack", "s"),
    ("t/ns", "_x", "s"),
    ("pulsar", "sla-monitor", "s"),
]


def test_python_and_sql_agree_on_the_edges() -> None:
    _agree(CURATED)


@functools.cache
def _shared_connection() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()


def _agree(rows: list[tuple[str, str, str]]) -> None:
    con = _shared_connection()  # a fresh table per call; a connection per example cost ~35 ms of its ~40
    con.execute("CREATE OR REPLACE TABLE n (i INTEGER, ns VARCHAR, local_name VARCHAR, sub VARCHAR)")
    con.executemany("INSERT INTO n VALUES (?, ?, ?, ?)", [(i, *r) for i, r in enumerate(rows)])
    sql = expand_macros(
        "SELECT i, ${system_namespace_reason:n.ns}, ${system_topic_reason:n.ns:n.local_name},"
        " ${system_cursor_reason:n.sub}, ${transaction_store_kind:n.ns:n.local_name},"
        " ${system_tenant_reason:n.local_name}, ${heartbeat_namespace:n.ns} FROM n"
    )
    got = {r[0]: r[1:] for r in con.execute(sql).fetchall()}
    for i, (ns, local, sub) in enumerate(rows):
        plain_cursor = pn._cursor_reason_plain(sub)  # the SQL sees decoded cursor names
        want = (
            pn.system_namespace_reason(ns),
            pn.system_topic_reason(ns, local),
            plain_cursor,
            pn.transaction_store_kind(ns, local),
            pn.system_tenant_reason(local),
            pn.is_heartbeat_namespace(ns),
        )
        assert got[i] == want, (ns, local, sub)


def test_macros_need_their_arguments() -> None:
    from pulsar_ops.errors import AuditError

    with pytest.raises(AuditError):
        expand_macros("${system_topic_reason:a}")


@pytest.mark.parametrize(
    ("path", "system"),
    [
        ("/admin/partitioned-topics/pulsar/system/persistent/transaction_coordinator_assign", True),
        ("/managed-ledgers/pulsar/system/persistent/__transaction_log_0", True),
        ("/managed-ledgers/pulsar", True),  # the system tenant
        ("/managed-ledgers/t/ns/persistent/__change_events/reader-1", True),  # a cursor of a system topic
        ("/managed-ledgers/t/ns/persistent/orders-s__transaction_pending_ack", True),
        ("/schemas/t/ns/__change_events", True),
        ("/loadbalance/bundle-data/pulsar/10.0.0.1:8080/0x00000000_0xffffffff", True),
        ("/admin/topic-policies/local/t/ns/persistent/__change_events", True),
        ("/loadbalance/extension/leader", True),
        ("/service_unit_state/t/ns/0x00000000_0xffffffff", True),
        ("/managed-ledgers/t/c/ns/persistent/__change_events", True),  # V1
        ("/managed-ledgers/t/ns/persistent/orders", False),
        ("/managed-ledgers/t/ns/persistent/orders/sub", False),
        ("/admin/partitioned-topics/t/ns/persistent/orders", False),
        ("/managed-ledgers/t", False),
        ("/schemas/t/ns/bad%zz", False),
        ("/ledgers/00/0000/L0001", False),
    ],
)
def test_system_paths(path: str, system: bool) -> None:
    assert (pn.system_path_reason(path) is not None) is system


def test_load_manager_kind_from_the_registrations() -> None:
    elm = b'{"webServiceUrl": "http://b:8080", "loadManagerClassName": "%s"}' % (
        b"org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
    )
    modular = b'{"webServiceUrl": "http://b:8080", "cpu": {}}'
    assert pn.registration_class(modular) == ""
    assert pn.registration_class(b"not json") is None
    assert pn.registration_class(None) is None
    e, m = pn.registration_class(elm), pn.registration_class(modular)
    assert pn.load_manager_kind({"a": m, "b": m}, False) == "modular"
    assert pn.load_manager_kind({"a": e}, False) == "extensible"
    assert pn.load_manager_kind({"a": e, "b": m}, False) == "mixed"
    assert pn.load_manager_kind({"a": m}, True) == "mixed"  # an ELM leader beside modular registrations
    assert pn.load_manager_kind({}, False) == "none"
    # a 3.x modular broker's LocalBrokerData names its class (RedirectManager compares it): still modular
    named = pn.registration_class(
        b'{"loadManagerClassName":"org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"}'
    )
    assert pn.load_manager_kind({"a": named, "b": m}, False) == "modular"
    assert pn.load_manager_kind({"a": named, "b": e}, False) == "mixed"
    assert pn.load_manager_kind({"a": "com.example.OtherLoadManager"}, False) == "unknown"
    assert pn.load_manager_kind({}, True) == "extensible"
    assert pn.load_manager_kind({"a": None}, False) == "unknown"
    assert pn.load_manager_kind({"a": "com.example.Other"}, False) == "unknown"
    assert pn.load_manager_kind({"a": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"}, False) == (
        "modular"
    )
    assert pn.ownership_in_zk({}) and pn.ownership_in_zk({"kind": "modular"}) and pn.ownership_in_zk({"kind": "none"})
    assert not pn.ownership_in_zk({"kind": "extensible"}) and not pn.ownership_in_zk({"kind": "unknown"})
