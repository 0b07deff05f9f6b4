"""`pulsar-ops scan-bookie`: read one bookie's entry logs and local ledger index into a scan directory.

Run on the bookie host (or in a pod that mounts its volumes read-only). Exit 0 when the scan is complete, 1 when
it is partial (a log skipped for an error, or an index present but unreadable: the manifest says which), 3 when
the tool failed. Progress and the summary on stderr; ``--json`` prints the manifest on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.bookiescan.run import DEFAULT_MAX_SCAN_MB_S, ScanConfig, ScanProgress, scan
from pulsar_ops.cli.common import emit_json, err_console, escape, guarded
from pulsar_ops.cli.progress import ProgressLine

EXIT_PARTIAL = 1


def _scan_line(p: ScanProgress) -> str:
    return (
        f"scanning: {p.logs_done:,}/{p.logs_total:,} entry logs, {p.pairs:,} (ledger, log) pairs, "
        f"{p.bytes_scanned / 1e6:,.0f} MB scanned"
    )


def _split(value: str | None) -> list[Path]:
    return [Path(p) for p in (value or "").split(",") if p.strip()]


def render_summary(m: dict[str, Any], out: Path) -> None:
    secs = (m["finished_at_ms"] - m["started_at_ms"]) / 1000
    logs = m["logs"]
    err_console.print(
        f"bookie {escape(m['bookie_id'])}: scan written to {escape(str(out))} in {secs:.1f}s: "
        f"{logs['map']:,} logs read by map, {logs['scanned']:,} scanned, {logs['skipped']:,} skipped; "
        f"{m['tables']['entry_log_ledgers']:,} (ledger, log) pairs"
    )
    idx = m["index"]
    err_console.print(
        f"  local index: {idx['status']} ({m['tables']['local_index']:,} ledgers)"
        + (f": {escape(str(idx['reason']))}" if idx["reason"] else "")
    )
    for s in m["skipped"][:20]:
        err_console.print(f"  skipped {escape(s['ledger_dir'])}/{escape(s['file'])}: {escape(s['reason'])}")
    if len(m["skipped"]) > 20:
        err_console.print(f"  ... and {len(m['skipped']) - 20} more (see manifest.json)")
    if not m["complete"]:
        err_console.print(
            "[bold yellow]warning[/]: the scan is partial; the audit will not call ledger data missing on this "
            "bookie's affected scope"
        )
    err_console.print(f"next: pulsar-ops audit SNAPSHOT --bookie-scan {escape(str(out))}")


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""

    @app.command("scan-bookie")
    @guarded
    def scan_bookie_cmd(
        ledger_dirs: str = typer.Option(
            ..., "--ledger-dirs", help="The bookie's ledgerDirectories, comma-separated (entry logs in DIR/current)."
        ),
        index_dirs: str = typer.Option(
            None, "--index-dirs", help="The bookie's indexDirectories, comma-separated (default: the ledger dirs)."
        ),
        bookie_id: str = typer.Option(..., "--bookie-id", help="The bookie's id as in /ledgers (host:port)."),
        out: Path = typer.Option(..., "--out", help="New scan directory (must not exist or be empty)."),
        max_scan_mb_s: float = typer.Option(
            DEFAULT_MAX_SCAN_MB_S,
            "--max-scan-mb-s",
            min=0.0,
            help="Read limit in MB/s for everything read from the logs (maps and scans); 0: unlimited, else >= 1.",
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON on stdout."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress line."),
    ) -> None:
        """Read one bookie's entry logs (ledgers maps, else a throttled scan) and local ledger index, read-only."""
        progress = ProgressLine(not quiet, "scanning...", _scan_line)
        try:
            manifest = scan(
                ScanConfig(
                    ledger_dirs=_split(ledger_dirs),
                    index_dirs=_split(index_dirs) or None,
                    bookie_id=bookie_id,
                    out=out,
                    max_scan_mb_s=max_scan_mb_s,
                    progress=progress,
                )
            )
        finally:
            progress.stop()
        render_summary(manifest, out)
        if json_out:
            emit_json(manifest)
        if not manifest["complete"]:
            raise typer.Exit(EXIT_PARTIAL)
