"""`pulsar-ops bench audit`: time the Spark audit and the same SQL on DuckDB over the same Parquet snapshot.

Without ``--snapshot`` a synthetic snapshot of N topics is written (4 ledgers + 2 cursors per topic, 1 %
orphan ledgers, 0.5 % dangling references, namespaces of 1,000 topics), so the figures need no ZooKeeper.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.manifest import Manifest, write_manifest

DAY = 86_400_000
NOW = 1_700_000_000_000
_ARROW = {"string": pa.string(), "int64": pa.int64(), "int32": pa.int32(), "bool": pa.bool_(),
          "double": pa.float64(), "list<string>": pa.list_(pa.string()), "list<int64>": pa.list_(pa.int64())}
_DEFAULT: dict[str, Any] = {"string": "", "int64": 0, "int32": 0, "bool": False, "double": 0.0,
                            "list<string>": [], "list<int64>": []}


def _write(out: Path, name: str, cols: dict[str, list[Any]], n: int) -> None:
    t = schema.table(name)
    arrays = []
    for c in t.columns:
        values = cols.get(c.name)
        if values is None:
            values = [None if c.nullable else _DEFAULT[c.type]] * n
        arrays.append(pa.array(values, type=_ARROW[c.type]))
    d = out / "tables" / name
    d.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(
        [pa.field(c.name, _ARROW[c.type], nullable=c.nullable) for c in t.columns])), d / "part-00000.parquet")


def synthetic_snapshot(out: Path, topics: int) -> Path:
    """A deterministic synthetic snapshot with ``topics`` topics."""
    ml: dict[str, list[Any]] = {k: [] for k in ("path", "ml_name", "tenant", "namespace", "encoded_name",
                                                "local_name", "topic", "base_topic", "last_ledger_id",
                                                "ledger_count", "partition")}
    ll: dict[str, list[Any]] = {k: [] for k in ("ml_path", "topic", "namespace", "idx", "ledger_id", "entries",
                                                "size", "timestamp_ms", "is_last")}
    cu: dict[str, list[Any]] = {k: [] for k in ("path", "ml_path", "topic", "namespace", "encoded_name",
                                                "subscription", "mark_delete_ledger_id", "mark_delete_entry_id",
                                                "last_active_ms", "mtime_ms", "cursors_ledger_id")}
    bk: dict[str, list[Any]] = {k: [] for k in ("path", "ledger_id", "application", "component", "ml_name",
                                                "ctime_ms", "length", "last_entry_id", "state")}
    namespaces = sorted({f"tenant-{i // 10_000}/ns-{i // 1000}" for i in range(topics)})
    next_id = 1
    for i in range(topics):
        ns = f"tenant-{i // 10_000}/ns-{i // 1000}"
        local = f"topic-{i}"
        path = f"/managed-ledgers/{ns}/persistent/{local}"
        name = f"{ns}/persistent/{local}"
        topic = f"persistent://{ns}/{local}"
        ids = list(range(next_id, next_id + 4))
        next_id += 4
        for col, v in (("path", path), ("ml_name", name), ("tenant", ns.split("/")[0]), ("namespace", ns),
                       ("encoded_name", local), ("local_name", local), ("topic", topic), ("base_topic", topic),
                       ("last_ledger_id", ids[-1]), ("ledger_count", 4), ("partition", -1)):
            ml[col].append(v)
        for idx, lid in enumerate(ids):
            last = idx == 3
            row: tuple[tuple[str, Any], ...] = (
                ("ml_path", path), ("topic", topic), ("namespace", ns), ("idx", idx), ("ledger_id", lid),
                ("entries", None if last else 1000), ("size", None if last else 1 << 20),
                ("timestamp_ms", None if last else NOW - (10 - idx) * DAY), ("is_last", last),
            )
            for col, v in row:
                ll[col].append(v)
            if not (i % 200 == 7 and idx == 0):  # 0.5 % dangling data references
                for col, v in (("path", f"/ledgers/L{lid:010d}"), ("ledger_id", lid), ("application", "pulsar"),
                               ("component", "managed-ledger"), ("ml_name", name), ("ctime_ms", NOW - 20 * DAY),
                               ("length", 1 << 20), ("last_entry_id", 999), ("state", "CLOSED")):
                    bk[col].append(v)
        if i % 100 == 3:  # 1 % orphans
            lid = next_id
            next_id += 1
            for col, v in (("path", f"/ledgers/L{lid:010d}"), ("ledger_id", lid), ("application", "pulsar"),
                           ("component", "managed-ledger"), ("ml_name", name), ("ctime_ms", NOW - 20 * DAY),
                           ("length", 1 << 20), ("last_entry_id", 999), ("state", "CLOSED")):
                bk[col].append(v)
        for s, md in (("sub-a", (ids[2], 999)), ("sub-b", (ids[1], 10))):
            for col, v in (("path", f"{path}/{s}"), ("ml_path", path), ("topic", topic), ("namespace", ns),
                           ("encoded_name", s), ("subscription", s), ("mark_delete_ledger_id", md[0]),
                           ("mark_delete_entry_id", md[1]), ("last_active_ms", NOW - (i % 20) * DAY),
                           ("mtime_ms", NOW - DAY), ("cursors_ledger_id", -1)):
                cu[col].append(v)
    nsc: dict[str, list[Any]] = {
        "path": [f"/admin/policies/{n}" for n in namespaces], "tenant": [n.split("/")[0] for n in namespaces],
        "namespace": namespaces, "bundle_boundaries": [["0x00000000", "0x80000000", "0xffffffff"]] * len(namespaces),
        "num_bundles": [2] * len(namespaces), "json": ["{}"] * len(namespaces),
    }
    tenants = sorted({n.split("/")[0] for n in namespaces})
    owners: dict[str, list[Any]] = {  # first bundle of every namespace owned
        "path": [f"/namespace/{n}/0x00000000_0x80000000" for n in namespaces], "namespace": namespaces,
        "bundle_range": ["0x00000000_0x80000000"] * len(namespaces), "lower": [0] * len(namespaces),
        "upper": [0x80000000] * len(namespaces),
    }
    scopes = ["/ledgers", "/managed-ledgers", "/schemas", "/admin/policies", "/admin/local-policies",
              "/admin/partitioned-topics", "/namespace", "/loadbalance/bundle-data"]
    tables: dict[str, tuple[dict[str, list[Any]], int]] = {
        "managed_ledgers": (ml, len(ml["path"])), "ledger_list": (ll, len(ll["ml_path"])),
        "cursors": (cu, len(cu["path"])), "bk_ledgers": (bk, len(bk["path"])),
        "namespaces": (nsc, len(namespaces)), "bundle_owners": (owners, len(namespaces)),
        "tenants": ({"path": [f"/admin/policies/{t}" for t in tenants], "tenant": tenants}, len(tenants)),
        "scopes": ({"store": ["local"] * len(scopes), "scope": scopes, "complete": [True] * len(scopes)},
                   len(scopes)),
    }
    for t in schema.TABLES:
        cols, n = tables.get(t.name, ({}, 0))
        _write(out, t.name, cols, n)
    write_manifest(out, Manifest(
        snapshot_id=str(uuid.uuid4()), cluster="bench", tool_version="bench", schema_version=schema.SCHEMA_VERSION,
        complete=True, started_at_ms=NOW - 1000, finished_at_ms=NOW, zxid_range={}, stores={},
        ledgers_root="/ledgers", row_counts={k: n for k, (_, n) in tables.items()}))
    return out


def run(topics: int = 10_000, snapshot: Path | None = None, master: str = "local[*]") -> dict[str, Any]:
    """Time the Spark audit and DuckDB over the same snapshot; returns the figures."""
    from pulsar_ops.audit.manifest import read_manifest
    from pulsar_ops.audit.runner import run_audit
    from pulsar_ops.audit.session import build_session
    from pulsar_ops.bench.duckdb_sql import connect, run_detections

    work = Path(tempfile.mkdtemp(prefix="pulsar-ops-bench-audit-"))
    t0 = time.monotonic()
    snap = snapshot or synthetic_snapshot(work / "snap", topics)
    gen_s = time.monotonic() - t0 if snapshot is None else 0.0
    manifest = read_manifest(snap)
    params = AuditParams(now_ms=int(manifest["finished_at_ms"]))
    t0 = time.monotonic()
    spark = build_session(master=master)
    startup_s = time.monotonic() - t0
    t0 = time.monotonic()
    result = run_audit(snap, work / "out", params, spark=spark)
    spark_s = time.monotonic() - t0
    t0 = time.monotonic()
    con = connect(snap, params, admin_scraped=bool(manifest.get("admin_scraped")))
    duck_counts = run_detections(con)
    duck_s = time.monotonic() - t0
    spark_counts = {d: sum(c.values()) for d, c in result.counts.items()}
    return {
        "topics": topics if snapshot is None else None, "snapshot": str(snap), "generate_s": round(gen_s, 2),
        "spark_startup_s": round(startup_s, 2), "spark_audit_s": round(spark_s, 2), "duckdb_s": round(duck_s, 2),
        "ratio_spark_over_duckdb": round(spark_s / duck_s, 2) if duck_s else None,
        "findings_spark": spark_counts, "findings_duckdb": duck_counts, "same_counts": spark_counts == duck_counts,
        "cpus": os.cpu_count(), "load_1min": round(os.getloadavg()[0], 2), "master": master,
    }
