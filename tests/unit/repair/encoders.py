"""Znode payloads for repair tests, built with the formats encoders."""

from __future__ import annotations

from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import LedgerMetadata, encode_ledger_metadata
from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo, encode_managed_ledger_info
from pulsar_ops.formats.schema_locator import SchemaIndexEntry, SchemaLocator, encode_schema_locator


def ledger_md(
    custom: dict[str, str],
    *,
    length: int = 1000,
    ctime_ms: int | None = 1_600_000_000_000,
    bookies: tuple[str, ...] = ("bk1:3181", "bk2:3181"),
) -> bytes:
    md = LedgerMetadata(
        ledger_id=None,
        format_version=3,
        ensemble_size=len(bookies),
        write_quorum=len(bookies),
        ack_quorum=len(bookies),
        state="CLOSED",
        length=length,
        last_entry_id=9,
        ensembles=((0, bookies),),
        digest_type="CRC32C",
        password=b"",
        ctime_ms=ctime_ms,
        custom_metadata=tuple((k, v.encode()) for k, v in custom.items()),
        ctoken=None,
    )
    return encode_ledger_metadata(md, 3)


def ml_info(ledger_ids: list[int], *, compression: str = "NONE") -> bytes:
    infos = tuple(LedgerInfo(ledger_id=lid, entries=10, size=100, timestamp_ms=1_600_000_000_000) for lid in ledger_ids)
    return encode_managed_ledger_info(ManagedLedgerInfo(ledgers=infos), compression=compression)


def cursor_info(
    cursor_ledger: int = -1,
    *,
    compacted: int | None = None,
    buckets: dict[str, str] | None = None,
    compression: str = "NONE",
) -> bytes:
    props = (("CompactedTopicLedger", compacted),) if compacted is not None else ()
    info = ManagedCursorInfo(
        cursors_ledger_id=cursor_ledger,
        mark_delete=(1, 0),
        properties=props,
        cursor_properties=tuple((buckets or {}).items()),
    )
    return encode_cursor_info(info, compression=compression)


def schema_locator(ledger_ids: list[int]) -> bytes:
    entries = tuple(
        SchemaIndexEntry(version=i, ledger_id=lid, entry_id=0, hash=b"h") for i, lid in enumerate(ledger_ids)
    )
    return encode_schema_locator(SchemaLocator(info=entries[-1], index=entries))
