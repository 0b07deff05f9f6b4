"""``/service_unit_state`` values as the extensible load manager's metadata-store table view binds them
(ServiceUnitStateData, ServiceUnitState), and what each says about its bundle (pulsar_names.service_unit_ownership,
the Python rule and its SQL rendering agreeing)."""

from __future__ import annotations

import json

import duckdb
import pytest

from pulsar_ops import pulsar_names as pn
from pulsar_ops.audit.sql_files import expand_macros
from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.service_unit_state import STATES, parse_service_unit_state
from pulsar_ops.testing import model_upstream as up

P = "/service_unit_state/t/ns/0x00000000_0xffffffff"


def test_the_seeders_values_decode() -> None:
    owned = parse_service_unit_state(json.dumps(up.service_unit_state("b1:8080", 5, 3)).encode(), P)
    assert (owned.state, owned.dst_broker, owned.source_broker, owned.version_id) == ("Owned", "b1:8080", None, 3)
    free = parse_service_unit_state(json.dumps(up.service_unit_state_free("b1:8080", 5)).encode(), P)
    assert (free.state, free.dst_broker, free.source_broker) == ("Free", None, "b1:8080")


def test_an_ordinal_state_binds_as_jackson_binds_it() -> None:
    assert parse_service_unit_state(b'{"state": 2, "dstBroker": "b"}', P).state == "Owned"


@pytest.mark.parametrize(
    "doc",
    [
        b'{"dstBroker": "b"}',  # the record refuses a null state
        b'{"state": "Gone", "dstBroker": "b"}',
        b'{"state": 7, "dstBroker": "b"}',
        b'{"state": "Owned", "dstBroker": " ", "sourceBroker": null}',  # "Empty broker"
        b'{"state": "Owned", "dstBroker": {"a": 1}}',
        b'{"state": "Owned", "dstBroker": "b", "versionId": "x"}',
        b"[1]",
        b"",
    ],
)
def test_what_the_record_refuses_does_not_decode(doc: bytes) -> None:
    with pytest.raises(DecodeError):
        parse_service_unit_state(doc, P)


def test_which_state_means_what() -> None:
    reg = {"b1:8080"}
    assert pn.service_unit_ownership("Owned", "b1:8080", registered=reg) == "owned"
    assert pn.service_unit_ownership("Owned", "gone:8080", registered=reg) == "unknown"  # not registered
    for s in ("Assigning", "Releasing", "Splitting", "Init"):  # in flight: in use, never free
        assert pn.service_unit_ownership(s, "b1:8080", registered=reg) == "unknown"
    for s in ("Free", "Deleted"):
        assert pn.service_unit_ownership(s, None, registered=reg) == "unowned"


def test_python_and_sql_agree() -> None:
    rows = [(s, r) for s in STATES for r in (True, False)]
    con = duckdb.connect()
    con.execute("CREATE TABLE v (i INTEGER, state VARCHAR, registered BOOLEAN)")
    con.executemany("INSERT INTO v VALUES (?, ?, ?)", [(i, *r) for i, r in enumerate(rows)])
    sql = expand_macros("SELECT i, ${service_unit_ownership:v.state:v.registered} FROM v")
    got = dict(con.execute(sql).fetchall())
    for i, (state, registered) in enumerate(rows):
        want = pn.service_unit_ownership(state, "b", registered={"b"} if registered else set())
        assert got[i] == want, (state, registered)


def test_the_manifest_rules_the_table_view_out() -> None:
    elm = {"kind": "extensible", "registrations": {"b": "x"}, "service_unit_state": True, "error": None}
    assert pn.service_unit_table_view(elm)[0] is True
    assert pn.service_unit_table_view({**elm, "service_unit_state": False})[0] is False
    assert pn.service_unit_table_view({**elm, "kind": "mixed"})[0] is False
    assert pn.service_unit_table_view({**elm, "error": "NoAuth"})[0] is False
    assert pn.service_unit_table_view({})[0] is False
