"""Which Pulsar component owns a BookKeeper ledger: ONE definition, used by Python and rendered into the SQL.

From the ledger's custom metadata (upstream: managed-ledger's ``LedgerMetadataUtils`` writes ``application``,
``component`` and ``pulsar/*`` keys; reference §6, §12.3):

=============  ============================================================================
kind           rule (first match)
=============  ============================================================================
unowned        ``application`` is not ``pulsar``
data           ``component`` = ``managed-ledger`` and no ``pulsar/cursor`` key
cursor         ``component`` = ``managed-ledger`` with a ``pulsar/cursor`` key
schema         ``component`` = ``schema``
compacted      ``component`` = ``compacted-ledger``
bucket         ``component`` contains ``delayed`` or ``bucket`` (any ASCII case): the delayed-delivery bucket
               snapshots of PIP-195, whose exact component string is not pinned here
pulsar-unknown any other Pulsar-owned ledger
=============  ============================================================================

:func:`ledger_kind` applies the table in Python; :func:`ledger_kind_sql` renders the same table as a SQL
``CASE`` for ``sql/``, where ``${ledger_kind:ALIAS}`` stands for it (expanded by ``pulsar_ops.audit.sql_files``).
A test checks the two agree on generated metadata.
"""

from __future__ import annotations

from typing import Literal

from pulsar_ops.formats.ascii_case import ascii_lower, ascii_lower_sql

PulsarKind = Literal["data", "cursor", "schema", "compacted", "bucket", "pulsar-unknown", "unowned"]

EXACT_COMPONENTS: tuple[tuple[str, PulsarKind], ...] = (
    ("schema", "schema"),
    ("compacted-ledger", "compacted"),
)
BUCKET_MARKERS = ("delayed", "bucket")
# The kinds whose owner is a managed ledger: its znode (data) or its cursors' znodes (cursor, bucket) reference them.
ML_OWNED: frozenset[PulsarKind] = frozenset({"data", "cursor", "bucket"})


def ml_owned_sql() -> str:
    """:data:`ML_OWNED` as a SQL list (``${ml_owned_kinds}`` in orphan_ledger.sql)."""
    return "(" + ", ".join(f"'{k}'" for k in sorted(ML_OWNED)) + ")"


def ledger_kind(application: str | None, component: str | None, has_cursor: bool) -> PulsarKind:
    if application != "pulsar":
        return "unowned"
    if component == "managed-ledger":
        return "cursor" if has_cursor else "data"
    for name, kind in EXACT_COMPONENTS:
        if component == name:
            return kind
    if component is not None and any(m in ascii_lower(component) for m in BUCKET_MARKERS):
        return "bucket"
    return "pulsar-unknown"


def ledger_kind_sql(alias: str) -> str:
    """The same rules as a SQL CASE over ``alias.application``, ``alias.component``, ``alias.cursor_name``."""
    a = f"{alias}." if alias else ""
    lines = [
        "CASE",
        f"    WHEN {a}application IS NULL OR {a}application <> 'pulsar' THEN 'unowned'",
        f"    WHEN {a}component = 'managed-ledger' AND {a}cursor_name IS NULL THEN 'data'",
        f"    WHEN {a}component = 'managed-ledger' THEN 'cursor'",
        *(f"    WHEN {a}component = '{name}' THEN '{kind}'" for name, kind in EXACT_COMPONENTS),
        "    WHEN "
        + " OR ".join(f"{ascii_lower_sql(a + 'component')} LIKE '%{m}%'" for m in BUCKET_MARKERS)
        + " THEN 'bucket'",
        "    ELSE 'pulsar-unknown'",
        "END",
    ]
    return "\n".join(lines)
