"""Read and check a snapshot's manifest for the audit.

Uses the scraper's ``pulsar_ops.snapshot.reader.open_snapshot`` when it is installed, else reads
``manifest.json`` directly with the same refusals (missing / unfinished / other schema version).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pulsar_ops.errors import SnapshotError, SnapshotIncompleteError, SnapshotVersionError
from pulsar_ops.snapshot import schema


def read_manifest(snapshot_dir: Path) -> dict[str, Any]:
    """The manifest of a finished snapshot of this schema version, else a SnapshotError with a hint."""
    try:
        from pulsar_ops.snapshot.reader import open_snapshot
    except ImportError:
        return _read_manifest_file(snapshot_dir)
    doc: dict[str, Any] = open_snapshot(snapshot_dir).manifest.to_json()
    return doc


def _read_manifest_file(snapshot_dir: Path) -> dict[str, Any]:
    path = snapshot_dir / "manifest.json"
    if not snapshot_dir.is_dir():
        raise SnapshotError(f"snapshot directory not found: {snapshot_dir}")
    if not path.is_file():
        raise SnapshotIncompleteError(
            f"{snapshot_dir} has no manifest.json: the scrape did not finish",
            hint="re-run `pulsar-ops scrape --zookeeper HOSTS --out DIR` and audit the new snapshot",
        )
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SnapshotError(f"{path}: invalid JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("complete") is not True:
        raise SnapshotIncompleteError(
            f"{path} does not say complete=true: the scrape did not finish",
            hint="re-run `pulsar-ops scrape --zookeeper HOSTS --out DIR` and audit the new snapshot",
        )
    version = doc.get("schema_version")
    if version != schema.SCHEMA_VERSION:
        raise SnapshotVersionError(
            f"{path}: snapshot schema version {version!r}, this pulsar-ops reads {schema.SCHEMA_VERSION}",
            hint="re-scrape with this version: `pulsar-ops scrape --zookeeper HOSTS --out DIR`",
        )
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
    keys = ("snapshot_id", "cluster", "schema_version", "tool_version", "started_at_ms", "finished_at_ms",
            "admin_scraped", "bookie_scraped", "ledgers_root", "incomplete_scopes", "row_counts")
    out = {k: manifest[k] for k in keys if k in manifest}
    out["path"] = str(snapshot_dir.resolve())
    return out
