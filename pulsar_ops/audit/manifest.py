"""Read and check a snapshot's manifest for the audit.

Goes through ``pulsar_ops.snapshot.reader.open_snapshot``: the same refusals (missing / unfinished / other
schema version) as every other reader of a snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulsar_ops.errors import SnapshotError
from pulsar_ops.snapshot.reader import open_snapshot


def read_manifest(snapshot_dir: Path) -> dict[str, Any]:
    """The manifest of a finished snapshot of this schema version, else a SnapshotError with a hint."""
    doc: dict[str, Any] = open_snapshot(snapshot_dir).manifest.to_json()
    return doc


def table_dir(snapshot_dir: Path, table: str) -> Path:
    d = snapshot_dir / "tables" / table
    if not d.is_dir() or not any(d.glob("*.parquet")):
        raise SnapshotError(
            f"snapshot table missing: {d}",
            hint="the snapshot is damaged or from another tool; re-run `pulsar-ops scrape --out DIR`",
        )
    return d


def manifest_summary(manifest: dict[str, Any], snapshot_dir: Path) -> dict[str, Any]:
    keys = (
        "snapshot_id",
        "cluster",
        "schema_version",
        "tool_version",
        "started_at_ms",
        "finished_at_ms",
        "admin_scraped",
        "load_manager",
        "bookie_scraped",
        "ledgers_root",
        "incomplete_scopes",
        "row_counts",
    )
    out = {k: manifest[k] for k in keys if k in manifest}
    out["path"] = str(snapshot_dir.resolve())
    absent = open_snapshot(snapshot_dir).absent_tables()  # tables it predates (snapshot/schema.py ADDED_TABLES)
    if absent:
        out["tables_read_as_empty"] = {
            t: "not in this snapshot (scraped before the table existed): read as empty, what it holds is unknown"
            for t in absent
        }
    return out
