"""What a broker does to ZooKeeper when the admin REST API touches a topic; the state behind ``AdminServer``.

Load (``GET .../stats``, ``POST .../trim``, ``PUT .../unload``, ``DELETE .../subscription/...``: the broker's
``getTopicIfExists`` path) follows apache/pulsar ``managed-ledger/.../impl/ManagedLedgerImpl.java``:

* ``initialize``: the last listed ledger is opened and re-listed with its BookKeeper entry count and length and
  the load time as its timestamp; a last ledger without metadata (NoSuchLedger) is dropped from the list;
* ``initializeBookKeeper``: every listed ledger with 0 entries is removed and deleted from BookKeeper (issued
  before the list is written, as upstream does); unless the managed ledger is terminated, a new current ledger
  is created (custom metadata of ``LedgerMetadataUtils``, written here as the seeder writes ledger metadata) and
  listed with timestamp 0, and the list is written with compare-and-set on the version read. A failed write
  fails the load and leaves the new ledger unlisted (an orphan), as upstream;
* then the first trim, ``internalTrimLedgers``: candidates are the ledgers before the slowest durable cursor's
  mark-delete ledger (that ledger too when the mark-delete is its last entry and it is not the current one;
  every ledger but the current one without durable cursors); walking them oldest first, a ledger goes when
  ``now - timestamp > retentionTime`` (time >= 0) or ``totalSize - sizeDeletedIncludingIt >= retentionSize``
  (size >= 0), and the walk stops at the first that stays. The list is written (compare-and-set on the version
  this broker last wrote) before the ledgers' metadata is deleted. A lost compare-and-set fences the managed
  ledger (``handleBadVersion``): nothing is deleted, the trim fails (500), and so does every later trim until
  the topic is unloaded.

Cursors are read once at load (mark-delete from the znode snapshot: without bookies the cursor ledger's last
entry cannot be read). Deleting a subscription (``ManagedLedgerImpl.asyncDeleteCursor``) removes the cursor
znode, then deletes the cursor ledger, then trims. Not modelled: offload-deletion lag, topic-level policies,
non-durable cursors, message TTL, closing the current ledger on unload.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import proto
from pulsar_ops.formats.compression import MAGIC, unwrap, wrap
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import classify_child, ledger_id_from_path, ledger_path
from pulsar_ops.formats.names import MlName, decode, encode
from pulsar_ops.formats.policies import (
    bundle_for_topic,
    effective_boundaries,
    parse_local_policies,
    parse_namespace_policies,
)
from pulsar_ops.testing.model_ledgers import BkSpec, build_metadata, ml_custom
from pulsar_ops.testing.model_rules import effective_retention
from pulsar_ops.testing.model_spec import MIB, MINUTE_MS

Row = tuple[int, int, int, int]  # (ledger id, entries, size, timestamp) as the broker holds them in memory


class AdminError(Exception):
    """An answer other than success: HTTP status, ``reason`` (Pulsar's ErrorData) and, for 307, a Location."""

    def __init__(self, status: int, reason: str, location: str | None = None) -> None:
        super().__init__(f"{status} {reason}")
        self.status, self.reason, self.location = status, reason, location


def topic_of(tenant: str, namespace: str, encoded_local: str) -> MlName:
    """The managed ledger named by an admin v2 path, or a v1 one (``property/cluster`` as ``tenant``), by
    ``Codec.decode`` of the encoded local name."""
    try:
        local = decode(encoded_local)
    except DecodeError as e:
        raise AdminError(412, f"Topic name is not valid: {e}") from None
    ns = f"{tenant}/{namespace}"  # a v1 path passes "property/cluster" as the tenant
    return MlName(ns, encode(local), local, ns.count("/") == 2)


def trim_plan(
    rows: list[Row],
    current: int | None,
    slowest: tuple[int, int] | None,
    *,
    now_ms: int,
    retention_minutes: int,
    retention_mb: int,
) -> list[int]:
    """Ledger ids ``internalTrimLedgers`` removes (``slowest``: the slowest durable mark-delete, None = none)."""
    by_id = {r[0]: r for r in rows}
    if slowest is None:
        bound = (current if current is not None else max(by_id, default=0)) + 1
    else:
        md = by_id.get(slowest[0])
        last_entry = md is not None and slowest[0] != current and md[1] == slowest[1] + 1
        bound = slowest[0] + 1 if last_entry else slowest[0]
    total = sum(r[2] for r in rows)
    deleted, out = 0, []
    for lid, _entries, size, ts in sorted(rows):
        if lid >= bound or lid == current:
            break
        deleted += size
        expired = retention_minutes >= 0 and now_ms - ts > retention_minutes * MINUTE_MS
        over_quota = retention_mb >= 0 and total - deleted >= retention_mb * MIB
        if not (expired or over_quota):
            break
        out.append(lid)
    return out


def _set_ledgers(info: Any, items: list[Any]) -> None:
    kept = [copy.deepcopy(li) for li in items]
    info.ClearField("ledgerInfo")
    info.ledgerInfo.extend(kept)


@dataclass
class Loaded:
    """One topic as the broker holds it: its ledger list, how it was encoded, the version it last wrote."""

    ml: MlName
    path: str
    bundle: str
    info: Any  # proto.ManagedLedgerInfo
    codec: str
    header: bool
    version: int
    current: int | None
    cursors: dict[str, Any] = field(default_factory=dict)  # encoded name -> ManagedCursorInfo
    fenced: bool = False

    def rows(self) -> list[Row]:
        return [(li.ledgerId, li.entries, li.size, li.timestamp) for li in self.info.ledgerInfo]


class Broker:
    """The ZooKeeper side of one test broker. Every public method runs under one lock (the broker's ordered
    executor per managed ledger, simplified); failures are AdminError."""

    def __init__(
        self,
        local: KazooClient,
        config: KazooClient,
        now_ms: Callable[[], int],
        url: str,
        ledgers_root: str = "/ledgers",
        serves_owned: bool = False,
        extensible: bool = False,
    ) -> None:
        self.zk, self.config, self.now_ms, self.url, self.root = local, config, now_ms, url, ledgers_root
        self.serves_owned = serves_owned  # the demo's one broker: bundles owned by another session are its own
        # the extensible load manager (PIP-192): ownership is the service-unit-state channel's (a system topic),
        # never a /namespace znode; this broker keeps the bundles it owns in memory
        self.extensible = extensible
        self.elm_owned: set[tuple[str, str]] = set()
        self.loaded: dict[str, Loaded] = {}  # full topic name -> state
        self.consumers: dict[tuple[str, str], int] = {}  # (topic, subscription) -> connected consumers
        self.before_info_write: Callable[[str], None] | None = None  # test hook: runs before each CAS write
        self.lock = threading.RLock()
        self._next_id: int | None = None

    # ------------------------------------------------------------------ ownership

    def owner_data(self) -> dict[str, Any]:
        host = self.url.split("://", 1)[1]
        native = f"pulsar://{host.rsplit(':', 1)[0]}:6650"
        return {
            "nativeUrl": native,
            "nativeUrlTls": None,
            "httpUrl": self.url,
            "httpUrlTls": None,
            "disabled": False,
            "advertisedListeners": {},
        }

    def bundle_of(self, ml: MlName) -> str:
        """The topic's bundle as ``NamespaceBundleFactory.loadBundles`` builds the namespace's bundles: from the
        local policies when they exist, else from ``Policies.bundles`` (which the broker then copies into new
        local policies, as this one does)."""
        path = f"/admin/policies/{ml.namespace}"
        local_path = f"/admin/local-policies/{ml.namespace}"
        try:
            data, _ = self.config.get(path)
        except NoNodeError:
            raise AdminError(404, "Namespace does not exist") from None
        try:
            local = self.zk.get(local_path)[0]
        except NoNodeError:
            local = None
        try:
            if local is not None:
                bounds = parse_local_policies(local, local_path).bundle_boundaries
            else:
                pol = parse_namespace_policies(data, path)
                bounds = effective_boundaries(pol.bundle_boundaries, None)
                bundles = {"boundaries": list(pol.bundle_boundaries), "numBundles": pol.num_bundles}
                doc = {  # new LocalPolicies(policies.bundles, null, null), as Jackson writes it
                    "bundles": bundles if pol.bundle_boundaries else None,
                    "bookieAffinityGroup": None,
                    "namespaceAntiAffinityGroup": None,
                    "migrated": False,
                }
                try:
                    self.zk.create(local_path, json.dumps(doc).encode(), makepath=True)
                except NodeExistsError:
                    return self.bundle_of(ml)  # another broker copied them first: read theirs
            return bundle_for_topic(ml.topic, bounds)
        except DecodeError as e:
            raise AdminError(500, f"namespace policies: {e}") from None

    def acquire(self, ml: MlName) -> tuple[str, dict[str, Any] | None]:
        """(bundle, None) once this broker owns the bundle, else (bundle, the other owner's data)."""
        bundle = self.bundle_of(ml)
        if self.extensible:
            self.elm_owned.add((ml.namespace, bundle))
            return bundle, None
        path = f"/namespace/{ml.namespace}/{bundle}"
        try:
            self.zk.create(path, json.dumps(self.owner_data()).encode(), ephemeral=True, makepath=True)
            return bundle, None
        except NodeExistsError:
            pass
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return self.acquire(ml)  # released in between: try again
        if stat.ephemeralOwner == self.zk.client_id[0] or self.serves_owned:
            return bundle, None
        try:
            return bundle, dict(json.loads(data))
        except ValueError:
            return bundle, {}

    def owned_or_redirect(self, ml: MlName, request_path: str) -> str:
        bundle, other = self.acquire(ml)
        if other is not None:
            raise AdminError(
                307,
                "Current broker doesn't serve the namespace of this topic",
                location=str(other.get("httpUrl") or "").rstrip("/") + request_path,
            )
        return bundle

    # ------------------------------------------------------------------ load

    def load(self, ml: MlName, request_path: str) -> Loaded:
        with self.lock:
            lt = self.loaded.get(ml.topic)
            if lt is not None:
                return lt
            bundle = self.owned_or_redirect(ml, request_path)  # ownership is validated before the topic is looked up
            path = f"/managed-ledgers/{ml.ml_name}"
            if self.zk.exists(path) is None:
                raise AdminError(404, f"Topic {ml.topic} not found")
            lt = self._initialize(ml, path, bundle)
            self.loaded[ml.topic] = lt
            self.trim(lt, background=True)
            return lt

    def _initialize(self, ml: MlName, path: str, bundle: str) -> Loaded:
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            raise AdminError(404, f"Topic {ml.topic} not found") from None
        try:
            plain, codec = unwrap(bytes(data), path)
            info = proto.ManagedLedgerInfo()
            info.ParseFromString(plain)
        except Exception as e:  # the broker's MetaStoreImpl fails the load on any parse error
            raise AdminError(500, f"cannot parse the managed-ledger info of {ml.topic}: {e}") from None
        lt = Loaded(ml, path, bundle, info, codec, data[:2] == MAGIC and plain != data, stat.version, None)
        if self._next_id is None:  # before anything is deleted: BookKeeper never hands out an id twice
            self._next_id = self._max_ledger_id() + 1
        if len(info.ledgerInfo):
            last = info.ledgerInfo[-1].ledgerId
            md = self._ledger(last)
            del info.ledgerInfo[-1]
            if md is not None:  # re-listed with what BookKeeper says and the load time
                info.ledgerInfo.add(
                    ledgerId=last, entries=max(md.last_entry_id + 1, 0), size=md.length, timestamp=self.now_ms()
                )
        for li in [li for li in info.ledgerInfo if li.entries <= 0]:
            info.ledgerInfo.remove(li)
            self._delete_ledger(li.ledgerId)
        if not info.HasField("terminatedPosition"):
            lt.current = self._create_ledger(ml)
            info.ledgerInfo.add(ledgerId=lt.current, timestamp=0)
            self._write(lt)
        for name in self.zk.get_children(path):
            cpath = f"{path}/{name}"
            try:
                lt.cursors[name] = decode_cursor_info(self.zk.get(cpath)[0], cpath).info
            except (DecodeError, NoNodeError) as e:
                raise AdminError(500, f"cursor recovery failed for {ml.topic}: {e}") from None
        return lt

    def _ledger(self, lid: int) -> Any:
        path = ledger_path(lid, self.root)
        try:
            return decode_ledger_metadata(self.zk.get(path)[0], path)
        except NoNodeError:
            return None
        except DecodeError as e:
            raise AdminError(500, f"ledger {lid}: {e}") from None

    def _delete_ledger(self, lid: int) -> None:
        with contextlib.suppress(NoNodeError):  # NoSuchLedger counts as deleted
            self.zk.delete(ledger_path(lid, self.root))

    def _create_ledger(self, ml: MlName) -> int:
        now = self.now_ms()
        while True:
            if self._next_id is None:
                self._next_id = self._max_ledger_id() + 1
            lid, self._next_id = self._next_id, self._next_id + 1
            spec = BkSpec("OPEN", 0, -1, now, 3, ml_custom(ml.ml_name))
            try:
                self.zk.create(
                    ledger_path(lid, self.root), build_metadata(lid, spec, random.Random(lid))[1], makepath=True
                )
                return lid
            except NodeExistsError:
                continue

    def _max_ledger_id(self) -> int:
        """The highest ledger id under the ledgers root (BookKeeper's id generator only goes up)."""
        try:
            top = self.zk.get_children(self.root)
        except NoNodeError:
            return 0
        best = max((int(c[1:]) for c in top if classify_child(c) == "flat-leaf"), default=0)
        for kind, levels in (("long", 4), ("legacy", 2)):
            found = self._max_below(
                self.root, sorted((c for c in top if classify_child(c) == kind), reverse=True), levels
            )
            best = max(best, found or 0)
        return best

    def _max_below(self, base: str, names: list[str], levels: int) -> int | None:
        for name in names:
            path = f"{base}/{name}"
            if levels == 0:
                try:
                    found = ledger_id_from_path(path, self.root)
                except DecodeError:
                    found = None
            else:
                found = self._max_below(path, sorted(self.zk.get_children(path), reverse=True), levels - 1)
            if found is not None:
                return found
        return None

    def _write(self, lt: Loaded) -> None:
        """Compare-and-set the list (sorted by id like the broker's map) in the encoding it was read in."""
        _set_ledgers(lt.info, sorted(lt.info.ledgerInfo, key=lambda li: li.ledgerId))
        data = wrap(lt.info.SerializeToString(), lt.codec, always_header=lt.header)
        if self.before_info_write is not None:
            self.before_info_write(lt.path)
        try:
            lt.version = self.zk.set(lt.path, data, version=lt.version).version
        except BadVersionError:
            lt.fenced = True
            raise AdminError(
                500, f"BadVersion updating the ledger list of {lt.ml.topic}: managed ledger fenced"
            ) from None
        except NoNodeError:
            raise AdminError(404, f"Topic {lt.ml.topic} not found") from None

    # ------------------------------------------------------------------ trim, subscriptions, unload

    def trim(self, lt: Loaded, *, background: bool = False) -> list[int]:
        """One ``internalTrimLedgers``; ``background`` = as the broker's own trims (a failure only fences)."""
        with self.lock:
            try:
                if lt.fenced:
                    raise AdminError(500, f"Can't trim fenced ledger {lt.ml.topic}")
                path = f"/admin/policies/{lt.ml.namespace}"
                try:
                    pol = parse_namespace_policies(self.config.get(path)[0], path)
                    rt, rs, _ = effective_retention(pol.retention_time_minutes, pol.retention_size_mb)
                except (NoNodeError, DecodeError) as e:
                    raise AdminError(500, f"namespace policies of {lt.ml.topic}: {e}") from None
                marks = [c.mark_delete or (-1, -1) for c in lt.cursors.values()]
                gone = trim_plan(
                    lt.rows(),
                    lt.current,
                    min(marks) if marks else None,
                    now_ms=self.now_ms(),
                    retention_minutes=rt,
                    retention_mb=rs,
                )
                if gone:
                    _set_ledgers(lt.info, [li for li in lt.info.ledgerInfo if li.ledgerId not in set(gone)])
                    self._write(lt)
                    for lid in gone:
                        self._delete_ledger(lid)
                return gone
            except AdminError:
                if background:
                    return []
                raise

    def delete_subscription(self, ml: MlName, sub: str, force: bool, request_path: str) -> None:
        with self.lock:
            lt = self.load(ml, request_path)
            enc = encode(sub)
            info = lt.cursors.get(enc)
            if info is None:
                raise AdminError(404, f"Subscription {sub} not found for topic {ml.topic}")
            if self.consumers.get((ml.topic, sub), 0) > 0:
                if not force:
                    raise AdminError(412, "Subscription has active connected consumers")
                del self.consumers[(ml.topic, sub)]  # force closes them
            with contextlib.suppress(NoNodeError):
                self.zk.delete(f"{lt.path}/{enc}")
            del lt.cursors[enc]
            if info.cursors_ledger_id != -1:
                self._delete_ledger(info.cursors_ledger_id)
            self.trim(lt, background=True)

    def unload(self, ml: MlName, request_path: str) -> None:
        with self.lock:
            lt = self.load(ml, request_path)  # the broker loads a topic to unload it (getTopicIfExists)
            del self.loaded[ml.topic]
            if not any(o.bundle == lt.bundle and o.ml.namespace == ml.namespace for o in self.loaded.values()):
                if self.extensible:
                    self.elm_owned.discard((ml.namespace, lt.bundle))
                    return
                path = f"/namespace/{ml.namespace}/{lt.bundle}"
                try:
                    if self.zk.get(path)[1].ephemeralOwner == self.zk.client_id[0]:
                        self.zk.delete(path)
                except NoNodeError:
                    pass
