"""A deterministic synthetic Pulsar cluster (pure, no kazoo): the znodes to write and the expected findings.

``ClusterModel(options).znodes()`` yields every znode once, parents before children, namespace by namespace
(streaming: memory stays flat at 600,000 topics; only directory paths and the injected defects are kept).
After the iterator is exhausted, ``ground_truth()`` returns the findings the audit must report, computed
with the rules of docs/detections.md (``model_rules``) at min-age 24 h, inactive-after 7 d and the default
broker configuration.

Layout of the generated cluster:

* ``--topics N`` healthy managed ledgers (partitions count one each) spread over regular namespaces
  (V2, one legacy V1 ``legacy/<cluster>/ns-v1``; every 4th namespace allocates ledger ids above 2^31);
  bundles (4/8/16) all owned; healthy topics produce no finding at all.
* defect fixtures on top, each kind at least once and ``max(1, N // 1000)`` times: see ``_plan_fixtures``.
* a ``pulsar/system`` namespace with system topics and old system cursors (controls).

Names of the defect fixtures say what they are (``ack-holes-3``, ``idle-default-0``...) to keep test
failures readable; hostile names (spaces, ``~ * % +``, unicode, emoji) appear in healthy and defect topics
and subscriptions alike.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pulsar_ops.formats.compression import wrap
from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    OffloadInfo,
    encode_managed_ledger_info,
)
from pulsar_ops.formats.names import MlName, encode, schema_id_for
from pulsar_ops.formats.policies import namespace_policies_doc
from pulsar_ops.formats.schema_locator import SchemaIndexEntry, SchemaLocator, encode_schema_locator
from pulsar_ops.testing import model_payloads as pay
from pulsar_ops.testing import model_rules as rules
from pulsar_ops.testing import model_upstream as up
from pulsar_ops.testing.model_ledgers import (
    ANCHOR_ID,
    BOOKIES,
    HIGH_START,
    LOW_START,
    BkSpec,
    IdAllocator,
    bucket_custom,
    build_metadata,
    compacted_custom,
    ml_custom,
    pick_version,
    schema_custom,
)
from pulsar_ops.testing.model_spec import (
    BROKER_DEFAULTS,
    CONFIG,
    DAY_MS,
    HOUR_MS,
    INACTIVE_AFTER_MS,
    LOCAL,
    MIB,
    MIN_AGE_MS,
    MINUTE_MS,
    SeedOptions,
    ZNode,
)

CLUSTER = "pulsar-east"
REMOTE_CLUSTER = "pulsar-west"
BROKERS = ("broker-0.pulsar-east.svc", "broker-1.pulsar-east.svc", "broker-2.pulsar-east.svc")
TENANT_NAMES = ("acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka")
NS_WORDS = ("orders", "payments", "events", "telemetry", "audit-log", "billing", "clicks", "search")
HOSTILE = (
    "orders v2",
    "tmp~scratch",
    "wild*card",
    "100%-done",
    "a+b",
    "café-événements",
    "rocket-🚀",
    "日本語-トピック",
    "mixed ~*%+ 🙂",
)
SUB_NAMES = ("billing-service", "analytics", "audit reader", "replay~2", "sub*all", "50%-sampler", "ü-sub", "🔔-alerts")
SHOWCASE = ("NONE", "LZ4", "ZSTD", "ZLIB", "SNAPPY", "text", "empty")


@dataclass
class Namespace:
    name: str
    tenant: str
    is_v1: bool
    high: bool
    num_bundles: int
    owned: bool = True
    retention: tuple[int, int] | None = None
    ttl: int | None = None
    delayed: tuple[bool, int] | None = None
    max_delay_ms: int | None = 0  # delayed_delivery_policies.maxDeliveryDelayInMillis; None = key absent (old broker)
    dedup: bool = False
    replicated: bool = False
    local_policies: bool = False
    has_policies: bool = True
    bundle_data: bool = True
    split: bool = False  # its first bundle was split; the policies do not show it (needs local_policies)
    init: bool = False  # written by initialize-cluster-metadata: upstream's policies exactly, one cluster
    topic_policies: bool = False  # its __change_events topic holds topic policies (their values unknown to an audit)

    @property
    def boundaries(self) -> list[str]:
        """``Policies.bundles.boundaries`` as written when the namespace was created."""
        return pay.bundle_boundaries(self.num_bundles)

    @property
    def bundles(self) -> list[str]:
        """The boundaries the broker uses: the local policies' (where a split is recorded), else the policies'."""
        return pay.split_first(self.boundaries) if self.split else self.boundaries

    @property
    def schema_prefix(self) -> str:
        parts = self.name.split("/")
        return f"{parts[0]}/{parts[-1]}"


@dataclass
class Cursor:
    name: str  # decoded
    info: ManagedCursorInfo
    compression: str = "NONE"


@dataclass
class Topic:
    """One managed ledger to emit: its list, cursors and the BookKeeper metadata of its ledgers."""

    ml: MlName
    ledgers: list[LedgerInfo] = field(default_factory=list)
    cursors: list[Cursor] = field(default_factory=list)
    bk: dict[int, BkSpec] = field(default_factory=dict)  # ledgers written to /ledgers (absent = dangling)
    encoding: str = "NONE"  # NONE/LZ4/ZSTD/ZLIB/SNAPPY/text/empty/garbage


# ZNode encodings the scraper cannot decode: the znode exists with unknown content (undecodable-znode).
UNDECODABLE_ENCODINGS = frozenset({"garbage", "truncated"})


@dataclass(frozen=True)
class _Orphan:
    ledger_id: int
    kind: str
    owner: str | None
    owner_exists: bool
    owner_namespace: str | None
    ctime_ms: int | None
    blocked: bool = False  # depends on an undecodable znode (its managed ledger's info)


@dataclass(frozen=True)
class _Leak:
    path: str
    leak: str
    holds_ledgers: bool


Fixture = Callable[["ClusterModel", Namespace], Iterator[ZNode]]


class ClusterModel:
    """Generate the cluster once: iterate ``znodes()`` fully, then read ``ground_truth()``."""

    def __init__(self, options: SeedOptions) -> None:
        self.o = options
        self.now = options.resolved_now_ms()
        self.ztime = options.znode_time_ms if options.znode_time_ms is not None else self.now
        self.per = max(1, options.topics // 1000)
        self.nsper = max(1, min(self.per, 25))
        self.root_rng = random.Random(f"pulsar-ops-seed:{options.seed}")
        self.low = IdAllocator(LOW_START)
        self.high = IdAllocator(HIGH_START)
        self.instance_id = str(uuid.UUID(int=self.root_rng.getrandbits(128), version=4))
        self._dirs: set[tuple[str, str]] = set()
        self._done = False
        # ground-truth accumulators
        self.watermark = -1
        self.orphans: list[_Orphan] = []
        self.dangling: list[dict[str, Any]] = []
        self.leaks: list[_Leak] = []
        self.retention: list[dict[str, Any]] = []
        self.ack: list[dict[str, Any]] = []
        self.ranges_in_ledgers: dict[str, int] = {}  # namespace -> user cursors whose ranges live in a ledger
        self.inactive: list[dict[str, Any]] = []
        self.ttl: list[dict[str, Any]] = []
        self.incomplete_scopes: set[str] = set()
        self.undecodable: list[str] = []
        self.counts: dict[str, int] = {}
        self._fixtures: dict[int, list[Fixture]] = {}
        self._anchor_placed = False
        self.anchor_ml = MlName("", "", "", False)
        self.live_tenants: list[str] = []
        self.emitted_topics: set[str] = set()
        self.pulsar_owned: list[dict[str, Any]] = []  # what Pulsar writes for itself, with the upstream source
        self.retention_unknown: list[dict[str, Any]] = []  # topics whose topic-level retention the audit cannot see
        self.topic_policies: dict[str, dict[str, int]] = {}  # topic -> the topic-level retention really set
        self.ownership_unknown: list[dict[str, Any]] = []  # ELM without a readable ownership table: never judged

    # ------------------------------------------------------------------ emission helpers

    def _count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def _node(
        self,
        store: str,
        path: str,
        data: bytes = b"",
        *,
        kind: str = "other",
        encoding: str = "",
        obj: object = None,
        ephemeral: bool = False,
    ) -> Iterator[ZNode]:
        parent = path.rsplit("/", 1)[0]
        if parent and (store, parent) not in self._dirs:
            yield from self._dir(store, parent)
        self._count(f"znodes_{store}")
        if encoding in UNDECODABLE_ENCODINGS:
            self.undecodable.append(path)
        yield ZNode(store, path, data, ephemeral, kind, encoding, obj)

    def _dir(self, store: str, path: str, kind: str = "dir") -> Iterator[ZNode]:
        if (store, path) in self._dirs:
            return
        parent = path.rsplit("/", 1)[0]
        if parent and (store, parent) not in self._dirs:
            yield from self._dir(store, parent)
        self._dirs.add((store, path))
        self._count(f"znodes_{store}")
        yield ZNode(store, path, b"", False, kind, "", None)

    def _json(self, store: str, path: str, obj: dict[str, Any], kind: str, *, eph: bool = False) -> Iterator[ZNode]:
        yield from self._node(store, path, pay.dumps(obj), kind=kind, encoding="json", obj=obj, ephemeral=eph)

    def _alloc(self, ns: Namespace, rng: random.Random, *, gaps: bool = True) -> int:
        return (self.high if ns.high else self.low).take(rng, gaps=gaps)

    def _ledger_node(self, ledger_id: int, spec: BkSpec, rng: random.Random) -> Iterator[ZNode]:
        md, data = build_metadata(ledger_id, spec, rng)
        self._count("bk_ledgers")
        enc = "truncated" if spec.truncated else f"v{spec.version}"
        yield from self._node(
            LOCAL, ledger_path(ledger_id, self.o.ledgers_root), data, kind="bk-ledger", encoding=enc, obj=md
        )

    def _ref(self, ledger_id: int) -> None:
        if ledger_id > self.watermark:
            self.watermark = ledger_id

    # ------------------------------------------------------------------ the public generator

    def znodes(self) -> Iterator[ZNode]:
        if self._done:
            raise RuntimeError("ClusterModel.znodes() can run once; build a new model to generate again")
        self._done = True
        yield from self._roots()
        regular = self._regular_namespaces()
        self._plan_fixtures(len(regular))
        for i, ns in enumerate(regular):
            yield from self._namespace(ns, i)
        yield from self._system_namespace()
        yield from self._dedicated_namespaces()
        if "orphan-ledger" in self.o.defects:
            yield from self._orphans_above_watermark(regular)

    # ------------------------------------------------------------------ roots

    def _roots(self) -> Iterator[ZNode]:
        root = self.o.ledgers_root
        for path in (
            "/managed-ledgers",
            "/namespace",
            "/loadbalance/brokers",
            "/loadbalance/bundle-data",
            "/schemas",
            "/admin/local-policies",
        ):
            yield from self._dir(LOCAL, path)
        for path in ("/admin/policies", "/admin/partitioned-topics", "/admin/clusters"):
            yield from self._dir(CONFIG, path)
        for c in (CLUSTER, REMOTE_CLUSTER):
            yield from self._json(CONFIG, f"/admin/clusters/{c}", pay.cluster_data(c), "cluster")
        yield from self._initialize_cluster_metadata()
        eph = not self.o.persistent_ownership
        if self.extensible:
            for k, b in enumerate(BROKERS):
                reg = up.lookup_data(b, self.ztime - (k + 1) * DAY_MS)
                yield from self._json(LOCAL, f"/loadbalance/brokers/{b}:8080", reg, "broker", eph=eph)
            leader = up.leader_broker(f"{BROKERS[0]}:8080", pay.broker_urls(BROKERS[0])["httpUrl"])
            yield from self._json(LOCAL, up.ELM_LEADER_PATH, leader, "elm-leader", eph=eph)
        else:
            for b in BROKERS:
                yield from self._json(
                    LOCAL, f"/loadbalance/brokers/{b}:8080", pay.local_broker_data(b, []), "broker", eph=eph
                )
        yield from self._dir(LOCAL, root, "bk-internal")
        yield from self._node(LOCAL, f"{root}/LAYOUT", pay.bk_layout(), kind="bk-internal", encoding="text")
        yield from self._node(
            LOCAL, f"{root}/INSTANCEID", self.instance_id.encode(), kind="bk-internal", encoding="text"
        )
        yield from self._dir(LOCAL, f"{root}/available", "bk-internal")
        yield from self._dir(LOCAL, f"{root}/available/readonly", "bk-internal")
        for b in BOOKIES:
            yield from self._node(LOCAL, f"{root}/available/{b}", b"", kind="bk-internal", ephemeral=eph)
        yield from self._dir(LOCAL, f"{root}/cookies", "bk-internal")
        for b in BOOKIES:
            cookie = pay.bk_cookie(b, self.instance_id)
            yield from self._node(LOCAL, f"{root}/cookies/{b}", cookie, kind="bk-internal", encoding="text")
        yield from self._dir(LOCAL, f"{root}/idgen", "bk-internal")
        yield from self._dir(LOCAL, f"{root}/idgen-long/HOB-0000000000", "bk-internal")
        yield from self._dir(LOCAL, f"{root}/underreplication", "bk-internal")
        yield from self._node(
            LOCAL,
            f"{root}/underreplication/LAYOUT",
            pay.underreplication_layout(),
            kind="bk-internal",
            encoding="text",
        )
        yield from self._dir(LOCAL, f"{root}/underreplication/ledgers", "bk-internal")
        yield from self._dir(LOCAL, f"{root}/underreplication/locks", "bk-internal")

    @property
    def extensible(self) -> bool:
        return self.o.load_manager == "extensible"

    def _initialize_cluster_metadata(self) -> Iterator[ZNode]:
        """What ``pulsar initialize-cluster-metadata`` writes besides BookKeeper's format (``model_upstream``):
        ``/bookies``, the ``global`` cluster, the tenants ``public`` and ``pulsar``, the namespace
        ``public/default`` (``pulsar/system`` comes with its topics, ``fixtures.system_namespace``) and the
        transaction coordinators' partitioned-topic metadata (no partition ever gets a managed ledger)."""
        yield from self._node(LOCAL, up.BOOKIE_INFO_ROOT, b"{}", kind="bookie-info", encoding="json", obj={})
        yield from self._json(CONFIG, "/admin/clusters/global", up.global_cluster_data(), "cluster")
        for tenant in up.INIT_TENANTS:
            path = f"/admin/policies/{tenant}"
            self._dirs.add((CONFIG, path))
            self._count("tenants")
            yield from self._json(CONFIG, path, up.init_tenant(CLUSTER), "tenant")
        yield from self._namespace_meta(self.init_namespace(up.DEFAULT_NAMESPACE))
        tc = pay.partitioned_topic(up.TRANSACTION_COORDINATORS)
        self._count("partitioned_topics")
        yield from self._json(CONFIG, up.TC_ASSIGN_PATH, tc, "partitioned-topic")
        self.pulsar_owned.append(
            {
                "what": "initialize-cluster-metadata",
                "paths": [
                    up.BOOKIE_INFO_ROOT,
                    "/admin/clusters/global",
                    *(f"/admin/policies/{t}" for t in up.INIT_TENANTS),
                    *(f"/admin/policies/{n}" for n in up.INIT_NAMESPACES),
                    up.TC_ASSIGN_PATH,
                ],
                "source": up.SETUP_SOURCE,
            }
        )

    @staticmethod
    def init_namespace(name: str) -> Namespace:
        """A namespace as ``PulsarClusterMetadataSetup.createNamespaceIfAbsent`` creates it: 16 bundles, no bundle
        of it owned until a topic of it is looked up (``public/default`` has none here)."""
        tenant = name.split("/")[0]
        owned = name == up.SYSTEM_NAMESPACE
        return Namespace(name, tenant, False, False, up.INIT_BUNDLES, owned=owned, bundle_data=owned, init=True)

    # ------------------------------------------------------------------ namespaces

    def _regular_namespaces(self) -> list[Namespace]:
        n_ns = max(3, -(-self.o.topics // 400))
        n_tenants = max(2, -(-self.o.topics // 20000))
        tenants = [TENANT_NAMES[i] if i < len(TENANT_NAMES) else f"tenant-{i}" for i in range(n_tenants)]
        out: list[Namespace] = []
        for i in range(n_ns):
            rng = random.Random(f"{self.o.seed}:ns:{i}")
            tenant = tenants[i % n_tenants]
            word = NS_WORDS[i % len(NS_WORDS)]
            if i == 1:
                name, tenant, is_v1 = f"legacy/{CLUSTER}/ns-v1", "legacy", True
            else:
                name, is_v1 = f"{tenant}/{word}-{i}", False
            r = rng.random()
            retention = None if r < 0.5 else ((-1, -1) if r < 0.6 else (rng.choice((60, 1440, 10080)), 1024))
            out.append(
                Namespace(
                    name=name,
                    tenant=tenant,
                    is_v1=is_v1,
                    high=i % 4 == 2,
                    num_bundles=(4, 8, 16)[i % 3],
                    retention=retention,
                    delayed=(True, 1000) if rng.random() < 0.3 else None,
                    max_delay_ms=0 if rng.random() < 0.5 else None,
                    dedup=rng.random() < 0.3,
                    replicated=rng.random() < 0.25,
                    local_policies=(lp := rng.random() < 0.3),
                    split=lp and hash_int(name) % 2 == 0,  # no rng draw: other namespaces stay as they were
                )
            )
        return out

    def _tenant(self, tenant: str, clusters: list[str]) -> Iterator[ZNode]:
        path = f"/admin/policies/{tenant}"
        if (CONFIG, path) not in self._dirs:
            self._dirs.add((CONFIG, path))
            self.live_tenants.append(tenant)
            self._count("tenants")
            yield from self._json(CONFIG, path, pay.tenant_info(clusters, f"{tenant}-admin"), "tenant")

    def _namespace_meta(self, ns: Namespace) -> Iterator[ZNode]:
        """Policies, local policies, ownership and bundle data of a namespace (no topics)."""
        clusters = [CLUSTER, REMOTE_CLUSTER] if ns.replicated else [CLUSTER]
        if ns.has_policies:
            if not ns.init:
                yield from self._tenant(ns.tenant, [CLUSTER, REMOTE_CLUSTER])
            if ns.is_v1:
                yield from self._dir(CONFIG, f"/admin/policies/{ns.name.rsplit('/', 1)[0]}", "policies-dir")
            policies = namespace_policies_doc(
                boundaries=ns.boundaries,
                replication_clusters=sorted(clusters),
                retention_time_minutes=ns.retention[0] if ns.retention else None,
                retention_size_mb=ns.retention[1] if ns.retention else None,
                message_ttl_seconds=ns.ttl,
                delayed_delivery_active=ns.delayed[0] if ns.delayed else None,
                delayed_delivery_tick_ms=ns.delayed[1] if ns.delayed else 1000,
                delayed_delivery_max_delay_ms=ns.max_delay_ms,
                extra={
                    "subscription_types_enabled": [],
                    "properties": {},
                    **({"deduplicationEnabled": True} if ns.dedup else {}),
                },
            )
            path = f"/admin/policies/{ns.name}"
            if not ns.init:
                policies = self._policies_as_written(path, policies, ns.max_delay_ms)
            self._count("namespaces")
            yield from self._json(CONFIG, path, policies, "namespace")
            max_delay = (ns.max_delay_ms or 0) if ns.delayed else None
            if rules.ttl_expires_delayed(ns.ttl, ns.delayed[0] if ns.delayed else None, max_delay):
                self.ttl.append({"namespace": ns.name, "topic": None})
        if ns.local_policies:
            yield from self._json(
                LOCAL, f"/admin/local-policies/{ns.name}", pay.local_policies(ns.bundles), "local-policies"
            )
        ranges = pay.bundle_ranges(ns.bundles)
        eph = not self.o.persistent_ownership
        if ns.owned and not self.extensible:
            for k, rg in enumerate(ranges):
                owner = pay.broker_urls(BROKERS[(hash_int(ns.name) + k) % len(BROKERS)])
                yield from self._json(LOCAL, f"/namespace/{ns.name}/{rg}", owner, "bundle-owner", eph=eph)
        elif self.extensible and self.o.service_unit_state == "metadata-store":
            # ServiceUnitStateMetadataStoreTableViewImpl: persistent values under /service_unit_state/<bundle>. An
            # owned namespace's bundles are Owned by a registered broker; an unowned one's were unloaded (Releasing
            # -> Free: ServiceUnitState's transitions; the value names the broker that released it) or never
            # assigned (no value): both unowned, as the channel reads them
            for k, rg in enumerate(ranges):
                broker = f"{BROKERS[(hash_int(ns.name) + k) % len(BROKERS)]}:8080"
                if ns.owned:
                    state = up.service_unit_state(broker, self.ztime - HOUR_MS)
                elif k % 2 == 0:
                    state = up.service_unit_state_free(broker, self.ztime - HOUR_MS)
                else:
                    continue
                yield from self._json(
                    LOCAL, f"{up.SERVICE_UNIT_STATE_ROOT}/{ns.name}/{rg}", state, "service-unit-state"
                )
        if ns.bundle_data and not self.extensible:  # ELM keeps bundle load data in a (non-persistent) topic
            for k, rg in enumerate(ranges):
                bd = pay.bundle_data(topics=5 + k, rate=float(10 + k))
                yield from self._json(LOCAL, f"/loadbalance/bundle-data/{ns.name}/{rg}", bd, "bundle-data")

    def _namespace(self, ns: Namespace, index: int) -> Iterator[ZNode]:
        rng = random.Random(f"{self.o.seed}:topics:{index}")
        yield from self._namespace_meta(ns)
        n_topics = self._topics_for(index)
        made = 0
        t = 0
        if not self._anchor_placed and ns.high:
            self._anchor_placed = True
            anchor = self._healthy(ns, "watermark-anchor", rng, anchor=True)
            self.anchor_ml = anchor.ml
            yield from self._emit(ns, anchor, rng)
            made += 1
        while made < n_topics:
            local = f"topic-{t:06d}" if rng.random() > 0.12 else f"{rng.choice(HOSTILE)} {t}"
            t += 1
            remaining = n_topics - made
            if remaining >= 2 and rng.random() < 0.08:
                parts = min(remaining, rng.randint(2, 8))
                yield from self._partitioned(ns, local, parts, rng)
                made += parts
            else:
                # the first namespace shows every managed-ledger encoding at least once
                forced = SHOWCASE[t - 1] if index == 0 and t <= len(SHOWCASE) else None
                yield from self._emit(ns, self._healthy(ns, local, rng, encoding=forced), rng)
                yield from self._maybe_schema(ns, local, rng, 0.2)
                made += 1
        for fx in self._fixtures.get(index, []):
            yield from fx(self, ns)

    def _topics_for(self, index: int) -> int:
        n_ns = max(3, -(-self.o.topics // 400))
        base, extra = divmod(self.o.topics, n_ns)
        return base + (1 if index < extra else 0)

    def _partitioned(
        self, ns: Namespace, local: str, parts: int, rng: random.Random, *, schema_versions: int | None = None
    ) -> Iterator[ZNode]:
        enc = encode(local)
        self._count("partitioned_topics")
        yield from self._json(
            CONFIG,
            f"/admin/partitioned-topics/{ns.name}/persistent/{enc}",
            pay.partitioned_topic(parts),
            "partitioned-topic",
        )
        for p in range(parts):
            yield from self._emit(ns, self._healthy(ns, f"{local}-partition-{p}", rng), rng)
        yield from self._maybe_schema(ns, local, rng, 0.5, versions=schema_versions)

    # ------------------------------------------------------------------ topics

    def _ml(self, ns: Namespace, local: str) -> MlName:
        return MlName(ns.name, encode(local), local, ns.is_v1)

    def _closed(
        self,
        ns: Namespace,
        topic: Topic,
        rng: random.Random,
        ages: list[int],
        *,
        version: int | None = None,
        size_each: int | None = None,
        entries: int | None = None,
        gaps: bool = True,
    ) -> list[int]:
        """Append closed ledgers with the given close ages (oldest first) and their BookKeeper metadata."""
        ids = []
        for age in ages:
            lid = self._alloc(ns, rng, gaps=gaps)
            ids.append(lid)
            n = entries if entries is not None else rng.randint(100, 50_000)
            size = size_each if size_each is not None else n * rng.randint(100, 2_000)
            closed_at = self.now - age
            ver, with_ctime = (version, True) if version is not None else pick_version(rng)
            ctime = closed_at - rng.randint(10 * MINUTE_MS, 4 * HOUR_MS)
            topic.ledgers.append(LedgerInfo(lid, n, size, closed_at))
            topic.bk[lid] = BkSpec(
                "CLOSED",
                size,
                n - 1,
                ctime if with_ctime else None,
                ver,
                ml_custom(topic.ml.ml_name),
                rng.choice(("CRC32C", "CRC32C", "CRC32")),
            )
        return ids

    def _open(
        self,
        ns: Namespace,
        topic: Topic,
        rng: random.Random,
        *,
        bk_entries: int = 0,
        age: int | None = None,
        lid: int | None = None,
    ) -> int:
        """Append the current ledger (no entries/size/timestamp in ZooKeeper). With ``bk_entries`` > 0 its
        BookKeeper metadata is CLOSED with that many entries (the topic was unloaded without a rollover)."""
        lid = lid if lid is not None else self._alloc(ns, rng)
        ctime = self.now - (age if age is not None else rng.randint(10 * MINUTE_MS, 6 * HOUR_MS))
        topic.ledgers.append(LedgerInfo(lid, None, None, 0))
        custom = ml_custom(topic.ml.ml_name)
        if bk_entries > 0:
            size = bk_entries * 700
            topic.bk[lid] = BkSpec("CLOSED", size, bk_entries - 1, ctime, 3, custom)
        else:
            topic.bk[lid] = BkSpec("OPEN", 0, -1, ctime, 3, custom)
        return lid

    def _cursor_ledger(self, ns: Namespace, topic: Topic, enc_cursor: str, rng: random.Random) -> int:
        lid = self._alloc(ns, rng)
        ctime = self.now - rng.randint(5 * MINUTE_MS, 3 * HOUR_MS)
        topic.bk[lid] = BkSpec("OPEN", 0, -1, ctime, 3, ml_custom(topic.ml.ml_name, enc_cursor))
        return lid

    def _user_cursor(
        self,
        ns: Namespace,
        topic: Topic,
        name: str,
        rng: random.Random,
        *,
        with_ledger: bool | None = None,
        last_active_age: int | None = None,
    ) -> Cursor:
        """A healthy subscription: mark-delete at the tail, no ranges, active recently."""
        last = topic.ledgers[-1].ledger_id
        use_ledger = with_ledger if with_ledger is not None else rng.random() < 0.3
        cl = self._cursor_ledger(ns, topic, encode(name), rng) if use_ledger else -1
        age = last_active_age if last_active_age is not None else rng.randint(MINUTE_MS, 6 * HOUR_MS)
        props: tuple[tuple[str, str], ...] = (("app", "billing"),) if rng.random() < 0.1 else ()
        info = ManagedCursorInfo(cl, (last, -1), (), (), self.now - age, (), props)
        return Cursor(name, info, self._compression(rng, allow_text=False))

    def _compression(self, rng: random.Random, *, allow_text: bool) -> str:
        r = rng.random()
        if r < 0.70:
            return "NONE"
        if r < 0.82:
            return "LZ4"
        if r < 0.92:
            return "ZSTD"
        if r < 0.95:
            return "ZLIB"
        if r < 0.97:
            return "SNAPPY"
        return "text" if allow_text else "LZ4"

    def _healthy(
        self, ns: Namespace, local: str, rng: random.Random, *, anchor: bool = False, encoding: str | None = None
    ) -> Topic:
        topic = Topic(self._ml(ns, local))
        if encoding == "empty" or (encoding is None and not anchor and rng.random() < 0.01):
            topic.encoding = "empty"
            return topic
        topic.encoding = encoding or ("NONE" if anchor else self._compression(rng, allow_text=True))
        # the anchor is the first topic with high ids: 3 consecutive ids straddle the layout edge 2^31-1
        n_closed = 3 if anchor else rng.choices((0, 1, 2, 3, 4), (15, 30, 30, 15, 10))[0]
        if not anchor and rng.random() < 0.05:  # offloaded history: one gone from BookKeeper, one still there
            for bk_deleted in (True, False):
                lid = self._alloc(ns, rng)
                closed_at = self.now - rng.randint(20 * DAY_MS, 60 * DAY_MS)
                entries = rng.randint(1_000, 50_000)
                off = OffloadInfo(True, bk_deleted, closed_at + 4 * HOUR_MS)
                topic.ledgers.append(LedgerInfo(lid, entries, entries * 500, closed_at, off))
                if not bk_deleted:
                    topic.bk[lid] = BkSpec(
                        "CLOSED", entries * 500, entries - 1, closed_at - HOUR_MS, 3, ml_custom(topic.ml.ml_name)
                    )
        newest = rng.randint(HOUR_MS, 2 * DAY_MS)
        ages = sorted((newest + k * rng.randint(6 * HOUR_MS, 5 * DAY_MS) for k in range(n_closed)), reverse=True)
        self._closed(ns, topic, rng, ages, gaps=not anchor)
        self._open(ns, topic, rng, lid=ANCHOR_ID if anchor else None)
        if anchor:
            return topic
        for _ in range(rng.choices((0, 1, 2, 3), (25, 45, 20, 10))[0]):
            name = rng.choice(SUB_NAMES) if rng.random() < 0.3 else f"sub-{rng.randint(0, 9)}"
            if any(c.name == name for c in topic.cursors):
                continue
            topic.cursors.append(self._user_cursor(ns, topic, name, rng))
        if ns.dedup:
            topic.cursors.append(self._system_cursor(topic, "pulsar.dedup", rng))
        if ns.replicated:
            topic.cursors.append(self._system_cursor(topic, f"pulsar.repl.{REMOTE_CLUSTER}", rng))
        if rng.random() < 0.05 and len(topic.ledgers) > 1:
            topic.cursors.append(self._compaction_cursor(ns, topic, rng))
        if ns.delayed and topic.cursors and not topic.cursors[0].name.startswith("pulsar.") and rng.random() < 0.2:
            self._add_bucket(ns, topic, topic.cursors[0], rng)
        return topic

    def _system_cursor(self, topic: Topic, name: str, rng: random.Random, *, age: int | None = None) -> Cursor:
        last = topic.ledgers[-1].ledger_id
        if age is None:  # recent or long idle, never near the 7-day threshold
            age = rng.randint(MINUTE_MS, 6 * HOUR_MS) if rng.random() < 0.5 else rng.randint(10 * DAY_MS, 40 * DAY_MS)
        active_age = age
        return Cursor(name, ManagedCursorInfo(-1, (last, -1), (), (), self.now - active_age), "NONE")

    def _compaction_cursor(self, ns: Namespace, topic: Topic, rng: random.Random, *, age: int | None = None) -> Cursor:
        lid = self._alloc(ns, rng)
        src = topic.ledgers[-2]
        entries = rng.randint(10, 5_000)
        custom = compacted_custom(topic.ml.topic, src.ledger_id, (src.entries or 1) - 1)
        ctime = self.now - rng.randint(HOUR_MS, 10 * DAY_MS)
        topic.bk[lid] = BkSpec("CLOSED", entries * 300, entries - 1, ctime, 3, custom, "CRC32")
        cur = self._system_cursor(topic, "__compaction", rng, age=age)
        props = (("CompactedTopicLedger", lid),)
        info = ManagedCursorInfo(-1, cur.info.mark_delete, (), props, cur.info.last_active_ms)
        return Cursor("__compaction", info, "NONE")

    def _add_bucket(self, ns: Namespace, topic: Topic, cursor: Cursor, rng: random.Random) -> int:
        lid = self._alloc(ns, rng)
        first, last = topic.ledgers[0].ledger_id, topic.ledgers[-1].ledger_id
        key = f"#pulsar.internal.delayed.bucket_{first}_{last}"
        custom = bucket_custom(topic.ml.ml_name, topic.ml.topic, encode(cursor.name), key)
        topic.bk[lid] = BkSpec("CLOSED", 4_096, 3, self.now - rng.randint(HOUR_MS, 5 * DAY_MS), 3, custom)
        info = cursor.info
        cursor.info = ManagedCursorInfo(
            info.cursors_ledger_id,
            info.mark_delete,
            info.individual_deleted,
            info.properties,
            info.last_active_ms,
            info.batched_deletion,
            (*info.cursor_properties, (key, str(lid))),
        )
        return lid

    # ------------------------------------------------------------------ emit one topic + its ground truth

    def _emit(self, ns: Namespace, topic: Topic, rng: random.Random, *, garbage: bool = False) -> Iterator[ZNode]:
        ml_path = f"/managed-ledgers/{topic.ml.ml_name}"
        info = ManagedLedgerInfo(tuple(topic.ledgers))
        if garbage:
            # a compression header naming LZ4 with a payload that does not decompress: never decodable
            data = b"\x47\x78\x00\x00\x00\x04\x08\x01\x10\x40" + hashlib.sha256(ml_path.encode()).digest()
            enc, obj = "garbage", None
        elif topic.encoding == "empty":
            data, enc, obj = b"", "empty", info
        elif topic.encoding == "text":
            data, enc, obj = encode_managed_ledger_info(info, text=True), "text", info
        else:
            plain = encode_managed_ledger_info(info) + self._newer_fields(ml_path)
            enc = self._threshold(self._codec(topic.encoding), plain)
            data, obj = wrap(plain, enc), info
        self._count("managed_ledgers")
        yield from self._node(LOCAL, ml_path, data, kind="managed-ledger", encoding=enc, obj=obj)
        self._dirs.add((LOCAL, ml_path))  # parent of its cursors while they are emitted
        for c in topic.cursors:
            cpath = f"{ml_path}/{encode(c.name)}"
            plain = encode_cursor_info(c.info) + self._newer_fields(cpath)
            codec = self._threshold(self._codec(c.compression), plain)
            self._count("cursors")
            yield from self._node(LOCAL, cpath, wrap(plain, codec), kind="cursor", encoding=codec, obj=c.info)
        self._dirs.discard((LOCAL, ml_path))
        for lid in sorted(topic.bk):
            yield from self._ledger_node(lid, topic.bk[lid], rng)
        if not garbage:
            self._topic_truth(ns, topic, ml_path)

    def _codec(self, showcase: str) -> str:
        """The codec a value is written with: the configured broker codec, else the showcase mix."""
        return self.o.metadata_compression.upper() if self.o.metadata_compression is not None else showcase

    def _threshold(self, codec: str, plain: bytes) -> str:
        """MetaStoreImpl compresses only values longer than the threshold (PIP-270)."""
        return codec if len(plain) > self.o.compression_threshold else "NONE"

    @staticmethod
    def _newer_fields(path: str) -> bytes:
        """One value in 40 carries a field this reader does not know (field 100, varint), as a newer broker's
        may: protobuf readers skip unknown fields, upstream's and ours. Chosen by path, not by the generator's
        random stream, so the rest of the cluster is the same with or without it."""
        return b"\xa0\x06\x01" if hash_int(path) % 40 == 0 else b""

    @staticmethod
    def _policies_as_written(path: str, doc: dict[str, Any], max_delay_ms: int | None) -> dict[str, Any]:
        """One namespace in 5 has its policies as an older broker wrote them and one in 5 as a newer broker writes
        them; the rest as today's. Chosen by path, not by the generator's random stream, so the rest of the cluster
        is the same. Every variant reads as the same values (docs/formats.md, namespace policies), so the findings
        do not change. An older broker had no maxDeliveryDelayInMillis: only a namespace whose value is 0 (or
        absent) can have been written by one."""
        variant = hash_int(path) % 5
        if variant == 1 and not max_delay_ms:
            return older_broker_policies(doc)
        if variant == 2:
            return newer_broker_policies(doc)
        return doc

    def _topic_truth(self, ns: Namespace, topic: Topic, ml_path: str) -> None:
        readable = {
            lid: rules.BkFacts(lid, s.last_entry_id, s.length, None if s.version == 1 else s.ctime_ms)
            for lid, s in topic.bk.items()
            if not s.truncated
        }
        name = topic.ml.topic
        # a ledger znode that exists but does not decode is not missing (only an absent one is dangling)
        present = set(topic.bk)
        for li in topic.ledgers:
            self._ref(li.ledger_id)
            gone = li.offload is not None and li.offload.bookkeeper_deleted
            if li.ledger_id not in present and not gone:
                self.dangling.append(_dangling(li.ledger_id, "data", name, None, ml_path))
        for c in topic.cursors:
            cpath = f"{ml_path}/{encode(c.name)}"
            refs: list[tuple[int, str]] = []
            if c.info.cursors_ledger_id != -1:
                refs.append((c.info.cursors_ledger_id, "cursor"))
            for key, value in c.info.properties:
                if key == "CompactedTopicLedger":
                    refs.append((value, "compacted"))
            for key, value_s in c.info.cursor_properties:
                if key.startswith("#pulsar.internal.delayed.bucket_"):
                    refs.append((int(value_s), "bucket"))
            for lid, ref in refs:
                self._ref(lid)
                if lid not in present:
                    self.dangling.append(_dangling(lid, ref, name, c.name if ref == "cursor" else None, cpath))
        rt, rs, _ = rules.effective_retention(*(ns.retention or (None, None))) if ns.has_policies else (0, 0, "")
        facts = rules.TopicFacts(
            ml=topic.ml,
            ledgers=tuple(topic.ledgers),
            cursors=tuple((c.name, c.info) for c in topic.cursors),
            bk=readable,
            owned=ns.owned,
            retention_time_minutes=rt,
            retention_size_mb=rs,
        )
        # Pulsar opens its own managed ledgers (events topics, transaction stores, pulsar/system): never unloaded
        trim = (
            rules.Trim((), ())
            if rules.is_system_topic(topic.ml)
            else rules.expired_retention(facts, self.now, self.ztime)
        )
        if trim.ledger_ids:
            entry: dict[str, Any] = {
                "topic": name,
                "ledger_ids": list(trim.ledger_ids),
                "after_retention_ledger_ids": list(trim.after_retention),
            }
            # __change_events holds topic policies: the effective retention is unknown to a metadata-only audit
            entry["retention_unknown"] = ns.topic_policies
            if ns.topic_policies:
                self.retention_unknown.append(
                    {"topic": name, "namespace": ns.name, "topic_policy": self.topic_policies.get(name)}
                )
            if self.extensible and self.o.service_unit_state != "metadata-store":
                self.ownership_unknown.append(entry)  # ELM: ownership lives in a system topic the audit cannot read
            else:
                self.retention.append(entry)
        self.ack.extend(rules.ack_holes(facts))
        in_ledgers = rules.ranges_in_ledgers(facts)
        if in_ledgers:
            self.ranges_in_ledgers[topic.ml.namespace] = self.ranges_in_ledgers.get(topic.ml.namespace, 0) + in_ledgers
        self.inactive.extend(rules.inactive_subscriptions(facts, self.now, self.ztime))

    def _maybe_schema(
        self, ns: Namespace, local: str, rng: random.Random, p: float, *, versions: int | None = None
    ) -> Iterator[ZNode]:
        if ns.is_v1 or (versions is None and rng.random() >= p):
            return  # V1 schema ids drop the cluster segment (ambiguous owner): V1 topics get no schema
        n = versions if versions is not None else rng.randint(1, 3)
        yield from self._schema(ns, local, n, rng)

    def _schema(
        self, ns: Namespace, local: str, n: int, rng: random.Random, *, missing: int | None = None
    ) -> Iterator[ZNode]:
        ml = self._ml(ns, local)
        sid = schema_id_for(ml)
        path = f"/schemas/{sid}"
        entries = []
        for v in range(n):
            lid = self._alloc(ns, rng)
            h = hashlib.sha256(f"{sid}:{v}".encode()).digest()
            entries.append(SchemaIndexEntry(v, lid, 0, h))
            self._ref(lid)
            if v == missing:
                self.dangling.append(_dangling(lid, "schema", None, None, path))
                continue
            ctime = self.now - (n - v) * rng.randint(DAY_MS, 5 * DAY_MS)
            yield from self._ledger_node(lid, BkSpec("CLOSED", 512, 0, ctime, 3, schema_custom(sid)), rng)
        loc = SchemaLocator(entries[-1], tuple(entries))
        self._count("schemas")
        yield from self._node(LOCAL, path, encode_schema_locator(loc), kind="schema", encoding="binary", obj=loc)

    # ------------------------------------------------------------------ fixtures (defects and controls)

    def _plan_fixtures(self, n_ns: int) -> None:
        from pulsar_ops.testing import model_fixtures as fx

        plan: list[tuple[str, Fixture]] = []
        d = self.o.defects
        for j in range(self.per):
            if "orphan-ledger" in d:
                plan.append(("orphan", fx.orphan_fixture(j)))
            if "dangling-ledger" in d:
                plan.append(("dangling", fx.dangling_fixture(j)))
            if "ack-holes" in d:
                plan.append(("ack", fx.ack_holes_fixture(j)))
            if "inactive-subscription" in d:
                plan.append(("inactive", fx.inactive_fixture(j)))
            if "znode-leak" in d:
                plan.append(("leak", fx.live_namespace_leak_fixture(j)))
        high = [i for i in range(n_ns) if i % 4 == 2]
        first: set[str] = set()
        for k, (kind, f) in enumerate(plan):
            idx = (k * 7 + 3) % n_ns
            if kind in ("orphan", "dangling", "leak") and idx == 1:
                idx = 0  # these carry schemas: not in the V1 namespace
            if kind not in first:
                first.add(kind)
                if kind == "orphan" and high:
                    idx = high[0]  # orphans above 2^31 always exist
                elif kind in ("ack", "inactive"):
                    idx = 1  # the V1 namespace always has some
            self._fixtures.setdefault(idx, []).append(f)

    def _system_namespace(self) -> Iterator[ZNode]:
        from pulsar_ops.testing import model_fixtures as fx

        yield from fx.system_namespace(self)

    def _dedicated_namespaces(self) -> Iterator[ZNode]:
        from pulsar_ops.testing import model_fixtures as fx

        d = self.o.defects
        if "expired-retention-unloaded" in d:
            yield from fx.retention_namespaces(self)
        if "ttl-expires-delayed" in d:
            yield from fx.ttl_namespaces(self)
        if "znode-leak" in d:
            yield from fx.leak_namespaces(self)
        if "corrupt" in d or "corrupt-ledgers" in d:
            yield from fx.corrupt_namespace(self)

    def _orphans_above_watermark(self, regular: list[Namespace]) -> Iterator[ZNode]:
        rng = random.Random(f"{self.o.seed}:above")
        owner = self.anchor_ml
        for j in range(self.per):
            lid = ANCHOR_ID + 1 + j
            yield from self.orphan(
                lid, "data", owner.ml_name, True, owner.namespace, self.now - 30 * DAY_MS, ml_custom(owner.ml_name), rng
            )

    def orphan(
        self,
        lid: int,
        kind: str,
        owner: str | None,
        owner_exists: bool,
        owner_ns: str | None,
        ctime: int | None,
        custom: tuple[tuple[str, bytes], ...],
        rng: random.Random,
        *,
        version: int = 3,
    ) -> Iterator[ZNode]:
        """Write an unreferenced ledger and remember what the audit must say about it."""
        length = rng.randint(1, 400) * MIB // 8
        spec = BkSpec("CLOSED", length, rng.randint(10, 9_000), ctime, version, custom)
        self.orphans.append(_Orphan(lid, kind, owner, owner_exists, owner_ns, None if version == 1 else ctime))
        yield from self._ledger_node(lid, spec, rng)

    # ------------------------------------------------------------------ ground truth

    def ground_truth(self) -> dict[str, Any]:
        if not self._done:
            raise RuntimeError("iterate ClusterModel.znodes() to the end before asking for the ground truth")
        ledgers_complete = "/ledgers" not in self.incomplete_scopes
        orphans = []
        for o in self.orphans:
            ns_scope = f"/managed-ledgers/{o.owner_namespace}" if o.owner_namespace else None
            complete = ledgers_complete and (ns_scope is None or ns_scope not in self.incomplete_scopes)
            # aged from its znode's ctime (ZooKeeper stamps it at seeding time), or from its metadata ctime when
            # that is later (pulsar_ops/repair/rules.py orphan_created_ms: a later metadata stamp can only delay)
            ctime = self.ztime if o.ctime_ms is None else max(self.ztime, o.ctime_ms)
            plannable, _ = rules.orphan_plannable(
                kind=o.kind,
                ctime_ms=ctime,
                ledger_id=o.ledger_id,
                watermark=self.watermark,
                now_ms=self.now,
                scopes_complete=complete and not o.blocked,
            )
            orphans.append(
                {
                    "ledger_id": o.ledger_id,
                    "kind": o.kind,
                    "owner": o.owner,
                    "owner_exists": o.owner_exists,
                    "plannable": plannable,
                    "severity": "info" if o.kind == "unowned" else "warning",
                }
            )
        leak_old = self.now - self.ztime >= MIN_AGE_MS
        leaks = [
            {"path": lk.path, "leak": lk.leak, "plannable": leak_old and not lk.holds_ledgers} for lk in self.leaks
        ]
        expected: dict[str, list[dict[str, Any]]] = {
            "orphan-ledger": sorted(orphans, key=lambda x: x["ledger_id"]),
            "dangling-ledger": sorted(self.dangling, key=lambda x: (x["ledger_id"], x["ref"], x["path"])),
            "znode-leak": sorted(leaks, key=lambda x: x["path"]),
            "expired-retention-unloaded": sorted(self.retention, key=lambda x: x["topic"]),
            "ack-holes": sorted(self.ack, key=lambda x: (x["topic"], x["subscription"])),
            "inactive-subscription": sorted(self.inactive, key=lambda x: (x["topic"], x["subscription"])),
            "ttl-expires-delayed": sorted(self.ttl, key=lambda x: (x["namespace"], x["topic"] or "")),
            "scrape-incomplete": [{"path": p} for p in sorted(self.incomplete_scopes)],
            "undecodable-znode": [{"path": p} for p in sorted(self.undecodable)],
            # Pulsar's own metadata whose owner looks gone: the seeded cluster writes none (pulsar_owned is whole)
            "system-metadata": [],
        }
        counts: dict[str, int] = {k: len(v) for k, v in expected.items()}
        counts.update(sorted(self.counts.items()))
        counts["znodes"] = self.counts.get("znodes_local", 0) + self.counts.get("znodes_config", 0)
        return {
            "seed": self.o.seed,
            "topics": self.o.topics,
            "now_ms": self.now,
            "options": {
                "defects": sorted(self.o.defects),
                "persistent_ownership": self.o.persistent_ownership,
                "ledgers_root": self.o.ledgers_root,
                "znode_time_ms": self.ztime,
                "min_age_ms": MIN_AGE_MS,
                "inactive_after_ms": INACTIVE_AFTER_MS,
                "broker": dict(BROKER_DEFAULTS),
                "watermark": self.watermark,
                "load_manager": self.o.load_manager,
                "service_unit_state": self.o.service_unit_state,
            },
            "expected": expected,
            # what Pulsar writes for itself (never a finding), each with the upstream file it follows
            "pulsar_owned": self.pulsar_owned,
            # unloaded topics whose effective retention is unknown (topic policies in __change_events,
            # SystemTopicBasedTopicPoliciesService): reported, never trimmed offline; topic_policy = what is really set
            "retention_unknown": sorted(self.retention_unknown, key=lambda x: x["topic"]),
            # ELM with ownership in the service-unit-state system topic: a metadata-only audit cannot judge these
            # (they would be expired-retention-unloaded were their bundles known to be unowned)
            "ownership_unknown": sorted(self.ownership_unknown, key=lambda x: x["topic"]),
            "coverage": {"ack-ranges-in-cursor-ledgers": dict(sorted(self.ranges_in_ledgers.items()))},
            "counts": counts,
        }


# Policies keys a Pulsar 2.7-era broker did not write (its Policies class had no such field).
POLICY_KEYS_SINCE_2_7 = frozenset(
    {
        "subscription_types_enabled",
        "properties",
        "resource_group_name",
        "entryFilters",
        "allowed_clusters",
        "allowed_topic_properties_for_metrics",
        "migrated",
        "dispatcherPauseOnAckStatePersistentEnabled",
        "offload_threshold_in_seconds",
        "max_topics_per_namespace",
        "max_subscriptions_per_topic",
        "deduplicationSnapshotIntervalSeconds",
    }
)


def older_broker_policies(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as a Pulsar 2.7-era broker wrote it: no key added since (``POLICY_KEYS_SINCE_2_7``, and
    ``delayed_delivery_policies.maxDeliveryDelayInMillis``), and its primitive ``int`` fields written as 0 when
    unset (``message_ttl_in_seconds``, ``subscription_expiration_time_minutes`` and the per-topic limits), which
    today's broker keeps as null and omits."""
    old = {k: v for k, v in doc.items() if k not in POLICY_KEYS_SINCE_2_7}
    for key, unset in (
        ("message_ttl_in_seconds", 0),
        ("subscription_expiration_time_minutes", 0),
        ("max_producers_per_topic", 0),
        ("max_consumers_per_topic", 0),
        ("max_consumers_per_subscription", 0),
        ("max_unacked_messages_per_consumer", -1),
        ("max_unacked_messages_per_subscription", -1),
        ("compaction_threshold", 0),
    ):
        if old.get(key) is None:
            old[key] = unset
    delayed = old.get("delayed_delivery_policies")
    if isinstance(delayed, dict):
        old["delayed_delivery_policies"] = {k: v for k, v in delayed.items() if k != "maxDeliveryDelayInMillis"}
    return old


def newer_broker_policies(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` as a newer broker may write it: keys this reader does not know, of every JSON type, at the top level
    and inside the nested objects it reads (a broker ignores what its Policies class does not have)."""
    new = dict(doc)
    new.update(
        {
            "allowed_clusters": list(doc.get("replication_clusters", [])),
            "migrated": False,
            "x_future_policy": {"enabled": True, "levels": [1, 2.5, "three", None, {"deep": []}]},
            "x_future_limit": 2**40,
            "x_future_ratio": 0.75,
            "x_future_mode": "Adaptive",
            "x_future_flag": False,
            "x_future_list": [],
        }
    )
    for key, extra in (
        ("retention_policies", {"x_future_retention_mode": "tiered"}),
        ("delayed_delivery_policies", {"x_future_bucket_count": 50, "x_future_buckets": {"size": [1, 2]}}),
        ("bundles", {"x_future_split": {"algorithm": "range_equally_divide", "limits": None}}),
        ("auth_policies", {"x_future_auth": ["role-a"]}),
    ):
        if isinstance(new.get(key), dict):
            new[key] = {**new[key], **extra}
    return new


def _dangling(lid: int, ref: str, topic: str | None, sub: str | None, path: str) -> dict[str, Any]:
    return {"ledger_id": lid, "ref": ref, "topic": topic, "subscription": sub, "path": path}


def hash_int(s: str) -> int:
    return int.from_bytes(hashlib.blake2b(s.encode(), digest_size=4).digest(), "big")


def build(options: SeedOptions) -> tuple[list[ZNode], dict[str, Any]]:
    """Generate everything in memory (small clusters, tests): (znodes in write order, ground truth)."""
    model = ClusterModel(options)
    nodes = list(model.znodes())
    return nodes, model.ground_truth()


__all__ = ["ClusterModel", "Namespace", "SeedOptions", "Topic", "ZNode", "build"]
