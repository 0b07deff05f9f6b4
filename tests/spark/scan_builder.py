"""Small hand-made bookie scans for the audit tests: the three scan tables as Parquet plus manifest.json.

Pure helper (pyarrow only), the scan-side twin of ``snapshot_builder``:

    s = ScanBuilder("bk1:3181", started_at_ms=NOW + HOUR)
    s.log("/data/bk", 3, mtime_ms=NOW - 10 * DAY, ledgers={10: 1000, 11: 500})
    s.index(10)
    s.write(tmp_path / "scan-bk1")
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pulsar_ops.bookiescan import schema
from pulsar_ops.snapshot.arrow_schema import arrow_type


@dataclass
class ScanBuilder:
    bookie_id: str
    started_at_ms: int
    complete: bool = True
    index_status: str = "read"
    bookie_config: dict[str, Any] | None = None  # manifest.bookie_config (scan-bookie --bookie-config)
    format_version: int = schema.FORMAT_VERSION  # 1: the skipped names listed in the manifest, no skipped_logs
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def log(
        self,
        ledger_dir: str,
        log_id: int,
        *,
        mtime_ms: int,
        ledgers: dict[int, int],
        data_bytes: int | None = None,
        read_via: str = "map",
        reason: str | None = None,
        compacting: bool = False,
    ) -> None:
        """An entry log with ``ledgers`` = {ledger id: bytes}; data bytes default to their sum."""
        total = sum(ledgers.values()) if data_bytes is None else data_bytes
        self.rows.setdefault("entry_logs", []).append(
            {
                "bookie_id": self.bookie_id,
                "ledger_dir": ledger_dir,
                "log_id": log_id,
                "file": f"current/{log_id:x}.log",
                "file_bytes": 1024 + total,
                "data_bytes": total,
                "mtime_ms": mtime_ms,
                "inode": 1000 + log_id,
                "logger": "default",
                "header_version": 1,
                "read_via": read_via,
                "reason": reason,
                "ledgers": len(ledgers),
                "compacting": compacting,
            }
        )
        for lid, n in ledgers.items():
            self.rows.setdefault("entry_log_ledgers", []).append(
                {"bookie_id": self.bookie_id, "ledger_dir": ledger_dir, "log_id": log_id, "ledger_id": lid, "bytes": n}
            )

    def index(self, ledger_id: int, index_dir: str = "/data/bk", fenced: bool = False) -> None:
        self.rows.setdefault("local_index", []).append(
            {
                "bookie_id": self.bookie_id,
                "index_dir": index_dir,
                "ledger_id": ledger_id,
                "exists": True,
                "fenced": fenced,
                "limbo": False,
            }
        )

    def write(self, out: Path) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        counts = {}
        skipped = (
            [] if self.complete else [{"ledger_dir": "/data/bk", "file": "current/ff.log", "reason": "read-error:5"}]
        )
        if self.format_version >= 2:
            self.rows["skipped_logs"] = [{"bookie_id": self.bookie_id, **s, "file_hex": None} for s in skipped]
        tables = schema.TABLES if self.format_version == 1 else schema.WRITTEN
        for t in tables:
            rows = self.rows.get(t.name, [])
            sch = pa.schema([pa.field(c.name, arrow_type(c.type), nullable=c.nullable) for c in t.columns])
            pq.write_table(pa.Table.from_pylist(rows, schema=sch), out / schema.table_file(t.name))
            counts[t.name] = len(rows)
        dirs = sorted({r["ledger_dir"] for r in self.rows.get("entry_logs", [])})
        manifest = {
            "format": schema.FORMAT,
            "format_version": self.format_version,
            "tool_version": "test",
            "bookie_id": self.bookie_id,
            "ledger_dirs": dirs,
            "index_dirs": dirs,
            "started_at_ms": self.started_at_ms,
            "finished_at_ms": self.started_at_ms + 1000,
            "complete": self.complete,
            "index": {"status": self.index_status, "reason": None, "binding": None},
            "logs": {"map": 0, "scanned": 0, "skipped": 0 if self.complete else 1},
            "skipped": skipped
            if self.format_version == 1
            else {
                "total": len(skipped),
                "by_reason": {"read-error:5": 1} if skipped else {},
                "first": skipped,
                "table": "skipped_logs.parquet",
            },
            "tables": counts,
            "settings": {"max_scan_mb_s": 100},
            "bookie_config": self.bookie_config,
        }
        (out / schema.MANIFEST_NAME).write_text(json.dumps(manifest))
        return out
