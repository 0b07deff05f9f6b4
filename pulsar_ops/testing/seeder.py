"""Write the synthetic cluster of ``cluster_model`` into ZooKeeper (kazoo allowed here).

``seed_cluster(local, config, options)`` streams the model's znodes into batched multi-op transactions,
several in flight at once on one session (ZooKeeper applies a session's requests in order, so a parent
created in an earlier batch exists before its children), and checks every per-operation result: a failed
kazoo transaction does not raise, ``commit`` returns exception objects. It refuses a non-empty target.

Ownership (``/namespace/...``), broker registrations and bookie registrations are EPHEMERAL unless
``options.persistent_ownership``: they vanish when the seeding session closes, as in a real cluster whose
brokers stopped. Use persistent ownership when the seeding process exits before the audit (the CLI).
"""

from __future__ import annotations

import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.interfaces import IAsyncResult

from pulsar_ops.errors import SeedError, SeedTargetNotEmptyError, ZooKeeperError
from pulsar_ops.formats.managed_ledger import ManagedLedgerInfo
from pulsar_ops.testing.bookie_dirs import ledgers_of, write_bookie_dirs
from pulsar_ops.testing.cluster_model import ClusterModel
from pulsar_ops.testing.model_spec import CONFIG, LOCAL, SeedOptions, ZNode

__all__ = ["SeedModel", "SeedOptions", "SeedResult", "seed_cluster"]

MAX_BATCH_BYTES = 512 * 1024  # well under jute.maxbuffer (1 MiB) per multi request
MAX_IN_FLIGHT = 8

Progress = Callable[[int], None]


@dataclass
class SeedModel:
    """Every znode written, in write order (store, path, exact bytes, typed object)."""

    znodes: list[ZNode] = field(default_factory=list)
    _index: dict[tuple[str, str], ZNode] | None = None

    def get(self, store: str, path: str) -> ZNode:
        if self._index is None:
            self._index = {(z.store, z.path): z for z in self.znodes}
        return self._index[(store, path)]

    def of_kind(self, kind: str) -> list[ZNode]:
        return [z for z in self.znodes if z.kind == kind]


@dataclass
class SeedResult:
    ground_truth: dict[str, Any]
    znodes_written: int
    seconds: float
    model: SeedModel | None = None

    @property
    def znodes_per_second(self) -> float:
        return self.znodes_written / self.seconds if self.seconds > 0 else 0.0


_INT = struct.Struct("!i")
_MULTI_HEADER = struct.Struct("!iBi")
_CREATE_HEADER = _MULTI_HEADER.pack(1, False, -1)
_MULTI_END = _MULTI_HEADER.pack(-1, True, -1)
_OPEN_ACL = _INT.pack(1) + _INT.pack(31) + _INT.pack(5) + b"world" + _INT.pack(6) + b"anyone"
_FLAGS = (_INT.pack(0), _INT.pack(1))  # persistent, ephemeral


class _RawCreateMulti:
    """A multi request of creates (OPEN_ACL_UNSAFE) serialized once, in one pass, by us.

    kazoo's ``Transaction`` builds a namedtuple per operation and serializes it in its connection thread,
    which costs more than generating the znode; this request carries ready bytes and parses the reply into
    one error code per operation (0 = created). It goes through kazoo's request queue like any request.
    """

    type = 14  # OpCode.multi

    def __init__(self, chroot: str, ops: list[ZNode]) -> None:
        buf = bytearray()
        pack = _INT.pack
        for z in ops:
            path = (chroot + z.path).encode("utf-8")
            buf += _CREATE_HEADER
            buf += pack(len(path))
            buf += path
            buf += pack(len(z.data))
            buf += z.data
            buf += _OPEN_ACL
            buf += _FLAGS[z.ephemeral]
        buf += _MULTI_END
        self.payload = bytes(buf)

    def serialize(self) -> bytes:
        return self.payload

    def deserialize(self, data: bytes, offset: int) -> list[int]:
        codes: list[int] = []
        unpack = _MULTI_HEADER.unpack_from
        while True:
            op, done, _err = unpack(data, offset)
            offset += _MULTI_HEADER.size
            if done:
                return codes
            if op == -1:
                codes.append(_INT.unpack_from(data, offset)[0])
                offset += 4
            else:
                (n,) = _INT.unpack_from(data, offset)
                offset += 4 + max(n, 0)
                codes.append(0)


def _error_name(code: int) -> str:
    from kazoo.exceptions import EXCEPTIONS

    return type(EXCEPTIONS[code]()).__name__ if code in EXCEPTIONS else f"error {code}"


class _Writer:
    """Batches creates per client and keeps up to MAX_IN_FLIGHT multi requests outstanding."""

    def __init__(self, client: KazooClient, store: str, batch_size: int) -> None:
        self.client = client
        self.store = store
        self.batch_size = batch_size
        self.ops: list[ZNode] = []
        self.bytes = 0
        self.in_flight: deque[tuple[IAsyncResult, list[ZNode]]] = deque()
        self.written = 0

    def add(self, z: ZNode) -> None:
        self.ops.append(z)
        self.bytes += len(z.data) + len(z.path) + 64
        if len(self.ops) >= self.batch_size or self.bytes >= MAX_BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.ops:
            return
        result = self.client.handler.async_result()
        self.client._call(_RawCreateMulti(self.client.chroot or "", self.ops), result)
        self.in_flight.append((result, self.ops))
        self.ops, self.bytes = [], 0
        while len(self.in_flight) > MAX_IN_FLIGHT:
            self._settle_one()

    def _settle_one(self) -> None:
        result, ops = self.in_flight.popleft()
        try:
            outcome = result.get(timeout=120)
        except KazooException as e:
            raise ZooKeeperError(f"{self.store} store: multi-create of {len(ops)} znodes failed: {e!r}") from e
        if not isinstance(outcome, list) or len(outcome) != len(ops):
            raise SeedError(f"{self.store} store: unexpected multi-create result for {len(ops)} znodes")
        if any(outcome):
            # the failing operation has its own code; the others report -2 (rolled back)
            z, code = next(((z, c) for z, c in zip(ops, outcome, strict=True) if c not in (0, -2)), (ops[0], -2))
            raise SeedError(
                f"{self.store} store: creating {z.path} failed ({_error_name(code)}); "
                f"the batch of {len(ops)} znodes was rolled back"
            )
        self.written += len(ops)

    def drain(self) -> None:
        self.flush()
        while self.in_flight:
            self._settle_one()


def _check_empty(local: KazooClient, config: KazooClient, options: SeedOptions) -> None:
    checks = [(local, "/managed-ledgers"), (local, options.ledgers_root), (config, "/admin/policies")]
    for client, path in checks:
        if client.exists(path) is not None:
            raise SeedTargetNotEmptyError(
                f"{path} already exists in the target ZooKeeper: refusing to seed over existing metadata"
            )


def seed_cluster(
    local: KazooClient,
    config: KazooClient | None,
    options: SeedOptions,
    *,
    progress: Progress | None = None,
) -> SeedResult:
    """Seed the synthetic cluster; returns the ground truth (and the model when ``options.keep_model``)."""
    started = time.monotonic()
    wall_ms = int(time.time() * 1000)
    opts = replace(
        options,
        now_ms=options.now_ms if options.now_ms is not None else wall_ms,
        znode_time_ms=options.znode_time_ms if options.znode_time_ms is not None else wall_ms,
    )
    shared = config is None or config is local
    cfg_client = local if config is None else config
    _check_empty(local, cfg_client, opts)
    writers = {LOCAL: _Writer(local, LOCAL, opts.batch_size)}
    writers[CONFIG] = writers[LOCAL] if shared else _Writer(cfg_client, CONFIG, opts.batch_size)
    model = ClusterModel(opts)
    kept = SeedModel() if opts.keep_model else None
    ledgers: list[Any] | None = [] if opts.bookie_dirs else None  # for the bookie directories
    closed_at: dict[int, int] = {}  # ledger id -> the latest close timestamp a ledger list gives it
    seen_dirs: set[str] = set()
    emitted = 0
    next_report = 10_000
    for z in model.znodes():
        if shared and z.kind == "dir" and z.data == b"":
            if z.path in seen_dirs:
                continue
            seen_dirs.add(z.path)
        writers[z.store].add(z)
        if kept is not None:
            kept.znodes.append(z)
        if ledgers is not None and z.kind == "bk-ledger":
            ledgers.extend(ledgers_of((z,)))
        if ledgers is not None and z.kind == "managed-ledger" and isinstance(z.obj, ManagedLedgerInfo):
            for li in z.obj.ledgers:
                closed_at[li.ledger_id] = max(closed_at.get(li.ledger_id, 0), li.timestamp_ms or 0)
        emitted += 1
        if progress is not None and emitted >= next_report:
            progress(emitted)
            next_report += 10_000
    for w in {id(w): w for w in writers.values()}.values():
        w.drain()
    written = sum(w.written for w in {id(w): w for w in writers.values()}.values())
    if progress is not None:
        progress(written)
    truth = model.ground_truth()
    if ledgers is not None and opts.bookie_dirs:
        write_bookie_dirs(
            Path(opts.bookie_dirs),
            ledgers,
            truth,
            wall_ms=int(time.time() * 1000),
            inject=bool(opts.defects),
            closed_at=closed_at,
        )
    return SeedResult(truth, written, time.monotonic() - started, kept)
