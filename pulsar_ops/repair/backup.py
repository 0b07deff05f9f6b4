"""Backups of every znode an action changes: content-addressed objects plus an atomic manifest.

    BACKUP_DIR/objects/<sha256>      exact znode bytes (temp file, fsync, rename)
    BACKUP_DIR/manifest.json         {"schema_version": 1, "entries": [{store, path, sha256, stat, acl,
                                       action_id, plan_id, plan_checksum, backed_up_at_ms[, replaced_by]}],
                                      "plans": {plan_id: {"checksum", "target"}}}

``replaced_by``: the sha256 of the bytes an action wrote over a znode (restore puts the backup back only while the
znode holds exactly those). ``plans`` (no version bump: older readers ignore it) lets ``restore --plan-id`` check
the target without the plan file. An action is journaled ``marked`` only after a manifest with its entries is on
disk.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ApplyError, RestoreError

BACKUP_SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
OBJECTS = "objects"


@dataclass(frozen=True)
class BackupEntry:
    store: str
    path: str
    sha256: str
    stat: Mapping[str, int]
    acl: tuple[Mapping[str, Any], ...]
    action_id: str
    plan_id: str
    plan_checksum: str
    backed_up_at_ms: int
    replaced_by: str | None = None  # a rewritten znode: sha256 of the bytes the action writes (also an object)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.plan_checksum, self.action_id, self.store, self.path)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        if self.replaced_by is None:
            del d["replaced_by"]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BackupEntry:
        return cls(
            store=str(d["store"]),
            path=str(d["path"]),
            sha256=str(d["sha256"]),
            stat={str(k): int(v) for k, v in (d.get("stat") or {}).items()},
            acl=tuple(dict(a) for a in d.get("acl") or ()),
            action_id=str(d.get("action_id") or ""),
            plan_id=str(d.get("plan_id") or ""),
            plan_checksum=str(d.get("plan_checksum") or ""),
            backed_up_at_ms=int(d.get("backed_up_at_ms") or 0),
            replaced_by=str(d["replaced_by"]) if d.get("replaced_by") is not None else None,
        )


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, fsynced, renamed over it (never left
    behind half-written), then (``sync_dir``) its directory fsynced."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        _fsync_dir(path.parent)


class BackupStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._entries: dict[tuple[str, str, str, str], BackupEntry] = {}
        self.plans: dict[str, dict[str, Any]] = {}
        self._dirty = 0

    # --- reading -------------------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path, *, create: bool) -> BackupStore:
        store = cls(root)
        manifest = store.root / MANIFEST
        if manifest.exists():
            entries, plans = read_manifest_doc(store.root)
            for e in entries:
                store._entries[e.key] = e
            store.plans = plans
        elif not create:
            raise RestoreError(
                f"{store.root} is not a backup directory (no {MANIFEST})",
                hint="pass the directory `pulsar-ops apply --phase mark` reported (default <plan>.backup/)",
            )
        if create:
            (store.root / OBJECTS).mkdir(parents=True, exist_ok=True)
        return store

    @property
    def entries(self) -> tuple[BackupEntry, ...]:
        return tuple(self._entries.values())

    def object_path(self, sha256: str) -> Path:
        return self.root / OBJECTS / sha256

    def has_valid_object(self, sha256: str) -> bool:
        p = self.object_path(sha256)
        try:
            return hashlib.sha256(p.read_bytes()).hexdigest() == sha256
        except OSError:
            return False

    def read_valid_object(self, sha256: str) -> bytes | None:
        """The object's bytes, or None when it is missing or does not hash to its name."""
        try:
            data = self.object_path(sha256).read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == sha256 else None

    def entry(self, plan_checksum: str, action_id: str, store: str, path: str) -> BackupEntry | None:
        return self._entries.get((plan_checksum, action_id, store, path))

    def covers(self, plan_checksum: str, action_id: str, znodes: Iterable[tuple[str, str, str]]) -> str | None:
        """None when every (store, path, sha256) is in the manifest for this action with a valid object."""
        for store, path, sha in znodes:
            e = self._entries.get((plan_checksum, action_id, store, path))
            if e is None:
                return f"no backup entry for {path}"
            if e.sha256 != sha:
                return f"backup of {path} holds other bytes than the plan expects"
            if not self.has_valid_object(sha):
                return f"backup object for {path} is missing or corrupt"
        return None

    # --- writing -------------------------------------------------------------------------------------
    def put_object(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        p = self.object_path(sha)
        if not self.has_valid_object(sha):
            atomic_write(p, data, sync_dir=False)  # the directory is fsynced once, in flush()
        return sha

    def record_plan(self, plan_id: str, checksum: str, target: Mapping[str, Any]) -> None:
        """Remember which cluster ``plan_id`` targets (written with the next flush)."""
        want = {"checksum": checksum, "target": json.loads(json.dumps(dict(target)))}
        if self.plans.get(plan_id) != want:
            self.plans[plan_id] = want
            self._dirty += 1

    def add(self, entry: BackupEntry) -> None:
        if not self.has_valid_object(entry.sha256):
            raise ApplyError(f"refusing to index {entry.path}: its backup object is not on disk")
        self._entries[entry.key] = entry
        self._dirty += 1

    @property
    def dirty(self) -> int:
        return self._dirty

    def flush(self) -> None:
        """Make the objects' directory entries durable, then rewrite manifest.json atomically."""
        _fsync_dir(self.root / OBJECTS)
        entries = sorted(self._entries.values(), key=lambda e: (e.plan_checksum, e.action_id, e.store, e.path))
        doc = {"schema_version": BACKUP_SCHEMA_VERSION, "entries": [e.to_json() for e in entries], "plans": self.plans}
        atomic_write(self.root / MANIFEST, json.dumps(doc, indent=1, sort_keys=True).encode("utf-8") + b"\n")
        self._dirty = 0


def read_manifest(root: Path) -> list[BackupEntry]:
    return read_manifest_doc(root)[0]


def read_manifest_doc(root: Path) -> tuple[list[BackupEntry], dict[str, dict[str, Any]]]:
    p = Path(root) / MANIFEST
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RestoreError(f"{root} has no {MANIFEST}") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RestoreError(f"{p} cannot be read: {e}") from e
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if version != BACKUP_SCHEMA_VERSION:
        raise RestoreError(f"{p}: unsupported backup manifest (schema_version {version!r})")
    plans = doc.get("plans") or {}
    if not isinstance(plans, dict) or not all(isinstance(v, dict) for v in plans.values()):
        raise RestoreError(f"{p}: malformed `plans` section")
    try:
        return [BackupEntry.from_json(e) for e in doc.get("entries") or ()], plans
    except (KeyError, TypeError, ValueError) as e:
        raise RestoreError(f"{p}: malformed entry: {e}") from e


def default_backup_dir(plan_path: Path) -> Path:
    plan_path = Path(plan_path)
    return plan_path.with_name(plan_path.name + ".backup")
