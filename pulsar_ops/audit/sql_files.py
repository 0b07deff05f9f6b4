"""Locate the SQL: ``<repo>/sql`` in a source checkout, else the wheel-bundled ``pulsar_ops/_bundled/sql``.

Layout: ``staging/stg_<table>.sql`` (one view per snapshot table), ``intermediate/NN_<view>.sql`` (shared
views, registered in file-name order; the ``NN_`` prefix is not part of the view name), ``detect/<name>.sql``
(one detection each; the file stem with ``_`` -> ``-`` is the detection name), ``coverage/<name>.sql`` (counts
of what the audit cannot see into, reported beside the findings). Pure: no Spark.
"""

from __future__ import annotations

import importlib.resources
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from pulsar_ops.errors import AuditError

_PREFIX = re.compile(r"^\d+_")
# storage/N_<view>.view.sql: a shared storage view that is never written (sql/README.md), registered as SQL
UNWRITTEN_SUFFIX = ".view.sql"


@dataclass(frozen=True)
class SqlFile:
    kind: str  # staging | intermediate | detect
    name: str  # view name (staging/intermediate) or detection name (detect)
    path: Path

    @property
    def shared(self) -> bool:
        """A storage file named ``N_<view>.sql`` or ``N_<view>.view.sql`` (:func:`storage_files`): a shared view the
        other storage SQL reads, not a query collected."""
        return self.kind == "storage" and _PREFIX.match(self.path.name) is not None

    @property
    def written(self) -> bool:
        """A shared storage view always written once to Parquet (``N_<view>.sql``); a ``N_<view>.view.sql`` is
        registered as its SQL over the views before it (:data:`UNWRITTEN_SUFFIX`), and written only where the
        storage stage reads one partition (audit/etl.py ``storage_stage``)."""
        return self.shared and not self.path.name.endswith(UNWRITTEN_SUFFIX)

    @property
    def text(self) -> str:
        """The SQL with no intermediate view known to be small (see :func:`expand_macros`)."""
        return self.render(())

    def render(self, small_views: Collection[str]) -> str:
        """The SQL to run once the intermediate views named in ``small_views`` are known to be small."""
        return expand_macros(strip_comments(self.path.read_text()), small_views)


_MACRO = re.compile(r"\$\{ledger_kind:([A-Za-z_][A-Za-z0-9_]*)\}")
_ASCII_LOWER = re.compile(r"\$\{ascii_lower:([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)\}")
_RULE_MACROS = {  # ${NAME:ARG[:ARG]} -> the SQL of one predicate of pulsar_ops/repair/rules.py
    "trim_candidate": 2,
    "retention_expired": 2,
    "at_first_trim": 1,
    "leak_too_young": 1,
    "orphan_created": 1,
    "orphan_ctime_source": 1,
    "orphan_too_young": 1,
    "subscription_active": 1,
    "subscription_idle": 2,
    "may_dangle": 1,
}
_RULE = re.compile(
    r"\$\{(trim_candidate|retention_expired|at_first_trim|leak_too_young|orphan_created|orphan_ctime_source"
    r"|orphan_too_young|subscription_active|subscription_idle|may_dangle)((?::[A-Za-z_][A-Za-z0-9_]*)+)\}"
)
# ${NAME:ARG[:ARG]} -> one predicate of the registry of Pulsar's own names (pulsar_ops/pulsar_names.py)
_NAMES_MACROS = {
    "system_topic_reason": 2,
    "system_namespace_reason": 1,
    "system_tenant_reason": 1,
    "heartbeat_namespace": 1,
    "system_cursor_reason": 1,
    "transaction_store_kind": 2,
    "service_unit_ownership": 2,
    "topic_policies_topic": 1,
}
_NAMES = re.compile(
    r"\$\{(system_topic_reason|system_namespace_reason|system_tenant_reason|heartbeat_namespace|system_cursor_reason|transaction_store_kind"
    r"|service_unit_ownership|topic_policies_topic)"
    r"((?::[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)+)\}"
)
_PLANNABLE_KINDS = re.compile(r"\$\{plannable_ledger_kinds\}")
_ML_OWNED_KINDS = re.compile(r"\$\{ml_owned_kinds\}")
_STORAGE_TOP_N = re.compile(r"\$\{storage_top_n\}")
_BROADCAST_IF_SMALL = re.compile(r"\$\{broadcast_if_small:([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_macros(sql: str, small_views: Collection[str] = ()) -> str:
    """``${ledger_kind:ALIAS}`` -> the CASE of :func:`pulsar_ops.formats.ledger_kind.ledger_kind_sql` (the one
    definition of a ledger's kind, shared with the Python decoders).

    ``${broadcast_if_small:ALIAS:VIEW}`` -> ``/*+ BROADCAST(ALIAS) */`` when the intermediate view ``VIEW`` is in
    ``small_views`` (measured small once written: audit/etl.py ``broadcastable``), else nothing: a relation that is
    small in a healthy cluster but not by construction (the ledgers on one side only of BookKeeper and the
    references) is broadcast only when its rows were counted.

    ``${ascii_lower:COLUMN}`` (``COLUMN`` or ``ALIAS.COLUMN``) -> :func:`pulsar_ops.formats.ascii_case.ascii_lower_sql`
    of it: case folded without Spark's ICU case mappings (formats/ascii_case.py).

    ``${trim_candidate:L:S}``, ``${retention_expired:ROW:PARAMS}``, ``${at_first_trim:ROW}`` -> the predicates of
    the first-trim rule of :mod:`pulsar_ops.repair.rules` (expired-retention-unloaded), the one definition the
    planner and apply call directly; ``${leak_too_young:ROW}`` -> the leak's min-age rule (znode-leak);
    ``${orphan_created:ROW}``, ``${orphan_ctime_source:ROW}``, ``${orphan_too_young:ROW}`` -> the orphan ledger's
    age, counted as the ledger rule counts it (orphan-ledger); ``${plannable_ledger_kinds}`` -> the SQL list of
    the ledger kinds a plan may delete (``rules.PLANNABLE_LEDGER_KINDS``); ``${ml_owned_kinds}`` -> the SQL list of
    the ledger kinds a managed ledger owns (``formats.ledger_kind.ML_OWNED``); ``${subscription_active:ROW}``,
    ``${subscription_idle:ROW:PARAMS}`` -> a cursor's activity and idleness as the subscription rule decides them;
    ``${may_dangle:ROW}`` -> whether a reference without metadata is a missing ledger (``rules.may_dangle``:
    dangling-ledger, as the drop rule decides it).

    ``${system_topic_reason:NS:LOCAL}``, ``${system_namespace_reason:NS}``, ``${system_tenant_reason:T}``,
    ``${heartbeat_namespace:NS}``, ``${system_cursor_reason:NAME}``, ``${transaction_store_kind:NS:LOCAL}``,
    ``${service_unit_ownership:STATE:REGISTERED}``, ``${topic_policies_topic:LOCAL}``
    (each argument ``COLUMN`` or ``ALIAS.COLUMN``) -> the SQL of the same name in :mod:`pulsar_ops.pulsar_names`,
    the one registry of what Pulsar creates for itself."""
    from pulsar_ops.formats.ascii_case import ascii_lower_sql
    from pulsar_ops.formats.ledger_kind import ledger_kind_sql, ml_owned_sql

    small = frozenset(small_views)
    sql = _RULE.sub(_rule_sql, sql)
    sql = _PLANNABLE_KINDS.sub(lambda _m: _plannable_kinds(), sql)
    sql = _ML_OWNED_KINDS.sub(lambda _m: ml_owned_sql(), sql)
    sql = _NAMES.sub(_names_sql, sql)
    sql = _ASCII_LOWER.sub(lambda m: ascii_lower_sql(m.group(1)), sql)
    sql = _BROADCAST_IF_SMALL.sub(lambda m: f"/*+ BROADCAST({m.group(1)}) */" if m.group(2) in small else "", sql)
    return _MACRO.sub(lambda m: ledger_kind_sql(m.group(1)), sql)


def _rule_sql(m: re.Match[str]) -> str:
    """``${trim_candidate:L:S}``, ``${retention_expired:ROW:PARAMS}``, ``${at_first_trim:ROW}``: the first-trim
    rule's predicates as :mod:`pulsar_ops.repair.rules` renders them (the definition plan and apply call)."""
    from pulsar_ops.repair import rules

    name, args = m.group(1), m.group(2)[1:].split(":")
    if len(args) != _RULE_MACROS[name]:
        raise AuditError(f"${{{name}}} takes {_RULE_MACROS[name]} argument(s), not {len(args)}")
    if name == "trim_candidate":
        return rules.trim_candidate_sql(args[0], args[1])
    if name == "retention_expired":
        return rules.retention_expired_sql(args[0], args[1])
    if name == "leak_too_young":
        return rules.leak_too_young_sql(args[0])
    if name == "orphan_created":
        return rules.orphan_created_sql(args[0])
    if name == "orphan_ctime_source":
        return rules.orphan_ctime_source_sql(args[0])
    if name == "orphan_too_young":
        return rules.orphan_too_young_sql(args[0])
    if name == "subscription_active":
        return rules.subscription_active_sql(args[0])
    if name == "subscription_idle":
        return rules.subscription_idle_sql(args[0], args[1])
    if name == "may_dangle":
        return rules.may_dangle_sql(args[0])
    return rules.at_first_trim_sql(args[0])


def _plannable_kinds() -> str:
    from pulsar_ops.repair import rules

    return rules.plannable_ledger_kinds_sql()


def _names_sql(m: re.Match[str]) -> str:
    """A predicate of :mod:`pulsar_ops.pulsar_names` rendered over the macro's column arguments."""
    from pulsar_ops import pulsar_names

    name, args = m.group(1), m.group(2)[1:].split(":")
    if len(args) != _NAMES_MACROS[name]:
        raise AuditError(f"${{{name}}} takes {_NAMES_MACROS[name]} argument(s), not {len(args)}")
    if name == "system_topic_reason":
        return pulsar_names.system_topic_reason_sql(args[0], args[1])
    if name == "system_namespace_reason":
        return pulsar_names.system_namespace_reason_sql(args[0])
    if name == "heartbeat_namespace":
        return pulsar_names.heartbeat_namespace_sql(args[0])
    if name == "system_tenant_reason":
        return pulsar_names.system_tenant_reason_sql(args[0])
    if name == "system_cursor_reason":
        return pulsar_names.system_cursor_reason_sql(args[0])
    if name == "service_unit_ownership":
        return pulsar_names.service_unit_ownership_sql(args[0], args[1])
    if name == "topic_policies_topic":
        return pulsar_names.topic_policies_topic_sql(args[0])
    return pulsar_names.transaction_store_kind_sql(args[0], args[1])


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
SQL_MISSING = "sql-not-found"  # the error code of both cases of sql_root()


def _bundled() -> Path | None:
    """The SQL the wheel ships inside the package (``pulsar_ops/_bundled/sql``), found as a package resource."""
    res = importlib.resources.files("pulsar_ops").joinpath("_bundled", "sql")
    return Path(str(res)) if res.is_dir() else None


def sql_root() -> Path:
    """``$PULSAR_OPS_SQL_DIR``, else the SQL shipped in the installed package (``importlib.resources``), else
    ``<checkout>/sql`` (an editable install of a source checkout)."""
    override = os.environ.get(SQL_DIR_ENV)
    bundled = _bundled()
    checkout = Path(__file__).resolve().parent.parent.parent / "sql"
    candidates = [Path(override)] if override else [c for c in (bundled, checkout) if c is not None]
    for candidate in candidates:
        if (candidate / "detect").is_dir():
            return candidate
    if override:
        raise AuditError(
            f"the audit SQL files were not found: {SQL_DIR_ENV}={override} has no detect/ directory",
            code=SQL_MISSING,
            hint=f"point {SQL_DIR_ENV} at the sql/ directory of a pulsar-ops checkout (it holds detect/, "
            "intermediate/, staging/), or unset it to use the SQL bundled with the installed package",
        )
    raise AuditError(
        "the audit SQL files were not found next to the package",
        code=SQL_MISSING,
        hint=f"set {SQL_DIR_ENV} to the sql/ directory of a pulsar-ops checkout (as spark-submit jobs do), or "
        "reinstall pulsar-ops (the wheel bundles pulsar_ops/_bundled/sql)",
    )


def _files(root: Path, kind: str) -> list[Path]:
    return sorted((root / kind).glob("*.sql"))


def staging_files(root: Path | None = None) -> list[SqlFile]:
    r = root or sql_root()
    return [SqlFile("staging", p.stem, p) for p in _files(r, "staging")]


def intermediate_files(root: Path | None = None) -> list[SqlFile]:
    r = root or sql_root()
    return [SqlFile("intermediate", _PREFIX.sub("", p.stem), p) for p in _files(r, "intermediate")]


def coverage_files(root: Path | None = None) -> list[SqlFile]:
    """``coverage/<name>.sql``: what the audit could not look into, counted (not findings)."""
    r = root or sql_root()
    return [SqlFile("coverage", p.stem.replace("_", "-"), p) for p in _files(r, "coverage")]


def storage_files(root: Path | None = None) -> list[SqlFile]:
    """``storage/<name>.sql``: the capacity view of the scanned bookies (``audit.storage``). A file named
    ``N_<view>.sql`` is a shared view written once and read by the others (its prefix is not part of the name),
    ``N_<view>.view.sql`` a shared view registered as its SQL over the views before it and never written
    (:attr:`SqlFile.written`); the rest are collected, in file order."""
    r = root or sql_root()
    return [
        SqlFile("storage", _PREFIX.sub("", p.name.removesuffix(UNWRITTEN_SUFFIX).removesuffix(".sql")), p)
        for p in _files(r, "storage")
    ]


STORAGE_TOP_N_MAX = 100_000  # the largest N Spark's min_by(x, key, N) takes


def storage_sql(f: SqlFile, top_n: int) -> str:
    """A ``storage/*.sql`` file's SQL with ``${storage_top_n}`` -> ``top_n`` as an integer literal (Spark and the
    DuckDB bench render it alike): owners.sql keeps each group's top N with ``min_by(x, key, N)``, whose N Spark
    takes only as a constant from 1 to :data:`STORAGE_TOP_N_MAX`."""
    if isinstance(top_n, bool) or not isinstance(top_n, int) or not 1 <= top_n <= STORAGE_TOP_N_MAX:
        raise AuditError(
            f"storage top N must be an integer from 1 to {STORAGE_TOP_N_MAX:,}, got {top_n!r}",
            hint=f"re-run `pulsar-ops audit` with --storage-top N, N from 1 to {STORAGE_TOP_N_MAX}",
            code="config-invalid",
        )
    return _STORAGE_TOP_N.sub(str(top_n), f.text)


def detect_files(root: Path | None = None) -> list[SqlFile]:
    r = root or sql_root()
    return [SqlFile("detect", p.stem.replace("_", "-"), p) for p in _files(r, "detect")]
