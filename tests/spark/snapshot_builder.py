"""Small hand-made snapshots for the audit tests: rows per ``schema.TABLES``, Parquet parts + manifest.json.

Pure helper (pyarrow only). Every non-nullable column gets a neutral default so a case names only what matters:

    b = SnapshotBuilder(now_ms=NOW)
    b.namespace("t/ns")
    b.topic("t/ns", "my topic", ledgers=[(10, 100, 1000, NOW - DAY)])
    b.bk_ledger(10, ml_name="t/ns/persistent/my+topic")
    b.write(tmp_path / "snap")
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq

from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.arrow_schema import arrow_schema
from pulsar_ops.snapshot.manifest import IncompleteScope, Manifest, write_manifest

HOUR = 3_600_000
DAY = 24 * HOUR
NOW = 1_700_000_000_000

_DEFAULT = {"string": "", "int64": 0, "int32": 0, "bool": False, "double": 0.0, "list<string>": [], "list<int64>": []}

GLOBAL_SCOPES = (
    "/ledgers",
    "/managed-ledgers",
    "/schemas",
    "/admin/policies",
    "/admin/local-policies",
    "/admin/partitioned-topics",
    "/admin/clusters",
    "/namespace",
    "/loadbalance/bundle-data",
    "/admin/topic-policies",
)
FULL_RANGE = ["0x00000000", "0xffffffff"]


def encode(name: str) -> str:
    """Java URLEncoder semantics (reference §3)."""
    return quote_plus(name, safe="*").replace("~", "%7E")


def ledger_znode(ledger_id: int) -> str:
    if ledger_id < 2147483647:
        s = f"{ledger_id:010d}"
        return f"/ledgers/{s[:2]}/{s[2:6]}/L{s[6:]}"
    s = f"{ledger_id:019d}"
    return f"/ledgers/{s[:3]}/{s[3:7]}/{s[7:11]}/{s[11:15]}/L{s[15:]}"


def ml_name(namespace: str, local: str) -> str:
    return f"{namespace}/persistent/{encode(local)}"


def base_of(local: str) -> tuple[str, int]:
    head, sep, tail = local.rpartition("-partition-")
    if sep and tail.isdigit():
        return head, int(tail)
    return local, -1


@dataclass
class SnapshotBuilder:
    now_ms: int = NOW
    admin_scraped: bool = False
    complete_scopes: bool = True
    load_manager: dict[str, Any] = field(default_factory=dict)  # the manifest's (empty: not recorded)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, table: str, **values: Any) -> dict[str, Any]:
        t = schema.table(table)
        unknown = set(values) - set(t.column_names)
        assert not unknown, f"{table}: unknown columns {unknown}"
        row = {c.name: values.get(c.name, None if c.nullable else _DEFAULT[c.type]) for c in t.columns}
        self.rows.setdefault(table, []).append(row)
        return row

    # --- admin metadata -------------------------------------------------------------------------------
    def tenant(self, tenant: str) -> None:
        self.add("tenants", path=f"/admin/policies/{tenant}", tenant=tenant, json="{}")

    def namespace(
        self, namespace: str, *, boundaries: list[str] | None = None, tenant: bool = True, **values: Any
    ) -> None:
        parts = namespace.split("/")
        if tenant and not any(r["tenant"] == parts[0] for r in self.rows.get("tenants", [])):
            self.tenant(parts[0])
        b = boundaries if boundaries is not None else FULL_RANGE
        values.setdefault("mtime_ms", self.now_ms - 30 * DAY)
        self.add(
            "namespaces",
            path=f"/admin/policies/{namespace}",
            tenant=parts[0],
            namespace=namespace,
            is_v1=len(parts) == 3,
            cluster=parts[1] if len(parts) == 3 else None,
            bundle_boundaries=b,
            num_bundles=len(b) - 1,
            json="{}",
            **values,
        )

    def own_range(self, namespace: str, lower: int, upper: int) -> None:
        """A bundle ownership row for ``[lower, upper)`` of ``namespace``."""
        rg = f"0x{lower:08x}_0x{upper:08x}"
        self.add(
            "bundle_owners",
            path=f"/namespace/{namespace}/{rg}",
            namespace=namespace,
            bundle_range=rg,
            lower=lower,
            upper=upper,
            ephemeral_owner=1,
        )

    def bundle_data(self, namespace: str, lower: int, upper: int) -> None:
        """A ``/loadbalance/bundle-data`` row and its znode for ``[lower, upper)`` of ``namespace``."""
        rg = f"0x{lower:08x}_0x{upper:08x}"
        path = f"/loadbalance/bundle-data/{namespace}/{rg}"
        self.add("bundle_data", path=path, namespace=namespace, bundle_range=rg, lower=lower, upper=upper)
        self.znode(path)

    def own_all_bundles(self, namespace: str) -> None:
        ns = next(r for r in self.rows["namespaces"] if r["namespace"] == namespace)
        b = ns["bundle_boundaries"]
        for lo, hi in itertools.pairwise(b):
            self.add(
                "bundle_owners",
                path=f"/namespace/{namespace}/{lo}_{hi}",
                namespace=namespace,
                bundle_range=f"{lo}_{hi}",
                lower=int(lo, 16),
                upper=int(hi, 16),
                ephemeral_owner=7,
            )

    # --- managed ledgers ------------------------------------------------------------------------------
    def topic(
        self,
        namespace: str,
        local: str,
        *,
        ledgers: list[tuple[Any, ...]] = (),  # type: ignore[assignment]
        mtime_ms: int | None = None,
        **values: Any,
    ) -> str:
        """Add a managed ledger. ``ledgers``: (ledger_id, entries, size, timestamp_ms[, offloaded, bk_deleted]);
        the last tuple is the open ledger (pass entries/size/timestamp as None for a realistic open ledger)."""
        enc = encode(local)
        path = f"/managed-ledgers/{namespace}/persistent/{enc}"
        base, part = base_of(local)
        topic = f"persistent://{namespace}/{local}"
        ids = [lg[0] for lg in ledgers]
        total = sum((lg[2] or 0) for lg in ledgers)
        self.add(
            "managed_ledgers",
            path=path,
            ml_name=ml_name(namespace, local),
            tenant=namespace.split("/")[0],
            namespace=namespace,
            is_v1=namespace.count("/") == 2,
            encoded_name=enc,
            local_name=local,
            topic=topic,
            base_topic=f"persistent://{namespace}/{base}",
            partition=part,
            mtime_ms=mtime_ms if mtime_ms is not None else self.now_ms - DAY,
            format="binary",
            compression="NONE",
            ledger_count=len(ids),
            total_size=total,
            last_ledger_id=ids[-1] if ids else None,
            properties_json="{}",
            **values,
        )
        for idx, lg in enumerate(ledgers):
            lid, entries, size, ts = lg[:4]
            offloaded = bool(lg[4]) if len(lg) > 4 else False
            bk_deleted = bool(lg[5]) if len(lg) > 5 else False
            self.add(
                "ledger_list",
                ml_path=path,
                topic=topic,
                namespace=namespace,
                idx=idx,
                ledger_id=lid,
                entries=entries,
                size=size,
                timestamp_ms=ts,
                is_last=idx == len(ledgers) - 1,
                offloaded=offloaded,
                bookkeeper_deleted=bk_deleted,
            )
        return topic

    def cursor(
        self,
        namespace: str,
        local: str,
        sub: str,
        *,
        md: tuple[int, int] | None = None,
        ranges: list[tuple[int, int, int, int]] = (),  # type: ignore[assignment]
        is_system: bool = False,
        cursors_ledger_id: int = -1,
        range_count: int | None = None,
        **values: Any,
    ) -> str:
        tpath = f"/managed-ledgers/{namespace}/persistent/{encode(local)}"
        path = f"{tpath}/{encode(sub)}"
        topic = f"persistent://{namespace}/{local}"
        values.setdefault("mtime_ms", self.now_ms - HOUR)
        self.add(
            "cursors",
            path=path,
            ml_path=tpath,
            topic=topic,
            namespace=namespace,
            encoded_name=encode(sub),
            subscription=sub,
            is_system=is_system,
            cursors_ledger_id=cursors_ledger_id,
            mark_delete_ledger_id=md[0] if md else None,
            mark_delete_entry_id=md[1] if md else None,
            range_count=len(ranges) if range_count is None else range_count,
            compression="NONE",
            **values,
        )
        for i, (ll, le, ul, ue) in enumerate(ranges):
            self.add(
                "ack_ranges",
                cursor_path=path,
                topic=topic,
                subscription=sub,
                idx=i,
                lower_ledger_id=ll,
                lower_entry_id=le,
                upper_ledger_id=ul,
                upper_entry_id=ue,
            )
        return path

    def bucket(self, cursor_path: str, ledger_id: int) -> None:
        c = next(r for r in self.rows["cursors"] if r["path"] == cursor_path)
        self.add(
            "cursor_properties",
            cursor_path=cursor_path,
            topic=c["topic"],
            subscription=c["subscription"],
            kind="string",
            name=f"#pulsar.internal.delayed.bucket_1_{ledger_id}",
            value=str(ledger_id),
            bucket_ledger_id=ledger_id,
        )

    def schema(self, namespace: str, base_local: str, ledger_ids: list[int]) -> str:
        path = f"/schemas/{namespace}/{encode(base_local)}"
        for v, lid in enumerate(ledger_ids):
            self.add(
                "schema_index",
                path=path,
                schema_id=f"{namespace}/{encode(base_local)}",
                namespace=namespace,
                topic=f"persistent://{namespace}/{base_local}",
                latest_version=len(ledger_ids) - 1,
                schema_version=v,
                ledger_id=lid,
                entry_id=0,
            )
        return path

    # --- BookKeeper -----------------------------------------------------------------------------------
    def bk_ledger(
        self,
        ledger_id: int,
        *,
        kind: str = "data",
        owner: str | None = None,
        ctime_ms: int | None = None,
        length: int = 1000,
        **values: Any,
    ) -> None:
        """kind: data | cursor | schema | compacted | bucket | pulsar-unknown | unowned."""
        md: dict[str, Any] = {}
        if kind != "unowned":
            md["application"] = "pulsar"
        if kind in ("data", "cursor"):
            md.update(component="managed-ledger", ml_name=owner)
            if kind == "cursor":
                md["cursor_name"] = "sub"
        elif kind == "schema":
            md.update(component="schema", schema_id=owner)
        elif kind == "compacted":
            md.update(component="compacted-ledger", compacted_topic=owner)
        elif kind == "bucket":
            md.update(component="delayed-index-bucket", ml_name=owner)
        elif kind == "pulsar-unknown":
            md.update(component="functions-state")
        md.update(values)
        ct = ctime_ms if ctime_ms is not None else self.now_ms - 10 * DAY
        md.setdefault("last_entry_id", 9)
        row: dict[str, Any] = dict(
            path=ledger_znode(ledger_id),
            ledger_id=ledger_id,
            layout="legacy",
            format_version=3,
            state="CLOSED",
            length=length,
            ensemble_size=2,
            write_quorum=2,
            ack_quorum=2,
            ctime_ms=ct,
            metadata_ctime_ms=ct,
            znode_ctime_ms=ct,
            znode_mtime_ms=ct,
            custom_metadata_json="{}",
            bookies=["b1:3181", "b2:3181"],
            ensembles_json="{}",
        )
        row.update(md)  # any column may be overridden (state, quorums, bookies, ensembles_json, ...)
        self.add("bk_ledgers", **row)

    def znode(
        self,
        path: str,
        *,
        mtime_ms: int | None = None,
        data_length: int = 10,
        num_children: int = 0,
        kind: str = "other",
        store: str = "local",
        decode_error: str | None = None,
    ) -> None:
        parent, _, name = path.rpartition("/")
        mt = mtime_ms if mtime_ms is not None else self.now_ms - 30 * DAY
        self.add(
            "znodes",
            store=store,
            path=path,
            parent=parent or "/",
            name=name,
            depth=path.count("/"),
            ctime_ms=mt,
            mtime_ms=mt,
            data_length=data_length,
            num_children=num_children,
            kind=kind,
            data_sha256="",
            decode_error=decode_error,
        )

    # --- scrape bookkeeping ---------------------------------------------------------------------------
    def scope(self, scope: str, complete: bool = True, error: str | None = None, store: str = "local") -> None:
        self.rows["scopes"] = [r for r in self.rows.get("scopes", []) if r["scope"] != scope]
        self.add(
            "scopes",
            store=store,
            scope=scope,
            complete=complete,
            znodes=1,
            error_code=None if complete else "decode-failed",
            error=error,
        )

    def write(self, out: Path) -> Path:
        if self.complete_scopes:
            have = {r["scope"] for r in self.rows.get("scopes", [])}
            for s in GLOBAL_SCOPES:
                if s not in have:
                    self.scope(s)
        for t in schema.TABLES:
            rows = self.rows.get(t.name, [])
            table = pa.Table.from_pylist(rows, schema=arrow_schema(t.name))
            d = out / "tables" / t.name
            d.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, d / "part-00000.parquet")
        incomplete = tuple(
            IncompleteScope(store=r["store"], scope=r["scope"], code=r["error_code"] or "", error=r["error"] or "")
            for r in self.rows.get("scopes", [])
            if not r["complete"]
        )
        manifest = Manifest(
            snapshot_id=str(uuid.UUID(int=self.now_ms)),
            cluster="test-cluster",
            tool_version="test",
            schema_version=schema.SCHEMA_VERSION,
            complete=True,
            started_at_ms=self.now_ms - 1000,
            finished_at_ms=self.now_ms,
            zxid_range={"local": {"min": 1, "max": 2}},
            stores={"local": {"hosts": "127.0.0.1:2181", "chroot": ""}},
            ledgers_root="/ledgers",
            row_counts={t.name: len(self.rows.get(t.name, [])) for t in schema.TABLES},
            incomplete_scopes=incomplete,
            admin_scraped=self.admin_scraped,
            load_manager=self.load_manager,
        )
        write_manifest(out, manifest)
        return out
