"""Client ``NegativeAcksTracker`` memory and timing, before and after PIP-393 (reference/broker-cache-and-nack.md §4).

Old (after #23582): ``ConcurrentLongLongPairHashMap``, one 32-byte slot per (ledgerId, entryId) key, capacity a
power of two from 512, doubling when the size exceeds ``capacity x 0.66``. The timer ticks every delay / 3 and
only then removes due keys, so just before a tick the map holds every key nacked during delay + delay / 3; the
capacity follows that peak (the 0.15 idle factor never shrinks it: the trough is 3/4 of the peak).

New (PIP-393): timestamp buckets (``t`` with its low ``negativeAckPrecisionBitCnt`` bits cleared) -> ledger ->
Roaring bitmap of entry ids. Bitmap sizes are *measured*: the bitmaps of the live buckets are built with
pyroaring (values added one by one, no run optimisation, as the Java tracker does) and their serialized size
counted (array container 2 B per value, bitmap container 8 KiB). Java object overhead of the tree node, the
inner hash map and the bitmap object is added from the fixed estimates below and reported separately.
Redelivery: old is late by up to delay / 3; new is early by up to 2^b - 1 ms (the PIP text's "512 ms" is wrong).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyroaring import BitMap

from pulsar_ops.errors import ModelError

SLOT_BYTES = 32
INITIAL_CAPACITY = 512
FILL_FACTOR = 0.66
MIN_DELAY_MS = 100.0
# Java object overhead estimates (64-bit JVM, compressed oops), per bucket and per (bucket, ledger):
AVL_ENTRY_BYTES = 40  # Long2ObjectAVLTreeMap.Entry: header, long key, value, left, right, info
# Long2ObjectOpenHashMap at its default expected size 16: 32 slots + the null-key slot, long[] and Object[]
INNER_MAP_BYTES = 48 + (33 * 8 + 16) + (33 * 4 + 16)
BITMAP_OBJECT_BYTES = 96  # Roaring64Bitmap wrapper + high-part index node, per ledger in a bucket
MAX_MEASURED_BUCKETS = 256
MAX_MEASURED_IDS = 4_000_000  # bound on entry ids put into sample bitmaps
# Upstream's own figures (PIP-393 text, restating #23582): tracked entries -> bytes of the old map.
UPSTREAM_OLD_FIGURES = {1_000_000: 64 * (1 << 20), 10_000_000: 512 * (1 << 20)}


@dataclass(frozen=True)
class NackInput:
    rate: float  # nacked messages per second
    delay_ms: float
    precision_bits: int = 8
    entries_per_ledger: int = 50_000
    batch_size: int = 1  # messages per entry
    consume_rate: float | None = None  # messages read per second; default = rate (every message nacked)
    seed: int = 0

    def validate(self) -> NackInput:
        if self.rate <= 0 or self.delay_ms <= 0:
            raise ModelError(
                "--rate and --delay must be > 0", hint="e.g. `pulsar-ops model nack --rate 10000 --delay 1h`"
            )
        if not 0 <= self.precision_bits <= 32:
            raise ModelError("--precision-bits must be in 0..32", hint="the default is 8 (256 ms buckets)")
        if self.entries_per_ledger < 1 or self.batch_size < 1:
            raise ModelError("--entries-per-ledger and --batch-size must be >= 1", hint="see --help")
        if self.consume_rate is not None and self.consume_rate < self.rate:
            raise ModelError("--consume-rate must be >= --rate", hint="a consumer cannot nack more than it reads")
        return self


def old_capacity(n: int) -> int:
    cap = INITIAL_CAPACITY
    while n > int(cap * FILL_FACTOR):
        cap *= 2
    return cap


def old_bytes(n: int) -> int:
    return old_capacity(n) * SLOT_BYTES


def pip_formula_bytes_per_entry(m: float) -> float:
    """The PIP-393 text's own per-entry figure for M messages per bucket (kept to show where it is wrong)."""
    if m < 4096:
        return 4.0
    if m < 50_000:
        return 8192 / m
    return 0.163


@dataclass(frozen=True)
class NackResult:
    inp: NackInput
    entries: int
    old_peak_entries: int
    old_bytes: int
    new_bytes: int
    new_bitmap_bytes: int
    new_overhead_bytes: int
    buckets: int
    entries_per_bucket: float
    ledgers_per_bucket: float
    old_scan_per_s: float
    new_scan_per_s: float

    @property
    def delay(self) -> float:
        return max(self.inp.delay_ms, MIN_DELAY_MS)

    def to_json(self) -> dict[str, Any]:
        n = max(self.entries, 1)
        early_new = (1 << self.inp.precision_bits) - 1
        late_old = self.delay / 3
        return {
            "input": {
                "rate": self.inp.rate,
                "delay_ms": self.inp.delay_ms,
                "precision_bits": self.inp.precision_bits,
                "entries_per_ledger": self.inp.entries_per_ledger,
                "batch_size": self.inp.batch_size,
                "consume_rate": self.inp.consume_rate,
            },
            "entries": self.entries,
            "old": {
                "design": "ConcurrentLongLongPairHashMap (#23582)",
                "bytes": self.old_bytes,
                "bytes_per_entry": round(self.old_bytes / n, 3),
                "peak_entries": self.old_peak_entries,
                "capacity": old_capacity(self.old_peak_entries),
                "timer_period_ms": round(late_old, 3),
                "max_early_ms": 0,
                "max_late_ms": round(late_old, 3),
                "entries_scanned_per_s": round(self.old_scan_per_s, 3),
            },
            "new": {
                "design": "PIP-393 time buckets -> ledger -> Roaring bitmap",
                "bytes": self.new_bytes,
                "bytes_per_entry": round(self.new_bytes / n, 3),
                "bitmap_bytes_measured": self.new_bitmap_bytes,
                "java_overhead_bytes_estimated": self.new_overhead_bytes,
                "buckets": self.buckets,
                "bucket_ms": 1 << self.inp.precision_bits,
                "entries_per_bucket": round(self.entries_per_bucket, 3),
                "ledgers_per_bucket": round(self.ledgers_per_bucket, 3),
                "pip_text_bytes_per_entry": pip_formula_bytes_per_entry(self.entries_per_bucket),
                "max_early_ms": early_new,
                "max_late_ms": 0,
                "entries_scanned_per_s": round(self.new_scan_per_s, 3),
            },
            "new_vs_old": round(self.new_bytes / max(self.old_bytes, 1), 6),
            "max_early_ms": early_new,
            "max_late_ms": round(late_old, 3),
        }


def model_nack(inp: NackInput) -> NackResult:
    inp.validate()
    delay = max(inp.delay_ms, MIN_DELAY_MS)
    consume = inp.consume_rate if inp.consume_rate is not None else inp.rate
    p = min(1.0, inp.rate / consume)
    q = 1.0 - (1.0 - p) ** inp.batch_size  # an entry is tracked if any of its messages is nacked
    read_entries_per_ms = consume / inp.batch_size / 1000.0
    nacked_entries_per_ms = read_entries_per_ms * q
    entries = round(nacked_entries_per_ms * delay)
    peak = math.ceil(nacked_entries_per_ms * delay * 4 / 3)
    old = old_bytes(peak)
    width = 1 << inp.precision_bits
    buckets = int(delay // width) + 1  # keys in (now - width, now + delay], floored to the bucket width
    bitmap_b, overhead_b, per_bucket, ledgers, buckets = _measure_buckets(inp, buckets, width, read_entries_per_ms, q)
    new = bitmap_b + overhead_b
    return NackResult(
        inp=inp,
        entries=entries,
        old_peak_entries=peak,
        old_bytes=old,
        new_bytes=new,
        new_bitmap_bytes=bitmap_b,
        new_overhead_bytes=overhead_b,
        buckets=buckets,
        entries_per_bucket=per_bucket,
        ledgers_per_bucket=ledgers,
        old_scan_per_s=peak * 3000.0 / delay,
        new_scan_per_s=nacked_entries_per_ms * 1000.0,
    )


def _measure_buckets(
    inp: NackInput, buckets: int, width: int, read_per_ms: float, q: float
) -> tuple[int, int, float, float, int]:
    """Build (a sample of) the live buckets' bitmaps with pyroaring; scale the sample to all buckets."""
    rng = np.random.default_rng(inp.seed)
    span = read_per_ms * width  # entry ids read during one bucket
    sample = max(1, min(buckets, MAX_MEASURED_BUCKETS, int(MAX_MEASURED_IDS // max(span, 1.0))))
    pos = 0.0
    bitmap_bytes = 0
    overhead = 0
    nacked = 0
    ledger_count = 0
    live_buckets = 0
    epl = inp.entries_per_ledger
    for _ in range(sample):
        lo, hi = int(pos), int(pos + span)
        pos += span
        ids = np.arange(lo, hi, dtype=np.int64)
        if q < 1.0:
            ids = ids[rng.random(ids.shape[0]) < q]
        if ids.size == 0:
            continue  # nothing nacked in this bucket: the bucket does not exist
        live_buckets += 1
        overhead += AVL_ENTRY_BYTES + INNER_MAP_BYTES
        nacked += int(ids.size)
        ledger = ids // epl
        cuts = np.flatnonzero(np.diff(ledger)) + 1
        for part in np.split(ids, cuts):
            bm = BitMap()
            bm.update((part % epl).astype(np.uint32))
            bitmap_bytes += len(bm.serialize())
            overhead += BITMAP_OBJECT_BYTES
            ledger_count += 1
    scale = buckets / sample
    return (
        round(bitmap_bytes * scale),
        round(overhead * scale),
        nacked / max(live_buckets, 1),
        ledger_count / max(live_buckets, 1),
        round(live_buckets * scale),
    )


def sweep_delays(base: NackInput, delays_ms: list[float]) -> list[NackResult]:
    """The same workload at several delays (for the memory-vs-delay plot)."""
    return [model_nack(NackInput(**{**base.__dict__, "delay_ms": d})) for d in delays_ms]
