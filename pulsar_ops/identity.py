"""Which cluster a snapshot, a plan or a live ZooKeeper is: recorded at scrape time, checked by apply/restore.

A plan is only ever applied to the cluster it was made from. The identity is what ZooKeeper itself says:
the BookKeeper cluster's ``INSTANCEID`` (a UUID written once, when the ledgers root is formatted), the
names of the Pulsar clusters under ``/admin/clusters`` and the ledgers root's ``LAYOUT`` (which ledger manager
lays out the ledger znodes). A typo in ``--zookeeper`` (another chroot, another ensemble) shows up as a
different identity, or as a chroot that does not exist, before anything is journaled. A copy of the cluster
restored from a ZooKeeper snapshot (staging, DR) has the same identity: :mod:`pulsar_ops.repair.target`
also compares the address (chroot, ensemble) recorded at scrape time.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ClusterIdentity:
    instance_id: str | None
    clusters: tuple[str, ...]
    # The ledgers root's LAYOUT text, whitespace-trimmed and compared whole (BookKeeper's
    # bookkeeper-server/src/main/java/org/apache/bookkeeper/meta/LedgerLayout.java, serialize / parseLayout:
    # the layout format version, a newline, `<managerFactoryClass>:<managerVersion>`, and in later versions a
    # further `key:value` line); "" when the znode is absent; None when not recorded (snapshots scraped before
    # it was, or an unreadable LAYOUT): then it is not compared.
    ledger_layout: str | None = None

    @property
    def known(self) -> bool:
        return self.instance_id is not None or bool(self.clusters)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"instance_id": self.instance_id, "clusters": list(self.clusters)}
        if self.ledger_layout is not None:
            doc["ledger_layout"] = self.ledger_layout
        return doc

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> ClusterIdentity:
        d = d or {}
        iid = d.get("instance_id")
        clusters = d.get("clusters") or []
        layout = d.get("ledger_layout")
        if (
            (iid is not None and not isinstance(iid, str))
            or not isinstance(clusters, list)
            or not all(isinstance(c, str) for c in clusters)
            or (layout is not None and not isinstance(layout, str))
        ):
            raise ValueError(f"malformed cluster identity {dict(d)!r}")
        return cls(iid, tuple(sorted(clusters)), layout)

    def describe(self) -> str:
        clusters = ",".join(self.clusters) or "none"
        return f"INSTANCEID {self.instance_id or 'absent'}, clusters {clusters}"


def instance_id_from_bytes(data: bytes | None) -> str | None:
    """BookKeeper writes the instance id as the UTF-8 text of a UUID."""
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace").strip()
    return text or None


def layout_from_bytes(data: bytes | None) -> str:
    """The ledgers root's LAYOUT as recorded and compared: its text, whitespace-trimmed ("" when absent)."""
    if data is None:
        return ""
    return data.decode("utf-8", errors="replace").strip()


def identity_mismatch(expected: ClusterIdentity, actual: ClusterIdentity) -> str | None:
    """Why ``actual`` is not the cluster ``expected`` describes (None when it is)."""
    if expected.instance_id != actual.instance_id:
        return (
            f"INSTANCEID is {actual.instance_id or 'absent'}, the plan was made for {expected.instance_id or 'absent'}"
        )
    if expected.clusters != actual.clusters:
        return (
            f"clusters are {','.join(actual.clusters) or 'none'}, the plan was made for "
            f"{','.join(expected.clusters) or 'none'}"
        )
    if expected.ledger_layout is not None and expected.ledger_layout != actual.ledger_layout:
        return (
            f"the ledgers root's LAYOUT is {actual.ledger_layout or 'absent'!r}, the plan was made for "
            f"{expected.ledger_layout or 'absent'!r}"
        )
    return None
