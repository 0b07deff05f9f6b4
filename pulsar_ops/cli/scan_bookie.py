"""`pulsar-ops scan-bookie`: read one bookie's entry logs and local ledger index into a scan directory.

Run on the bookie host (or in a pod that mounts its volumes read-only); ``--bookie-config bookkeeper.conf`` gives
the directories and the bookie id (bookiescan/bookie_conf.py). Exit 0 when the scan is complete, 1 when it is
partial (a log skipped for an error, an index present but unreadable, or a directory of --bookie-config left out:
the manifest says which), 3 when the tool failed. Progress and the summary on stderr; ``--json`` prints the
manifest on stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.bookiescan.bookie_conf import scan_target
from pulsar_ops.bookiescan.run import DEFAULT_MAX_SCAN_MB_S, ScanConfig, ScanProgress, scan
from pulsar_ops.cli.common import emit_json, err_console, escape, guarded
from pulsar_ops.cli.progress import ProgressLine

EXIT_PARTIAL = 1


def _scan_line(p: ScanProgress) -> str:
    return (
        f"scanning: {p.logs_done:,}/{p.logs_total:,} entry logs, {p.pairs:,} (ledger, log) pairs, "
        f"{p.bytes_scanned / 1e6:,.0f} MB scanned"
    )


def shown(text: object) -> str:
    """``text`` for the terminal: control characters (a file name may hold ESC sequences or newlines) and
    undecodable bytes written as escapes, then Rich markup escaped."""
    return escape("".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)))


def _split(value: str | None) -> list[Path]:
    return [Path(p) for p in (value or "").split(",") if p.strip()]


def dirs_left_out(m: dict[str, Any]) -> list[str]:
    """The configured ledger and index directories the scan left out (none without --bookie-config)."""
    doc = m.get("bookie_config") or {}
    missing = doc.get("not_scanned") or {}
    return [*missing.get("ledger_dirs", []), *[f"{d} (index)" for d in missing.get("index_dirs", [])]]


def render_summary(m: dict[str, Any], out: Path) -> None:
    secs = (m["finished_at_ms"] - m["started_at_ms"]) / 1000
    logs = m["logs"]
    err_console.print(
        f"bookie {shown(m['bookie_id'])}: scan written to {shown(out)} in {secs:.1f}s: "
        f"{logs['map']:,} logs read by map, {logs['scanned']:,} scanned, {logs['skipped']:,} skipped; "
        f"{m['tables']['entry_log_ledgers']:,} (ledger, log) pairs"
    )
    idx = m["index"]
    err_console.print(
        f"  local index: {idx['status']} ({m['tables']['local_index']:,} ledgers)"
        + (f": {shown(idx['reason'])}" if idx["reason"] else "")
    )
    skipped = m["skipped"]
    for s in skipped["first"]:
        err_console.print(f"  skipped {shown(s['ledger_dir'])}/{shown(s['file'])}: {shown(s['reason'])}")
    if skipped["total"] > len(skipped["first"]):
        reasons = ", ".join(f"{n:,} {shown(r)}" for r, n in skipped["by_reason"].items())
        err_console.print(
            f"  ... {skipped['total'] - len(skipped['first']):,} more; all {skipped['total']:,} ({reasons}) are in "
            f"{shown(str(out / skipped['table']))}"
        )
    left = dirs_left_out(m)
    if left:
        err_console.print(
            f"[bold yellow]warning[/]: {shown(m['bookie_config']['source'])} names director(ies) not scanned: "
            f"{shown(', '.join(left))}; the audit will not call ledger data missing on this bookie"
        )
    if not m["complete"]:
        err_console.print(
            "[bold yellow]warning[/]: the scan is partial; the audit will not call ledger data missing on this "
            "bookie's affected scope"
        )
    err_console.print(f"next: pulsar-ops audit SNAPSHOT --bookie-scan {shown(out)}")


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""

    @app.command("scan-bookie")
    @guarded
    def scan_bookie_cmd(
        ledger_dirs: str = typer.Option(
            None,
            "--ledger-dirs",
            help="The bookie's ledgerDirectories, comma-separated (entry logs in DIR/current); "
            "default: --bookie-config's.",
        ),
        index_dirs: str = typer.Option(
            None, "--index-dirs", help="The bookie's indexDirectories, comma-separated (default: the ledger dirs)."
        ),
        bookie_id: str = typer.Option(
            None, "--bookie-id", help="The bookie's id as in /ledgers (host:port); default: --bookie-config's."
        ),
        bookie_config: Path = typer.Option(
            None,
            "--bookie-config",
            help="The bookie's bookkeeper.conf: directories and bookie id come from it, and a configured "
            "directory left out of the scan makes its scope partial.",
        ),
        bookie_home: Path = typer.Option(
            None,
            "--bookie-home",
            help="The bookie's working directory, for relative directories in --bookie-config (/pulsar in Pulsar's "
            "image).",
        ),
        out: Path = typer.Option(..., "--out", help="New scan directory (must not exist or be empty)."),
        max_scan_mb_s: float = typer.Option(
            DEFAULT_MAX_SCAN_MB_S,
            "--max-scan-mb-s",
            help="Read limit in MB/s for everything read from the logs (maps and scans); 0: unlimited, else >= 1.",
        ),
        json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON on stdout."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress line."),
    ) -> None:
        """Read one bookie's entry logs (ledgers maps, else a throttled scan) and local ledger index, read-only."""
        target = scan_target(
            bookie_config=bookie_config,
            bookie_home=bookie_home,
            ledger_dirs=_split(ledger_dirs),
            index_dirs=_split(index_dirs),
            bookie_id=bookie_id,
        )
        progress = ProgressLine(not quiet, "scanning...", _scan_line)
        try:
            manifest = scan(
                ScanConfig(
                    ledger_dirs=list(target.ledger_dirs),
                    index_dirs=list(target.index_dirs) if target.index_dirs else None,
                    bookie_id=target.bookie_id,
                    out=out,
                    max_scan_mb_s=max_scan_mb_s,
                    progress=progress,
                    bookie_config=target.doc,
                    protect_dirs=list(target.bookie_dirs),
                )
            )
        finally:
            progress.stop()
        render_summary(manifest, out)
        if json_out:
            emit_json(manifest)
        if not manifest["complete"] or dirs_left_out(manifest):
            raise typer.Exit(EXIT_PARTIAL)
