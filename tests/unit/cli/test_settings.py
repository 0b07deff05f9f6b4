"""Settings precedence for every command: defaults < --config-file < PULSAR_OPS_* environment < flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app


def _input(doc: dict[str, object], key: str) -> object:
    return doc["input"][key]  # type: ignore[index]


def test_file_then_env_then_flag(tmp_path: Path) -> None:
    cfg = tmp_path / "pulsar-ops.toml"
    cfg.write_text('["model nack"]\ndelay = "2m"\nprecision-bits = 6\n')
    r = CliRunner().invoke(app, ["--config-file", str(cfg), "model", "nack", "--rate", "10", "--json"])
    assert r.exit_code == 0, r.stderr
    from_file = json.loads(r.stdout)
    r = CliRunner().invoke(
        app,
        ["--config-file", str(cfg), "model", "nack", "--rate", "10", "--json"],
        env={"PULSAR_OPS_MODEL_NACK_DELAY": "3m"},
    )
    from_env = json.loads(r.stdout)
    r = CliRunner().invoke(
        app,
        ["--config-file", str(cfg), "model", "nack", "--rate", "10", "--delay", "4m", "--json"],
        env={"PULSAR_OPS_MODEL_NACK_DELAY": "3m"},
    )
    from_flag = json.loads(r.stdout)
    assert [_input(d, "delay_ms") for d in (from_file, from_env, from_flag)] == [120_000, 180_000, 240_000]
    assert _input(from_file, "precision_bits") == 6 and _input(from_flag, "precision_bits") == 6


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('[apply]\nzookeeper = "h:2181"\nquarantin = "1h"\n', "[apply] has no option 'quarantin'"),
        ('[apply]\nbatch-size = "many"\n', "[apply] batch_size"),
        ("[nosuch]\nx = 1\n", "[nosuch] is not a command"),
        ("[apply\n", "TOML"),
    ],
)
def test_bad_config_file_is_config_invalid(tmp_path: Path, toml: str, needle: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    r = CliRunner().invoke(app, ["--config-file", str(cfg), "plan", str(tmp_path), "--out", str(tmp_path / "p")])
    assert r.exit_code == 3
    assert "config-invalid" in r.stderr and (needle in r.stderr or needle.lower() in r.stderr.lower()), r.stderr
