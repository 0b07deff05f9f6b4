"""The `pulsar-ops` command: one Typer app, commands registered from one module per command group."""

from __future__ import annotations

import os
from pathlib import Path

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops import __version__
from pulsar_ops.cli.common import guarded
from pulsar_ops.cli.settings import CONFIG_FILE_ENV, apply_config_file, context_settings

app = typer.Typer(
    name="pulsar-ops",
    help="Find and safely repair Apache Pulsar metadata leaks: scrape -> audit -> plan -> apply -> restore.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=False,
    rich_markup_mode=None,  # help text is shown verbatim: `HOSTS[/chroot]` is not markup
    context_settings=context_settings(),
)


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of error codes and hints."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    config_file: Path | None = typer.Option(
        None,
        "--config-file",
        envvar=CONFIG_FILE_ENV,
        help='TOML file with one table per command ([scrape], [apply], ["model gc"] ...) of option values. '
        "Precedence: defaults < this file < PULSAR_OPS_<COMMAND>_<OPTION> variables < flags.",
    ),
) -> None:
    if debug:
        os.environ["PULSAR_OPS_DEBUG"] = "1"
    if config_file is not None:
        guarded(lambda: apply_config_file(ctx, config_file))()


def _register() -> None:
    from pulsar_ops.cli import (
        apply,
        audit,
        bench,
        demo,
        model,
        plan,
        report,
        restore,
        scan_bookie,
        scrape,
        seed,
    )

    for mod in (scrape, scan_bookie, seed, audit, report, plan, apply, restore, demo):
        mod.register(app)
    app.add_typer(model.app, name="model", help="Reference models: bookie GC, broker entry cache, nack tracker.")
    app.add_typer(bench.app, name="bench", help="Benchmarks that print figures side by side.")


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
