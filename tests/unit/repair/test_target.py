"""The pure target checks: the recorded address (chroot, ensemble) and the identity's ledger layout."""

from __future__ import annotations

from typing import Any

import pytest

from pulsar_ops.identity import ClusterIdentity, identity_mismatch, layout_from_bytes
from pulsar_ops.repair.target import (
    CODE_CHROOT,
    CODE_ENSEMBLE,
    CODE_UNVERIFIABLE,
    StoreAddress,
    address_problem,
)

SCRAPED: dict[str, Any] = {
    "ledgers_root": "/ledgers",
    "stores": {
        "local": {"hosts": "zk1:2181,zk2:2181,zk3:2181", "chroot": "/pulsar"},
        "config": {"hosts": "gzk1:2184,gzk2:2184", "chroot": "/global"},
    },
}


def _actual(local: str, lchroot: str, config: str, cchroot: str) -> dict[str, StoreAddress]:
    return {"local": StoreAddress.of(local, lchroot), "config": StoreAddress.of(config, cchroot)}


def test_the_scraped_address_passes_also_as_a_subset_or_reordered() -> None:
    assert address_problem(SCRAPED, _actual("zk1:2181,zk2:2181,zk3:2181", "/pulsar", "gzk1:2184", "/global")) is None
    assert address_problem(SCRAPED, _actual("ZK3:2181,zk1:2181", "/pulsar", "gzk2:2184,gzk1:2184", "/global")) is None


@pytest.mark.parametrize(
    ("actual", "code", "words"),
    [
        (_actual("zk1:2181", "/pulsar-dr", "gzk1:2184", "/global"), CODE_CHROOT, "local metadata store's chroot"),
        (_actual("zk1:2181", "", "gzk1:2184", "/global"), CODE_CHROOT, "is (none)"),
        (_actual("zk1:2181", "/pulsar", "gzk1:2184", "/pulsar"), CODE_CHROOT, "config metadata store's chroot"),
        (_actual("dr1:2181,dr2:2181", "/pulsar", "gzk1:2184", "/global"), CODE_ENSEMBLE, "share none"),
        (_actual("zk1:2181", "/pulsar", "zk1:2181", "/global"), CODE_ENSEMBLE, "config metadata store's servers"),
        (_actual("zk1:2182", "/pulsar", "gzk1:2184", "/global"), CODE_ENSEMBLE, "zk1:2182"),
    ],
)
def test_another_chroot_or_ensemble_is_a_problem(actual: dict[str, StoreAddress], code: str, words: str) -> None:
    problem = address_problem(SCRAPED, actual)
    assert problem is not None and problem.code == code and words in problem.message, problem


@pytest.mark.parametrize(
    "target",
    [
        {"ledgers_root": "/ledgers"},
        {"stores": {}},
        {"stores": {"local": {"hosts": "zk1:2181", "chroot": "/pulsar"}}},
        {"stores": {"local": {"hosts": "", "chroot": ""}, "config": {"hosts": "", "chroot": ""}}},
        {"stores": {"local": {"hosts": "zk1:2181"}, "config": {"hosts": "zk1:2181", "chroot": ""}}},
    ],
)
def test_a_plan_without_an_address_cannot_be_verified(target: dict[str, Any]) -> None:
    problem = address_problem(target, _actual("zk1:2181", "/pulsar", "zk1:2181", "/pulsar"))
    assert problem is not None and problem.code == CODE_UNVERIFIABLE


HIER = "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"


def test_identity_compares_the_ledger_layout_when_recorded() -> None:
    live = ClusterIdentity("iid", ("c",), HIER)
    assert identity_mismatch(ClusterIdentity("iid", ("c",), HIER), live) is None
    assert identity_mismatch(ClusterIdentity("iid", ("c",)), live) is None  # not recorded: not compared
    why = identity_mismatch(ClusterIdentity("iid", ("c",), ""), live)
    assert why is not None and "LAYOUT" in why and "absent" in why
    other = ClusterIdentity("iid", ("c",), HIER.replace("Hierarchical", "LongHierarchical"))
    assert identity_mismatch(other, live) is not None


def test_identity_json_round_trip_keeps_old_documents_readable() -> None:
    assert ClusterIdentity.from_json({"instance_id": "i", "clusters": ["b", "a"]}).ledger_layout is None
    ident = ClusterIdentity.from_json({"instance_id": "i", "clusters": ["a"], "ledger_layout": HIER})
    assert ident.ledger_layout == HIER and ClusterIdentity.from_json(ident.to_json()) == ident
    assert "ledger_layout" not in ClusterIdentity("i", ()).to_json()
    with pytest.raises(ValueError):
        ClusterIdentity.from_json({"instance_id": "i", "clusters": [], "ledger_layout": 2})
    assert layout_from_bytes(None) == "" and layout_from_bytes((HIER + "\n").encode()) == HIER
