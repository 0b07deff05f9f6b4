"""Backup store (content-addressed, atomic manifest) and flag parsing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pulsar_ops.errors import ApplyError, ConfigError, RestoreError
from pulsar_ops.repair.backup import BackupEntry, BackupStore, read_manifest
from pulsar_ops.units import parse_duration_ms, parse_size


def entry(path: str, sha: str, action: str = "a1") -> BackupEntry:
    return BackupEntry(
        store="local",
        path=path,
        sha256=sha,
        stat={"version": 0},
        acl=({"perms": 31, "scheme": "world", "id": "anyone"},),
        action_id=action,
        plan_id="p",
        plan_checksum="c",
        backed_up_at_ms=1,
    )


def test_objects_are_content_addressed_and_manifest_atomic(tmp_path: Path) -> None:
    b = BackupStore.open(tmp_path / "bk", create=True)
    sha = b.put_object(b"payload")
    assert sha == hashlib.sha256(b"payload").hexdigest()
    assert b.put_object(b"payload") == sha  # idempotent
    with pytest.raises(ApplyError):
        b.add(entry("/x", "0" * 64))  # no object on disk: never indexed
    b.add(entry("/a", sha))
    assert b.covers("c", "a1", [("local", "/a", sha)]) is None
    assert "no backup entry" in (b.covers("c", "a2", [("local", "/a", sha)]) or "")
    b.flush()
    assert [e.path for e in read_manifest(tmp_path / "bk")] == ["/a"]
    assert not [p for p in (tmp_path / "bk").iterdir() if p.name.startswith(".")]  # no temp files left
    (tmp_path / "bk" / "objects" / sha).write_bytes(b"tampered")
    reopened = BackupStore.open(tmp_path / "bk", create=False)
    assert "missing or corrupt" in (reopened.covers("c", "a1", [("local", "/a", sha)]) or "")
    assert reopened.read_valid_object(sha) is None


def test_not_a_backup_dir(tmp_path: Path) -> None:
    with pytest.raises(RestoreError):
        BackupStore.open(tmp_path, create=False)
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": 9}))
    with pytest.raises(RestoreError):
        BackupStore.open(tmp_path, create=False)


def test_units() -> None:
    assert parse_size("10GB") == 10 * 10**9
    assert parse_size("512MiB") == 512 * 2**20
    assert parse_size("1234") == 1234
    assert parse_duration_ms("1h") == 3_600_000
    assert parse_duration_ms("0") == 0
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("15m") == 900_000
    for bad in ("ten", "5 parsecs", ""):
        with pytest.raises(ConfigError):
            parse_size(bad)
        with pytest.raises(ConfigError):
            parse_duration_ms(bad)


def test_human_duration() -> None:
    from pulsar_ops.units import human_duration

    assert human_duration(3_600_000) == "1h"
    assert human_duration(3_597_292) == "59m57s"
    assert human_duration(999) == "999ms"
    assert human_duration(90_061_000) == "1d1h"
