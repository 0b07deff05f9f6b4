"""Every command's and subcommand's --help renders, with the markup mode the app itself uses.

This walks the real command tree (no list to keep in sync): a new command is covered the day it is added. It
failed on rich 15 / typer 0.29 when help texts held `HOSTS[/chroot]` and the app left rich markup on.
"""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from pulsar_ops.cli.main import app


def _paths(cmd: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path; groups are told by their ``commands`` (typer >= 0.29 vendors its own click)."""
    out = [prefix]
    for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
        out.extend(_paths(sub, (*prefix, name)))
    return out


PATHS = _paths(typer.main.get_command(app))


def test_the_tree_is_walked() -> None:
    names = {p[0] for p in PATHS if p}
    assert {"scrape", "audit", "report", "plan", "apply", "restore", "seed", "demo", "model", "bench"} <= names
    assert ("model", "gc") in PATHS and ("bench", "audit") in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "pulsar-ops")
def test_help_renders(path: tuple[str, ...]) -> None:
    r = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
    assert r.exit_code == 0, r.output + repr(r.exception)
    assert "Usage:" in r.output
    if path and path[0] in ("scrape", "apply", "restore", "seed"):
        assert "[/chroot]" in r.output  # shown verbatim, not eaten as markup
