"""Ledger ids and BookKeeper ledger metadata for the synthetic cluster (pure).

Custom metadata follows reference §6 (``LedgerMetadataUtils``). The delayed-delivery bucket strings are
unverified upstream (reference §15): the seeder writes ``component=delayed-index-bucket`` plus the
``pulsar/managed-ledger`` key the detections contract uses for the bucket's owner.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from pulsar_ops.formats.ledger_metadata import LedgerMetadata, encode_ledger_metadata

INT31 = 2147483648
HIGH_START = INT31 - 3  # the first high-namespace ids straddle the 2-4-4 / 3-4-4-4-4 layout boundary
LOW_START = 1000
ANCHOR_ID = INT31 + (1 << 40)  # newest referenced ledger: the watermark (see ClusterModel)

BOOKIES: tuple[str, ...] = tuple(f"10.20.0.{11 + i}:3181" for i in range(6))
DIGESTS = ("CRC32C", "CRC32C", "CRC32C", "CRC32")


class IdAllocator:
    """Monotone ledger ids with small gaps (ids burned by failed creations, other clients)."""

    def __init__(self, start: int) -> None:
        self.next = start

    def take(self, rng: random.Random, *, gaps: bool = True) -> int:
        lid = self.next
        self.next += 1 if not gaps or rng.random() < 0.85 else rng.randint(2, 6)
        return lid


@dataclass(frozen=True, slots=True)
class BkSpec:
    """One ledger's BookKeeper metadata to write. ``version`` 1, 2 or 3; ``ctime_ms`` None = not stored."""

    state: str
    length: int
    last_entry_id: int
    ctime_ms: int | None
    version: int
    custom: tuple[tuple[str, bytes], ...]
    digest: str = "CRC32C"
    truncated: bool = False


def ml_custom(ml_name: str, cursor: str | None = None) -> tuple[tuple[str, bytes], ...]:
    base = (
        ("application", b"pulsar"),
        ("component", b"managed-ledger"),
        ("pulsar/managed-ledger", ml_name.encode()),
    )
    return base if cursor is None else (*base, ("pulsar/cursor", cursor.encode()))


def schema_custom(schema_id: str) -> tuple[tuple[str, bytes], ...]:
    return (("application", b"pulsar"), ("component", b"schema"), ("pulsar/schemaId", schema_id.encode()))


_SMALL = tuple(bytes((i,)) for i in range(128))


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def message_id_data(ledger_id: int, entry_id: int) -> bytes:
    """Binary MessageIdData {1 ledgerId, 2 entryId} (the ``pulsar/compactedTo`` value)."""
    return b"\x08" + _varint(ledger_id) + b"\x10" + _varint(entry_id)


def compacted_custom(topic: str, last_ledger: int, last_entry: int) -> tuple[tuple[str, bytes], ...]:
    return (
        ("application", b"pulsar"),
        ("component", b"compacted-ledger"),
        ("pulsar/compactedTopic", topic.encode()),
        ("pulsar/compactedTo", message_id_data(last_ledger, last_entry)),
    )


def bucket_custom(ml_name: str, topic: str, cursor: str, key: str) -> tuple[tuple[str, bytes], ...]:
    return (
        ("application", b"pulsar"),
        ("component", b"delayed-index-bucket"),
        ("pulsar/managed-ledger", ml_name.encode()),
        ("pulsar/delayedIndexBucketKey", key.encode()),
        ("pulsar/delayedIndexTopic", topic.encode()),
        ("pulsar/delayedIndexCursor", cursor.encode()),
    )


def _v(n: int) -> bytes:
    """Protobuf varint of an int64 (negative numbers as 64-bit two's complement, 10 bytes)."""
    return _varint(n & 0xFFFFFFFFFFFFFFFF) if n < 0 else _varint(n)


def _ld(field_no: int, payload: bytes) -> bytes:
    return bytes((field_no << 3 | 2,)) + _varint(len(payload)) + payload


_STATE = {"OPEN": 1, "IN_RECOVERY": 2, "CLOSED": 3}
_DIGEST = {"CRC32": 1, "HMAC": 2, "CRC32C": 3, "DUMMY": 4}


@functools.lru_cache(maxsize=1024)
def _segment(ensemble: tuple[int, tuple[str, ...]]) -> bytes:
    first, members = ensemble
    return _ld(6, b"".join(_ld(1, m.encode()) for m in members) + b"\x10" + _v(first))


@functools.lru_cache(maxsize=4096)
def _custom_block(custom: tuple[tuple[str, bytes], ...]) -> bytes:
    return b"".join(_ld(11, _ld(1, key.encode()) + _ld(2, value)) for key, value in custom)


def fast_v3(md: LedgerMetadata) -> bytes:
    """``encode_ledger_metadata(md, 3)`` byte for byte (tests check it), without building a message.

    The seeder writes millions of ledgers; protobuf message construction dominated its profile.
    """
    out = bytearray(b"\x08" + _v(md.write_quorum) + b"\x10" + _v(md.ensemble_size) + b"\x18" + _v(md.length))
    out += b"\x20" + _v(md.last_entry_id) + b"\x28" + _v(_STATE[md.state])
    for ensemble in md.ensembles:
        out += _segment(ensemble)
    if md.digest_type is not None:
        out += b"\x38" + _v(_DIGEST[md.digest_type])
    if md.digest_type is not None or md.password:
        out += _ld(8, md.password)
    out += b"\x48" + _v(md.ack_quorum)
    if md.ctime_ms is not None:
        out += b"\x50" + _v(md.ctime_ms)
    out += _custom_block(md.custom_metadata)
    if md.ctoken is not None:
        out += b"\x60" + _v(md.ctoken)
    return b"BookieMetadataFormatVersion\t3\n" + _varint(len(out)) + bytes(out)


# Ensemble choices drawn once (fixed seed): per-ledger sampling was a hot spot; 64 shapes are plenty.
_SHAPES: tuple[tuple[int, int, tuple[str, ...]], ...] = tuple(
    (ens, min(ens, r.choice((2, 3, 3))), tuple(r.sample(BOOKIES, ens)))
    for r in (random.Random(20240601),)
    for ens in (r.randint(3, 5) for _ in range(64))
)


def pick_version(rng: random.Random) -> tuple[int, bool]:
    """(format version, store ctime): mostly v3, some v2 with ctime, a few v2 without, a few v1."""
    r = rng.random()
    if r < 0.90:
        return 3, True
    if r < 0.95:
        return 2, True
    if r < 0.97:
        return 2, False
    return 1, False


def build_metadata(ledger_id: int, spec: BkSpec, rng: random.Random) -> tuple[LedgerMetadata, bytes]:
    """The typed metadata as a decoder will see it, and its exact znode bytes."""
    ens, wq, members = _SHAPES[rng.getrandbits(6)]
    aq = 2 if wq >= 2 else 1
    ensembles: tuple[tuple[int, tuple[str, ...]], ...] = ((0, members),)
    if spec.last_entry_id > 10 and rng.random() < 0.06:
        spare = [b for b in BOOKIES if b not in members]
        changed = (*members[:-1], rng.choice(spare))
        ensembles = ((0, members), (spec.last_entry_id // 2, changed))
    v1 = spec.version == 1
    md = LedgerMetadata(
        ledger_id=ledger_id,
        format_version=spec.version,
        ensemble_size=ens,
        write_quorum=wq,
        ack_quorum=wq if v1 else aq,
        state=spec.state,  # type: ignore[arg-type]
        length=spec.length,
        last_entry_id=spec.last_entry_id,
        ensembles=ensembles,
        digest_type=None if v1 else spec.digest,
        password=b"",
        ctime_ms=None if v1 else spec.ctime_ms,
        custom_metadata=() if v1 else spec.custom,
        ctoken=None,
    )
    data = fast_v3(md) if spec.version == 3 else encode_ledger_metadata(md, spec.version)
    if spec.truncated:
        data = data[: max(len(data) // 2, len(b"BookieMetadataFormatVersion\t3\n") + 2)]
    return md, data
