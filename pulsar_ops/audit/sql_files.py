"""Locate the SQL: ``<repo>/sql`` in a source checkout, else the wheel-bundled ``pulsar_ops/_bundled/sql``.

Layout: ``staging/stg_<table>.sql`` (one view per snapshot table), ``intermediate/NN_<view>.sql`` (shared
views, registered in file-name order; the ``NN_`` prefix is not part of the view name), ``detect/<name>.sql``
(one detection each; the file stem with ``_`` -> ``-`` is the detection name). Pure: no Spark.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pulsar_ops.errors import AuditError

_PREFIX = re.compile(r"^\d+_")


@dataclass(frozen=True)
class SqlFile:
    kind: str  # staging | intermediate | detect
    name: str  # view name (staging/intermediate) or detection name (detect)
    path: Path

    @property
    def text(self) -> str:
        return strip_comments(self.path.read_text())


def strip_comments(sql: str) -> str:
    """Drop ``--`` line comments (outside string literals) and trailing semicolons."""
    out_lines = []
    for line in sql.splitlines():
        in_str = False
        cut = len(line)
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "'":
                in_str = not in_str
            elif not in_str and line.startswith("--", i):
                cut = i
                break
            i += 1
        out_lines.append(line[:cut].rstrip())
    return "\n".join(out_lines).strip().rstrip(";").strip()


SQL_DIR_ENV = "PULSAR_OPS_SQL_DIR"


def sql_root() -> Path:
    """``$PULSAR_OPS_SQL_DIR``, else ``<checkout>/sql``, else the wheel's ``pulsar_ops/_bundled/sql``."""
    package = Path(__file__).resolve().parent.parent  # pulsar_ops/
    override = os.environ.get(SQL_DIR_ENV)
    candidates = [Path(override)] if override else [package.parent / "sql", package / "_bundled" / "sql"]
    for candidate in candidates:
        if (candidate / "detect").is_dir():
            return candidate
    raise AuditError(
        "the audit SQL files were not found next to the package",
        hint="reinstall pulsar-ops (the wheel bundles pulsar_ops/_bundled/sql) or run from a source checkout",
    )


def _files(root: Path, kind: str) -> list[Path]:
    return sorted((root / kind).glob("*.sql"))


def staging_files(root: Path | None = None) -> list[SqlFile]:
    r = root or sql_root()
    return [SqlFile("staging", p.stem, p) for p in _files(r, "staging")]


def intermediate_files(root: Path | None = None) -> list[SqlFile]:
    r = root or sql_root()
    return [SqlFile("intermediate", _PREFIX.sub("", p.stem), p) for p in _files(r, "intermediate")]


def detect_files(root: Path | None = None) -> list[SqlFile]:
    r = root or sql_root()
    return [SqlFile("detect", p.stem.replace("_", "-"), p) for p in _files(r, "detect")]
