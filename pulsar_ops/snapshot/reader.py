"""Open a finished snapshot: refuse unfinished or other-version snapshots, read tables as Arrow."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pulsar_ops.errors import SnapshotError, SnapshotIncompleteError, SnapshotVersionError
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.arrow_schema import arrow_schema
from pulsar_ops.snapshot.manifest import MANIFEST_NAME, Manifest, read_manifest_json
from pulsar_ops.snapshot.writer import TABLES_DIR

_RESCRAPE = "take a fresh snapshot with `pulsar-ops scrape --zookeeper HOSTS --out NEW_DIR`"


@dataclass(frozen=True)
class Snapshot:
    path: Path
    manifest: Manifest

    def table_dir(self, name: str) -> Path:
        if name not in schema.BY_NAME:
            raise SnapshotError(f"unknown snapshot table {name!r}", hint="see pulsar_ops/snapshot/schema.py")
        return self.path / TABLES_DIR / name

    def absent_tables(self) -> list[str]:
        """The tables this snapshot predates (``schema.ADDED_TABLES`` without a directory): read as empty."""
        return sorted(t for t in schema.ADDED_TABLES if not self.table_dir(t).is_dir())

    def table(self, name: str) -> pa.Table:
        d = self.table_dir(name)
        if name in schema.ADDED_TABLES and not d.is_dir():
            return arrow_schema(name).empty_table()
        parts = sorted(d.glob("part-*.parquet"))
        if not parts:
            raise SnapshotError(f"{d}: no part files; the snapshot is damaged", hint=_RESCRAPE)
        sch = arrow_schema(name)
        tables = [pq.read_table(p, schema=sch) for p in parts]
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def read(self, name: str, columns: Sequence[str], where: pc.Expression | None = None) -> pa.Table:
        """Some columns of a table; ``where``: only the matching rows, one part file at a time (memory: the matching
        rows, not the table). A part that does not read is a SnapshotError naming it."""
        d = self.table_dir(name)
        if name in schema.ADDED_TABLES and not d.is_dir():
            return arrow_schema(name).empty_table().select(list(columns))
        parts = sorted(d.glob("part-*.parquet"))
        if not parts:
            raise SnapshotError(f"{d}: no part files; the snapshot is damaged")
        tables = []
        for p in parts:
            try:
                tables.append(pq.read_table(p, columns=list(columns), filters=where))
            except (pa.ArrowException, OSError) as e:  # truncated, corrupt, or not Parquet at all
                raise _damaged(p, e) from None
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def table_paths(self) -> dict[str, Path]:
        return {t.name: self.table_dir(t.name) for t in schema.TABLES}


def open_snapshot(path: Path | str) -> Snapshot:
    """Open SNAPSHOT_DIR. Raises SnapshotIncompleteError / SnapshotVersionError / SnapshotError with hints."""
    p = Path(path)
    if not p.is_dir():
        raise SnapshotError(f"{p}: no such snapshot directory", hint=_RESCRAPE)
    mpath = p / MANIFEST_NAME
    if not mpath.exists():
        raise SnapshotIncompleteError(
            f"{p}: no {MANIFEST_NAME}; the scrape that wrote it did not finish",
            hint=f"remove {p} and {_RESCRAPE}",
        )
    doc = read_manifest_json(mpath)
    # "finished": the scrape wrote everything (a finished snapshot with missing scopes says "complete": false
    # and is audited with those scopes blocked); manifests older than "finished" said "complete": true.
    if doc.get("finished") is not True and doc.get("complete") is not True:
        raise SnapshotIncompleteError(f"{p}: the manifest says the snapshot is not finished", hint=_RESCRAPE)
    version = doc.get("schema_version")
    if version != schema.SCHEMA_VERSION:
        raise SnapshotVersionError(
            f"{p}: snapshot schema version {version!r}, this pulsar-ops reads version {schema.SCHEMA_VERSION}",
            hint=f"use the pulsar-ops release that wrote it, or {_RESCRAPE}",
        )
    manifest = Manifest.from_json(doc, source=str(mpath))
    # a table added since the snapshot was taken is not missing: it reads as empty (schema.ADDED_TABLES)
    missing = [
        t.name for t in schema.TABLES if t.name not in schema.ADDED_TABLES and not (p / TABLES_DIR / t.name).is_dir()
    ]
    if missing:
        raise SnapshotError(f"{p}: table directories missing: {', '.join(missing)}", hint=_RESCRAPE)
    return Snapshot(path=p, manifest=manifest)


def verify_parts(snapshot_dir: Path | str) -> int:
    """Read the footer of every Parquet part file (cheap: no data pages) so a truncated or corrupt file is a
    ``snapshot-invalid`` error naming it, before any engine starts. Returns the number of files checked."""
    root = Path(snapshot_dir) / TABLES_DIR
    checked = 0
    for part in sorted(root.glob("*/part-*.parquet")):
        try:
            pq.read_metadata(part)
        except (pa.ArrowException, OSError) as e:
            raise _damaged(part, e) from None
        checked += 1
    return checked


def _damaged(part: Path, e: Exception) -> SnapshotError:
    return SnapshotError(
        f"{part}: not a readable Parquet file ({type(e).__name__}: {e})",
        hint="the snapshot is damaged: scrape again with `pulsar-ops scrape --zookeeper HOSTS --out DIR`",
    )
