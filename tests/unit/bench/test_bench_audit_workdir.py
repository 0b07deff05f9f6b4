"""`bench audit` keeps its seeded snapshots and outputs in one temporary directory, removed at the end unless kept."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from pulsar_ops.bench import audit as bench_audit


def _fake_run(seen: list[Path], fail: bool) -> Any:
    def run(topics: Any, snapshot: Any, master: str, info: Any, work: Path, *_rest: Any) -> dict[str, Any]:
        (work / "snap-10" / "snap").mkdir(parents=True)
        (work / "out-10" / "findings.json").parent.mkdir()
        (work / "out-10" / "findings.json").write_text("{}")
        seen.append(work)
        if fail:
            raise RuntimeError("the audit failed")
        return {"runs": []}

    return run


@pytest.mark.parametrize("fail", [False, True])
def test_work_directory_is_removed_even_on_failure(tmp_path: Path, monkeypatch: Any, fail: bool) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen: list[Path] = []
    monkeypatch.setattr(bench_audit, "_run", _fake_run(seen, fail))
    if fail:
        with pytest.raises(RuntimeError):
            bench_audit.run(topics=10)
    else:
        assert bench_audit.run(topics=10)["work_dir"] is None
    assert seen and seen[0].parent == tmp_path and not seen[0].exists()
    assert list(tmp_path.iterdir()) == []


def test_keep_leaves_the_outputs_and_says_where(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen: list[Path] = []
    monkeypatch.setattr(bench_audit, "_run", _fake_run(seen, False))
    doc = bench_audit.run(topics=10, keep=True)
    assert doc["work_dir"] == str(seen[0]) and (seen[0] / "out-10" / "findings.json").is_file()


def test_storage_sql_copy_is_written_afresh(tmp_path: Path) -> None:
    """A kept work directory reused by a newer version runs that version's SQL, not the copy left there."""
    root = bench_audit.storage_sql_root(tmp_path)
    stale = root / "storage" / "owners.sql"
    fresh = stale.read_text()
    stale.write_text("SELECT 'an older version' AS x")
    (root / "detect" / "gone.sql").write_text("SELECT 1")
    assert bench_audit.storage_sql_root(tmp_path) == root
    assert stale.read_text() == fresh
    assert not (root / "detect" / "gone.sql").exists()
