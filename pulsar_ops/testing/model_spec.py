"""Options, constants and the znode record of the synthetic cluster model (pure: no kazoo).

``SeedOptions`` drives both the pure generator (``cluster_model``) and the ZooKeeper writer (``seeder``).
``ZNode`` is one znode the model wants written: its store (``local`` or ``config``), path, exact bytes and,
for round-trip tests, the typed object the bytes encode.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pulsar_ops.errors import ConfigError
from pulsar_ops.findings import DETECTIONS, STORAGE_DETECTIONS
from pulsar_ops.formats.compression import CODECS

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
MIB = 1024 * 1024

# The detection parameters the ground truth is computed with (docs/detections.md defaults).
MIN_AGE_MS = 24 * HOUR_MS
INACTIVE_AFTER_MS = 7 * DAY_MS
BROKER_DEFAULTS: dict[str, int | bool] = {
    "defaultRetentionTimeInMinutes": 0,
    "defaultRetentionSizeInMB": 0,
    "ttlDurationDefaultInSeconds": 0,
    "delayedDeliveryEnabled": True,
    "delayedDeliveryMaxDelayInMillis": 0,
    "managedLedgerMaxUnackedRangesToPersistInMetadataStore": 1000,
    "managedLedgerMaxUnackedRangesToPersist": 10000,
}
NEAR_CAP_FRACTION = 0.8

# Defect kinds. The first seven are on by default (``--defects all``); the corrupt kinds are opt-in: they plant
# undecodable znodes (``corrupt``: a managed-ledger info, whose ledgers must not be planned; ``corrupt-ledgers``: a
# referenced ledger's metadata, which must not be called missing), each an ``undecodable-znode`` finding.
DEFECT_KINDS: tuple[str, ...] = tuple(
    d
    for d in DETECTIONS
    # system-metadata: Pulsar's own metadata whose owner looks gone (issue 33); not planted by the seeder yet
    if d not in ("scrape-incomplete", "undecodable-znode", "system-metadata", *STORAGE_DETECTIONS)
)
CORRUPT_KINDS: tuple[str, ...] = ("corrupt", "corrupt-ledgers")
ALL_KINDS: tuple[str, ...] = DEFECT_KINDS + CORRUPT_KINDS
DEFAULT_DEFECTS: frozenset[str] = frozenset(DEFECT_KINDS)

LOAD_MANAGERS: tuple[str, ...] = ("modular", "extensible")
SERVICE_UNIT_STATE_STORES: tuple[str, ...] = ("system-topic", "metadata-store")

LOCAL = "local"
CONFIG = "config"


def parse_defects(spec: str) -> frozenset[str]:
    """``all`` (the seven detection kinds), ``none``, or a comma list of kinds; ``all,corrupt`` combines.

    Unknown names raise ConfigError naming the valid ones.
    """
    out: set[str] = set()
    for raw in spec.split(","):
        name = raw.strip()
        if not name or name == "none":
            continue
        if name == "all":
            out.update(DEFECT_KINDS)
        elif name in ALL_KINDS:
            out.add(name)
        else:
            raise ConfigError(
                f"unknown defect kind {name!r}",
                hint=f"use --defects all|none or a comma list of: {', '.join(ALL_KINDS)}",
            )
    return frozenset(out)


@dataclass(frozen=True)
class SeedOptions:
    """What to generate. ``now_ms`` defaults to the wall clock; ``znode_time_ms`` is when ZooKeeper stamps the
    znodes (ctime/mtime), i.e. the seeding wall clock: it decides the age of an orphan ledger (counted from its
    znode's ctime, or its metadata ctime when that is later) and of a leaked subtree. Set ``now_ms`` ahead of the
    wall clock (e.g. +25 h) and audit with the same ``--now`` to make leaks and orphans old enough to plan.
    """

    topics: int = 100
    seed: int = 1
    defects: frozenset[str] = DEFAULT_DEFECTS
    now_ms: int | None = None
    znode_time_ms: int | None = None
    persistent_ownership: bool = False
    keep_model: bool = False
    ledgers_root: str = "/ledgers"
    batch_size: int = 1000
    # As a broker with managedLedgerInfoCompressionType / managedCursorInfoCompressionType = this codec and the
    # ...CompressionThresholdInBytes = ``compression_threshold`` writes (MetaStoreImpl.compressLedgerInfo: only
    # values longer than the threshold get the header). None: the mixed showcase (most plain, some of each codec).
    metadata_compression: str | None = None
    compression_threshold: int = 0
    # Also write every bookie's ledger directories under this directory (testing/bookie_dirs.py), with injected
    # storage defects unless ``defects`` is empty.
    bookie_dirs: str | None = None
    # The brokers' load manager: ``modular`` (ModularLoadManagerImpl: LocalBrokerData registrations, ownership
    # znodes under /namespace) or ``extensible`` (ExtensibleLoadManagerImpl, PIP-192: BrokerLookupData
    # registrations, no /namespace znodes). ``service_unit_state``: where ELM keeps bundle ownership, the system
    # topic (``system-topic``, upstream's default) or the metadata store (``metadata-store``: /service_unit_state).
    load_manager: str = "modular"
    service_unit_state: str = "system-topic"

    def __post_init__(self) -> None:
        if self.topics < 1:
            raise ConfigError(f"--topics must be >= 1, got {self.topics}", hint="pass --topics N with N >= 1")
        unknown = set(self.defects) - set(ALL_KINDS)
        if unknown:
            raise ConfigError(
                f"unknown defect kinds: {', '.join(sorted(unknown))}",
                hint=f"valid kinds: {', '.join(ALL_KINDS)}",
            )
        if self.metadata_compression is not None and self.metadata_compression.upper() not in CODECS:
            raise ConfigError(
                f"unknown metadata compression {self.metadata_compression!r}",
                hint=f"use one of {', '.join(CODECS)} (Pulsar's managedLedgerInfoCompressionType values)",
            )
        if self.load_manager not in LOAD_MANAGERS:
            raise ConfigError(
                f"unknown load manager {self.load_manager!r}", hint=f"use --load-manager {'|'.join(LOAD_MANAGERS)}"
            )
        if self.service_unit_state not in SERVICE_UNIT_STATE_STORES:
            raise ConfigError(
                f"unknown service-unit-state store {self.service_unit_state!r}",
                hint=f"use --service-unit-state {'|'.join(SERVICE_UNIT_STATE_STORES)}",
            )
        if not self.ledgers_root.startswith("/") or self.ledgers_root != self.ledgers_root.rstrip("/"):
            raise ConfigError(f"bad ledgers root {self.ledgers_root!r}", hint="use an absolute path like /ledgers")

    def resolved_now_ms(self) -> int:
        return self.now_ms if self.now_ms is not None else int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class ZNode:
    """One znode to write. ``encoding`` says how ``data`` was produced (NONE/LZ4/ZSTD/ZLIB/SNAPPY/text/empty
    for managed-ledger and cursor infos, v1/v2/v3 for ledger metadata, json, text, garbage, truncated, or ''
    for empty directory nodes). ``obj`` is the typed value encoded (dataclass or JSON dict), or None."""

    store: str
    path: str
    data: bytes = b""
    ephemeral: bool = False
    kind: str = "other"
    encoding: str = ""
    obj: object = field(default=None, compare=False)
