"""The audit's bookie-side inputs: ``--bookie-scan OUT`` directories and ``--bookie-config bookkeeper.conf``.

No Spark here. A scan directory (written by ``pulsar-ops scan-bookie``) holds ``entry_logs.parquet``,
``entry_log_ledgers.parquet``, ``local_index.parquet`` and ``manifest.json``, written last. :func:`read_scan`
validates one: a missing or foreign manifest, or a table whose row count is not the manifest's, is a
``bookie-scan-invalid`` error (the audit refuses it, as it refuses a damaged snapshot). A scan that finished with
``complete = false`` (a log skipped for an error) or without its local index is accepted, but the bookie's scope is
*partial*: the detections make no absence claim from it ("an error is never evidence of absence"), and
``findings.json`` ``audit.bookie_scans`` says what was not claimed and why.
(``--bookie-config``: ``params.BookieSettings``.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pulsar_ops.bookiescan import schema as scan_schema
from pulsar_ops.bookiescan.bookie_conf import names_cover
from pulsar_ops.errors import BookieScanError
from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.gc_settings import PlanSettings, settings_for
from pulsar_ops.snapshot.schema import Table

SCAN_FORMAT = scan_schema.FORMAT
SCAN_FORMAT_VERSION = scan_schema.FORMAT_VERSION
MANIFEST = scan_schema.MANIFEST_NAME
INDEX_STATUSES = (
    scan_schema.INDEX_READ,
    scan_schema.INDEX_UNAVAILABLE,
    scan_schema.INDEX_ABSENT,
    scan_schema.INDEX_ERROR,
)

# The scan tables as the audit reads them: the bookie-scan contract (bookiescan/schema.py).
SCAN_TABLES: tuple[Table, ...] = scan_schema.TABLES


@dataclass(frozen=True)
class ScanInfo:
    """One validated scan: what its manifest says, and where its tables are."""

    path: Path
    bookie_id: str
    complete: bool
    index_status: str
    index_reason: str | None
    started_at_ms: int
    finished_at_ms: int
    ledger_dirs: tuple[str, ...]
    logs_skipped: int
    tables: Mapping[str, Path] = field(default_factory=dict)
    # ``scan-bookie --bookie-config``: the configuration's file, and the ledger/index directories it names that the
    # scan left out (``manifest.bookie_config``); None: the scan was not checked against a configuration
    config_source: str | None = None
    dirs_not_scanned: tuple[str, ...] = ()
    index_dirs: tuple[str, ...] = ()  # as scanned (manifest ``index_dirs``; empty in a manifest without them)
    # ``scan-bookie --bookie-config``: the GC keys the file sets (manifest ``bookie_config.gc``); None: not recorded
    config_gc: Mapping[str, str] | None = None
    # the GC settings this bookie is judged with (:func:`with_gc_settings`; model/gc_settings.py), None: not resolved
    gc: PlanSettings | None = None

    @property
    def index_read(self) -> bool:
        return self.index_status == "read"

    @property
    def covers_bookie(self) -> bool:
        """Every log read, and no directory of the bookie's configuration left out: absence on it is evidence
        (``complete`` of ``stg_scan_bookies``, which ledger-data-missing requires)."""
        return self.complete and not self.dirs_not_scanned

    def partial_reasons(self) -> list[str]:
        """Why this bookie's scope is partial (empty: every log and its local index were read)."""
        out = []
        if not self.complete:
            out.append(f"scan incomplete ({self.logs_skipped} log(s) skipped for an error)")
        if self.dirs_not_scanned:
            out.append(
                f"director(ies) of its configuration ({self.config_source}) not scanned: "
                + ", ".join(self.dirs_not_scanned)
            )
        if not self.index_read:
            out.append(f"local index {self.index_status}" + (f": {self.index_reason}" if self.index_reason else ""))
        return out

    def before_scrape(self, snapshot_finished_at_ms: int | None) -> bool:
        """The scan started before the scrape finished: a ledger deleted in between is legitimately still on the
        disk, so none of its ledgers is called unreclaimed (unreclaimed_ledger_data.sql's order rule); and a ledger
        written and closed in between, or re-replicated onto the bookie (LedgerFragmentReplicator names the new
        bookie after the copy), has entries the scan could not see, so none is called missing from it either
        (ledger_data_missing.sql)."""
        return snapshot_finished_at_ms is not None and self.started_at_ms < snapshot_finished_at_ms

    def summary(self, snapshot_finished_at_ms: int | None = None) -> dict[str, Any]:
        """``findings.json`` ``audit.bookie_scans[]``: the scan, and the claims its gaps withheld.
        ``snapshot_finished_at_ms``: when the audited scrape finished (a scan started before it is named)."""
        reasons = self.partial_reasons()
        withheld = []
        if reasons:
            withheld.append("ledger-data-missing")
        before = self.before_scrape(snapshot_finished_at_ms)
        if before:
            if not reasons:
                withheld.append("ledger-data-missing")
            withheld.append("unreclaimed-ledger-data")
        if not self.index_read:
            withheld.append("unreclaimed-ledger-data evidence.in_local_index (null)")
        return {
            "bookie": self.bookie_id,
            "path": str(self.path),
            "complete": self.complete,
            "index_status": self.index_status,
            "started_at_ms": self.started_at_ms,
            "finished_at_ms": self.finished_at_ms,
            "ledger_dirs": list(self.ledger_dirs),
            "config_checked": self.config_source is not None,
            "dirs_not_scanned": list(self.dirs_not_scanned),
            "partial": bool(reasons),
            "partial_reasons": reasons,
            "before_scrape": before,
            "not_claimed": withheld,
            "gc_settings": None
            if self.gc is None
            else {"source": self.gc.source, "error": self.gc.error, "stale_entry_log_judged": self.gc.cfg is not None},
        }


def _bad(path: Path, what: str) -> BookieScanError:
    return BookieScanError(f"--bookie-scan {path}: {what}")


def _int(doc: Mapping[str, Any], key: str, path: Path) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, f"manifest.json {key} is not an integer ({value!r})")
    return value


def table_rows(target: Path) -> int:
    """Rows of a Parquet file, or of every part in a Parquet directory (footers only)."""
    parts = sorted(target.glob("*.parquet")) if target.is_dir() else [target]
    return sum(pq.read_metadata(p).num_rows for p in parts)


def read_scan(path: Path) -> ScanInfo:
    """Validate one scan directory (see the module docstring) and return what the audit uses of it."""
    path = Path(path)
    manifest = path / MANIFEST
    try:
        doc = json.loads(manifest.read_text())
    except FileNotFoundError:
        raise _bad(path, "no manifest.json: not a finished bookie scan (the manifest is written last)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(path, f"manifest.json unreadable ({e})") from None
    if not isinstance(doc, dict):
        raise _bad(path, "manifest.json is not a JSON object")
    if doc.get("format") != SCAN_FORMAT:
        raise _bad(path, f"manifest.json format {doc.get('format')!r} is not {SCAN_FORMAT!r}")
    if doc.get("format_version") not in scan_schema.READ_VERSIONS:
        raise BookieScanError(
            f"--bookie-scan {path}: format_version {doc.get('format_version')!r} is not supported "
            f"(this audit reads {', '.join(map(str, scan_schema.READ_VERSIONS))})",
            hint="scan again with the scan-bookie of this pulsar-ops version",
        )
    bookie = doc.get("bookie_id")
    if not isinstance(bookie, str) or not bookie:
        raise _bad(path, "manifest.json has no bookie_id")
    complete = doc.get("complete")
    if not isinstance(complete, bool):
        raise _bad(path, "manifest.json complete is not a boolean")
    index = doc.get("index")
    if not isinstance(index, dict) or index.get("status") not in INDEX_STATUSES:
        raise _bad(path, f"manifest.json index.status must be one of {', '.join(INDEX_STATUSES)}")
    reason = index.get("reason")
    dirs = doc.get("ledger_dirs")
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise _bad(path, "manifest.json ledger_dirs is not a list of strings")
    counts = doc.get("tables")
    if not isinstance(counts, dict):
        raise _bad(path, "manifest.json has no tables")
    # a log GC deleted while the scan ran ("vanished") is not an error: its bytes are gone from the disk
    skipped = scan_schema.skipped_errors(doc)
    if skipped is None:
        raise _bad(path, f"manifest.json skipped is not of format {doc['format_version']}'s shape")
    tables: dict[str, Path] = {}
    for t in SCAN_TABLES:
        tables[t.name] = _checked_table(path, t.name, counts.get(t.name))
    if doc["format_version"] >= 2:  # every skipped name is in skipped_logs: it must be there, whole
        name = scan_schema.SKIPPED_LOGS.name
        _checked_table(path, name, counts.get(name))
    source, left_out, config_gc = _config_check(doc.get("bookie_config"), path)
    return ScanInfo(
        path=path,
        bookie_id=bookie,
        complete=complete,
        index_status=str(index["status"]),
        index_reason=reason if isinstance(reason, str) else None,
        started_at_ms=_int(doc, "started_at_ms", path),
        finished_at_ms=_int(doc, "finished_at_ms", path),
        ledger_dirs=tuple(dirs),
        logs_skipped=skipped,
        tables=tables,
        config_source=source,
        dirs_not_scanned=left_out,
        index_dirs=_strings(doc.get("index_dirs"), dirs),
        config_gc=config_gc,
    )


def _checked_table(path: Path, name: str, expected: Any) -> Path:
    """The scan's table file, refused unless readable with the manifest's row count."""
    target = path / scan_schema.table_file(name)
    if isinstance(expected, bool) or not isinstance(expected, int):
        raise _bad(path, f"manifest.json tables.{name} is not a row count")
    if not target.exists():
        raise _bad(path, f"{target.name} is missing")
    try:
        rows = table_rows(target)
    except (pa.ArrowException, OSError) as e:
        raise _bad(path, f"{target.name}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    if rows != expected:
        raise _bad(path, f"{target.name} has {rows} rows, its manifest says {expected}")
    return target


def _strings(value: Any, default: Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return tuple(default)


SCRAPED = "server_config (scraped)"


def check_scraped_dirs(scans: Sequence[ScanInfo], bookie_dirs: Any) -> tuple[ScanInfo, ...]:
    """Each scan's directories against its bookie's configured ones as the scrape read them (snapshot manifest
    ``bookie_dirs``, from ``GET /api/v1/config/server_config``): a configured ledger or index directory no scanned
    one is (``bookie_conf.names_cover``: compared as paths, a mount prefix allowed) is added to the scan's
    ``dirs_not_scanned``, making its scope partial. A bookie without an entry (not scraped, or it did not answer)
    is left as it is. The scan host's own check (``scan-bookie --bookie-config``, by device and inode) stands."""
    if not isinstance(bookie_dirs, Mapping):
        return tuple(scans)
    out = []
    for s in scans:
        conf = bookie_dirs.get(s.bookie_id)
        ledgers = conf.get("ledger_dirs") if isinstance(conf, Mapping) else None
        if not isinstance(ledgers, list) or not all(isinstance(d, str) for d in ledgers):
            out.append(s)
            continue
        index = conf.get("index_dirs") if isinstance(conf, Mapping) else None
        index_names = index if isinstance(index, list) and all(isinstance(d, str) for d in index) else ledgers
        missing = [
            *names_cover(s.ledger_dirs, ledgers),
            *[f"{d} (index)" for d in names_cover(s.index_dirs or s.ledger_dirs, index_names)],
        ]
        left = tuple(dict.fromkeys([*s.dirs_not_scanned, *missing]))
        source = s.config_source if s.config_source is not None else SCRAPED
        if missing and s.config_source is not None:
            source = f"{s.config_source}; {SCRAPED}"
        out.append(replace(s, config_source=source, dirs_not_scanned=left))
    return tuple(out)


def _config_check(doc: Any, path: Path) -> tuple[str | None, tuple[str, ...], dict[str, str] | None]:
    """``manifest.bookie_config``: (its source, the ledger then index directories it names and the scan left out,
    its GC keys or None when not recorded); (None, (), None) when the scan was not checked against a configuration
    (absent or null)."""
    if doc is None:
        return None, (), None
    bad = _bad(path, "manifest.json bookie_config must be an object with source and not_scanned lists")
    if not isinstance(doc, dict) or not isinstance(doc.get("source"), str):
        raise bad
    left = doc.get("not_scanned")
    if not isinstance(left, dict):
        raise bad
    out: list[str] = []
    for key, label in (("ledger_dirs", ""), ("index_dirs", " (index)")):
        dirs = left.get(key)
        if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
            raise bad
        out += [d + label for d in dirs]
    gc = doc.get("gc")
    if gc is not None and not (
        isinstance(gc, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in gc.items())
    ):
        raise _bad(path, "manifest.json bookie_config.gc must be an object of strings")
    return doc["source"], tuple(out), dict(gc) if gc is not None else None


def with_gc_settings(scans: Sequence[ScanInfo], scraped: Any, audit_gc: GcConfig) -> tuple[ScanInfo, ...]:
    """Each scan with the GC settings its bookie is judged with (model/gc_settings.settings_for, the plan's own
    resolution): the snapshot manifest's ``bookie_gc`` (``scraped``), else the scan's ``bookie_config.gc``, else
    the audit's (``audit_gc``)."""
    by_bookie: Mapping[str, Mapping[str, Any]] = (
        {k: v for k, v in scraped.items() if isinstance(k, str) and isinstance(v, Mapping)}
        if isinstance(scraped, Mapping)
        else {}
    )
    return tuple(replace(s, gc=settings_for(s.bookie_id, by_bookie, s, audit_gc)) for s in scans)


def read_scans(paths: Sequence[Path]) -> tuple[ScanInfo, ...]:
    """Every ``--bookie-scan``, validated; two scans of one bookie are refused (which one is the truth?)."""
    scans = tuple(read_scan(p) for p in paths)
    seen: dict[str, Path] = {}
    for s in scans:
        if s.bookie_id in seen:
            raise BookieScanError(
                f"--bookie-scan {seen[s.bookie_id]} and {s.path} are both scans of bookie {s.bookie_id}",
                hint="pass one scan per bookie (the newest)",
            )
        seen[s.bookie_id] = s.path
    return scans
