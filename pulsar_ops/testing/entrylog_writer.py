"""Write BookKeeper entry logs and a bookie's local ledger index the way a bookie does (tests, seeder, demo, bench).

Formats (bookie-storage.md §2, §3.1, §10), following upstream apache/bookkeeper:
- default logger (``DefaultEntryLogger``): 1024-byte header ``BKLO``, version, ledgers-map offset (int64), ledgers
  count (int32); records ``[L int32][ledger id int64][entry id int64][rest]`` packed from offset 1024; on rollover
  the ledgers map is appended in batches of at most 10,000 pairs, each framed like a record with ledger id -1 and
  entry id -2, and the header's offset and count are patched (``DefaultEntryLogger.BufferedLogChannel
  .appendLedgersMap``);
- Direct I/O logger (``directentrylogger``): a 4096-byte header block carrying the same fields plus a dummy record
  at 1024 (length 3068, ledger id -1) so a legacy reader skips to 4096 (``Header.EMPTY_HEADER``); records are
  packed into write buffers that never split a record, each flushed buffer padded with ``0xF0`` up to the next
  4 KiB boundary (``Buffer.padToAlignment``, ``DirectWriter.writeDelimited``); the file is pre-allocated as zeros
  (``DirectWriter``: fallocate of the whole ``logSizeLimit``); the map is written after a flush and then the
  header block is rewritten (``WriterWithMetadata.finalizeAndClose``, ``LogMetadata.write``);
- local index (``LedgerMetadataIndex``): RocksDB ``<index_dir>/current/ledgers``, key = 8-byte big-endian ledger
  id, value = ``LedgerData`` proto2 (``DbLedgerStorageDataFormats.proto``: exists=1, fenced=2, masterKey=3,
  explicitLac=4, limbo=5).

Every entry counts ``L + 4`` bytes for its ledger (``EntryLogMetadata.addLedgerSize`` called with the entry size
plus the length prefix), which is what :class:`EntryLogTruth` reports.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

FINGERPRINT = b"BKLO"
LOGFILE_HEADER_SIZE = 1024
DIRECT_HEADER_SIZE = 4096
ALIGNMENT = 4096
PADDING_BYTE = 0xF0
LOG_SIZE_LIMIT = 1 << 30
INVALID_LID = -1
LEDGERS_MAP_ENTRY_ID = -2
LEDGERS_MAP_MAX_BATCH_SIZE = 10_000
# The Direct logger's write buffer (records are never split across two buffers; each flush pads to 4 KiB). Upstream
# sizes it from dbStorage_directIOEntryLoggerTotalWriteBufferSizeMB (DirectEntryLogger's BufferPool); a smaller one
# here makes small test logs cross many buffer boundaries. The map is written as one piece after the last flush.
DIRECT_WRITE_BUFFER = 64 * 1024

Logger = Literal["default", "direct"]
Entry = tuple[int, int, bytes] | tuple[int, int, int]


@dataclass(frozen=True)
class EntryLogTruth:
    """What a correct reader must find in the log written by :func:`write_entry_log`."""

    log_id: int
    data_bytes: int
    bytes_per_ledger: dict[int, int]
    entries: int = 0
    map_offset: int = 0
    file_bytes: int = 0
    logger: str = "default"


@dataclass(frozen=True)
class LocalIndexRow:
    ledger_id: int
    exists: bool = True
    fenced: bool = False
    limbo: bool = False


def entry_log_name(log_id: int) -> str:
    """``Long.toHexString(logId) + ".log"`` (DefaultEntryLogger.logId2HexString)."""
    return f"{log_id:x}.log"


def entry_log_path(ledger_dir: Path, log_id: int) -> Path:
    return Path(ledger_dir) / "current" / entry_log_name(log_id)


def write_last_id(ledger_dir: Path, log_id: int) -> None:
    """``<ledger_dir>/current/lastId``: the last allocated id in lowercase hex and a newline (EntryLoggerAllocator)."""
    cur = Path(ledger_dir) / "current"
    cur.mkdir(parents=True, exist_ok=True)
    (cur / "lastId").write_text(f"{log_id:x}\n", encoding="ascii")


def _header(version: int, map_offset: int, count: int, *, direct: bool) -> bytes:
    size = DIRECT_HEADER_SIZE if direct else LOGFILE_HEADER_SIZE
    buf = bytearray(size)
    buf[0:4] = FINGERPRINT
    struct.pack_into(">iqi", buf, 4, version, map_offset, count)
    if direct:
        struct.pack_into(">iq", buf, LOGFILE_HEADER_SIZE, DIRECT_HEADER_SIZE - LOGFILE_HEADER_SIZE - 4, INVALID_LID)
    return bytes(buf)


def _record(ledger_id: int, entry_id: int, payload: bytes | int) -> bytes:
    body_len = payload if isinstance(payload, int) else len(payload)
    if body_len < 0:
        raise ValueError("payload length must be >= 0")
    head = struct.pack(">iqq", 16 + body_len, ledger_id, entry_id)
    return head + (bytes(body_len) if isinstance(payload, int) else payload)


def _map_batches(pairs: list[tuple[int, int]]) -> list[bytes]:
    """The ledgers map as framed batches (``appendLedgersMap`` / ``LogMetadata.write``)."""
    out: list[bytes] = []
    for start in range(0, len(pairs), LEDGERS_MAP_MAX_BATCH_SIZE):
        batch = pairs[start : start + LEDGERS_MAP_MAX_BATCH_SIZE]
        n = len(batch)
        flat = [v for pair in batch for v in pair]
        out.append(struct.pack(f">iqqi{2 * n}q", 20 + 16 * n, INVALID_LID, LEDGERS_MAP_ENTRY_ID, n, *flat))
    return out


def _align(pos: int) -> int:
    return (pos + ALIGNMENT - 1) & ~(ALIGNMENT - 1)


def write_entry_log(
    path: Path,
    log_id: int,
    entries: Iterable[Entry],
    *,
    logger: Logger = "default",
    with_map: bool = True,
    header_version: int = 1,
    truncate_last: bool = False,
    sparse_size: int | None = None,
) -> EntryLogTruth:
    """Write one entry log at ``path`` (e.g. :func:`entry_log_path`) and return what a reader must find.

    ``entries`` are ``(ledger_id, entry_id, payload)`` or ``(ledger_id, entry_id, payload_len)`` (zero payload).
    ``with_map=False`` leaves the header's map offset 0 (the active log, or a bookie that crashed before rollover).
    ``header_version=0`` writes the old header (no map possible). ``truncate_last`` cuts the last record short and
    ends the file there (a bookie that died mid-write; no map); the truth then excludes that record.
    ``sparse_size``: logical file size (a sparse file): the default logger puts the map at the end of it with a hole
    between the records and the map, spanned by one filler record of ledger id -1 (scanners skip it by length);
    the Direct logger pre-allocates up to it (otherwise 4 KiB of zeros past the last block, where the real logger
    pre-allocates the whole ``logSizeLimit``).
    """
    if logger not in ("default", "direct"):
        raise ValueError(f"unknown logger {logger!r}")
    if with_map and (truncate_last or header_version < 1):
        raise ValueError("a log with a truncated record or a version-0 header has no ledgers map")
    direct = logger == "direct"
    per_ledger: dict[int, int] = {}
    data_bytes = 0
    count = 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(_header(header_version, 0, 0, direct=direct))
        pos = DIRECT_HEADER_SIZE if direct else LOGFILE_HEADER_SIZE
        buf_start = pos  # Direct logger: where the current write buffer starts
        out = bytearray()  # written in pieces of a few MiB: memory stays flat for logs of any size

        def put(rec: bytes) -> None:
            nonlocal pos, buf_start, out
            if direct:
                if len(rec) > DIRECT_WRITE_BUFFER:
                    raise ValueError("record larger than the Direct logger's write buffer")
                if pos - buf_start + len(rec) > DIRECT_WRITE_BUFFER:  # flushBuffer: pad to the next 4 KiB
                    pad = _align(pos) - pos
                    out += bytes([PADDING_BYTE]) * pad
                    pos += pad
                    buf_start = pos
            out += rec
            pos += len(rec)
            if len(out) >= 4 << 20:
                fh.write(out)
                out = bytearray()

        previous: bytes | None = None  # one record held back: truncate_last cuts the last one
        for ledger_id, entry_id, payload in entries:
            rec = _record(ledger_id, entry_id, payload)
            if previous is not None:
                put(previous)
            previous = rec
            per_ledger[ledger_id] = per_ledger.get(ledger_id, 0) + len(rec)
            data_bytes += len(rec)
            count += 1
        if truncate_last:
            if previous is None:
                raise ValueError("truncate_last needs at least one entry")
            ledger_id = struct.unpack_from(">q", previous, 4)[0]
            per_ledger[ledger_id] -= len(previous)
            if per_ledger[ledger_id] == 0:
                del per_ledger[ledger_id]
            data_bytes -= len(previous)
            count -= 1
            out += previous[: 4 + (len(previous) - 4) // 2]  # the file ends inside this record
            pos += 4 + (len(previous) - 4) // 2
        else:
            if previous is not None:
                put(previous)
            if direct:  # finalizeAndClose / flush: pad the last buffer
                pad = _align(pos) - pos
                out += bytes([PADDING_BYTE]) * pad
                pos += pad

        map_offset = 0
        pairs = list(per_ledger.items())
        map_bytes = b""
        if with_map and pairs:
            map_bytes = b"".join(_map_batches(pairs))
            if direct:
                map_offset = pos
                map_bytes += bytes([PADDING_BYTE]) * (_align(pos + len(map_bytes)) - pos - len(map_bytes))
            elif sparse_size is not None and sparse_size - len(map_bytes) - pos >= 20:
                # The map at the end of the logical size; a filler record of ledger id -1 spans the hole so that
                # a scan skips it by length as it skips a map batch (scanEntryLog), instead of stepping through
                # zeros into the map's length field.
                map_offset = sparse_size - len(map_bytes)
                out += struct.pack(">iqq", map_offset - pos - 4, INVALID_LID, 0)
            else:
                map_offset = pos
        fh.write(out)
        if map_bytes:
            fh.seek(map_offset)
            fh.write(map_bytes)
        if map_offset:  # rollover: the header's offset and count are patched last
            fh.seek(0)
            fh.write(_header(header_version, map_offset, len(pairs), direct=direct))
        fh.seek(0, 2)
        end = fh.tell()
        if direct and not truncate_last:
            fh.truncate(max(sparse_size or 0, _align(end) + ALIGNMENT))
        elif sparse_size is not None and sparse_size > end:
            fh.truncate(sparse_size)
    return EntryLogTruth(
        log_id=log_id,
        data_bytes=data_bytes,
        bytes_per_ledger=dict(per_ledger),
        entries=count,
        map_offset=map_offset,
        file_bytes=path.stat().st_size,
        logger=logger,
    )


def encode_ledger_data(row: LocalIndexRow, master_key: bytes = b"") -> bytes:
    """``LedgerData`` in proto2 wire format: exists (1), fenced (2), masterKey (3), limbo (5, only when set)."""
    out = bytearray([0x08, int(row.exists), 0x10, int(row.fenced), 0x1A, len(master_key)])
    out += master_key
    if row.limbo:
        out += bytes([0x28, 1])
    return bytes(out)


STORAGE_FLAGS_KEY = struct.pack(">q", -0xEEFD)


def write_ledger_index(index_dir: Path, rows: Iterable[LocalIndexRow]) -> None:
    """Create ``<index_dir>/current/ledgers`` (RocksDB, raw keys) holding ``rows`` and the storage-flags key."""
    from rocksdict import Options, Rdict

    db_dir = Path(index_dir) / "current" / "ledgers"
    db_dir.parent.mkdir(parents=True, exist_ok=True)
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    db = Rdict(str(db_dir), opts)
    try:
        db[STORAGE_FLAGS_KEY] = struct.pack(">q", 0)
        for row in rows:
            db[struct.pack(">q", row.ledger_id)] = encode_ledger_data(row, b"\x00" * 20)
        db.flush()
    finally:
        db.close()
    # A bookie's directory has no file of the Python binding's own.
    cfg = db_dir / "rocksdict-config.json"
    if cfg.exists():
        cfg.unlink()


def write_large_map_log(path: Path, log_id: int, pairs: int, *, entry_bytes: int = 100, first_ledger: int = 0) -> int:
    """A default-logger log whose ledgers map lists ``pairs`` ledgers (``first_ledger`` on, ``entry_bytes`` each),
    written with numpy in bounded memory. The data region before the map is a hole (sparse): the map is what is
    measured. Returns the log's data bytes (what a map reader must sum)."""
    import numpy as np

    del log_id  # the id is the file name's
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    map_offset = LOGFILE_HEADER_SIZE + pairs * entry_bytes
    with open(path, "wb") as fh:
        fh.write(_header(1, map_offset, pairs, direct=False))
        fh.seek(map_offset)
        n = LEDGERS_MAP_MAX_BATCH_SIZE
        full = np.dtype([("len", ">i4"), ("lid", ">i8"), ("eid", ">i8"), ("n", ">i4"), ("pairs", ">i8", (n, 2))])
        per_write = 100  # batches (1M pairs) per write
        done = 0
        while done < pairs:
            k = min(per_write, (pairs - done) // n)
            if k == 0:  # the last, short batch
                rest = pairs - done
                ids = np.arange(first_ledger + done, first_ledger + done + rest, dtype=">i8")
                flat = np.empty((rest, 2), dtype=">i8")
                flat[:, 0] = ids
                flat[:, 1] = entry_bytes
                fh.write(struct.pack(">iqqi", 20 + 16 * rest, INVALID_LID, LEDGERS_MAP_ENTRY_ID, rest))
                fh.write(flat.tobytes())
                done += rest
                break
            arr = np.zeros(k, dtype=full)
            arr["len"] = 20 + 16 * n
            arr["lid"] = INVALID_LID
            arr["eid"] = LEDGERS_MAP_ENTRY_ID
            arr["n"] = n
            grid = np.arange(first_ledger + done, first_ledger + done + k * n, dtype=np.int64).reshape(k, n)
            arr["pairs"][:, :, 0] = grid
            arr["pairs"][:, :, 1] = entry_bytes
            fh.write(arr.tobytes())
            done += k * n
    return pairs * entry_bytes


def write_dense_log(path: Path, size: int, *, record_bytes: int = 16, ledgers: int = 100) -> dict[int, int]:
    """An active default-logger log (no map) of ``size`` bytes packed with ``record_bytes``-byte records
    (``L = record_bytes - 4``: the ledger id and ``L - 8`` more bytes), ledger ``i % ledgers`` for record ``i``,
    written with numpy in bounded memory. Returns the bytes per ledger a scan must find (``L + 4`` per entry)."""
    import numpy as np

    if record_bytes < 12:
        raise ValueError("a record needs its length and ledger id (12 bytes)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = max(0, (size - LOGFILE_HEADER_SIZE) // record_bytes)
    dt = np.dtype([("len", ">i4"), ("lid", ">i8"), ("rest", f"V{record_bytes - 12}")] if record_bytes > 12 else
                  [("len", ">i4"), ("lid", ">i8")])  # fmt: skip
    with open(path, "wb") as fh:
        fh.write(_header(1, 0, 0, direct=False))
        step = 1 << 20
        for lo in range(0, count, step):
            hi = min(count, lo + step)
            arr = np.zeros(hi - lo, dtype=dt)
            arr["len"] = record_bytes - 4
            arr["lid"] = np.arange(lo, hi, dtype=np.int64) % ledgers
            fh.write(arr.tobytes())
    per, extra = divmod(count, ledgers)
    return {lid: (per + (1 if lid < extra else 0)) * record_bytes for lid in range(min(ledgers, count))}
