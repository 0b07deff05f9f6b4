"""The bookie-scan contract: table names, columns and manifest constants (shared by `scan-bookie` and the audit).

A scan directory holds one Parquet file per table (``<table>.parquet``) and ``manifest.json``, written last.
Column types use the snapshot's small type strings (``snapshot.schema.TYPES``) so this module stays free of I/O
libraries; ``bookiescan.writer`` maps them to Arrow types.

Identity of an entry log: (bookie_id, ledger_dir, log_id). DbLedgerStorage runs one entry logger per ledger
directory, so one log id can exist in two directories of a bookie (bookie-storage.md §2.1).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pulsar_ops.snapshot.schema import TYPES, Column, Table

FORMAT = "pulsar-ops-bookie-scan"
FORMAT_VERSION = 2
# versions this pulsar-ops reads: 1 kept every skipped name in the manifest's ``skipped`` list; 2 keeps them in the
# ``skipped_logs`` table and a summary in the manifest (500,000 junk names built a 62 MB manifest in 774 MB RSS)
READ_VERSIONS = (1, 2)
MANIFEST_NAME = "manifest.json"
SKIPPED_FIRST = 20  # skipped names the manifest repeats (the table has them all)
VANISHED = "vanished"  # a skip reason that is not an error: GC deleted the log, its bytes are gone

# entry_logs.read_via
READ_MAP = "map"
READ_SCAN = "scan"
READ_SKIPPED = "skipped"

# entry_logs.logger
LOGGER_DEFAULT = "default"
LOGGER_DIRECT = "direct"

# manifest index.status
INDEX_READ = "read"
INDEX_UNAVAILABLE = "unavailable"  # the RocksDB binding is not importable
INDEX_ABSENT = "absent"  # no `ledgers` database under any index dir
INDEX_ERROR = "error"  # present but could not be read (the scan is then not complete)


def _c(name: str, type_: str, doc: str = "", nullable: bool = True) -> Column:
    assert type_ in TYPES, type_
    return Column(name, type_, doc, nullable)


ENTRY_LOGS = Table(
    "entry_logs",
    "One row per entry-log file found under <ledger_dir>/current (including transactional-compaction files).",
    (
        _c("bookie_id", "string", "the --bookie-id of the scan (a BookieId, e.g. host:3181)", False),
        _c("ledger_dir", "string", "the configured ledgerDirectories entry (as given to --ledger-dirs)", False),
        _c("log_id", "int64", "entry-log id (hex file name before the first dot)", False),
        _c("file", "string", "path relative to ledger_dir, e.g. current/1a.log", False),
        _c("file_bytes", "int64", "file size (st_size; Direct I/O logs are pre-allocated, so not data size)", False),
        _c("data_bytes", "int64", "sum over entries of L + 4 (as EntryLogMetadata counts); 0 when skipped", False),
        _c("mtime_ms", "int64", "file mtime when opened", False),
        _c("inode", "int64", "st_ino (with log_id and mtime_ms identifies the file: ids wrap and are reused)", False),
        _c("logger", "string", "default | direct (Direct I/O entry logger: 4 KiB header with a dummy record)", False),
        _c("header_version", "int32", "header version (0 or 1); null when the file has no complete header"),
        _c("read_via", "string", "map | scan | skipped", False),
        _c(
            "reason",
            "string",
            "why scanned or skipped (no-map, active, map-invalid:<why>, version-0, short-file, "
            "vanished, read-error:<errno>, ...); null when read via the map",
        ),
        _c("ledgers", "int32", "distinct ledgers found in the log", False),
        _c(
            "compacting",
            "bool",
            "a transactional-compaction file (*.log.compacting, *.log.<id>.compacted); its "
            "ledgers are not in entry_log_ledgers (its entries are copies of another log's)",
            False,
        ),
    ),
)

ENTRY_LOG_LEDGERS = Table(
    "entry_log_ledgers",
    "One row per (entry log, ledger): the ledger's bytes in that log, from the ledgers map or a scan.",
    (
        _c("bookie_id", "string", "", False),
        _c("ledger_dir", "string", "", False),
        _c("log_id", "int64", "", False),
        _c("ledger_id", "int64", "", False),
        _c(
            "bytes",
            "int64",
            "sum of L + 4 over the ledger's entries in the log (EntryLogMetadata.addLedgerSize)",
            False,
        ),
    ),
)

LOCAL_INDEX = Table(
    "local_index",
    "The bookie's local ledger index (<index_dir>/current/ledgers RocksDB, LedgerMetadataIndex): one row per "
    "ledger id >= 0 (the reserved negative storage-flags key is skipped, as upstream does).",
    (
        _c("bookie_id", "string", "", False),
        _c("index_dir", "string", "the index directory (an --index-dirs entry, default the ledger dir)", False),
        _c("ledger_id", "int64", "", False),
        _c("exists", "bool", "LedgerData.exists (field 1)", False),
        _c("fenced", "bool", "LedgerData.fenced (field 2)", False),
        _c("limbo", "bool", "LedgerData.limbo (field 5, optional, false when absent)", False),
    ),
)

SKIPPED_LOGS = Table(
    "skipped_logs",
    "Every name under <ledger_dir>/current that looks like an entry log and was not read, with why (format 2; "
    "not loaded by the audit, which reads the manifest's summary of it).",
    (
        _c("bookie_id", "string", "", False),
        _c("ledger_dir", "string", "", False),
        _c(
            "file",
            "string",
            "path relative to ledger_dir (current/ for a directory that could not be listed); bytes of a name that "
            "are not UTF-8 are shown as \\xNN",
            False,
        ),
        _c(
            "reason",
            "string",
            "bad-name, bad-id, duplicate-id, not-regular:<kind>, stat-error:<errno>, list-error:<errno>, "
            "open-error:<errno>, read-error:<errno>, vanished (GC deleted it: not an error)",
            False,
        ),
        _c("file_hex", "string", "file's exact bytes in hex when they are not UTF-8; null otherwise"),
    ),
)

TABLES: tuple[Table, ...] = (ENTRY_LOGS, ENTRY_LOG_LEDGERS, LOCAL_INDEX)  # what the audit loads
WRITTEN: tuple[Table, ...] = (*TABLES, SKIPPED_LOGS)  # what scan-bookie writes (format 2)
_BY_NAME = {t.name: t for t in WRITTEN}


def errors_among(by_reason: dict[str, int]) -> int:
    """The skipped names that make a scan partial: every reason but ``vanished`` (a log GC deleted while the scan
    ran is gone from the disk, not unknown)."""
    return int(sum(n for reason, n in by_reason.items() if reason != VANISHED))


def skipped_errors(doc: dict[str, Any]) -> int | None:
    """Names skipped for an error (every reason but ``vanished``) in a manifest of a version in ``READ_VERSIONS``;
    None when the manifest's ``skipped`` is not of its version's shape."""
    got = doc.get("skipped")
    if doc.get("format_version") == 1:
        if not isinstance(got, list) or not all(isinstance(s, dict) for s in got):
            return None
        return errors_among(dict(Counter(str(s.get("reason")) for s in got)))
    by_reason = got.get("by_reason") if isinstance(got, dict) else None
    if not isinstance(by_reason, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in by_reason.items()
    ):
        return None
    return errors_among(by_reason)


def table(name: str) -> Table:
    return _BY_NAME[name]


def table_file(name: str) -> str:
    """File name of a table inside a scan directory."""
    return f"{table(name).name}.parquet"
