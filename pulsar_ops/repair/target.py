"""Is the ZooKeeper on the command line the one a plan was scraped from? The address half of the target check
(:mod:`pulsar_ops.identity` is the other): a copy restored from a ZooKeeper snapshot has the same identity, so
each store's chroot must be the scraped one and its ensemble share a ``host:port`` with it; a plan recording no
address is refused. The table: ``docs/repair.md``, "The target is the plan's target". Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STORES = ("local", "config")

CODE_UNVERIFIABLE = "target-unverifiable"
CODE_CHROOT = "target-chroot-mismatch"
CODE_ENSEMBLE = "target-ensemble-mismatch"

HINT_RESCRAPE = (
    "a staging or DR copy restored from a ZooKeeper snapshot has the same INSTANCEID and cluster names; "
    "pass the --zookeeper / --config-zookeeper the snapshot was scraped with (`target.stores` in PLAN.json), "
    "or scrape, audit and plan again through this address: `pulsar-ops scrape`, `audit`, `plan`"
)


@dataclass(frozen=True)
class StoreAddress:
    """One store's ``HOSTS[/chroot]``: the servers (``host:port``, lower-cased) and the chroot ('' = none)."""

    hosts: frozenset[str]
    chroot: str

    @classmethod
    def of(cls, hosts: str, chroot: str) -> StoreAddress:
        return cls(frozenset(h.strip().lower() for h in hosts.split(",") if h.strip()), chroot)

    def describe(self) -> str:
        return f"{','.join(sorted(self.hosts)) or '(no hosts)'}{self.chroot or ' (no chroot)'}"


@dataclass(frozen=True)
class TargetProblem:
    code: str
    message: str


def recorded_stores(target: Mapping[str, Any]) -> dict[str, StoreAddress] | None:
    """The addresses a plan's ``target`` records (None when it records none, or not both stores)."""
    stores = target.get("stores")
    if not isinstance(stores, Mapping):
        return None
    out: dict[str, StoreAddress] = {}
    for store in STORES:
        rec = stores.get(store)
        if not isinstance(rec, Mapping):
            return None
        hosts, chroot = rec.get("hosts"), rec.get("chroot")
        if not isinstance(hosts, str) or not isinstance(chroot, str) or not hosts.strip():
            return None
        out[store] = StoreAddress.of(hosts, chroot)
    return out


def address_problem(target: Mapping[str, Any], actual: Mapping[str, StoreAddress]) -> TargetProblem | None:
    """Why ``actual`` (per store) is not the address the plan's ``target`` was scraped from (None when it is)."""
    recorded = recorded_stores(target)
    if recorded is None:
        return TargetProblem(
            CODE_UNVERIFIABLE,
            "the plan records no ZooKeeper address (chroot, ensemble) for its snapshot, so a copy of the "
            "cluster under another chroot or ensemble cannot be told from the cluster itself",
        )
    for store in STORES:
        want, got = recorded[store], actual[store]
        if want.chroot != got.chroot:
            return TargetProblem(
                CODE_CHROOT,
                f"the {store} metadata store's chroot is {got.chroot or '(none)'}, the plan was scraped from "
                f"{want.chroot or '(none)'}",
            )
        if not want.hosts & got.hosts:
            return TargetProblem(
                CODE_ENSEMBLE,
                f"the {store} metadata store's servers {','.join(sorted(got.hosts))} share none with the ensemble "
                f"the plan was scraped from ({','.join(sorted(want.hosts))})",
            )
    return None
