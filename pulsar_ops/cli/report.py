"""`pulsar-ops report AUDIT_DIR`: the terminal summary on stderr, and HTML / Markdown / Prometheus files."""

from __future__ import annotations

import json
from pathlib import Path

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.cli.common import err_console, guarded
from pulsar_ops.report import html, markdown, prometheus
from pulsar_ops.report.files import check_output_path, write_atomic
from pulsar_ops.report.model import DEFAULT_TOP_N, ReportModel, load_report
from pulsar_ops.report.terminal import summary_lines


def print_summary(model: ReportModel) -> None:
    """Print the summary lines on stderr, never interpreting markup or emoji codes in cluster names."""
    for line in summary_lines(model):
        style = None
        if line.startswith("Status: exit 2"):
            style = "bold red"
        elif line.startswith("Status: exit 1"):
            style = "yellow"
        elif line.startswith(("Snapshot ", "Findings: ")):
            style = "bold"
        err_console.print(line, markup=False, highlight=False, emoji=False, style=style)


def register(app: typer.Typer) -> None:
    """Add `report` to the root app."""

    @app.command("report")
    @guarded
    def report(
        audit_dir: Path = typer.Argument(
            ...,
            metavar="AUDIT_DIR",
            help="Audit directory written by `pulsar-ops audit` (holds findings.json), or the file itself.",
        ),
        html_out: Path | None = typer.Option(
            None,
            "--html",
            metavar="FILE",
            help="Write a self-contained HTML report (charts, sortable table) to FILE.",
        ),
        markdown_out: Path | None = typer.Option(
            None, "--markdown", metavar="FILE", help="Write a Markdown report to FILE."
        ),
        prometheus_out: Path | None = typer.Option(
            None,
            "--prometheus",
            metavar="FILE",
            help="Write Prometheus metrics to FILE atomically (node_exporter textfile collector, *.prom).",
        ),
        plan_file: Path | None = typer.Option(
            None,
            "--plan",
            metavar="PLAN.json",
            help="Add what this plan frees, and when, to the HTML report (per action kind, and the bookie GC curve).",
        ),
        top: int = typer.Option(
            DEFAULT_TOP_N,
            "--top",
            min=1,
            metavar="N",
            help="How many worst tenants, namespaces and findings to list.",
        ),
    ) -> None:
        """Summarise an audit on stderr; write HTML, Markdown, Prometheus files when asked. Exit 0 if done."""
        model = load_report(audit_dir, top_n=top)
        for out in (html_out, markdown_out, prometheus_out):
            if out is not None:
                check_output_path(out)  # fail before writing anything
        view = None
        if plan_file is not None:
            from pulsar_ops.repair.plan_file import load_plan
            from pulsar_ops.report.plan_view import plan_view

            load_plan(plan_file)  # checksum and schema verified: a damaged plan is an error, not a chart
            view = plan_view(json.loads(plan_file.read_text(encoding="utf-8")))
        print_summary(model)
        written: list[Path] = []
        if html_out is not None:
            written.append(write_atomic(html_out, html.render_html(model, plan=view)))
        if markdown_out is not None:
            written.append(write_atomic(markdown_out, markdown.render_markdown(model)))
        if prometheus_out is not None:
            written.append(prometheus.write(prometheus_out, model))
        for path in written:
            err_console.print(f"wrote {path}", markup=False, highlight=False, emoji=False)
