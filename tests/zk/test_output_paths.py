"""`plan --out`, `apply --backup-dir` and `apply --journal` given the wrong kind of path: a stable error code,
nothing written (no temp file, no journal header), and a bad backup directory an earlier run recorded in the
journal does not decide where the next run's backups go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.zk.repair_cluster import build_cluster, dump, findings_for, write_audit, write_snapshot
from tests.zk.test_apply import Env, apply, cli, make_env

pytestmark = pytest.mark.zk


def test_plan_out_an_existing_directory_is_refused_writing_nothing(zk: KazooClient, tmp_path: Path) -> None:
    s = build_cluster(zk)
    audit = write_audit(tmp_path / "audit", write_snapshot(zk, tmp_path / "snap"), findings_for(s))
    out = tmp_path / "plans"
    out.mkdir()
    code, _o, err = cli("plan", str(audit), "--out", str(out))
    assert code == 3, err
    assert "plan-out-invalid" in err and f"--out {out} is a directory" in err and "internal-error" not in err
    assert list(out.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["audit", "plans", "snap"]
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, _o, err = cli("plan", str(audit), "--out", str(blocker / "plan.json"))
    assert code == 3 and "plan-out-invalid" in err and f"{blocker} is a file" in err
    assert blocker.read_text() == "x"


@pytest.fixture
def env(zk: KazooClient, zk_hosts: str, tmp_path: Path) -> Env:
    return make_env(zk, zk_hosts, tmp_path)


def test_apply_backup_dir_a_file_is_refused_before_any_journal(env: Env) -> None:
    before = dump(env.zk)
    bad = env.tmp / "backups.tar"
    bad.write_text("not a directory")
    for extra in ((), ("--apply", "--yes")):  # the dry run says so too
        code, _doc, err = apply(env, "mark", "--backup-dir", str(bad), *extra)
        assert code == 3, err
        assert "backup-dir-invalid" in err and f"{bad} is a file" in err and "internal-error" not in err
    assert not env.journal.exists() and bad.read_text() == "not a directory"
    assert dump(env.zk) == before


def test_apply_journal_a_directory_is_refused_writing_nothing(env: Env) -> None:
    before = dump(env.zk)
    jdir = env.tmp / "journals"
    jdir.mkdir()
    code, _doc, err = apply(env, "mark", "--journal", str(jdir), "--apply", "--yes")
    assert code == 3, err
    assert "journal-path-invalid" in err and f"--journal {jdir} is a directory" in err
    assert list(jdir.iterdir()) == [] and not env.backup.exists()
    assert dump(env.zk) == before


def test_a_bad_backup_dir_recorded_in_the_journal_does_not_poison_the_next_run(env: Env) -> None:
    """A journal whose header names a backup 'directory' that is a file (as a run before this check wrote it):
    nothing was ever backed up there, so the next run without --backup-dir backs up to the default."""
    plan = json.loads(env.plan.read_text())
    bad = env.tmp / "backups.tar"
    bad.write_text("not a directory")
    header = {
        "type": "plan",
        "plan": plan["checksum"],
        "plan_id": plan["plan_id"],
        "actions": len(plan["actions"]),
        "backup_dir": str(bad),
        "ts_ms": 1,
    }
    env.journal.write_text(json.dumps(header) + "\n")
    code, doc, err = apply(env, "mark", "--apply", "--yes")
    assert code == 0, err
    assert doc is not None and doc["counts"] == {"marked": 8}
    assert (env.backup / "manifest.json").exists() and bad.read_text() == "not a directory"
