"""The snapshot manifest: what was scraped, from where, and whether every scope was read completely.

``manifest.json`` is written LAST and atomically (temporary file + fsync + rename); its presence with
``"finished": true`` is what makes a snapshot directory a finished snapshot. ``"complete"`` is true only when
every scope was read completely (no ZooKeeper, admin or bookie scope missing); a finished snapshot with missing
scopes is still audited (its incomplete scopes become ``scrape-incomplete`` findings and nothing in them is
planned). Manifests written before ``finished`` existed said ``"complete": true`` for every finished snapshot.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import SnapshotError

MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True)
class IncompleteScope:
    store: str
    scope: str
    code: str
    error: str


@dataclass(frozen=True)
class Manifest:
    snapshot_id: str
    cluster: str | None
    tool_version: str
    schema_version: int
    complete: bool
    started_at_ms: int
    finished_at_ms: int
    # {"local": {"min": mzxid, "max": mzxid}, "config": {...}}; a store with no znodes has nulls.
    zxid_range: dict[str, dict[str, int | None]]
    # {"local": {"hosts": "h1:2181,h2:2181", "chroot": "/pulsar"}, "config": {...}}; never credentials.
    stores: dict[str, dict[str, str]]
    ledgers_root: str
    row_counts: dict[str, int]
    incomplete_scopes: tuple[IncompleteScope, ...] = ()
    errors_count: int = 0
    admin_scraped: bool = False
    bookie_scraped: bool = False
    # True when every read batch of both stores used multiRead.
    multiread: bool = False
    # ZooKeeper server version(s) per store as reported by `srvr` by the servers the walk was connected to,
    # comma-separated when the session met several ("unknown" when none could be asked).
    server_versions: dict[str, str] = field(default_factory=dict)
    # Per store, each server the walk was connected to: {"host:port": {"version", "multiread",
    # "refused_multiread"}} (a mixed ensemble shows which servers were read without multiRead).
    zookeeper_servers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # The scrape wrote every table and this manifest (see the module docstring).
    finished: bool = False
    znodes_per_second: float | None = None
    # Which cluster this is, read at scrape time, so `apply` and `restore` can refuse another one:
    # {"instance_id": <ledgers root's INSTANCEID or null>, "clusters": [names under /admin/clusters]}.
    identity: dict[str, Any] = field(default_factory=dict)
    # Where each bookie's HTTP API was asked (bookie scrape only): {bookie_id: {"url": URL or null, "source":
    # "published" (its registration's httpserver endpoint) | "bookie-url-port" (nothing published: its host with
    # --bookie-url's port) | "none" (not reachable: its scope is incomplete)}}.
    bookie_endpoints: dict[str, dict[str, str | None]] = field(default_factory=dict)
    # The load manager that keeps bundle ownership (pulsar_ops.pulsar_names.load_manager_kind), read at scrape time:
    # {"kind": "modular" | "extensible" | "mixed" | "none" | "unknown", "registrations": {broker id: its
    # loadManagerClassName, "" when it names none (modular), null when it does not decode}, "extension_leader":
    # bool, "service_unit_state": bool (/service_unit_state exists), "error": null or why it could not be read}.
    # Empty: a snapshot from before it was recorded.
    load_manager: dict[str, Any] = field(default_factory=dict)
    # A scrape of a ZooKeeper data directory / snapshot file (`scrape --zk-data-dir`): its point in time, the
    # local store's last replayed zxid and that transaction's time (ms since the epoch; null when no logged
    # transaction reached the snapshot's zxid). Null for a live scrape (fuzzy: see zxid_range).
    zxid: int | None = None
    last_txn_time_ms: int | None = None
    # Per store read from files: which snapshot, which fell back and why, the logs replayed, where the replay
    # stopped early and why, the digest check (pulsar_ops.zkdata.datadir.DataDirState.to_json). Empty when live.
    zk_data_dirs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Each bookie's configured directories, from its GET /api/v1/config/server_config (bookie scrape only; a
    # bookie that did not answer has no entry): {bookie_id: {"ledger_dirs": [names], "index_dirs": [names] or
    # null (not set: the ledger dirs)}}. The audit checks each bookie scan's directories against them.
    bookie_dirs: dict[str, dict[str, list[str] | None]] = field(default_factory=dict)
    # The GC keys each bookie's server_config sets (BookKeeper names, string values as the bookie answers them;
    # a key not set has BookKeeper's code default): {bookie_id: {"gcWaitTime": "900000", ...}}. The plan's
    # bookie-gc rule and prediction use them for that bookie (repair/kinds/bookie_gc.py); no entry: not scraped.
    bookie_gc: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def all_scopes_complete(self) -> bool:
        return not self.incomplete_scopes and self.complete

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["incomplete_scopes"] = [asdict(s) for s in self.incomplete_scopes]
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any], *, source: str = "manifest.json") -> Manifest:
        try:
            scopes = tuple(IncompleteScope(**s) for s in doc.get("incomplete_scopes", ()))
            known = {f for f in cls.__dataclass_fields__ if f != "incomplete_scopes"}
            kwargs = {k: v for k, v in doc.items() if k in known}
            if "finished" not in doc and doc.get("complete") is True:
                kwargs["finished"] = True  # written before "finished" existed: "complete" meant finished
            return cls(incomplete_scopes=scopes, **kwargs)
        except TypeError as e:
            raise SnapshotError(f"{source}: not a pulsar-ops manifest ({e})") from e

    def summary(self) -> dict[str, Any]:
        """The short form embedded in findings.json and printed by the CLI."""
        return {
            "snapshot_id": self.snapshot_id,
            "cluster": self.cluster,
            "schema_version": self.schema_version,
            "started_at_ms": self.started_at_ms,
            "finished_at_ms": self.finished_at_ms,
            "complete": self.complete,
            "finished": self.finished,
            "incomplete_scopes": [asdict(s) for s in self.incomplete_scopes],
            "errors_count": self.errors_count,
            "admin_scraped": self.admin_scraped,
            "bookie_scraped": self.bookie_scraped,
        }


def write_json_atomic(final: Path, doc: Any) -> Path:
    """Write ``doc`` as JSON to ``final`` atomically and durably (temp file, fsync, rename, fsync of the directory):
    a reader sees either no file or the whole one. Used by the snapshot's and the bookie scan's manifests."""
    final = Path(final)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    data = json.dumps(doc, indent=2, sort_keys=False).encode("utf-8") + b"\n"
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    dir_fd = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return final


def write_manifest(snapshot_dir: Path, manifest: Manifest) -> Path:
    """Write ``manifest.json`` atomically: a reader sees either no manifest or the whole one."""
    return write_json_atomic(Path(snapshot_dir) / MANIFEST_NAME, manifest.to_json())


def read_manifest_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SnapshotError(f"{path}: cannot read the manifest ({e})") from e
    if not isinstance(doc, dict):
        raise SnapshotError(f"{path}: the manifest is not a JSON object")
    return doc
