"""Re-verification and new bytes of a rewrite action (``drop-missing-ledger``), for both apply phases.

A rewrite changes one managed-ledger znode, compare-and-set on the version scraped, and only while:

* the znode is byte for byte as scraped (the generic target check of :mod:`pulsar_ops.repair.validate`);
* every removed ledger's metadata znode is still absent (``preconditions.absent``): a ledger that reappeared
  is not lost, and is never dropped from its list;
* the topic is not loaded: no bundle ownership znode under ``/namespace/<namespace>`` covers the topic's hash
  (the modular load manager's ownership znodes; a broker that loads the topic also rewrites this znode first,
  so the compare-and-set catches a load this listing misses, e.g. under the extensible load manager);
* the removed ledgers are still listed (else the value is not the one the plan was made from).

A read that fails is never evidence of absence: the action is skipped with the reason.
"""

from __future__ import annotations

from pulsar_ops.errors import DecodeError, ZooKeeperError
from pulsar_ops.formats import names
from pulsar_ops.formats.ml_rewrite import rewrite_without_ledgers
from pulsar_ops.formats.policies import parse_bundle_range, topic_hash
from pulsar_ops.repair.actions import Action
from pulsar_ops.repair.validate import Observed
from pulsar_ops.repair.zk_writer import ZkSession

NAMESPACE_ROOT = "/namespace"


def new_bytes(a: Action, current: Observed) -> tuple[bytes | None, str]:
    """(the bytes the action writes, "") or (None, why it cannot be rewritten)."""
    assert a.rewrite is not None
    try:
        return rewrite_without_ledgers(current.data, a.rewrite.ledger_ids, a.path).data, ""
    except DecodeError as e:
        return None, f"{a.path} cannot be rewritten: {e.reason}"


def owner_problem(session: ZkSession, a: Action) -> str | None:
    """Why the topic may be loaded (or that it cannot be told), None when no bundle of it is owned."""
    topic = a.rewrite.topic if a.rewrite is not None else a.admin.topic if a.admin is not None else ""
    try:
        ns = names.parse_topic(topic).namespace
    except DecodeError as e:
        return f"topic {topic}: {e.reason}"
    h = topic_hash(topic)
    root = f"{NAMESPACE_ROOT}/{ns}"
    try:
        ranges = session.children(a.store, root) or []
    except ZooKeeperError as e:
        return f"cannot list the bundle owners under {root} ({e.message}); not evidence of absence"
    for r in ranges:
        try:
            lo, hi = parse_bundle_range(r, f"{root}/{r}")
        except DecodeError:
            return f"{root}/{r} is not a bundle range; cannot tell whether {topic} is loaded"
        if lo <= h < hi or (h == hi == 0xFFFFFFFF):
            return f"{topic} is loaded: its bundle {r} is owned ({root}/{r}); unload it or let the broker act"
    return None


def absent_problem(session: ZkSession, a: Action) -> str | None:
    """Why a ledger the action drops as missing is not missing (or that it cannot be told)."""
    paths = list(a.preconditions.absent)
    if not paths:
        return None
    try:
        present = [o.path for o in session.read(a.store, paths) if o.exists]
    except ZooKeeperError as e:
        return f"cannot re-read the missing ledgers' znodes ({e.message}); not evidence of absence"
    if present:
        return f"{present[0]} exists again: that ledger is not missing"
    return None


def live_problem(session: ZkSession, a: Action) -> str | None:
    return absent_problem(session, a) or owner_problem(session, a)
