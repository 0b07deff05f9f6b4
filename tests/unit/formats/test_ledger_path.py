from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.ledger_path import (
    classify_child,
    is_special,
    ledger_id_from_path,
    ledger_path,
    ledger_paths,
)


@pytest.mark.parametrize(
    ("ledger_id", "path"),
    [
        (0, "/ledgers/00/0000/L0000"),
        (1, "/ledgers/00/0000/L0001"),
        (123456789, "/ledgers/01/2345/L6789"),
        (2147483646, "/ledgers/21/4748/L3646"),
        (2147483647, "/ledgers/000/0000/0021/4748/L3647"),
        (2147483648, "/ledgers/000/0000/0021/4748/L3648"),
        (2**63 - 1, "/ledgers/922/3372/0368/5477/L5807"),
    ],
)
def test_hierarchical_paths(ledger_id: int, path: str) -> None:
    assert ledger_path(ledger_id) == path
    assert ledger_id_from_path(path) == ledger_id


def test_flat_and_custom_root() -> None:
    assert ledger_path(1, flat=True) == "/ledgers/L0000000001"
    assert ledger_id_from_path("/ledgers/L0000000001") == 1
    assert ledger_path(5, "/bk/ledgers/") == "/bk/ledgers/00/0000/L0005"
    assert ledger_id_from_path("/bk/ledgers/00/0000/L0005", "/bk/ledgers") == 5


def test_every_path_a_ledger_may_have_includes_the_long_layout() -> None:
    """A cluster on LongHierarchicalLedgerManagerFactory (LAYOUT ``2\norg.apache.bookkeeper.meta.
    LongHierarchicalLedgerManagerFactory:1``) keeps ledger 5 at the long path (bookkeeper-server
    LongHierarchicalLedgerManager.getLedgerPath): a ledger checked absent at the other two paths alone would be
    called missing while it exists (drop-missing-ledger's absent precondition, LiveFacts.present)."""
    assert ledger_path(5, long=True) == "/ledgers/000/0000/0000/0000/L0005"
    assert ledger_paths(5) == ["/ledgers/00/0000/L0005", "/ledgers/000/0000/0000/0000/L0005", "/ledgers/L0000000005"]
    big = 3_000_000_000  # the hybrid manager's path for it is the long one already: listed once
    assert ledger_paths(big) == ["/ledgers/000/0000/0030/0000/L0000", "/ledgers/L3000000000"]
    assert all(ledger_id_from_path(p) == 5 for p in ledger_paths(5))


@given(st.integers(min_value=0, max_value=2**63 - 1), st.booleans())
def test_round_trip(ledger_id: int, flat: bool) -> None:
    assert ledger_id_from_path(ledger_path(ledger_id, flat=flat)) == ledger_id


@pytest.mark.parametrize("bad", [-1, 2**63, True])
def test_invalid_ids(bad: int) -> None:
    with pytest.raises(ValueError):
        ledger_path(bad)


@pytest.mark.parametrize(
    "path",
    [
        "/ledgers",
        "/ledgers/00",
        "/ledgers/00/0000",
        "/ledgers/000/0000/0021",
        "/ledgers/available/bookie-1:3181",
        "/ledgers/cookies/bookie-1:3181",
        "/ledgers/LAYOUT",
        "/ledgers/INSTANCEID",
        "/ledgers/underreplication/ledgers/0000/0000/0000/0001/urL0000000001",
        "/ledgers/idgen/ID-0000000001",
        "/ledgers/idgen-long/HOB-0000000001/ID-0000000001",
        "/ledgers/ID-0000000007",
        "/ledgers/something-else",
        "/other/00/0000/L0001",
    ],
)
def test_non_ledger_nodes_give_none(path: str) -> None:
    assert ledger_id_from_path(path) is None


@pytest.mark.parametrize(
    "path",
    [
        "/ledgers/00/0000/Lxyzw",
        "/ledgers/00/0000/L00001",
        "/ledgers/00/0000/foo",
        "/ledgers/00/abcd/L0001",
        "/ledgers/000/0000/0021/4748/X3648",
        "/ledgers/00/0000/L0001/child",
        "/ledgers/L0000000001/child",
        "/ledgers/999/9999/9999/9999/L9999",
    ],
)
def test_malformed_leaves_raise(path: str) -> None:
    with pytest.raises(DecodeError) as info:
        ledger_id_from_path(path)
    assert info.value.path == path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("00", "legacy"),
        ("21", "legacy"),
        ("000", "long"),
        ("L0000000001", "flat-leaf"),
        ("available", "special"),
        ("cookies", "special"),
        ("LAYOUT", "special"),
        ("INSTANCEID", "special"),
        ("underreplication", "special"),
        ("idgen", "special"),
        ("idgen-long", "special"),
        ("ID-0000000001", "special"),
        ("0", "unknown"),
        ("0000", "unknown"),
        ("foo", "unknown"),
        ("٠٠", "unknown"),
    ],
)
def test_classify_child(name: str, kind: str) -> None:
    assert classify_child(name) == kind
    assert is_special(name) == (kind == "special")
