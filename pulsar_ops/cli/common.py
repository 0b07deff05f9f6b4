"""CLI plumbing shared by every command: the error boundary, stderr console, JSON output, confirmation.

The only place in pulsar-ops that catches PulsarOpsError. Exit codes: 0 success / clean, 1 warnings,
2 critical findings, 3 the tool failed. Human output and progress go to stderr; ``--json`` documents to stdout.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from pulsar_ops.errors import Aborted, PulsarOpsError

EXIT_TOOL_FAILED = 3

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

P = ParamSpec("P")
R = TypeVar("R")


def debug_enabled() -> bool:
    return os.environ.get("PULSAR_OPS_DEBUG", "") not in ("", "0", "false")


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command: PulsarOpsError -> message + hint on stderr and exit 3 (traceback with --debug)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except PulsarOpsError as e:
            if debug_enabled():
                raise
            report_error(e)
            raise typer.Exit(EXIT_TOOL_FAILED) from None
        except KeyboardInterrupt:
            err_console.print("[bold red]interrupted[/]")
            raise typer.Exit(130) from None
        except Exception as e:  # the tool failed in a way we did not foresee: still exit 3 with a hint
            if debug_enabled():
                raise
            err_console.print(f"[bold red]error\\[internal-error][/]: {escape(type(e).__name__ + ': ' + str(e))}")
            err_console.print("  hint: re-run with --debug for a traceback and report it")
            raise typer.Exit(EXIT_TOOL_FAILED) from None

    return wrapper


def report_error(e: PulsarOpsError) -> None:
    err_console.print(f"[bold red]error\\[{e.code}][/]: {escape(e.message)}")
    err_console.print(f"  hint: {escape(e.hint)}")


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(text)


def info(message: str) -> None:
    err_console.print(message)


def emit_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False, default=str))
    sys.stdout.write("\n")
    sys.stdout.flush()


def confirm(question: str, *, yes: bool) -> None:
    """Ask before a mutation unless --yes. Without a terminal and without --yes, refuse."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise Aborted(f"{question} needs confirmation and no terminal is attached", hint="pass --yes to confirm")
    if not typer.confirm(question, default=False, err=True):
        raise Aborted("not confirmed; nothing was changed")
