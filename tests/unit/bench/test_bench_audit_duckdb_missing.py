"""`bench audit` without DuckDB installed: `duckdb-missing` naming the extra that installs it, before any work."""

from __future__ import annotations

import sys
import tempfile
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app


def test_bench_audit_without_duckdb_names_the_bench_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # `import duckdb` raises ImportError, as when not installed
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    r = CliRunner().invoke(app, ["bench", "audit", "--topics", "10"])
    assert r.exit_code == 3, r.output
    assert "duckdb-missing" in r.stderr and "internal-error" not in r.stderr
    assert "pip install 'pulsar-ops[bench]'" in r.stderr
    assert list(tmp_path.iterdir()) == []  # nothing seeded, no work directory


def test_the_bench_extra_installs_duckdb(repo_root: Path) -> None:
    extras = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.startswith("duckdb") for req in extras["bench"])
