"""`pulsar-ops bench scan-bookie`: generate a bookie's ledger directory and scan it by map and by scanning.

The generated bookie has ``logs`` entry logs of ``log_mb`` MiB logical size each (sparse files written with
``testing.entrylog_writer``: the header and records at the start, the ledgers map at the end of the file, a hole
between), ``ledgers`` ledgers and ``ledgers_per_log`` ledgers in each log (consecutive logs share ledgers, as
interleaved logs do), one entry of ``payload`` bytes per (ledger, log) pair. One log in ``direct_every`` is
written by the Direct I/O logger format. Then, in the same process:

1. the map path: ``scan()`` exactly as ``scan-bookie`` runs it (every log read by its map);
2. the scanned path: the same logs read by scanning their records (``force_scan``), unthrottled.

Figures: (ledger, log) pairs/s, logs/s, MB/s of bytes read from the files and logical GB/s (file sizes covered),
the process CPU seconds of each path (user + system, all threads: on a loaded shared machine wall time is mostly
waiting for a core), and the peak RSS of the bench process (``ru_maxrss``: generation and both scans, an upper
bound of a scan's).
Pages are dropped after reading (``posix_fadvise``) but the files were just written, so reads come from the page
cache when it keeps them: the figures are the reader's CPU cost, not a cold disk's.

Two bounded-memory figures, each from a ``scan-bookie`` child process (its own peak RSS, from ``wait4``'s
rusage): one log whose ledgers map is ``big_map_mb`` MiB (1 GiB: 67M pairs; the data region is a hole), and one
active log of ``dense_small_mb`` MiB packed with 16-byte records over ``dense_small_ledgers`` ledgers.
"""

from __future__ import annotations

import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet  # imported before timing

from pulsar_ops.bookiescan.local_index import binding
from pulsar_ops.bookiescan.run import ScanConfig, scan
from pulsar_ops.testing.entrylog_writer import (
    entry_log_path,
    write_dense_log,
    write_entry_log,
    write_large_map_log,
    write_last_id,
)

Info = Callable[[str], None]
TARGET_PAIRS_PER_S = 1_000_000
TARGET_RSS_MB = 500


def _machine() -> dict[str, Any]:
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:
        load = None
    return {"cpus": os.cpu_count(), "load_1min": load, "python": platform.python_version()}


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def generate(
    ledger_dir: Path, *, logs: int, ledgers: int, ledgers_per_log: int, log_mb: int, payload: int, direct_every: int
) -> dict[str, Any]:
    """Write the bookie; returns what was written (pairs, bytes on disk, logical bytes)."""
    per_log = max(1, min(ledgers_per_log, ledgers))
    stride = max(1, ledgers // max(1, logs)) if ledgers > per_log else 0
    pairs = 0
    logical = 0
    for i in range(logs):
        first = (i * stride) % ledgers
        entries = [((first + k) % ledgers, i, payload) for k in range(per_log)]
        direct = direct_every > 0 and i % direct_every == direct_every - 1
        truth = write_entry_log(
            entry_log_path(ledger_dir, i + 1),
            i + 1,
            entries,
            logger="direct" if direct else "default",
            sparse_size=log_mb << 20,
        )
        pairs += len(truth.bytes_per_ledger)
        logical += truth.file_bytes
    write_last_id(ledger_dir, logs)
    on_disk = sum(os.stat(p).st_blocks * 512 for p in (ledger_dir / "current").iterdir())
    return {"pairs": pairs, "logical_bytes": logical, "disk_bytes": on_disk}


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _path_figures(
    manifest: dict[str, Any], seconds: float, cpu: float, read_bytes: int, logical: int
) -> dict[str, Any]:
    pairs = manifest["tables"]["entry_log_ledgers"]
    logs = manifest["logs"]["map"] + manifest["logs"]["scanned"]
    s = max(seconds, 1e-9)
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "pairs_per_cpu_s": int(pairs / max(cpu, 1e-9)),
        "logs": logs,
        "pairs": pairs,
        "pairs_per_s": int(pairs / s),
        "logs_per_s": int(logs / s),
        "read_mb": round(read_bytes / 1e6, 1),
        "mb_per_s": round(read_bytes / 1e6 / s, 1),
        "logical_gb_per_s": round(logical / 1e9 / s, 1),
        "via": dict(manifest["logs"]),
    }


def _dense_scan(root: Path, dense_mb: int, entry: int, say: Info) -> dict[str, Any]:
    """The scanned path on what it meets on a bookie: one dense log without a map (the active log), entries of
    ``entry`` bytes from 100 interleaved ledgers, written, synced, then scanned unthrottled."""
    d = root / "dense"
    n = max(1, (dense_mb << 20) // (entry + 4))
    say(f"dense scan: one active log of {dense_mb:,} MiB ({n:,} entries of {entry:,} bytes)")
    write_entry_log(entry_log_path(d, 1), 1, ((i % 100, i // 100, entry - 16) for i in range(n)), with_map=False)
    os.sync()
    t, c = time.monotonic(), _cpu_seconds()
    m = scan(ScanConfig([d], "bench:3181", root / "scan-dense", max_scan_mb_s=0))
    secs, cpu = time.monotonic() - t, _cpu_seconds() - c
    read = m["bytes_scanned"]
    return {
        "log_mb": dense_mb,
        "entries": n,
        "entry_bytes": entry,
        "seconds": round(secs, 3),
        "cpu_seconds": round(cpu, 3),
        "mb_per_s": round(read / 1e6 / max(secs, 1e-9), 1),
        "mb_per_cpu_s": round(read / 1e6 / max(cpu, 1e-9), 1),
        "entries_per_s": int(n / max(secs, 1e-9)),
        "read_via": dict(m["logs"]),
    }


# Runs the CLI in a fresh interpreter and writes its VmHWM (the peak RSS of this program image) to argv[1] at
# exit. ru_maxrss of a child is not used: Linux carries the forking parent's peak across fork and exec.
_PEAK_WRAPPER = """
import runpy, sys
out = sys.argv.pop(1)
sys.argv[0] = "pulsar-ops"
try:
    runpy.run_module("pulsar_ops.cli.main", run_name="__main__")
finally:
    with open("/proc/self/status") as f:
        kb = next((line.split()[1] for line in f if line.startswith("VmHWM:")), "0")
    with open(out, "w") as f:
        f.write(kb)
"""


def run_cli_peak(args: list[str], scratch: Path) -> tuple[int, float, float, str]:
    """``pulsar-ops ARGS`` in a child process: (exit code, seconds, its peak RSS in MB, stderr)."""
    peak_file = Path(scratch) / f".peak-{os.getpid()}-{time.monotonic_ns()}"
    cmd = [sys.executable, "-c", _PEAK_WRAPPER, str(peak_file), *args]
    t = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    secs = time.monotonic() - t
    try:
        kb = int(peak_file.read_text() or 0)
        peak_file.unlink()
    except (OSError, ValueError):
        kb = 0
    return proc.returncode, secs, round(kb / 1024, 1), proc.stderr.decode(errors="replace")


def _child_scan(ledger_dir: Path, out: Path) -> tuple[float, float, dict[str, Any]]:
    """``scan-bookie`` in a child process, unthrottled: (seconds, its peak RSS in MB, its manifest)."""
    import json

    args = ["scan-bookie", "--ledger-dirs", str(ledger_dir), "--bookie-id", "bench:3181", "--out", str(out),
            "--max-scan-mb-s", "0", "-q"]  # fmt: skip
    code, secs, rss, err = run_cli_peak(args, out.parent)
    if code not in (0, 1):
        raise RuntimeError(f"scan-bookie exited {code}: {err[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    return secs, rss, manifest


def _big_map(root: Path, map_mb: int, say: Info) -> dict[str, Any]:
    d = root / "bigmap"
    pairs = (map_mb << 20) // 16
    say(f"big map: one log whose ledgers map is {map_mb:,} MiB ({pairs:,} pairs), scanned in a child process")
    write_large_map_log(entry_log_path(d, 1), 1, pairs, entry_bytes=20)
    os.sync()
    secs, rss, m = _child_scan(d, root / "scan-bigmap")
    return {
        "map_mb": map_mb,
        "pairs": m["tables"]["entry_log_ledgers"],
        "read_via": dict(m["logs"]),
        "seconds": round(secs, 3),
        "pairs_per_s": int(m["tables"]["entry_log_ledgers"] / max(secs, 1e-9)),
        "peak_rss_mb": rss,
    }


def _dense_small(root: Path, mb: int, ledgers: int, say: Info) -> dict[str, Any]:
    d = root / "densesmall"
    say(f"dense small records: one active log of {mb:,} MiB of 16-byte records over {ledgers:,} ledgers")
    truth = write_dense_log(entry_log_path(d, 1), mb << 20, record_bytes=16, ledgers=ledgers)
    entries = sum(truth.values()) // 16
    os.sync()
    secs, rss, m = _child_scan(d, root / "scan-densesmall")
    return {
        "log_mb": mb,
        "entries": entries,
        "ledgers": m["tables"]["entry_log_ledgers"],
        "read_via": dict(m["logs"]),
        "seconds": round(secs, 3),
        "entries_per_s": int(entries / max(secs, 1e-9)),
        "mb_per_s": round(m["bytes_scanned"] / 1e6 / max(secs, 1e-9), 1),
        "peak_rss_mb": rss,
    }


def run(
    *,
    logs: int = 2000,
    ledgers: int = 200_000,
    ledgers_per_log: int = 1000,
    log_mb: int = 1024,
    payload: int = 64,
    direct_every: int = 10,
    dense_mb: int = 256,
    dense_entry: int = 1024,
    big_map_mb: int = 1024,
    dense_small_mb: int = 1024,
    dense_small_ledgers: int = 1_000_000,
    info: Info | None = None,
    work: Path | None = None,
) -> dict[str, Any]:
    say = info or (lambda _m: None)
    own = work is None
    root = Path(tempfile.mkdtemp(prefix="pulsar-ops-bench-bookie-")) if own else Path(work)  # type: ignore[arg-type]
    try:
        ledger_dir = root / "ledgers"
        say(
            f"generating {logs:,} entry logs of {log_mb:,} MiB (sparse), {ledgers:,} ledgers, "
            f"{min(ledgers_per_log, ledgers):,} per log, in {root}"
        )
        t = time.monotonic()
        gen = generate(
            ledger_dir,
            logs=logs,
            ledgers=ledgers,
            ledgers_per_log=ledgers_per_log,
            log_mb=log_mb,
            payload=payload,
            direct_every=direct_every,
        )
        os.sync()  # sealed logs on a bookie are clean pages: DONTNEED on dirty ones would start their writeback
        gen["seconds"] = round(time.monotonic() - t, 2)
        binding()  # one-time imports are not part of the figures: the RocksDB binding, and pandas, which
        pa.array([0])  # pyarrow imports on its first pa.array (about a second)
        # the map path: header + map of every log
        t, c = time.monotonic(), _cpu_seconds()
        m_map = scan(ScanConfig([ledger_dir], "bench:3181", root / "scan-map", max_scan_mb_s=0))
        map_s, map_cpu = time.monotonic() - t, _cpu_seconds() - c
        t, c = time.monotonic(), _cpu_seconds()
        m_scan = scan(ScanConfig([ledger_dir], "bench:3181", root / "scan-all", max_scan_mb_s=0, force_scan=True))
        scan_s, scan_cpu = time.monotonic() - t, _cpu_seconds() - c
        doc = {
            "machine": _machine(),
            "generated": {
                "logs": logs,
                "ledgers": ledgers,
                "ledgers_per_log": min(ledgers_per_log, ledgers),
                "log_mb": log_mb,
                **gen,
            },
            "map_path": _path_figures(
                m_map, map_s, map_cpu, m_map["bytes_read_headers_and_maps"], gen["logical_bytes"]
            ),
            "scan_path": _path_figures(
                m_scan,
                scan_s,
                scan_cpu,
                m_scan["bytes_scanned"] + m_scan["bytes_read_headers_and_maps"],
                gen["logical_bytes"],
            ),
            "same_pairs": m_map["tables"]["entry_log_ledgers"] == m_scan["tables"]["entry_log_ledgers"],
            "dense_scan": _dense_scan(root, dense_mb, dense_entry, say) if dense_mb > 0 else None,
            "peak_rss_mb": _peak_rss_mb(),
            "big_map": _big_map(root, big_map_mb, say) if big_map_mb > 0 else None,
            "dense_small": _dense_small(root, dense_small_mb, dense_small_ledgers, say) if dense_small_mb > 0 else None,
        }
        doc["targets"] = {
            f"map path >= {TARGET_PAIRS_PER_S:,} pairs/s": doc["map_path"]["pairs_per_s"] >= TARGET_PAIRS_PER_S,
            f"peak RSS < {TARGET_RSS_MB} MB": doc["peak_rss_mb"] < TARGET_RSS_MB,
        }
        for key, label in (("big_map", "big map"), ("dense_small", "dense small-record log")):
            if doc[key] is not None:
                doc["targets"][f"{label}: scan-bookie peak RSS < {TARGET_RSS_MB} MB"] = (
                    doc[key]["peak_rss_mb"] < TARGET_RSS_MB
                )
        return doc
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
