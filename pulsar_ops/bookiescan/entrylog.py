"""Read one entry log: its ledgers map when upstream's reader would accept it, otherwise a scan of its records.

Pure, read-only file I/O on an already opened descriptor (``os.pread`` only). Each rule cites the upstream
apache/bookkeeper method it follows (bookie-storage.md §2, §10):

- default logger: ``DefaultEntryLogger.getHeaderForLogId`` (no fingerprint check; any version >= 1 is accepted),
  ``DefaultEntryLogger.extractEntryLogMetadataFromIndex`` (map) and ``DefaultEntryLogger.scanEntryLog`` with the
  scanner of ``extractEntryLogMetadataByScanning`` (scan);
- Direct I/O logger: ``directentrylogger.LogMetadata.read`` (map, checks the fingerprint, no header-count check)
  and ``directentrylogger.LogReaderScan.scan`` (scan: a negative length skips to the next 4 KiB block, a zero
  length ends the log).

Both count ``L + 4`` bytes per entry for its ledger (``EntryLogMetadata.addLedgerSize``). A log written by the
Direct logger is recognised by its header's dummy record at 1024 (length 3068, ledger id -1; ``Header
.EMPTY_HEADER``); no ledgers-map batch can have that length (3068 - 20 is not a multiple of 16).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pulsar_ops.bookiescan.fileio import FileMapping, PageCache, Reader
from pulsar_ops.bookiescan.pairs import DEFAULT_LIMIT, LedgerSums, aggregate
from pulsar_ops.bookiescan.schema import LOGGER_DEFAULT, LOGGER_DIRECT, READ_MAP, READ_SCAN

LOGFILE_HEADER_SIZE = 1024
DIRECT_HEADER_SIZE = 4096
ALIGNMENT = 4096
INVALID_LID = -1
LEDGERS_MAP_ENTRY_ID = -2
LEDGERS_MAP_HEADER_SIZE = 4 + 8 + 8 + 4
LEDGERS_MAP_ENTRY_SIZE = 16
LEDGERS_MAP_MAX_BATCH_SIZE = 10_000
# directentrylogger.LogMetadata.LEDGERS_MAP_MAX_MAP_SIZE: a batch length at or above it is rejected.
DIRECT_MAX_MAP_SIZE = LEDGERS_MAP_HEADER_SIZE + LEDGERS_MAP_ENTRY_SIZE * LEDGERS_MAP_MAX_BATCH_SIZE
DIRECT_DUMMY_LENGTH = DIRECT_HEADER_SIZE - LOGFILE_HEADER_SIZE - 4
INT_MAX = 2**31 - 1

DEFAULT_CHUNK = 8 * 1024 * 1024
MAP_FIRST_READ = 8 * 1024 * 1024
# A default-logger batch is not capped upstream (extractEntryLogMetadataFromIndex grows its buffer to the batch's
# length; only the Direct logger's is capped, at 160,024 bytes), and every writer caps it at 10,000 pairs. A batch
# of any length is read as upstream reads it, its pairs MAP_WINDOW bytes at a time: memory stays bounded (a 256 MiB
# map of 16 MiB batches peaks at 330 MB RSS; 64 MiB batches read whole, the way until 2026-11, peaked at 491 MB)
# and a damaged length runs past the file (``truncated``) or disagrees with its count (``batch-size``).
MAP_WINDOW = 16 * 1024 * 1024
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_REC = struct.Struct(">iq")
_BATCH = struct.Struct(">qqi")
_EMPTY = np.zeros(0, dtype=np.int64)

Throttle = Callable[[int], None]
IntArray = npt.NDArray[np.int64]
RECORD_BATCH = 65_536  # scanned records handed to LedgerSums at a time
# A ledgers-map batch of at most this many pairs is parsed with struct, not numpy: a valid map of one-pair batches
# paid numpy's fixed cost per batch (4.5 MB/s, a 1 GiB such map in ~4 minutes).
SMALL_BATCH = 16


class MapInvalid(Exception):
    """The ledgers map is missing or fails upstream's validation; ``reason`` goes into ``entry_logs.reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Header:
    version: int | None  # None: fewer than 8 bytes (no header to speak of)
    map_offset: int
    ledgers_count: int
    fingerprint_ok: bool
    direct: bool


@dataclass
class LogRead:
    """The metadata of one log: per-ledger bytes (``sums``, bounded memory) and how it was obtained.

    The caller streams ``sums.chunks()`` and calls ``close()`` (removes any spill files); ``ledger_ids`` and
    ``ledger_bytes`` materialise the whole result sorted by ledger id (tests, small logs)."""

    logger: str
    header_version: int | None
    read_via: str
    reason: str | None
    sums: LedgerSums
    bytes_read: int  # bytes read from the file by the scan path
    truncated: bool = False  # the scan stopped at a record cut short by the end of the file
    meta_bytes_read: int = 0  # bytes of header and ledgers map read
    pages_released: int = 0  # pages the read brought into the page cache and released again

    @property
    def ledgers(self) -> int:
        return self.sums.ledgers

    @property
    def data_bytes(self) -> int:
        return self.sums.total

    @property
    def ledger_ids(self) -> IntArray:
        return self.sums.arrays()[0]

    @property
    def ledger_bytes(self) -> IntArray:
        return self.sums.arrays()[1]

    def close(self) -> None:
        self.sums.close()


def _pread(fd: int, n: int, offset: int) -> bytes:
    """Read up to ``n`` bytes at ``offset`` (short only at the end of the file), outside any ``Reader``."""
    return Reader(fd).pread(n, offset)


def read_header(head: bytes) -> Header:
    """Parse the first bytes of a log (``DefaultEntryLogger.getHeaderForLogId`` / ``directentrylogger.Header``)."""
    if len(head) < 8:
        return Header(None, 0, 0, False, False)
    version = _I32.unpack_from(head, 4)[0]
    map_offset = _I64.unpack_from(head, 8)[0] if len(head) >= 16 else 0
    count = _I32.unpack_from(head, 16)[0] if len(head) >= 20 else 0
    direct = (
        len(head) >= LOGFILE_HEADER_SIZE + 12
        and _I32.unpack_from(head, LOGFILE_HEADER_SIZE)[0] == DIRECT_DUMMY_LENGTH
        and _I64.unpack_from(head, LOGFILE_HEADER_SIZE + 4)[0] == INVALID_LID
    )
    return Header(version, map_offset, count, head[:4] == b"BKLO", direct)


_aggregate = aggregate


def read_map(reader: Reader, size: int, header: Header, sums: LedgerSums) -> int:
    """Add the ledgers map to ``sums`` and return the bytes read, or raise MapInvalid with the reason for refusing it.

    Default logger: ``DefaultEntryLogger.extractEntryLogMetadataFromIndex``. Direct logger: ``directentrylogger
    .LogMetadata.read``. Read in bounded windows (at most ``MAP_WINDOW`` bytes of a batch's pairs held), every
    read throttled, batches parsed with numpy. Beyond upstream, a map no writer can produce is refused (then the
    log is scanned, as for any map upstream refuses): a negative ledger id or size, a ledger listed twice (the
    map is written from ``EntryLogMetadata``'s hash map, one pair per ledger: a repeat is a damaged map, and
    upstream's ``addAndGet`` would double the ledger), or sizes adding up past the map's offset (every entry
    lies between the header and the map).
    """
    direct = header.direct
    if header.version is None or size < LOGFILE_HEADER_SIZE:
        raise MapInvalid("short-file")
    if direct and not header.fingerprint_ok:  # Header.assertFingerPrint
        raise MapInvalid("map-invalid:fingerprint")
    if header.version < 1:  # HEADER_V0: no ledgers map in this format
        raise MapInvalid("version-0")
    if direct and header.map_offset > INT_MAX:
        raise MapInvalid("map-invalid:offset")
    if header.map_offset == 0 or (direct and header.map_offset < 0):
        raise MapInvalid("no-map")
    if header.map_offset < 0:  # FileChannel.read rejects a negative position; getEntryLogMetadata falls back
        raise MapInvalid("map-invalid:offset")
    offset = header.map_offset
    data_cap = offset - LOGFILE_HEADER_SIZE  # the bytes every entry of the log fits in
    # The first read sized from the header's count (pairs + batch headers + the next length), bounded.
    expected = max(header.ledgers_count, 0)
    want = expected * LEDGERS_MAP_ENTRY_SIZE + (expected // LEDGERS_MAP_MAX_BATCH_SIZE + 1) * 24 + 4
    base = offset
    buf = reader.pread(max(0, min(want, size - offset, MAP_FIRST_READ)), offset) if offset < size else b""
    nread = len(buf)
    total = 0
    small_ids: list[int] = []  # pairs of batches of at most SMALL_BATCH pairs, not yet handed to sums
    small_sizes: list[int] = []

    def ensure(start: int, end: int) -> bool:
        """Make [start, end) readable in ``buf``; a new read starts at ``start`` (the batch being parsed)."""
        nonlocal buf, base, nread
        if start >= base and end <= base + len(buf):
            return True
        if end > size:
            return False
        buf = b""  # release the old window before reading the next
        buf = reader.pread(min(max(end - start, MAP_FIRST_READ), size - start), start)
        base = start
        nread += len(buf)
        return end <= base + len(buf)

    while offset < size:
        if not ensure(offset, offset + 4):
            raise MapInvalid("map-invalid:truncated")
        length = _I32.unpack_from(buf, offset - base)[0]
        if direct and length >= DIRECT_MAX_MAP_SIZE:
            raise MapInvalid("map-invalid:batch-too-large")
        if length <= 0:
            break
        if length < 20 or offset + 4 + length > size or not ensure(offset, offset + 24):
            raise MapInvalid("map-invalid:truncated")
        lid, eid, n = _BATCH.unpack_from(buf, offset + 4 - base)
        if lid != INVALID_LID:
            raise MapInvalid("map-invalid:ledger-id")
        if eid != LEDGERS_MAP_ENTRY_ID:
            raise MapInvalid("map-invalid:entry-id")
        n = max(n, 0)
        if length != 20 + LEDGERS_MAP_ENTRY_SIZE * n:  # pairs overrun the batch, or bytes left after them
            raise MapInvalid("map-invalid:batch-size")
        if 0 < n <= SMALL_BATCH:  # a few pairs: checked and kept in Python, handed over RECORD_BATCH at a time
            if not ensure(offset, offset + 4 + length):
                raise MapInvalid("map-invalid:truncated")
            vals = struct.unpack_from(f">{2 * n}q", buf, offset + 24 - base)
            if min(vals[0::2]) < 0:
                raise MapInvalid("map-invalid:negative-ledger-id")
            if min(vals[1::2]) < 0:
                raise MapInvalid("map-invalid:negative-size")
            total += sum(vals[1::2])
            if total > data_cap:
                raise MapInvalid("map-invalid:sizes-past-map")
            small_ids.extend(vals[0::2])
            small_sizes.extend(vals[1::2])
            if len(small_ids) >= RECORD_BATCH:
                sums.add(np.asarray(small_ids, dtype=np.int64), np.asarray(small_sizes, dtype=np.int64))
                small_ids, small_sizes = [], []
        else:
            window = MAP_WINDOW // LEDGERS_MAP_ENTRY_SIZE
            for lo in range(0, n, window):  # a batch's pairs a window at a time, however long the batch
                k = min(window, n - lo)
                start = offset + 24 + lo * LEDGERS_MAP_ENTRY_SIZE
                if not ensure(start, start + k * LEDGERS_MAP_ENTRY_SIZE):
                    raise MapInvalid("map-invalid:truncated")
                pairs = np.frombuffer(buf, dtype=">i8", count=2 * k, offset=start - base)
                ids = pairs[0::2].astype(np.int64)
                sizes = pairs[1::2].astype(np.int64)
                if bool((ids < 0).any()):
                    raise MapInvalid("map-invalid:negative-ledger-id")
                if bool((sizes < 0).any()):
                    raise MapInvalid("map-invalid:negative-size")
                # a float sum first: the exact int64 sum cannot overflow once this one is within data_cap
                if total + float(sizes.sum(dtype=np.float64)) > data_cap * (1 + 1e-9) + 1:
                    raise MapInvalid("map-invalid:sizes-past-map")
                total += int(sizes.sum())
                if total > data_cap:
                    raise MapInvalid("map-invalid:sizes-past-map")
                sums.add(ids, sizes)
                del pairs, ids, sizes
        offset += length + 4
    buf = b""
    if small_ids:
        sums.add(np.asarray(small_ids, dtype=np.int64), np.asarray(small_sizes, dtype=np.int64))
    sums.finish()
    if sums.ledgers != sums.pairs_in:
        raise MapInvalid("map-invalid:duplicate-ledger")
    if not direct:
        if sums.ledgers != header.ledgers_count:
            raise MapInvalid("map-invalid:count")
        if header.ledgers_count == 0:  # "No ledgers map found ..., do scan to double confirm"
            raise MapInvalid("map-invalid:empty")
    return nread


class _Window:
    """A read window over the file: big chunked reads (through a ``Reader``), holes skipped by SEEK_DATA."""

    def __init__(self, reader: Reader, size: int, chunk: int) -> None:
        self.reader = reader
        self.fd = reader.fd
        self.size = size
        self.chunk = max(chunk, 64 * 1024)
        self.base = 0
        self.buf = b""
        self.mask: bytes | None = None  # per offset of buf: 1 where a positive length starts

    @property
    def bytes_read(self) -> int:
        return self.reader.bytes_read

    def load(self, pos: int, need: int) -> bool:
        """Make ``[pos, pos + need)`` available in ``buf``; False when the file ends first."""
        if pos >= self.base and pos + need <= self.base + len(self.buf):
            return True
        if pos + need > self.size:
            return False
        n = min(max(self.chunk, need), self.size - pos)
        if n > need:  # stop the read where a hole starts (sparse or pre-allocated files): next_positive skips it
            try:
                hole = os.lseek(self.fd, pos, os.SEEK_HOLE)
            except OSError:
                hole = self.size
            n = max(need, min(n, hole - pos))
        self.buf = b""
        self.mask = None
        data = self.reader.pread(n, pos)
        self.base, self.buf = pos, data
        return pos + need <= pos + len(data)

    def _positive_mask(self) -> bytes:
        """One byte per offset of ``buf`` that has 4 bytes after it: 1 where they read as a length > 0 (first byte
        below 0x80, not all four zero). Built once per window with numpy, then searched with ``bytes.find``: a
        damaged region that alternates short bad runs with small lengths (a negative length, a record skipped by
        its length, ...) costs no numpy call per few bytes (it crawled at 2.5 to 4 MB/s, a 1 GiB log in minutes)."""
        if self.mask is None:
            a = np.frombuffer(self.buf, dtype=np.uint8)
            m = max(0, a.shape[0] - 3)
            ok = (a[:m] < 0x80) & ((a[:m] | a[1 : m + 1] | a[2 : m + 2] | a[3 : m + 3]) != 0)
            self.mask = ok.view(np.uint8).tobytes()
        return self.mask

    def next_positive(self, pos: int, need: int = 12) -> int:
        """The first offset >= ``pos`` whose 4-byte big-endian length is > 0 and where ``need`` bytes remain, else
        ``max(pos, size - need + 1)``. Linear time: damaged regions (lengths <= 0: zero runs, bytes >= 0x80) are
        searched in the window's mask (``_positive_mask``), holes skipped with SEEK_DATA."""
        last = self.size - need  # the last offset a record header can start at
        while pos <= last:
            if not (self.base <= pos and pos + 4 <= self.base + len(self.buf)):
                try:
                    data_at = os.lseek(self.fd, pos, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole is left (or SEEK_DATA unsupported: read on)
                    data_at = self.size if _only_hole_left(self.fd, pos) else pos
                if data_at > pos + 3:  # offsets before data_at - 3 read four zero bytes
                    pos = data_at - 3
                    if pos > last:
                        break
                if not self.load(pos, 4):
                    break
            i = pos - self.base
            end = min(len(self.buf) - 3, last - self.base + 1)  # offsets [i, end) have 4 bytes in buf
            hit = self._positive_mask().find(b"\x01", i, max(i, end))
            if hit >= 0:
                return self.base + hit
            pos = self.base + max(end, pos - self.base)
            if pos > last:
                break
        return max(pos, last + 1)


def _only_hole_left(fd: int, pos: int) -> bool:
    try:
        os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as e:
        return e.errno == 6  # ENXIO
    return False


class _Records:
    """Scanned (ledger id, L + 4) records, handed to ``LedgerSums`` in batches."""

    def __init__(self, sums: LedgerSums) -> None:
        self.sums = sums
        self.ids: list[int] = []
        self.sizes: list[int] = []

    def add(self, lid: int, size: int) -> None:
        self.ids.append(lid)
        self.sizes.append(size)
        if len(self.ids) >= RECORD_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.ids:
            self.sums.add(np.asarray(self.ids, dtype=np.int64), np.asarray(self.sizes, dtype=np.int64))
            self.ids, self.sizes = [], []


def scan_default(
    fd: int,
    size: int,
    *,
    chunk: int = DEFAULT_CHUNK,
    throttle: Throttle | None = None,
    reader: Reader | None = None,
    sums: LedgerSums | None = None,
) -> LogRead:
    """``DefaultEntryLogger.scanEntryLog`` with ``extractEntryLogMetadataByScanning``'s scanner.

    From 1024: read the 4-byte length and the ledger id (a short read ends the scan); a length <= 0 is padding,
    step one byte (``if (entrySize <= 0) { pos++; continue; }``: the offsets of a damaged or zero region are
    searched at once for the next positive length, in linear time); ledger id -1 (a map batch) or any negative
    id is skipped by its length without reading it; otherwise the entry is read (a short read ends the scan: a
    record cut by the end of the file is not counted) and ``L + 4`` is counted.
    """
    rd = reader if reader is not None else Reader(fd, throttle)
    out = sums if sums is not None else LedgerSums()
    recs = _Records(out)
    w = _Window(rd, size, chunk)
    pos = LOGFILE_HEADER_SIZE
    truncated = False
    rec = _REC
    ids_append, sizes_append, left = recs.ids.append, recs.sizes.append, RECORD_BATCH
    while pos < size:
        if not w.load(pos, 12):  # "Short read for entry size": a cut record unless only zeros are left
            truncated = any(os.pread(fd, 12, pos))
            break
        length, lid = rec.unpack_from(w.buf, pos - w.base)
        if length <= 0:
            pos = w.next_positive(pos + 1)
            continue
        pos += 4
        if lid < 0:  # INVALID_LID (map batch) or refused by accept(ledgerId >= 0): skip by length
            pos += length
            continue
        if pos + length > size:  # "Short read for ledger entry from entryLog"
            truncated = True
            break
        ids_append(lid)
        sizes_append(length + 4)
        pos += length
        left -= 1
        if not left:  # hand a batch to LedgerSums (bounded memory), inline: this loop runs once per record
            recs.flush()
            ids_append, sizes_append, left = recs.ids.append, recs.sizes.append, RECORD_BATCH
    recs.flush()
    return _scanned(LOGGER_DEFAULT, out, w.bytes_read, truncated)


def scan_direct(
    fd: int,
    size: int,
    *,
    chunk: int = DEFAULT_CHUNK,
    throttle: Throttle | None = None,
    reader: Reader | None = None,
    sums: LedgerSums | None = None,
) -> LogRead:
    """``directentrylogger.LogReaderScan.scan`` with ``DirectEntryLogger.scanEntryLogMetadata``'s scanner.

    From 1024 (the header's dummy record skips to 4096): a negative length is padding, jump to the next 4 KiB
    boundary; a zero length is pre-allocated space, the log ends; otherwise read the entry, count ``L + 4`` when
    its ledger id (first 8 bytes) is >= 0. Upstream raises EOF on a record cut by the end of the file; this scan
    stops there and keeps what came before (``truncated``). A negative length exactly on a boundary (which
    upstream's ``nextAlignment`` would not move past) also ends the scan.
    """
    rd = reader if reader is not None else Reader(fd, throttle)
    out = sums if sums is not None else LedgerSums()
    recs = _Records(out)
    w = _Window(rd, size, chunk)
    pos = LOGFILE_HEADER_SIZE
    truncated = False
    while pos < size:
        if not w.load(pos, 4):
            truncated = True
            break
        length = _I32.unpack_from(w.buf, pos - w.base)[0]
        if length < 0:
            nxt = (pos + ALIGNMENT - 1) & ~(ALIGNMENT - 1)
            if nxt == pos:
                truncated = True
                break
            pos = nxt
            continue
        if length == 0:
            break
        pos += 4
        if length < 8 or not w.load(pos, 8) or pos + length > size:
            truncated = True
            break
        lid = _I64.unpack_from(w.buf, pos - w.base)[0]
        if lid >= 0:
            recs.add(lid, length + 4)
        pos += length
    recs.flush()
    return _scanned(LOGGER_DIRECT, out, w.bytes_read, truncated)


def _scanned(logger: str, sums: LedgerSums, bytes_read: int, truncated: bool) -> LogRead:
    sums.finish()
    return LogRead(
        logger=logger,
        header_version=None,
        read_via=READ_SCAN,
        reason=None,
        sums=sums,
        bytes_read=bytes_read,
        truncated=truncated,
    )


def read_entry_log(
    fd: int,
    size: int,
    *,
    chunk: int = DEFAULT_CHUNK,
    throttle: Throttle | None = None,
    force_scan: bool = False,
    cache: PageCache | None = None,
    spill_root: Path | None = None,
    sums_limit: int = DEFAULT_LIMIT,
) -> LogRead:
    """Read a log the way the bookie's GC does (``getEntryLogMetadata`` of either logger): the map, else a scan.

    ``reason`` says why a log was scanned (``no-map``, ``version-0``, ``short-file``, ``map-invalid:<why>``);
    ``force_scan`` scans even when the map is valid (the bench's scanned path and the property tests). Every read
    (header, map, records) goes through one ``Reader``: throttled, and with ``cache`` the pages it brings into the
    page cache are released afterwards. Per-ledger sums stay under ``sums_limit`` pairs in memory, spilling to
    ``spill_root`` beyond; the caller closes the result.
    """
    if cache is None:
        return _read_entry_log(fd, size, chunk, throttle, force_scan, None, None, spill_root, sums_limit)
    with cache.mapped(fd, 0, size) as mapping:
        return _read_entry_log(fd, size, chunk, throttle, force_scan, cache, mapping, spill_root, sums_limit)


def _read_entry_log(
    fd: int,
    size: int,
    chunk: int,
    throttle: Throttle | None,
    force_scan: bool,
    cache: PageCache | None,
    mapping: FileMapping | None,
    spill_root: Path | None,
    sums_limit: int,
) -> LogRead:
    meta = Reader(fd, throttle, cache, mapping)
    head = meta.pread(DIRECT_HEADER_SIZE, 0) if size > 0 else b""
    header = read_header(head)
    logger = LOGGER_DIRECT if header.direct else LOGGER_DEFAULT
    version = header.version if len(head) >= LOGFILE_HEADER_SIZE else None
    reason: str | None
    if size < LOGFILE_HEADER_SIZE:
        reason = "short-file"
    elif force_scan:
        reason = "forced"
    else:
        sums = LedgerSums(spill_root, sums_limit)
        try:
            read_map(meta, size, header, sums)
        except MapInvalid as e:
            sums.close()
            reason = e.reason
        except BaseException:
            sums.close()
            raise
        else:
            return LogRead(
                logger=logger,
                header_version=version,
                read_via=READ_MAP,
                reason=None,
                sums=sums,
                bytes_read=0,
                meta_bytes_read=meta.bytes_read,
                pages_released=meta.pages_released,
            )
    scan = scan_direct if header.direct else scan_default
    body = Reader(fd, throttle, cache, mapping)
    sums = LedgerSums(spill_root, sums_limit)
    try:
        got = scan(fd, size, chunk=chunk, reader=body, sums=sums)
    except BaseException:
        sums.close()
        raise
    if got.truncated:
        reason = f"{reason}:truncated"
    return LogRead(
        logger=logger,
        header_version=version,
        read_via=READ_SCAN,
        reason=reason,
        sums=sums,
        bytes_read=got.bytes_read,
        truncated=got.truncated,
        meta_bytes_read=len(head),
        pages_released=meta.pages_released + body.pages_released,
    )
