"""The pure cluster model: determinism, structure, encodings, and a ground truth that matches the model.

The ground-truth checks re-derive the set-based detections (orphans, dangling references, watermark) from
the DECODED znode bytes with the formats decoders, independently of how the generator recorded them.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from typing import Any

import pytest

from pulsar_ops.errors import ConfigError, DecodeError
from pulsar_ops.formats.cursor import decode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_id_from_path
from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
from pulsar_ops.formats.names import decode, ml_name_from_path
from pulsar_ops.formats.schema_locator import decode_schema_locator
from pulsar_ops.testing.cluster_model import build
from pulsar_ops.testing.model_spec import (
    ALL_KINDS,
    DAY_MS,
    DEFECT_KINDS,
    HOUR_MS,
    SeedOptions,
    ZNode,
    parse_defects,
)

NOW = 1_750_000_000_000
INT32_MAX = 2147483647


@cache
def _build(
    topics: int = 150,
    seed: int = 1,
    defects: frozenset[str] = frozenset(DEFECT_KINDS),
    now: int = NOW,
    ztime: int | None = None,
) -> tuple[tuple[ZNode, ...], dict[str, Any]]:
    nodes, gt = build(SeedOptions(topics=topics, seed=seed, defects=defects, now_ms=now, znode_time_ms=ztime))
    return tuple(nodes), gt


def test_same_seed_same_cluster_and_truth() -> None:
    a_nodes, a_gt = build(SeedOptions(topics=120, seed=7, now_ms=NOW))
    b_nodes, b_gt = build(SeedOptions(topics=120, seed=7, now_ms=NOW))
    assert [(z.store, z.path, z.data, z.ephemeral) for z in a_nodes] == [
        (z.store, z.path, z.data, z.ephemeral) for z in b_nodes
    ]
    assert json.dumps(a_gt, sort_keys=True) == json.dumps(b_gt, sort_keys=True)
    c_nodes, _ = build(SeedOptions(topics=120, seed=8, now_ms=NOW))
    assert [z.data for z in a_nodes] != [z.data for z in c_nodes]


def test_every_znode_once_parents_first() -> None:
    nodes, _ = _build()
    keys = [(z.store, z.path) for z in nodes]
    assert [k for k, n in Counter(keys).items() if n > 1] == []
    seen: set[tuple[str, str]] = set()
    for store, path in keys:
        parent = path.rsplit("/", 1)[0]
        assert parent == "" or (store, parent) in seen, f"{store}:{path} before its parent"
        seen.add((store, path))


def test_healthy_cluster_has_no_findings() -> None:
    _, gt = _build(topics=400, defects=frozenset())
    assert all(v == [] for v in gt["expected"].values()), {k: v[:3] for k, v in gt["expected"].items() if v}
    assert gt["counts"]["managed_ledgers"] >= 400


def test_every_defect_kind_present_and_scaling() -> None:
    _, small = _build()
    for kind in DEFECT_KINDS:
        assert small["counts"][kind] >= 1, kind
    assert small["counts"]["scrape-incomplete"] == 0
    _, big = _build(topics=3000)
    for kind in DEFECT_KINDS:
        assert big["counts"][kind] >= 2 * small["counts"][kind], kind


def test_defect_kinds_toggle_independently() -> None:
    _, gt = _build(defects=frozenset({"ack-holes"}))
    non_empty = {k for k, v in gt["expected"].items() if v}
    assert non_empty == {"ack-holes"}


def test_parse_defects() -> None:
    assert parse_defects("all") == frozenset(DEFECT_KINDS)
    assert parse_defects("none") == frozenset()
    assert parse_defects("all,corrupt") == frozenset((*DEFECT_KINDS, "corrupt"))
    assert parse_defects(" ack-holes , orphan-ledger") == frozenset({"ack-holes", "orphan-ledger"})
    with pytest.raises(ConfigError) as e:
        parse_defects("orphans")
    assert "orphan-ledger" in e.value.hint
    with pytest.raises(ConfigError):
        SeedOptions(topics=0)


def test_every_value_decodes_to_its_typed_object() -> None:
    nodes, _ = _build(defects=frozenset(ALL_KINDS))
    seen: Counter[str] = Counter()
    for z in nodes:
        if z.kind == "managed-ledger":
            if z.encoding == "garbage":
                with pytest.raises(DecodeError):
                    decode_managed_ledger_info(z.data, z.path)
                continue
            d = decode_managed_ledger_info(z.data, z.path)
            assert d.info == z.obj, z.path
            assert (d.format if d.format != "binary" else d.compression) == z.encoding, z.path
        elif z.kind == "cursor":
            c = decode_cursor_info(z.data, z.path)
            assert c.info == z.obj and c.compression == z.encoding, z.path
        elif z.kind == "bk-ledger":
            if z.encoding == "truncated":
                with pytest.raises(DecodeError):
                    decode_ledger_metadata(z.data, z.path)
                continue
            assert decode_ledger_metadata(z.data, z.path) == z.obj, z.path
        elif z.kind == "schema":
            assert decode_schema_locator(z.data, z.path) == z.obj
        elif z.encoding == "json":
            assert json.loads(z.data) == z.obj
        seen[f"{z.kind}:{z.encoding}"] += 1
    for enc in ("NONE", "LZ4", "ZSTD", "ZLIB", "SNAPPY", "text", "empty"):
        assert seen[f"managed-ledger:{enc}"] >= 1, enc
    for enc in ("NONE", "LZ4", "ZSTD"):
        assert seen[f"cursor:{enc}"] >= 1, enc
    for enc in ("v1", "v2", "v3"):
        assert seen[f"bk-ledger:{enc}"] >= 1, enc


def test_layouts_names_and_structure() -> None:
    nodes, _ = _build()
    ids = [ledger_id_from_path(z.path) for z in nodes if z.kind == "bk-ledger"]
    assert any(i is not None and i < INT32_MAX for i in ids)
    assert any(i is not None and i >= 2**31 for i in ids)
    assert {INT32_MAX - 1, INT32_MAX, INT32_MAX + 1} <= set(ids)  # both sides of the layout edge
    paths = {z.path for z in nodes}
    assert "/managed-ledgers/legacy/pulsar-east/ns-v1/persistent" in paths  # V1 namespace
    assert any(p.startswith("/ledgers/000/0000/0021/4748/L") for p in paths)  # long layout
    mls = [ml_name_from_path(z.path) for z in nodes if z.kind == "managed-ledger"]
    hostile = [m.local_name for m in mls if any(ch in m.local_name for ch in " ~*%+🚀")]
    assert hostile and all(decode(m.encoded_name) == m.local_name for m in mls)
    assert any(m.partition >= 0 for m in mls)
    cursors = [decode(z.path.rsplit("/", 1)[1]) for z in nodes if z.kind == "cursor"]
    assert any(any(ch in c for ch in " ~*%") for c in cursors)
    owners = [z for z in nodes if z.kind == "bundle-owner"]
    assert owners and all(z.ephemeral for z in owners)
    layout = next(z for z in nodes if z.path == "/ledgers/LAYOUT")
    assert layout.data.startswith(b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1")


def _decoded_sets(
    nodes: tuple[ZNode, ...], present: set[int] | None = None
) -> tuple[dict[int, Any], dict[int, list[tuple[str, str]]], set[int]]:
    """(B: readable bk ledgers by id, R: referenced id -> [(ref, path)], ids offloaded and gone from BK); every
    ledger id with a znode (decodable or not) is added to ``present``."""
    bk: dict[int, Any] = {}
    refs: dict[int, list[tuple[str, str]]] = {}
    gone: set[int] = set()
    for z in nodes:
        if z.kind == "bk-ledger" and present is not None:
            lid = ledger_id_from_path(z.path)
            assert lid is not None
            present.add(lid)
        if z.kind == "bk-ledger" and z.encoding != "truncated":
            md = decode_ledger_metadata(z.data, z.path)
            lid = ledger_id_from_path(z.path)
            assert lid is not None
            bk[lid] = md
        elif z.kind == "managed-ledger" and z.encoding != "garbage":
            for li in decode_managed_ledger_info(z.data, z.path).info.ledgers:
                refs.setdefault(li.ledger_id, []).append(("data", z.path))
                if li.offload is not None and li.offload.bookkeeper_deleted:
                    gone.add(li.ledger_id)
        elif z.kind == "cursor":
            c = decode_cursor_info(z.data, z.path).info
            if c.cursors_ledger_id != -1:
                refs.setdefault(c.cursors_ledger_id, []).append(("cursor", z.path))
            if c.compacted_topic_ledger is not None:
                refs.setdefault(c.compacted_topic_ledger, []).append(("compacted", z.path))
            for _, lid in c.bucket_ledgers:
                refs.setdefault(lid, []).append(("bucket", z.path))
        elif z.kind == "schema":
            for lid in decode_schema_locator(z.data, z.path).ledger_ids:
                refs.setdefault(lid, []).append(("schema", z.path))
    return bk, refs, gone


@pytest.mark.parametrize("defects", [frozenset(DEFECT_KINDS), frozenset(ALL_KINDS)])
def test_orphans_and_dangling_match_decoded_znodes(defects: frozenset[str]) -> None:
    nodes, gt = _build(topics=300, defects=defects)
    present: set[int] = set()
    bk, refs, gone = _decoded_sets(nodes, present)
    exp = gt["expected"]
    assert gt["options"]["watermark"] == max(refs)
    orphan_ids = sorted(set(bk) - set(refs))
    assert [o["ledger_id"] for o in exp["orphan-ledger"]] == orphan_ids
    for o in exp["orphan-ledger"]:
        md = bk[o["ledger_id"]]
        assert o["kind"] == md.pulsar_kind
        assert o["severity"] == ("info" if md.pulsar_kind == "unowned" else "warning")
    dangling = sorted(
        (lid, ref, path) for lid, rs in refs.items() if lid not in present and lid not in gone for ref, path in rs
    )
    assert sorted((d["ledger_id"], d["ref"], d["path"]) for d in exp["dangling-ledger"]) == dangling
    assert {d["ref"] for d in exp["dangling-ledger"]} >= {"data", "cursor", "schema"}
    assert gone and not gone & {d["ledger_id"] for d in exp["dangling-ledger"]}  # offloaded control


# The orphan age counts from the ledger znode's ctime (ZooKeeper stamps it at seeding time), or from the metadata's
# when that is later: a seeded orphan is old enough only when the audit's clock runs ahead, as every seeded audit's does
AHEAD = {"now": NOW + 25 * HOUR_MS, "ztime": NOW}


def test_orphan_plannability_per_rule() -> None:
    _, gt = _build(**AHEAD)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in gt["expected"]["orphan-ledger"]:
        by_kind.setdefault(o["kind"], []).append(o)
    for kind in ("data", "cursor", "schema", "compacted", "bucket"):
        assert any(o["plannable"] for o in by_kind[kind]), kind
    assert not any(o["plannable"] for o in by_kind["unowned"] + by_kind["pulsar-unknown"])
    assert any(not o["owner_exists"] and o["plannable"] for o in by_kind["data"])  # deleted topic
    wm = gt["options"]["watermark"]
    above = [o for o in gt["expected"]["orphan-ledger"] if o["ledger_id"] > wm]
    assert above and not any(o["plannable"] for o in above)
    young = [o for o in by_kind["data"] if not o["plannable"] and o["ledger_id"] < wm]
    assert len(young) >= 1  # its metadata stamped 1 h before now, later than its znode (25 h): the later stamp
    assert any(o["ledger_id"] >= 2**31 and o["plannable"] for o in gt["expected"]["orphan-ledger"])


def test_clock_ahead_makes_leaks_and_ctimeless_orphans_old() -> None:
    _, now_gt = _build()
    _, later = _build(now=NOW + 25 * HOUR_MS, ztime=NOW)
    assert not any(lk["plannable"] for lk in now_gt["expected"]["znode-leak"])
    leaks = {lk["path"]: lk for lk in later["expected"]["znode-leak"]}
    assert [p for p, lk in leaks.items() if not lk["plannable"]] == [
        p for p in leaks if "/gone-held-" in p
    ]  # the namespace that still holds a topic with ledgers is never plannable
    plannable_now = sum(o["plannable"] for o in now_gt["expected"]["orphan-ledger"])
    plannable_later = sum(o["plannable"] for o in later["expected"]["orphan-ledger"])
    assert plannable_now == 0  # every znode was stamped at now: none is old by ZooKeeper's clock, whatever its metadata
    assert plannable_later > plannable_now


def test_corrupt_kinds_block_what_they_must() -> None:
    _, gt = _build(defects=frozenset({"orphan-ledger", "corrupt"}), **AHEAD)
    assert gt["expected"]["scrape-incomplete"] == []  # an undecodable znode is not an incomplete listing
    assert gt["expected"]["undecodable-znode"] == [{"path": "/managed-ledgers/corrupt/broken/persistent/garbage-info"}]
    garbage = [o for o in gt["expected"]["orphan-ledger"] if o["owner"] == "corrupt/broken/persistent/garbage-info"]
    assert garbage and not any(o["plannable"] or o["owner_exists"] for o in garbage)
    assert any(o["plannable"] for o in gt["expected"]["orphan-ledger"])  # other orphans stay plannable
    _, gt2 = _build(defects=frozenset({"orphan-ledger", "corrupt-ledgers"}), **AHEAD)
    assert gt2["expected"]["scrape-incomplete"] == []
    [bad] = gt2["expected"]["undecodable-znode"]
    assert bad["path"].startswith("/ledgers/")
    assert any(o["plannable"] for o in gt2["expected"]["orphan-ledger"])  # one odd ledger blocks no orphan
    assert gt2["expected"]["dangling-ledger"] == []  # the undecodable ledger exists: not dangling


def test_per_topic_detections_name_the_fixtures() -> None:
    _, gt = _build()
    exp = gt["expected"]
    ret = {r["topic"].rsplit("/", 2)[1].rsplit("-", 1)[0]: r for r in exp["expired-retention-unloaded"]}
    assert set(ret) == {"idle-default", "idle-week", "idle-size", "idle-topic-policies"}
    # a namespace whose __change_events holds topic policies: its topics' retention is unknown (flagged, recorded)
    unknown = {r["topic"] for r in exp["expired-retention-unloaded"] if r.get("retention_unknown")}
    assert {t.rsplit("/", 1)[1] for t in unknown} == {"kept-0", "plain-0"}
    assert {u["topic"] for u in gt["retention_unknown"]} == unknown
    kept = next(u for u in gt["retention_unknown"] if u["topic"].endswith("/kept-0"))
    assert kept["topic_policy"] == {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    known = [r for r in exp["expired-retention-unloaded"] if not r.get("retention_unknown")]
    topics = {r["topic"].rsplit("/", 1)[1] for r in known}
    assert {
        "no-cursor-0",
        "never rolled 0",
        "cursor-mid-0",
        "weekly-0",
        "sized-0",
        "reloaded-0",
        "stale-current-0",
    } == topics
    counts = sorted(len(r["ledger_ids"]) for r in known)
    # sized-0 (4 x 5 MiB, 12 MiB quota): the broker trims one ledger, the one whose removal still leaves >= 12 MiB
    assert counts == [1, 2, 2, 2, 2, 3, 3]
    later = {r["topic"].rsplit("/", 1)[1]: r["after_retention_ledger_ids"] for r in known}
    # retention 0 ("never rolled", default namespace): the re-stamped last ledger goes at the first trim
    assert later["never rolled 0"] == [] and later["reloaded-0"] == []
    stale = next(r for r in exp["expired-retention-unloaded"] if r["topic"].endswith("/stale-current-0"))
    assert later["stale-current-0"] == [stale["ledger_ids"][-1]]
    holes = {(h["subscription"], h["range_count"], h["near_cap"]) for h in exp["ack-holes"]}
    assert ("holes-few", 6, False) in holes and not any(n == "unknown" for _, n, _ in holes)
    assert gt["coverage"]["ack-ranges-in-cursor-ledgers"]  # holes-unknown and 30 % of healthy cursors
    assert any(near and n == 900 for _, n, near in holes)
    assert all(h["topic"].split("/")[-1].startswith("ack-holes-") for h in exp["ack-holes"])
    assert {i["subscription"] for i in exp["inactive-subscription"]} == {"forgotten sub 0", "idle~team"}
    assert sorted(t["namespace"].split("/")[1] for t in exp["ttl-expires-delayed"]) == [
        "ttl-dd-default-0",
        "ttl-delay-longer-0",
        "ttl-delayed-0",
        "ttl-old-broker-0",
    ]
    leaks = sorted(lk["leak"] for lk in exp["znode-leak"])
    assert leaks == sorted(
        [
            "bundle-data",
            "bundle-data",
            "local-policies",
            "managed-ledgers-namespace",
            "managed-ledgers-namespace",
            "managed-ledgers-tenant",
            "partitioned-topic",
            "schema",
        ]
    )
    assert gt["now_ms"] == NOW and gt["seed"] == 1 and gt["topics"] == 150
    for detection, entries in exp.items():
        assert gt["counts"][detection] == len(entries)


def test_ages_sit_far_from_thresholds() -> None:
    """A scrape minutes after seeding must agree: no age within a day of the 7-day or 24-hour thresholds."""
    nodes, gt = _build()
    for z in nodes:
        if z.kind == "cursor" and z.obj is not None:
            la = z.obj.last_active_ms  # type: ignore[attr-defined]
            if la is not None:
                assert abs((NOW - la) - 7 * DAY_MS) > DAY_MS, z.path
    orphan_ids = {o["ledger_id"] for o in gt["expected"]["orphan-ledger"]}
    for z in nodes:
        if z.kind == "bk-ledger" and ledger_id_from_path(z.path) in orphan_ids:
            ct = z.obj.ctime_ms  # type: ignore[attr-defined]
            if ct is not None:
                assert abs((NOW - ct) - DAY_MS) > 12 * HOUR_MS, z.path


def test_fast_v3_encoder_is_byte_identical_to_the_formats_encoder() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pulsar_ops.formats.ledger_metadata import LedgerMetadata, encode_ledger_metadata
    from pulsar_ops.testing.model_ledgers import fast_v3

    nodes, _ = _build()
    v3 = [z.obj for z in nodes if z.kind == "bk-ledger" and z.encoding == "v3"]
    assert v3 and all(fast_v3(md) == encode_ledger_metadata(md, 3) for md in v3)  # type: ignore[arg-type]

    i64 = st.integers(-(2**63), 2**63 - 1)

    @settings(max_examples=150, deadline=None)
    @given(
        state=st.sampled_from(["OPEN", "IN_RECOVERY", "CLOSED"]),
        length=i64,
        last=i64,
        ctime=st.none() | i64,
        ctoken=st.none() | i64,
        digest=st.none() | st.sampled_from(["CRC32", "HMAC", "CRC32C", "DUMMY"]),
        password=st.binary(max_size=8),
        custom=st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=8)), max_size=3),
        ensembles=st.lists(
            st.tuples(st.integers(0, 2**40), st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5)),
            max_size=3,
        ),
    )
    def check(
        state: str,
        length: int,
        last: int,
        ctime: int | None,
        ctoken: int | None,
        digest: str | None,
        password: bytes,
        custom: list[tuple[str, bytes]],
        ensembles: list[tuple[int, list[str]]],
    ) -> None:
        md = LedgerMetadata(
            ledger_id=1,
            format_version=3,
            ensemble_size=3,
            write_quorum=2,
            ack_quorum=2,
            state=state,  # type: ignore[arg-type]
            length=length,
            last_entry_id=last,
            ensembles=tuple((f, tuple(m)) for f, m in ensembles),
            digest_type=digest,
            password=password,
            ctime_ms=ctime,
            custom_metadata=tuple(custom),
            ctoken=ctoken,
        )
        assert fast_v3(md) == encode_ledger_metadata(md, 3)

    check()


def test_broker_compression_setting_and_newer_fields() -> None:
    from pulsar_ops.formats.cursor import decode_cursor_info
    from pulsar_ops.formats.managed_ledger import decode_managed_ledger_info
    from pulsar_ops.testing.cluster_model import ClusterModel
    from pulsar_ops.testing.model_spec import SeedOptions

    model = ClusterModel(
        SeedOptions(topics=40, seed=3, now_ms=1_800_000_000_000, metadata_compression="LZ4", compression_threshold=64)
    )
    seen: dict[str, set[str]] = {"managed-ledger": set(), "cursor": set()}
    newer = 0
    for z in model.znodes():
        if z.kind not in seen or z.encoding in ("text", "empty", "garbage", "truncated"):
            continue
        decoded = (
            decode_managed_ledger_info(z.data, z.path)
            if z.kind == "managed-ledger"
            else decode_cursor_info(z.data, z.path)
        )
        seen[z.kind].add(decoded.compression)
        assert decoded.compression == z.encoding
        # over the threshold: LZ4; at or under: plain, as MetaStoreImpl writes them
        plain_len = len(z.data) if decoded.compression == "NONE" else None
        assert decoded.compression == "LZ4" or (plain_len is not None and plain_len <= 64)
        newer += z.data.endswith(b"\xa0\x06\x01") and decoded.compression == "NONE"
    assert seen["managed-ledger"] == {"LZ4", "NONE"} and "LZ4" in seen["cursor"]
    assert newer > 0  # values with a field the reader does not know still decode


def test_namespace_policies_as_older_and_newer_brokers_write_them() -> None:
    from dataclasses import replace

    from pulsar_ops.formats.policies import namespace_policies_doc, parse_namespace_policies
    from pulsar_ops.testing.cluster_model import (
        POLICY_KEYS_SINCE_2_7,
        ClusterModel,
        newer_broker_policies,
        older_broker_policies,
    )

    def read(doc: dict[str, Any]) -> Any:
        return replace(parse_namespace_policies(json.dumps(doc).encode(), "/admin/policies/t/ns"), raw={})

    # every variant reads as the same values (an older broker's int subscription expiry: 0 instead of absent)
    cases: list[dict[str, Any]] = [
        {},
        {"retention_time_minutes": 60, "retention_size_mb": 1024, "message_ttl_seconds": 3600},
        {"delayed_delivery_active": True, "delayed_delivery_max_delay_ms": 0, "num_bundles": 16},
        {"delayed_delivery_active": False, "delayed_delivery_max_delay_ms": None, "deleted": True},
    ]
    for kwargs in cases:
        doc = namespace_policies_doc(**kwargs, extra={"subscription_types_enabled": [], "properties": {}})
        older, newer = older_broker_policies(doc), newer_broker_policies(doc)
        assert read(newer) == read(doc)
        assert read(older) == replace(read(doc), subscription_expiration_minutes=0)
        assert not POLICY_KEYS_SINCE_2_7 & set(older) and older["message_ttl_in_seconds"] == (
            kwargs.get("message_ttl_seconds") or 0
        )
        assert "maxDeliveryDelayInMillis" not in older.get("delayed_delivery_policies", {})
        assert {k for k in newer if k.startswith("x_future_")} and all(
            any(k.startswith("x_future_") for k in newer[n]) for n in ("bundles", "auth_policies")
        )

    # the seeder writes a deterministic share of each, chosen by path
    seen: Counter[str] = Counter()
    for z in ClusterModel(SeedOptions(topics=150, seed=1, defects=frozenset(ALL_KINDS), now_ms=NOW)).znodes():
        if z.kind != "namespace":
            continue
        doc = json.loads(z.data)
        parse_namespace_policies(z.data, z.path)  # every variant decodes
        if "x_future_policy" in doc:
            seen["newer"] += 1
            assert any(k.startswith("x_future_") for k in doc["bundles"])
        elif "subscription_types_enabled" not in doc:
            seen["older"] += 1
            assert doc["message_ttl_in_seconds"] is not None and "properties" not in doc
            assert "maxDeliveryDelayInMillis" not in doc.get("delayed_delivery_policies", {})
        else:
            seen["current"] += 1
    assert seen["older"] >= 1 and seen["newer"] >= 1 and seen["current"] > seen["older"] + seen["newer"], seen
