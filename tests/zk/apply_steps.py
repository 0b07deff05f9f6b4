"""The two apply phases as a test runs them on a seeded cluster, with the checks every round trip makes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.formats.names import ml_name_from_path
from tests.zk.repair_cluster import dump, walk
from tests.zk.test_apply import cli

Dump = dict[str, tuple[bytes, int, int, list[Any]]]


def unown_all(zk: KazooClient) -> None:
    """Release every bundle (as if no broker had loaded them): every topic becomes unloaded."""
    for path in sorted(walk(zk), key=lambda p: -p.count("/")):
        if path.startswith("/namespace/") and path.count("/") >= 3 and "0x" in path.rsplit("/", 1)[-1]:
            zk.delete(path)


def mark_then_delete(zk: KazooClient, plan: Path, zk_hosts: str) -> tuple[Dump, Dump]:
    """``apply --phase mark`` (which must leave the tree as it was), then ``--phase delete --quarantine 0``
    (every action committed): the full dumps before and after."""
    actions = json.loads(plan.read_text())["actions"]
    before = dump(zk)
    base = ["apply", str(plan), "--zookeeper", zk_hosts, "--apply", "--yes", "--json"]
    code, _, err = cli(*base, "--phase", "mark")
    assert code == 0, err
    assert dump(zk) == before
    code, out, err = cli(*base, "--phase", "delete", "--quarantine", "0")
    assert code == 0, err
    assert json.loads(out)["counts"] == {"committed": len(actions)}
    return before, dump(zk)


def _ml_ids(data: bytes, path: str) -> list[int]:
    return list(decode_managed_ledger_info(data, path).info.ledger_ids)


def explain_broker_loads(
    before: Dump, after: Dump, ml_paths: set[str], *, removed_cursors: frozenset[str] = frozenset()
) -> dict[str, set[int]]:
    """Assert that every difference between two full dumps is one a broker's load of exactly ``ml_paths`` makes
    (and the deletion of ``removed_cursors``), everything else byte for byte, version and mzxid as it was:

    - changed: only those managed-ledger znodes, each still listing every ledger it listed minus the ones whose
      metadata is gone, plus new ledgers whose metadata names it (the new current ledger);
    - gone: the removed cursors, their cursor ledgers, and ledgers those managed ledgers listed (trimmed, or empty);
    - new: those ledgers' metadata, bundle ownership and local policies of their namespaces, and empty parents;
    - no listed ledger lacks metadata that had it before (no new dangling reference).

    Returns, per managed-ledger path, the ids whose metadata the broker deleted."""
    changed = {p for p in before.keys() & after.keys() if before[p] != after[p]}
    gone, new = before.keys() - after.keys(), after.keys() - before.keys()
    assert changed <= ml_paths, sorted(changed - ml_paths)
    namespaces = {ml_name_from_path(p).namespace for p in ml_paths}
    cursor_ledgers = {
        decode_cursor_info(before[c][0], c).info.cursors_ledger_id for c in removed_cursors if c in before
    }
    by_id_before = _ledgers(before)
    by_id_after = _ledgers(after)
    deleted: dict[str, set[int]] = {}
    explained_gone, explained_new = set(removed_cursors) & gone, set()
    for p in sorted(ml_paths):
        old_ids = _ml_ids(before[p][0], p)
        new_ids = _ml_ids(after[p][0], p)
        dropped = set(old_ids) - set(new_ids)
        added = set(new_ids) - set(old_ids)
        # a dropped ledger's metadata is gone; a kept one is untouched
        assert all(by_id_before.get(i) in gone or i not in by_id_before for i in dropped), (p, dropped)
        deleted[p] = {i for i in dropped if i in by_id_before}
        explained_gone |= {by_id_before[i] for i in deleted[p]}
        ml = ml_name_from_path(p).ml_name
        for i in added:  # the new current ledger: new metadata naming this managed ledger
            lp = by_id_after.get(i)
            assert lp is not None and lp in new, (p, i)
            md = decode_ledger_metadata(after[lp][0], lp)
            assert md.managed_ledger_name == ml, (lp, md.managed_ledger_name)
            explained_new.add(lp)
        assert [i for i in new_ids if i not in added] == [i for i in old_ids if i not in dropped], p
        # no new dangling reference: a listed ledger without metadata was already one before
        assert {i for i in new_ids if i not in by_id_after} <= {i for i in old_ids if i not in by_id_before}, p
    explained_gone |= {by_id_before[i] for i in cursor_ledgers if i in by_id_before}
    for p in new - explained_new:
        owner = any(p.startswith(f"/namespace/{ns}/") for ns in namespaces)
        local = p in {f"/admin/local-policies/{ns}" for ns in namespaces}
        parent = after[p][0] == b"" and any(q.startswith(p + "/") for q in new)
        assert owner or local or parent, p
    assert gone == explained_gone, sorted(gone ^ explained_gone)
    return deleted


def _ledgers(d: Dump) -> dict[int, str]:
    out = {}
    for p in d:
        try:
            lid = ledger_id_from_path(p)
        except DecodeError:
            lid = None
        if lid is not None:
            out[lid] = p
    return out
