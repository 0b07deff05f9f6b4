"""The CLI error boundary: stable code + hint on stderr, exit 3, tracebacks only with --debug."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from pulsar_ops.cli.common import guarded
from pulsar_ops.errors import SnapshotIncompleteError

app = typer.Typer()


@app.command()
@guarded
def boom(kind: str = "known") -> None:
    if kind == "known":
        raise SnapshotIncompleteError("/tmp/snap has no manifest.json [unfinished]")
    raise RuntimeError("unexpected [thing]")


def test_known_error_prints_code_message_and_hint_and_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULSAR_OPS_DEBUG", raising=False)
    r = CliRunner().invoke(app, ["--kind", "known"])
    assert r.exit_code == 3
    assert "error[snapshot-unfinished]" in r.output
    assert "[unfinished]" in r.output  # markup-looking text survives
    assert "hint: take a fresh snapshot with `pulsar-ops scrape" in r.output


def test_unexpected_error_is_internal_error_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULSAR_OPS_DEBUG", raising=False)
    r = CliRunner().invoke(app, ["--kind", "other"])
    assert r.exit_code == 3
    assert "error[internal-error]" in r.output and "unexpected [thing]" in r.output


def test_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULSAR_OPS_DEBUG", "1")
    r = CliRunner().invoke(app, ["--kind", "known"])
    assert isinstance(r.exception, SnapshotIncompleteError)
