"""ASCII case folding, one definition for Python and the audit's SQL.

The audit folds case only where its inputs are ASCII by construction (bundle ranges are hex) or where a rule of
ours asks for "any case" (a ledger's ``component`` containing ``delayed`` or ``bucket``: formats/ledger_kind.py).
Spark 4's ``lower()`` maps case through ICU (``spark.sql.icu.caseMappings.enabled``), and the first call in a JVM
loads ICU's Unicode data: 1.1-1.3 s of CPU in the demo's cold audit, for strings that are ASCII. ``translate``
does not, and it folds exactly ``A``-``Z``, as :func:`ascii_lower` does, so Python and SQL agree on every string
(full Unicode folding would also map e.g. KELVIN SIGN to ``k``; neither side does).
"""

from __future__ import annotations

UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = "abcdefghijklmnopqrstuvwxyz"
_TABLE = str.maketrans(UPPER, LOWER)


def ascii_lower(s: str) -> str:
    """``s`` with ``A``-``Z`` mapped to ``a``-``z`` and every other character unchanged."""
    return s.translate(_TABLE)


def ascii_lower_sql(expr: str) -> str:
    """The same as a SQL expression over ``expr`` (Spark and DuckDB ``translate``)."""
    return f"translate({expr}, '{UPPER}', '{LOWER}')"
