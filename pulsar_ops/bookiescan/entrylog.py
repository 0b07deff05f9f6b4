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

import numpy as np
import numpy.typing as npt

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
# A default-logger batch is not capped upstream (only the Direct logger's is, at 160,024 bytes), but every writer
# caps it at 10,000 pairs; one claiming more than 64 MiB (4 million pairs) is treated as corrupt (then scanned)
# so that a damaged length cannot make the reader hold a whole 1 GiB log in memory.
MAP_MAX_BATCH_READ = 64 * 1024 * 1024
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_REC = struct.Struct(">iq")
_BATCH = struct.Struct(">qqi")
_EMPTY = np.zeros(0, dtype=np.int64)

Throttle = Callable[[int], None]
IntArray = npt.NDArray[np.int64]


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


@dataclass(frozen=True)
class LogRead:
    """The metadata of one log: per-ledger bytes (sorted by ledger id) and how it was obtained."""

    logger: str
    header_version: int | None
    read_via: str
    reason: str | None
    ledger_ids: IntArray
    ledger_bytes: IntArray
    data_bytes: int
    bytes_read: int  # bytes read from the file by the scan path (the throttled part)
    truncated: bool = False  # the scan stopped at a record cut short by the end of the file
    meta_bytes_read: int = 0  # bytes of header and ledgers map read
    # (offset, length) ranges read, for dropping their pages afterwards; length 0 = to the end of the file
    read_ranges: tuple[tuple[int, int], ...] = ((0, 0),)

    @property
    def ledgers(self) -> int:
        return int(self.ledger_ids.shape[0])


def _pread(fd: int, n: int, offset: int) -> bytes:
    """Read up to ``n`` bytes at ``offset`` (short only at the end of the file)."""
    out = os.pread(fd, n, offset)
    if len(out) == n or not out:
        return out
    parts = [out]
    got = len(out)
    while got < n:
        more = os.pread(fd, n - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


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


def _aggregate(ids: IntArray, sizes: IntArray) -> tuple[IntArray, IntArray]:
    """Sum sizes per ledger id (``ConcurrentLongLongHashMap.addAndGet``), sorted by ledger id."""
    if ids.shape[0] == 0:
        return _EMPTY, _EMPTY
    order = np.argsort(ids, kind="stable")
    sid = ids[order]
    ssz = sizes[order]
    if sid.shape[0] == 1 or bool(np.all(sid[1:] != sid[:-1])):
        return sid, ssz
    starts = np.flatnonzero(np.concatenate(([True], sid[1:] != sid[:-1])))
    return sid[starts], np.add.reduceat(ssz, starts)


def read_map(fd: int, size: int, header: Header) -> tuple[IntArray, IntArray, int]:
    """The ledgers map as (ledger ids, bytes, bytes read), or MapInvalid with upstream's reason for refusing it.

    Default logger: ``DefaultEntryLogger.extractEntryLogMetadataFromIndex``. Direct logger: ``directentrylogger
    .LogMetadata.read``. Batches are parsed with numpy over whole buffers, not per pair.
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
    # One read sized from the header's count (ledgers pairs + batch headers + the next length), more if needed.
    expected = max(header.ledgers_count, 0)
    want = expected * LEDGERS_MAP_ENTRY_SIZE + (expected // LEDGERS_MAP_MAX_BATCH_SIZE + 1) * 24 + 4
    base = offset
    buf = _pread(fd, max(0, min(want, size - offset, MAP_FIRST_READ)), offset) if offset < size else b""
    id_parts: list[IntArray] = []
    size_parts: list[IntArray] = []

    nread = len(buf)

    def ensure(start: int, end: int) -> bool:
        """Make [start, end) readable in ``buf``; a new read starts at ``start`` (the batch being parsed)."""
        nonlocal buf, base, nread
        if start >= base and end <= base + len(buf):
            return True
        if end > size:
            return False
        buf = _pread(fd, min(max(end - start, MAP_FIRST_READ), size - start), start)
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
        if length > MAP_MAX_BATCH_READ:  # bounded memory; no writer makes a batch over 160,024 bytes
            raise MapInvalid("map-invalid:batch-too-large")
        if not ensure(offset, offset + 4 + length) or length < 20:
            raise MapInvalid("map-invalid:truncated")
        lid, eid, n = _BATCH.unpack_from(buf, offset + 4 - base)
        if lid != INVALID_LID:
            raise MapInvalid("map-invalid:ledger-id")
        if eid != LEDGERS_MAP_ENTRY_ID:
            raise MapInvalid("map-invalid:entry-id")
        n = max(n, 0)
        if length != 20 + LEDGERS_MAP_ENTRY_SIZE * n:  # pairs overrun the batch, or bytes left after them
            raise MapInvalid("map-invalid:batch-size")
        if n:
            pairs = np.frombuffer(buf, dtype=">i8", count=2 * n, offset=offset + 24 - base)
            id_parts.append(pairs[0::2].astype(np.int64))
            size_parts.append(pairs[1::2].astype(np.int64))
        offset += length + 4
    ids = np.concatenate(id_parts) if id_parts else _EMPTY
    sizes = np.concatenate(size_parts) if size_parts else _EMPTY
    ids, sizes = _aggregate(ids, sizes)
    if not direct:
        if ids.shape[0] != header.ledgers_count:
            raise MapInvalid("map-invalid:count")
        if header.ledgers_count == 0:  # "No ledgers map found ..., do scan to double confirm"
            raise MapInvalid("map-invalid:empty")
    return ids, sizes, nread


class _Window:
    """A read window over the file: big chunked reads, throttled, with holes skipped by SEEK_DATA."""

    def __init__(self, fd: int, size: int, chunk: int, throttle: Throttle | None) -> None:
        self.fd = fd
        self.size = size
        self.chunk = max(chunk, 64 * 1024)
        self.throttle = throttle
        self.base = 0
        self.buf = b""
        self.bytes_read = 0

    def load(self, pos: int, need: int) -> bool:
        """Make ``[pos, pos + need)`` available in ``buf``; False when the file ends first."""
        if pos >= self.base and pos + need <= self.base + len(self.buf):
            return True
        if pos + need > self.size:
            return False
        n = min(max(self.chunk, need), self.size - pos)
        if n > need:  # stop the read where a hole starts (sparse or pre-allocated files): next_nonzero skips it
            try:
                hole = os.lseek(self.fd, pos, os.SEEK_HOLE)
            except OSError:
                hole = self.size
            n = max(need, min(n, hole - pos))
        data = _pread(self.fd, n, pos)
        self.base, self.buf = pos, data
        self.bytes_read += len(data)
        if self.throttle is not None:
            self.throttle(len(data))
        return pos + need <= pos + len(data)

    def next_nonzero(self, pos: int) -> int:
        """The first offset >= pos holding a non-zero byte, or ``size``. Holes are skipped with SEEK_DATA."""
        while pos < self.size:
            if not (self.base <= pos < self.base + len(self.buf)):
                try:
                    data_at = os.lseek(self.fd, pos, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole is left (or SEEK_DATA unsupported: read on)
                    data_at = self.size if _only_hole_left(self.fd, pos) else pos
                if data_at >= self.size:
                    return self.size
                pos = max(pos, data_at)
                self.load(pos, 1)
            view = self.buf[pos - self.base :]
            stripped = view.lstrip(b"\x00")
            if stripped:
                return pos + len(view) - len(stripped)
            pos = self.base + len(self.buf)
        return self.size


def _only_hole_left(fd: int, pos: int) -> bool:
    try:
        os.lseek(fd, pos, os.SEEK_DATA)
    except OSError as e:
        return e.errno == 6  # ENXIO
    return False


def scan_default(fd: int, size: int, *, chunk: int = DEFAULT_CHUNK, throttle: Throttle | None = None) -> LogRead:
    """``DefaultEntryLogger.scanEntryLog`` with ``extractEntryLogMetadataByScanning``'s scanner.

    From 1024: read the 4-byte length and the ledger id (a short read ends the scan); a length <= 0 is padding,
    step one byte (runs of zero bytes are skipped at once: every position inside them reads length 0); ledger id
    -1 (a map batch) or any negative id is skipped by its length without reading it; otherwise the entry is read
    (a short read ends the scan: a record cut by the end of the file is not counted) and ``L + 4`` is counted.
    """
    w = _Window(fd, size, chunk, throttle)
    ids: list[int] = []
    sizes: list[int] = []
    pos = LOGFILE_HEADER_SIZE
    truncated = False
    rec = _REC
    while pos < size:
        if not w.load(pos, 12):  # "Short read for entry size": a cut record unless only zeros are left
            truncated = any(_pread(fd, 12, pos))
            break
        length, lid = rec.unpack_from(w.buf, pos - w.base)
        if length <= 0:
            if length == 0:
                nz = w.next_nonzero(pos)
                pos = max(pos + 1, nz - 3)
            else:
                pos += 1
            continue
        pos += 4
        if lid < 0:  # INVALID_LID (map batch) or refused by accept(ledgerId >= 0): skip by length
            pos += length
            continue
        if pos + length > size:  # "Short read for ledger entry from entryLog"
            truncated = True
            break
        ids.append(lid)
        sizes.append(length + 4)
        pos += length
    return _scanned(LOGGER_DEFAULT, ids, sizes, w.bytes_read, truncated)


def scan_direct(fd: int, size: int, *, chunk: int = DEFAULT_CHUNK, throttle: Throttle | None = None) -> LogRead:
    """``directentrylogger.LogReaderScan.scan`` with ``DirectEntryLogger.scanEntryLogMetadata``'s scanner.

    From 1024 (the header's dummy record skips to 4096): a negative length is padding, jump to the next 4 KiB
    boundary; a zero length is pre-allocated space, the log ends; otherwise read the entry, count ``L + 4`` when
    its ledger id (first 8 bytes) is >= 0. Upstream raises EOF on a record cut by the end of the file; this scan
    stops there and keeps what came before (``truncated``). A negative length exactly on a boundary (which
    upstream's ``nextAlignment`` would not move past) also ends the scan.
    """
    w = _Window(fd, size, chunk, throttle)
    ids: list[int] = []
    sizes: list[int] = []
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
            ids.append(lid)
            sizes.append(length + 4)
        pos += length
    return _scanned(LOGGER_DIRECT, ids, sizes, w.bytes_read, truncated)


def _scanned(logger: str, ids: list[int], sizes: list[int], bytes_read: int, truncated: bool) -> LogRead:
    lid, lsz = _aggregate(np.asarray(ids, dtype=np.int64), np.asarray(sizes, dtype=np.int64))
    return LogRead(
        logger=logger,
        header_version=None,
        read_via=READ_SCAN,
        reason=None,
        ledger_ids=lid,
        ledger_bytes=lsz,
        data_bytes=int(lsz.sum()) if lsz.shape[0] else 0,
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
) -> LogRead:
    """Read a log the way the bookie's GC does (``getEntryLogMetadata`` of either logger): the map, else a scan.

    ``reason`` says why a log was scanned (``no-map``, ``version-0``, ``short-file``, ``map-invalid:<why>``);
    ``force_scan`` scans even when the map is valid (the bench's scanned path and the property tests).
    """
    head = _pread(fd, DIRECT_HEADER_SIZE, 0) if size > 0 else b""
    header = read_header(head)
    logger = LOGGER_DIRECT if header.direct else LOGGER_DEFAULT
    version = header.version if len(head) >= LOGFILE_HEADER_SIZE else None
    reason: str | None
    if size < LOGFILE_HEADER_SIZE:
        reason = "short-file"
    elif force_scan:
        reason = "forced"
    else:
        try:
            ids, sizes, nread = read_map(fd, size, header)
        except MapInvalid as e:
            reason = e.reason
        else:
            return LogRead(
                logger=logger,
                header_version=version,
                read_via=READ_MAP,
                reason=None,
                ledger_ids=ids,
                ledger_bytes=sizes,
                data_bytes=int(sizes.sum()) if sizes.shape[0] else 0,
                bytes_read=0,
                meta_bytes_read=len(head) + nread,
                read_ranges=((0, len(head)), (header.map_offset, nread)),
            )
    scan = scan_direct if header.direct else scan_default
    got = scan(fd, size, chunk=chunk, throttle=throttle)
    if got.truncated:
        reason = f"{reason}:truncated"
    return LogRead(
        logger=logger,
        header_version=version,
        read_via=READ_SCAN,
        reason=reason,
        ledger_ids=got.ledger_ids,
        ledger_bytes=got.ledger_bytes,
        data_bytes=got.data_bytes,
        bytes_read=got.bytes_read,
        truncated=got.truncated,
        meta_bytes_read=len(head),
    )
