"""SchemaLocator (value of ``/schemas/<tenant>/<ns>/<encLocalName>``), ``SchemaStorageFormat.proto``.

Referenced schema ledgers = every ``index[*].ledger_id`` (``info`` is the latest version, normally also in
``index``); ``SchemaLocator.ledger_ids`` gives them all, distinct.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import proto
from pulsar_ops.formats._pb import parse_binary


@dataclass(frozen=True, slots=True)
class SchemaIndexEntry:
    version: int
    ledger_id: int
    entry_id: int
    hash: bytes


@dataclass(frozen=True, slots=True)
class SchemaLocator:
    info: SchemaIndexEntry
    index: tuple[SchemaIndexEntry, ...]

    @property
    def ledger_ids(self) -> tuple[int, ...]:
        """Distinct ledger ids of ``info`` and every ``index`` entry, in order of appearance."""
        return tuple(dict.fromkeys([self.info.ledger_id, *(e.ledger_id for e in self.index)]))


def _entry(m: Any) -> SchemaIndexEntry:
    return SchemaIndexEntry(m.version, m.position.ledgerId, m.position.entryId, bytes(m.hash))


def decode_schema_locator(data: bytes, path: str) -> SchemaLocator:
    if not data:
        raise DecodeError(path, "SchemaLocator: empty value (required field info missing)")
    msg = parse_binary(proto.SchemaLocator, bytes(data), path, "SchemaLocator")
    return SchemaLocator(_entry(msg.info), tuple([_entry(e) for e in msg.index[:]]))


def _fill(m: Any, e: SchemaIndexEntry) -> None:
    m.version = e.version
    m.position.ledgerId = e.ledger_id
    m.position.entryId = e.entry_id
    m.hash = e.hash


def encode_schema_locator(loc: SchemaLocator) -> bytes:
    msg = proto.SchemaLocator()
    _fill(msg.info, loc.info)
    for e in loc.index:
        _fill(msg.index.add(), e)
    return bytes(msg.SerializeToString())
