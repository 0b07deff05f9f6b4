"""CLI plumbing shared by every command: the error boundary, stderr console, JSON output, confirmation.

The only place in pulsar-ops that catches PulsarOpsError. Exit codes: 0 success / clean, 1 warnings,
2 critical findings, 3 the tool failed. Human output and progress go to stderr; ``--json`` documents to stdout.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer  # noqa: TID251 - typer/rich live in cli/
from rich.console import Console  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.errors import Aborted, PulsarOpsError, debug_enabled

EXIT_TOOL_FAILED = 3

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

P = ParamSpec("P")
R = TypeVar("R")


JSON_FLAGS = ("as_json", "json_out")  # the parameter names commands give their --json option


def guarded(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command: PulsarOpsError -> message + hint on stderr and exit 3 (traceback with --debug).

    With ``--json`` the failure is also one JSON document on stdout, ``{"error": {"code", "message", "hint"}}``,
    so a script reading stdout always gets a document it can parse."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        as_json = any(bool(kwargs.get(k)) for k in JSON_FLAGS)
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except PulsarOpsError as e:
            if debug_enabled():
                raise
            report_error(e)
            if as_json:
                emit_json({"error": e.to_dict()})
            raise typer.Exit(EXIT_TOOL_FAILED) from None
        except KeyboardInterrupt:
            err_console.print("[bold red]interrupted[/]")
            raise typer.Exit(130) from None
        except Exception as e:  # the tool failed in a way we did not foresee: still exit 3 with a hint
            if debug_enabled():
                raise
            message = f"{type(e).__name__}: {e}"
            hint = "re-run with --debug for a traceback and report it"
            err_console.print(f"[bold red]error\\[internal-error][/]: {escape(message)}")
            err_console.print(f"  hint: {hint}")
            if as_json:
                emit_json({"error": {"code": "internal-error", "message": message, "hint": hint}})
            raise typer.Exit(EXIT_TOOL_FAILED) from None

    return wrapper


def report_error(e: PulsarOpsError) -> None:
    err_console.print(f"[bold red]error\\[{e.code}][/]: {escape(e.message)}")
    err_console.print(f"  hint: {escape(e.hint)}")


def escape(text: str) -> str:
    from rich.markup import escape as _escape  # noqa: TID251 - typer/rich live in cli/

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


# --- the ZooKeeper security options every ZooKeeper command has (pulsar_ops.zkconn builds the clients) -------
# Each also reads PULSAR_OPS_<NAME> from the environment; secrets are never printed or written anywhere.
ZK_AUTH = typer.Option(
    None,
    "--zk-auth",
    envvar="PULSAR_OPS_ZK_AUTH",
    show_envvar=False,
    help="ZooKeeper auth SCHEME:CREDENTIALS, e.g. digest:user:password (env PULSAR_OPS_ZK_AUTH).",
)
ZK_AUTH_FILE = typer.Option(
    None,
    "--zk-auth-file",
    envvar="PULSAR_OPS_ZK_AUTH_FILE",
    show_envvar=False,
    help="Read --zk-auth from this file (keeps the password off the command line).",
)
ZK_SASL = typer.Option(
    None,
    "--zk-sasl",
    envvar="PULSAR_OPS_ZK_SASL",
    show_envvar=False,
    help="SASL to ZooKeeper: DIGEST-MD5:user:password, or GSSAPI[:service[:principal]] (Kerberos).",
)
ZK_SASL_FILE = typer.Option(
    None,
    "--zk-sasl-file",
    envvar="PULSAR_OPS_ZK_SASL_FILE",
    show_envvar=False,
    help="Read --zk-sasl from this file.",
)
ZK_TLS_CA = typer.Option(
    None,
    "--zk-tls-ca",
    envvar="PULSAR_OPS_ZK_TLS_CA",
    show_envvar=False,
    help="CA certificate (PEM) of ZooKeeper's secureClientPort: connect with TLS and verify the server.",
)
ZK_TLS_CERT = typer.Option(
    None,
    "--zk-tls-cert",
    envvar="PULSAR_OPS_ZK_TLS_CERT",
    show_envvar=False,
    help="Client certificate (PEM), when the server requires one (ssl.clientAuth=need).",
)
ZK_TLS_KEY = typer.Option(
    None,
    "--zk-tls-key",
    envvar="PULSAR_OPS_ZK_TLS_KEY",
    show_envvar=False,
    help="Private key (PEM) of --zk-tls-cert.",
)
