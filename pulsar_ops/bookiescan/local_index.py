"""Read a bookie's local ledger index (``<index_dir>/current/ledgers``, RocksDB) without writing into it.

Upstream: ``LedgerMetadataIndex`` (constructor): every key is an 8-byte big-endian ledger id (``ArrayUtil
.getLong``), keys < 0 are skipped (the reserved storage-flags key -0xeefd), values are ``LedgerData`` proto2
messages (``DbLedgerStorageDataFormats.proto``: exists = 1, fenced = 2, masterKey = 3, explicitLac = 4,
limbo = 5; the first three required).

A live bookie holds the database lock, and even a read-only open writes into the database directory (RocksDB's
info ``LOG``, the binding's ``rocksdict-config.json``). So the database is opened on a private copy in a scratch
directory (bookie-storage.md §10): hard links of the immutable ``*.sst`` files (copies when the scratch directory
is on another filesystem), copies of ``CURRENT``, ``MANIFEST-*``, ``OPTIONS-*`` and the WAL (``*.log``). A file
that disappears while the copy is made (a RocksDB compaction of the live database) means a retry.
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pulsar_ops.bookiescan.schema import INDEX_ABSENT, INDEX_ERROR, INDEX_READ, INDEX_UNAVAILABLE

_KEY = struct.Struct(">q")
COPY_ATTEMPTS = 3


@dataclass(frozen=True)
class IndexRow:
    ledger_id: int
    exists: bool
    fenced: bool
    limbo: bool


@dataclass(frozen=True)
class IndexRead:
    index_dir: str
    status: str  # read | absent | unavailable | error
    reason: str | None
    rows: tuple[IndexRow, ...] = ()
    undecodable: int = 0


def binding() -> str | None:
    """``"rocksdict x.y"`` when the RocksDB binding can be imported, else None."""
    try:
        import rocksdict  # noqa: F401
    except ImportError:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"rocksdict {version('rocksdict')}"
    except PackageNotFoundError:
        return "rocksdict"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def decode_ledger_data(value: bytes) -> tuple[bool, bool, bool]:
    """(exists, fenced, limbo) from a ``LedgerData`` message; ValueError when it is not one (a required field
    missing, a truncated field, a wire type protobuf does not define). Unknown fields are skipped as proto2 does."""
    exists = fenced = limbo = None
    has_key = False
    pos = 0
    n = len(value)
    while pos < n:
        tag, pos = _varint(value, pos)
        field, wire = tag >> 3, tag & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            v, pos = _varint(value, pos)
            if field == 1:
                exists = v != 0
            elif field == 2:
                fenced = v != 0
            elif field == 5:
                limbo = v != 0
        elif wire == 2:
            ln, pos = _varint(value, pos)
            if pos + ln > n:
                raise ValueError("truncated length-delimited field")
            pos += ln
            if field == 3:
                has_key = True
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")
        if pos > n:
            raise ValueError("truncated field")
    if exists is None or fenced is None or not has_key:
        raise ValueError("required field missing")
    return exists, fenced, bool(limbo)


def _copy_db(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    for name in sorted(os.listdir(src)):
        s = src / name
        if name.endswith(".sst"):
            try:
                os.link(s, dst / name)
                continue
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.EPERM, errno.EROFS, errno.EACCES, errno.EMLINK):
                    raise
            shutil.copyfile(s, dst / name)
        elif name == "CURRENT" or name.startswith(("MANIFEST-", "OPTIONS-")) or (name.endswith(".log")):
            shutil.copyfile(s, dst / name)


def _iterate(copy: Path) -> Iterator[tuple[bytes, bytes]]:
    from rocksdict import AccessType, Options, Rdict

    opts = Options(raw_mode=True)
    db = Rdict(str(copy), opts, access_type=AccessType.read_only())
    try:
        for k, v in db.items():
            if isinstance(k, bytes) and isinstance(v, bytes):
                yield k, v
    finally:
        db.close()


def read_local_index(index_dir: Path, scratch: Path) -> IndexRead:
    """Read ``<index_dir>/current/ledgers`` through a private copy under ``scratch`` (removed afterwards)."""
    db_dir = Path(index_dir) / "current" / "ledgers"
    label = str(index_dir)
    if not db_dir.is_dir():
        return IndexRead(label, INDEX_ABSENT, f"no {db_dir}")
    if binding() is None:
        return IndexRead(label, INDEX_UNAVAILABLE, "the RocksDB binding (rocksdict) is not installed")
    last_error = ""
    for attempt in range(COPY_ATTEMPTS):
        copy = Path(scratch) / f"ledgers-copy-{attempt}"
        try:
            _copy_db(db_dir, copy)
            rows: list[IndexRow] = []
            bad = 0
            for key, value in _iterate(copy):
                if len(key) != 8:
                    bad += 1
                    continue
                ledger_id = _KEY.unpack(key)[0]
                if ledger_id < 0:
                    continue
                try:
                    exists, fenced, limbo = decode_ledger_data(value)
                except ValueError:
                    bad += 1
                    continue
                rows.append(IndexRow(ledger_id, exists, fenced, limbo))
        except FileNotFoundError as e:  # the live database compacted while we copied: try again
            last_error = f"file vanished while copying ({e.filename})"
            continue
        except Exception as e:  # the binding raises its own exception types; any failure is an unread index
            last_error = f"{type(e).__name__}: {e}"
            continue
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        if bad:
            return IndexRead(label, INDEX_ERROR, f"{bad} key(s) or value(s) could not be decoded", tuple(rows), bad)
        return IndexRead(label, INDEX_READ, None, tuple(rows))
    return IndexRead(label, INDEX_ERROR, last_error or "could not be read")
