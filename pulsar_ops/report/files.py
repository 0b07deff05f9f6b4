"""Atomic file output for the report writers (HTML, Markdown, Prometheus textfile)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from pulsar_ops.errors import ReportError


def write_atomic(path: Path | str, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` so that a reader sees the old file or the whole new one."""
    final = Path(path)
    directory = check_output_path(final)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, final)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise ReportError(f"{final}: cannot write the report ({e})") from e
    return final


def check_output_path(path: Path | str) -> Path:
    """The directory ``path`` will be written in; ReportError unless it exists and ``path`` is not a dir."""
    final = Path(path)
    directory = final.parent
    if not directory.is_dir():
        raise ReportError(
            f"{directory}: no such directory for {final.name}",
            hint="create the directory (e.g. node_exporter's --collector.textfile.directory) and re-run "
            "`pulsar-ops report`",
        )
    if final.is_dir():
        raise ReportError(f"{final} is a directory; pass a file name", hint="e.g. --html report.html")
    return directory
