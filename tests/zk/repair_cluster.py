"""A small Pulsar metadata tree in a real ZooKeeper chroot, its snapshot and its findings, for apply tests.

The snapshot is built here from what ZooKeeper returns (exact bytes, full stat), with only the tables the
planner reads filled in (the others are empty), so the repair tests depend neither on the scraper nor on Spark.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.security import ACL, Id

from pulsar_ops.findings import Finding
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_id_from_path, ledger_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.formats.schema_locator import decode_schema_locator
from pulsar_ops.identity import layout_from_bytes
from pulsar_ops.repair.safety import leak_shape
from pulsar_ops.scrape.classify import CONFIG_ROOTS
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.manifest import Manifest, write_manifest
from pulsar_ops.snapshot.writer import SnapshotWriter
from tests.unit.repair.encoders import cursor_info, ledger_md, ml_info, schema_locator

DAY = 86_400_000
ML_A = "t/ns/persistent/topic-a"
ML_A_PATH = "/managed-ledgers/" + ML_A
ML_GONE = "t/ns/persistent/gone"
SCHEMA_A = "t/ns/topic-a"
TOPIC_A = "persistent://t/ns/topic-a"
LEAK_ML = "/managed-ledgers/old/ns"
LEAK_BUNDLE = "/loadbalance/bundle-data/old/ns"
WATERMARK = 10_000  # a referenced ledger above every orphan id: orphans below it are plannable
INSTANCE_ID = "5a8f4a9c-1c9e-4c4e-9a51-0d2b8d9f0e11"
ODD_ACL = [ACL(31, Id("world", "anyone")), ACL(1, Id("ip", "127.0.0.1"))]

_DEFAULT = {"string": "", "int64": 0, "int32": 0, "bool": False, "double": 0.0, "list<string>": [], "list<int64>": []}


def custom_ml(ml: str, cursor: str | None = None) -> dict[str, str]:
    d = {"application": "pulsar", "component": "managed-ledger", "pulsar/managed-ledger": ml}
    if cursor:
        d["pulsar/cursor"] = cursor
    return d


@dataclass
class Scenario:
    orphans: dict[int, tuple[str, str | None]] = field(default_factory=dict)  # id -> (kind, owner)
    referenced: list[int] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)  # paths that must survive everything


def build_cluster(zk: KazooClient, *, extra_orphans: int = 0) -> Scenario:
    """Topic A (ledgers 10, 11; cursor `sub` with cursor ledger 12; `__compaction` -> 13; schema -> 14),
    orphans 20-25 of every plannable kind (+ `extra_orphans` more data orphans from 100), 26 unowned,
    two leaked subtrees, and policies that must stay."""
    s = Scenario()
    old = int(time.time() * 1000) - 30 * DAY

    def ledger(lid: int, custom: dict[str, str], acl: list[ACL] | None = None) -> None:
        zk.create(ledger_path(lid), ledger_md(custom, ctime_ms=old, length=1000 + lid), makepath=True, acl=acl)

    for lid in (10, 11, WATERMARK):
        ledger(lid, custom_ml(ML_A))
    ledger(12, custom_ml(ML_A, "sub"))
    ledger(13, {"application": "pulsar", "component": "compacted-ledger", "pulsar/compactedTopic": TOPIC_A})
    ledger(14, {"application": "pulsar", "component": "schema", "pulsar/schemaId": SCHEMA_A})
    s.referenced = [10, 11, 12, 13, 14, WATERMARK]
    zk.create(ML_A_PATH, ml_info([10, 11, WATERMARK]), makepath=True)
    zk.create(ML_A_PATH + "/sub", cursor_info(12))
    zk.create(ML_A_PATH + "/__compaction", cursor_info(-1, compacted=13))
    zk.create("/schemas/" + SCHEMA_A, schema_locator([14]), makepath=True)
    zk.create("/admin/policies/t/ns", b'{"bundles": {"numBundles": 1}}', makepath=True)
    zk.create("/admin/clusters/test", b"{}", makepath=True)
    zk.create("/ledgers/INSTANCEID", INSTANCE_ID.encode(), makepath=True)

    orphans: dict[int, tuple[str, str | None, dict[str, str]]] = {
        20: ("data", ML_A, custom_ml(ML_A)),
        21: ("data", ML_A, custom_ml(ML_A)),
        22: ("cursor", ML_A, custom_ml(ML_A, "sub")),
        23: ("schema", SCHEMA_A, {"application": "pulsar", "component": "schema", "pulsar/schemaId": SCHEMA_A}),
        24: (
            "compacted",
            TOPIC_A,
            {"application": "pulsar", "component": "compacted-ledger", "pulsar/compactedTopic": TOPIC_A},
        ),
        25: ("data", ML_GONE, custom_ml(ML_GONE)),
    }
    for i in range(extra_orphans):
        orphans[100 + i] = ("data", ML_A, custom_ml(ML_A))
    for lid, (kind, owner, custom) in orphans.items():
        ledger(lid, custom, acl=ODD_ACL if lid == 21 else None)
        s.orphans[lid] = (kind, owner)
    ledger(26, {"application": "other"})

    zk.create(LEAK_ML + "/persistent/t1", b"", makepath=True)
    zk.create(LEAK_BUNDLE + "/0x00000000_0xffffffff", b'{"shortTermData": {}}', makepath=True)
    s.leaks = [LEAK_ML, LEAK_BUNDLE]
    s.keep = [
        ML_A_PATH,
        ML_A_PATH + "/sub",
        "/schemas/" + SCHEMA_A,
        "/admin/policies/t/ns",
        ledger_path(10),
        ledger_path(26),
        "/managed-ledgers/old",
        "/loadbalance/bundle-data/old",
    ]
    return s


def findings_for(s: Scenario) -> list[Finding]:
    out = [
        Finding(
            detection="orphan-ledger",
            severity="warning",
            ledger_id=lid,
            path=ledger_path(lid),
            plannable=True,
            bytes=1000 + lid,
            evidence={"kind": kind, "owner": owner},
        )
        for lid, (kind, owner) in sorted(s.orphans.items())
    ]
    out.append(
        Finding(
            detection="orphan-ledger",
            severity="info",
            ledger_id=26,
            path=ledger_path(26),
            plannable=False,
            reason="kind unowned is never planned",
            evidence={"kind": "unowned"},
        )
    )
    out += [
        Finding(
            detection="znode-leak", severity="warning", path=p, plannable=True, evidence={"leak": leak_shape(p).leak}
        )
        for p in s.leaks
    ]  # type: ignore[union-attr]
    out.append(Finding(detection="ack-holes", severity="info", topic=TOPIC_A, subscription="sub"))
    return out


# --- reading back -------------------------------------------------------------------------------------


def walk(zk: KazooClient, root: str = "/") -> dict[str, tuple[bytes, Any]]:
    """Every znode below the chroot (except /zookeeper): path -> (bytes, stat)."""
    out: dict[str, tuple[bytes, Any]] = {}
    stack = [root]
    while stack:
        p = stack.pop()
        if p == "/zookeeper":
            continue
        data, stat = zk.get(p)
        out[p] = (bytes(data or b""), stat)
        base = "" if p == "/" else p
        stack.extend(f"{base}/{c}" for c in zk.get_children(p))
    return out


def dump(zk: KazooClient) -> dict[str, tuple[bytes, int, int, list[Any]]]:
    """Comparable state: path -> (bytes, version, mzxid, acl)."""
    return {p: (d, st.version, st.mzxid, list(zk.get_acls(p)[0])) for p, (d, st) in walk(zk).items()}


def _row(table: str, **values: Any) -> dict[str, Any]:
    row = dict(values)
    for c in schema.table(table).columns:
        if c.name not in row and not c.nullable:
            row[c.name] = _DEFAULT[c.type]
    return row


def address_of(zk: KazooClient) -> dict[str, str]:
    """The client's ``HOSTS[/chroot]`` as the scrape records it in the manifest's ``stores``."""
    return {"hosts": ",".join(f"{h}:{p}" for h, p in zk.hosts), "chroot": zk.chroot or ""}


def _layout(zk: KazooClient) -> str:
    node = zk.exists("/ledgers/LAYOUT")
    return layout_from_bytes(zk.get("/ledgers/LAYOUT")[0] if node is not None else None)


def write_snapshot(zk: KazooClient, out: Path) -> dict[str, Any]:
    """A snapshot of everything in the chroot; returns the manifest summary the audit would embed."""
    started = int(time.time() * 1000)
    w = SnapshotWriter(out)
    for path, (data, st) in sorted(walk(zk).items()):
        if path == "/":
            continue
        parent, name = path.rsplit("/", 1)
        sha = hashlib.sha256(data).hexdigest()
        stat = {
            "version": st.version,
            "mzxid": st.mzxid,
            "ctime_ms": st.ctime,
            "mtime_ms": st.mtime,
            "data_length": len(data),
        }
        store = "config" if any(path == r or path.startswith(r + "/") for r in CONFIG_ROOTS) else "local"
        w.add(
            "znodes",
            _row(
                "znodes",
                store=store,
                path=path,
                parent=parent or "/",
                name=name,
                depth=path.count("/"),
                cversion=st.cversion,
                aversion=st.aversion,
                czxid=st.czxid,
                pzxid=st.pzxid,
                num_children=st.numChildren,
                ephemeral_owner=st.ephemeralOwner,
                data_sha256=sha,
                kind="other",
                **stat,
            ),
        )
        parts = path.strip("/").split("/")
        if parts[0] == "ledgers" and parts[-1].startswith("L") and parts[-1][1:].isdigit():
            lid = ledger_id_from_path(path)
            md = decode_ledger_metadata(data, path)
            w.add(
                "bk_ledgers",
                _row(
                    "bk_ledgers",
                    path=path,
                    ledger_id=lid,
                    layout="legacy",
                    format_version=md.format_version,
                    state=md.state,
                    length=md.length,
                    last_entry_id=md.last_entry_id,
                    ensemble_size=md.ensemble_size,
                    write_quorum=md.write_quorum,
                    ack_quorum=md.ack_quorum,
                    ctime_ms=md.ctime_ms or st.ctime,
                    version=st.version,
                    mzxid=st.mzxid,
                    znode_ctime_ms=st.ctime,
                    znode_mtime_ms=st.mtime,
                    data_length=len(data),
                    data_sha256=sha,
                    application=md.custom("application"),
                    component=md.custom("component"),
                    ml_name=md.custom("pulsar/managed-ledger"),
                    cursor_name=md.custom("pulsar/cursor"),
                    schema_id=md.custom("pulsar/schemaId"),
                    compacted_topic=md.custom("pulsar/compactedTopic"),
                    custom_metadata_json="{}",
                    bookies=list(md.bookies),
                    ensembles_json="{}",
                ),
            )
        elif parts[0] == "managed-ledgers" and len(parts) == 5:
            ml = "/".join(parts[1:])
            for idx, li in enumerate(decode_managed_ledger_info(data, path).info.ledgers):
                w.add("ledger_list", _row("ledger_list", ml_path=path, idx=idx, ledger_id=li.ledger_id))
            w.add(
                "managed_ledgers",
                _row(
                    "managed_ledgers",
                    path=path,
                    ml_name=ml,
                    topic=f"persistent://{parts[1]}/{parts[2]}/{parts[4]}",
                    namespace=f"{parts[1]}/{parts[2]}",
                    encoded_name=parts[4],
                    ledger_count=len(decode_managed_ledger_info(data, path).info.ledgers),
                    **stat,
                ),
            )
        elif parts[0] == "managed-ledgers" and len(parts) == 6:
            c = decode_cursor_info(data, path).info
            w.add(
                "cursors",
                _row(
                    "cursors",
                    path=path,
                    ml_path=parent,
                    subscription=name,
                    cursors_ledger_id=c.cursors_ledger_id,
                    compacted_topic_ledger=c.compacted_topic_ledger,
                    **stat,
                ),
            )
        elif parts[:2] == ["admin", "policies"] and len(parts) == 3:
            w.add("tenants", _row("tenants", path=path, tenant=parts[2], **stat))
        elif parts[:2] == ["admin", "policies"] and len(parts) in (4, 5):
            ns = "/".join(parts[2:])
            js = data.decode("utf-8", "replace")  # the Policies JSON as read, like the scraper
            w.add("namespaces", _row("namespaces", path=path, tenant=parts[2], namespace=ns, json=js, **stat))
        elif parts[:2] == ["admin", "partitioned-topics"] and len(parts) == 6:
            w.add(
                "partitioned_topics",
                _row(
                    "partitioned_topics",
                    path=path,
                    tenant=parts[2],
                    namespace="/".join(parts[2:4]),
                    encoded_name=parts[5],
                    **stat,
                ),
            )
        elif parts[0] == "schemas" and len(parts) == 4:
            for e in decode_schema_locator(data, path).index:
                w.add(
                    "schema_index",
                    _row(
                        "schema_index",
                        path=path,
                        schema_id="/".join(parts[1:]),
                        version=st.version,
                        mzxid=st.mzxid,
                        ledger_id=e.ledger_id,
                    ),
                )
    counts = w.close()
    finished = int(time.time() * 1000)
    m = Manifest(
        snapshot_id=str(uuid.uuid4()),
        cluster="test",
        tool_version="test",
        schema_version=schema.SCHEMA_VERSION,
        complete=True,
        started_at_ms=started,
        finished_at_ms=finished,
        zxid_range={},
        stores={"local": address_of(zk), "config": address_of(zk)},
        ledgers_root="/ledgers",
        row_counts=counts,
        identity={"instance_id": INSTANCE_ID, "clusters": ["test"], "ledger_layout": _layout(zk)},
    )
    write_manifest(out, m)
    return {"snapshot_id": m.snapshot_id, "finished_at_ms": finished, "path": str(out.resolve())}


# The audit parameters a test audit records (the plan copies them; apply's eligibility rules re-use them): no
# min-age (the test cluster's znodes were created seconds ago), no inactivity window, the broker's defaults.
TEST_AUDIT_PARAMS: dict[str, Any] = {
    "min_age_ms": 0,
    "inactive_after_ms": 0,
    "broker": {"default_retention_time_minutes": 0, "default_retention_size_mb": 0},
}


def write_audit(
    audit_dir: Path, snapshot: dict[str, Any], findings: list[Finding], params: dict[str, Any] | None = None
) -> Path:
    audit_dir.mkdir(parents=True, exist_ok=True)
    audit = {"engine": "test", "params": TEST_AUDIT_PARAMS if params is None else params}
    doc = {"snapshot": snapshot, "audit": audit, "findings": [f.to_json() for f in findings]}
    (audit_dir / "findings.json").write_text(json.dumps(doc))
    return audit_dir
