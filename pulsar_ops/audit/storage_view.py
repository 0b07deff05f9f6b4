"""``findings.json`` ``audit.storage``: the capacity view of each scanned bookie, from the rows of ``sql/storage``.

Pure (no Spark): the SQL does the per-ledger work and the top-N cuts at any scale; this only shapes the few rows
it collects (a row per bookie, the top N owners and the N oldest logs per bookie) into one object per bookie.

Definition (the invariant the tests check): ``data_bytes`` is the sum of ``entry_logs.data_bytes`` over a
bookie's non-compacting entry logs (a skipped log counts 0), and
``live_bytes + orphan_bytes + unreclaimed_bytes + unattributed_bytes == data_bytes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

CLASSES = ("live", "orphan", "unreclaimed", "unattributed")
LEVELS = ("tenant", "namespace", "topic")
DEFAULT_TOP_N = 10

DEFINITION = (
    "data_bytes: sum of entry_logs.data_bytes over the bookie's non-compacting logs (skipped logs count 0); "
    "live: BookKeeper metadata present and referenced (ledger list, cursor, compacted, bucket, schema); "
    "orphan: metadata present, Pulsar-owned by its custom metadata, no reference, scopes complete; "
    "unreclaimed: metadata absent from a complete /ledgers scrape, bytes older than the scrape; "
    "unattributed: the rest (owner unknown, or absence not provable)"
)


def _int(value: Any) -> int:
    return int(value) if value is not None else 0


def _oldest(row: Mapping[str, Any]) -> dict[str, Any]:
    data = _int(row.get("data_bytes"))
    live = _int(row.get("live_bytes"))
    pinned = [{k: v for k, v in p.items() if k != "neg_bytes"} for p in row.get("pinned_by") or ()]
    return {
        "rank": _int(row.get("rank")),
        "ledger_dir": row.get("ledger_dir"),
        "log_id": _int(row.get("log_id")),
        "file": row.get("file"),
        "mtime_ms": _int(row.get("mtime_ms")),
        "data_bytes": data,
        **{f"{c}_bytes": _int(row.get(f"{c}_bytes")) for c in CLASSES},
        "live_fraction": round(live / data, 4) if data else None,
        "ledgers": _int(row.get("ledgers")),
        "live_ledgers": _int(row.get("live_ledgers")),
        "pinned_by": pinned,
    }


def skew(values: Sequence[int]) -> dict[str, Any]:
    """How uneven the bookies' scanned data is: min, max, mean and max / mean (``None`` without data)."""
    if not values:
        return {"bookies": 0, "min_bytes": None, "max_bytes": None, "mean_bytes": None, "max_over_mean": None}
    mean = sum(values) / len(values)
    return {
        "bookies": len(values),
        "min_bytes": min(values),
        "max_bytes": max(values),
        "mean_bytes": round(mean, 1),
        "max_over_mean": round(max(values) / mean, 3) if mean else None,
    }


def storage_summary(rows: Mapping[str, Sequence[Mapping[str, Any]]], top_n: int) -> dict[str, Any]:
    """``audit.storage`` from the collected ``bookies``, ``owners`` and ``oldest_logs`` rows."""
    owners: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows.get("owners", ()):
        owners.setdefault(str(r["bookie_id"]), []).append(r)
    oldest: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows.get("oldest_logs", ()):
        oldest.setdefault(str(r["bookie_id"]), []).append(r)
    bookies: list[dict[str, Any]] = []
    for b in sorted(rows.get("bookies", ()), key=lambda r: str(r["bookie_id"])):
        bid = str(b["bookie_id"])
        top: dict[str, dict[str, Any]] = {}
        for c in ("live", "orphan"):
            top[c] = {}
            for level in LEVELS:
                got = sorted((r for r in owners.get(bid, ()) if r["class"] == c and r["level"] == level),
                             key=lambda r: _int(r["rank"]))  # fmt: skip
                top[c][level] = {
                    "of": _int(got[0]["groups"]) if got else 0,
                    "rows": [
                        {"name": r["name"], "bytes": _int(r["bytes"]), "ledgers": _int(r["ledgers"])} for r in got
                    ],
                }
        free = b.get("free_bytes")
        total = b.get("total_bytes")
        bookies.append(
            {
                "bookie_id": bid,
                "complete": bool(b.get("complete")),
                "index_status": b.get("index_status"),
                "data_bytes": _int(b.get("data_bytes")),
                "file_bytes": _int(b.get("file_bytes")),
                "logs": _int(b.get("logs")),
                "skipped_logs": _int(b.get("skipped_logs")),
                "compacting_logs": _int(b.get("compacting_logs")),
                **{f"{c}_bytes": _int(b.get(f"{c}_bytes")) for c in CLASSES},
                **{f"{c}_ledgers": _int(b.get(f"{c}_ledgers")) for c in CLASSES},
                "free_bytes": int(free) if free is not None else None,
                "total_bytes": int(total) if total is not None else None,
                "top": top,
                "oldest_logs": [_oldest(r) for r in sorted(oldest.get(bid, ()), key=lambda r: _int(r["rank"]))],
            }
        )
    return {
        "top_n": top_n,
        "definition": DEFINITION,
        "bookies": bookies,
        "skew": skew([b["data_bytes"] for b in bookies]),
    }
