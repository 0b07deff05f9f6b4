"""The test broker (``AdminServer``) over a real ZooKeeper: what a load, a trim and a subscription deletion do to
the metadata, the broker's error statuses, failure injection and auth."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kazoo.client import KazooClient

from pulsar_ops.formats.compression import MAGIC, wrap
from pulsar_ops.formats.cursor import ManagedCursorInfo, encode_cursor_info
from pulsar_ops.formats.ledger_metadata import decode_ledger_metadata
from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    decode_managed_ledger_info,
    encode_managed_ledger_info,
)
from pulsar_ops.formats.names import decode, encode, parse_topic
from pulsar_ops.formats.policies import (
    bundle_for_topic,
    encode_namespace_policies,
    parse_local_policies,
    parse_namespace_policies,
)
from pulsar_ops.testing.admin_effects import trim_plan
from pulsar_ops.testing.admin_server import NO_RESPONSE, AdminServer, Call
from pulsar_ops.testing.model_ledgers import BkSpec, build_metadata, ml_custom
from pulsar_ops.testing.model_spec import DAY_MS, HOUR_MS, MIB, MINUTE_MS, SeedOptions
from pulsar_ops.testing.seeder import seed_cluster

pytestmark = pytest.mark.zk

NOW = 1_760_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(zk_hosts: str, clock: Clock) -> Iterator[AdminServer]:
    with AdminServer(zk_hosts, now_ms=clock) as s:
        yield s


@pytest.fixture
def http(server: AdminServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=5.0) as c:
        yield c


def url(topic: str, suffix: str) -> str:
    ml = parse_topic(topic)
    return f"/admin/v2/persistent/{ml.namespace}/{ml.encoded_name}/{suffix}"


def ml_path(topic: str) -> str:
    return f"/managed-ledgers/{parse_topic(topic).ml_name}"


def ledger_ids(zk: KazooClient, topic: str) -> list[int]:
    path = ml_path(topic)
    return list(decode_managed_ledger_info(zk.get(path)[0], path).info.ledger_ids)


def listed(zk: KazooClient, topic: str) -> dict[int, LedgerInfo]:
    path = ml_path(topic)
    return {li.ledger_id: li for li in decode_managed_ledger_info(zk.get(path)[0], path).info.ledgers}


def dangling(zk: KazooClient) -> list[tuple[str, int]]:
    """Every (managed ledger, ledger id) listed whose ledger metadata znode is gone."""
    out = []

    def walk(path: str) -> None:
        for child in zk.get_children(path):
            p = f"{path}/{child}"
            if path.endswith("/persistent"):
                for li in decode_managed_ledger_info(zk.get(p)[0], p).info.ledgers:
                    gone = li.offload is not None and li.offload.bookkeeper_deleted
                    if not gone and zk.exists(ledger_path(li.ledger_id)) is None:
                        out.append((p, li.ledger_id))
            else:
                walk(p)

    walk("/managed-ledgers")
    return out


def topic_bundle(zk: KazooClient, topic: str) -> str:
    """The topic's bundle as the broker builds the namespace's bundles: local policies first (a split namespace;
    the seeder splits some), else the policies."""
    ml = parse_topic(topic)
    policies, local = f"/admin/policies/{ml.namespace}", f"/admin/local-policies/{ml.namespace}"
    if zk.exists(local):
        bounds = parse_local_policies(zk.get(local)[0], local).bundle_boundaries
    else:
        bounds = parse_namespace_policies(zk.get(policies)[0], policies).bundle_boundaries
    return bundle_for_topic(topic, bounds)


def owner(zk: KazooClient, topic: str) -> tuple[dict[str, Any], int] | None:
    ml = parse_topic(topic)
    bundle = topic_bundle(zk, topic)
    node = zk.exists(f"/namespace/{ml.namespace}/{bundle}")
    if node is None:
        return None
    return json.loads(zk.get(f"/namespace/{ml.namespace}/{bundle}")[0]), node.ephemeralOwner


def session_of(server: AdminServer) -> int:
    return int(server.broker.zk.client_id[0])


def hand_built(
    zk: KazooClient,
    topic: str,
    closed: list[tuple[int, int, int, int]],  # (ledger id, entries, size, close time)
    *,
    current: int | None,
    cursors: dict[str, tuple[int, tuple[int, int]]] | None = None,  # name -> (cursor ledger or -1, mark-delete)
    retention: tuple[int, int] = (0, 0),
    compression: str = "NONE",
    header: bool = False,
) -> None:
    """A topic written as a broker leaves it on unload: closed ledgers, an empty current one, cursors."""
    ml = parse_topic(topic)
    policies = f"/admin/policies/{ml.namespace}"
    if zk.exists(policies) is None:
        doc = encode_namespace_policies(retention_time_minutes=retention[0], retention_size_mb=retention[1])
        zk.create(policies, doc, makepath=True)
    rng = random.Random(7)
    infos = []
    for lid, entries, size, ts in closed:
        spec = BkSpec("CLOSED", size, entries - 1, ts - HOUR_MS, 3, ml_custom(ml.ml_name))
        zk.create(ledger_path(lid), build_metadata(lid, spec, rng)[1], makepath=True)
        infos.append(LedgerInfo(lid, entries, size, ts))
    if current is not None:
        spec = BkSpec("OPEN", 0, -1, NOW - HOUR_MS, 3, ml_custom(ml.ml_name))
        zk.create(ledger_path(current), build_metadata(current, spec, rng)[1], makepath=True)
        infos.append(LedgerInfo(current, None, None, 0))
    plain = encode_managed_ledger_info(ManagedLedgerInfo(tuple(infos)))
    zk.create(ml_path(topic), wrap(plain, compression, always_header=header), makepath=True)
    for name, (cl, md) in (cursors or {}).items():
        if cl != -1:
            spec = BkSpec("OPEN", 0, -1, NOW - HOUR_MS, 3, ml_custom(ml.ml_name, encode(name)))
            zk.create(ledger_path(cl), build_metadata(cl, spec, rng)[1], makepath=True)
        cursor = encode_cursor_info(ManagedCursorInfo(cl, md, last_active_ms=NOW - HOUR_MS))
        zk.create(f"{ml_path(topic)}/{encode(name)}", cursor)


# ---------------------------------------------------------------------- the trim rule (pure)


def test_trim_plan_follows_internal_trim_ledgers() -> None:
    rows = [(1, 10, 5 * MIB, NOW - 3 * DAY_MS), (2, 10, 5 * MIB, NOW - 2 * DAY_MS), (3, 0, 0, 0)]
    everything = {"now_ms": NOW, "retention_minutes": 0, "retention_mb": 0}
    assert trim_plan(rows, 3, None, **everything) == [1, 2]  # never the current ledger
    assert trim_plan(rows, 3, (2, 8), **everything) == [1]  # mark-delete inside ledger 2
    assert trim_plan(rows, 3, (2, 9), **everything) == [1, 2]  # ... at its last entry: 2 is consumed
    assert trim_plan(rows, 3, (1, -1), **everything) == []
    # time: strictly older than the retention time; the walk stops at the first ledger that stays
    day = {"now_ms": NOW, "retention_minutes": 2 * 24 * 60, "retention_mb": -1}
    assert trim_plan(rows, 3, None, **day) == [1]
    # size: a ledger goes only while what remains after removing it is still at least the quota
    assert trim_plan(rows, 3, None, now_ms=NOW, retention_minutes=-1, retention_mb=5) == [1]
    assert trim_plan(rows, 3, None, now_ms=NOW, retention_minutes=-1, retention_mb=6) == []
    assert trim_plan(rows, 3, None, now_ms=NOW, retention_minutes=-1, retention_mb=-1) == []


# ---------------------------------------------------------------------- loads of a seeded cluster


def _seed_retention(zk: KazooClient) -> dict[str, dict[str, Any]]:
    opts = SeedOptions(topics=1, seed=1, now_ms=NOW, defects=frozenset({"expired-retention-unloaded"}))
    res = seed_cluster(zk, None, opts)
    return {e["topic"]: e for e in res.ground_truth["expected"]["expired-retention-unloaded"]}


def test_load_trims_what_the_model_predicts_and_takes_the_bundle(
    zk: KazooClient, server: AdminServer, http: httpx.Client
) -> None:
    expected = _seed_retention(zk)
    planted = dangling(zk)  # the seeder's lost-ledger fixture: a load neither repairs nor adds to it
    assert [lid for _, lid in planted] and all("/lost-ledger-" in p for p, _ in planted)
    # time retention only: the size rule is tested on its own (model_rules' size rule removes one ledger more)
    topics = [
        f"persistent://acme/{ns}/{decode(enc)}"
        for ns in ("idle-default-0", "idle-week-0", "idle-infinite-0")
        for enc in zk.get_children(f"/managed-ledgers/acme/{ns}/persistent")
        # Pulsar's own managed ledgers there (transaction stores) are opened by brokers, never loaded as topics
        if not (decode(enc).startswith("__") or decode(enc).endswith("__transaction_pending_ack"))
    ]
    assert len(topics) >= 8 and any(" " in t for t in topics)
    trimmed_somewhere = 0
    for topic in topics:
        before = listed(zk, topic)
        last = max(before)
        empty_last = decode_ledger_metadata(zk.get(ledger_path(last))[0], "").last_entry_id < 0
        r = http.get(url(topic, "stats"))
        assert r.status_code == 200, (topic, r.text)
        after = listed(zk, topic)
        truth = expected.get(topic, {"ledger_ids": [], "after_retention_ledger_ids": []})
        now_trimmed = set(truth["ledger_ids"]) - set(truth["after_retention_ledger_ids"])
        assert set(before) - set(after) == now_trimmed | ({last} if empty_last else set()), topic
        trimmed_somewhere += len(now_trimmed)
        for lid in set(before) - set(after):
            assert zk.exists(ledger_path(lid)) is None, (topic, lid)
        (new,) = set(after) - set(before)
        assert new > max(before) and after[new].timestamp_ms == 0 and after[new].entries is None  # ids never reused
        md = decode_ledger_metadata(zk.get(ledger_path(new))[0], "")
        assert md.state == "OPEN" and md.ctime_ms == NOW
        assert md.managed_ledger_name == parse_topic(topic).ml_name
        data, session = owner(zk, topic) or ({}, 0)
        assert data.get("httpUrl") == server.url and session == session_of(server)
        assert r.json()["storageSize"] == sum(li.size or 0 for li in after.values())
    assert trimmed_somewhere >= 8
    assert dangling(zk) == planted
    stats = http.get("/admin/v2/broker-stats/topics").json()
    seen = {t for ns in stats.values() for b in ns.values() for t in b["persistent"]}
    assert seen == set(topics) == set(server.loaded_topics)


def test_the_restamped_last_ledger_survives_the_first_trim(
    zk: KazooClient, server: AdminServer, http: httpx.Client, clock: Clock
) -> None:
    expected = _seed_retention(zk)
    planted = dangling(zk)
    topic = "persistent://acme/idle-week-0/stale-current-0"
    (older, stale) = expected[topic]["ledger_ids"]
    assert expected[topic]["after_retention_ledger_ids"] == [stale]
    assert http.get(url(topic, "stats")).status_code == 200
    after = listed(zk, topic)
    assert older not in after and zk.exists(ledger_path(older)) is None
    restamped = after[stale]  # its 25-day-old BookKeeper ctime no longer counts: it is listed with the load time
    assert (restamped.timestamp_ms, restamped.entries, restamped.size) == (NOW, 500, 500 * 700)
    clock.now = NOW + 7 * DAY_MS  # exactly the retention time: not older than it yet
    assert http.post(url(topic, "trim")).status_code == 204
    assert stale in ledger_ids(zk, topic)
    clock.now += 1
    assert http.post(url(topic, "trim")).status_code == 204
    assert stale not in ledger_ids(zk, topic) and zk.exists(ledger_path(stale)) is None
    assert len(ledger_ids(zk, topic)) == 1  # the current ledger of the load
    assert dangling(zk) == planted


def test_size_retention_keeps_at_least_the_quota(zk: KazooClient, server: AdminServer, http: httpx.Client) -> None:
    topic = "persistent://acme/sized/t"
    closed = [(100 + k, 50, 5 * MIB, NOW - (40 - 10 * k) * DAY_MS) for k in range(4)]
    hand_built(zk, topic, closed, current=104, retention=(-1, 12))
    assert http.get(url(topic, "stats")).status_code == 200
    # 20 MiB listed: removing 100 leaves 15 >= 12, removing 101 would leave 10 < 12 (PR #11242's rule)
    assert ledger_ids(zk, topic)[:3] == [101, 102, 103]
    assert zk.exists(ledger_path(100)) is None and zk.exists(ledger_path(104)) is None  # 104: empty last ledger


# ---------------------------------------------------------------------- subscriptions


def test_delete_subscription_removes_cursor_and_its_ledger_then_trims(
    zk: KazooClient, server: AdminServer, http: httpx.Client
) -> None:
    topic = "persistent://t1/ns/orders v2"
    closed = [(10, 100, 1000, NOW - 3 * DAY_MS), (11, 100, 1000, NOW - 2 * DAY_MS)]
    hand_built(zk, topic, closed, current=12, cursors={"sub a": (13, (10, -1))}, compression="LZ4")
    cursor_path = f"{ml_path(topic)}/sub+a"
    assert http.get(url(topic, "stats")).json()["subscriptions"]["sub a"]["msgBacklog"] == 200
    assert ledger_ids(zk, topic)[:2] == [10, 11]  # the cursor pins them
    r = http.delete(url(topic, "subscription/" + encode("nope")))
    assert r.status_code == 404 and "nope" in r.json()["reason"]
    server.connect_consumer(topic, "sub a")
    r = http.delete(url(topic, "subscription/sub+a"))
    assert r.status_code == 412 and r.json() == {"reason": "Subscription has active connected consumers"}
    assert zk.exists(cursor_path) is not None and zk.exists(ledger_path(13)) is not None
    assert http.delete(url(topic, "subscription/sub+a"), params={"force": "true"}).status_code == 204
    assert zk.exists(cursor_path) is None and zk.exists(ledger_path(13)) is None
    assert 10 not in ledger_ids(zk, topic) and 11 not in ledger_ids(zk, topic)  # trimmed once unpinned
    data = zk.get(ml_path(topic))[0]
    assert data[:2] == MAGIC and decode_managed_ledger_info(data, "").compression == "LZ4"
    assert dangling(zk) == []


def test_unknown_topic_and_namespace_are_404(zk: KazooClient, server: AdminServer, http: httpx.Client) -> None:
    hand_built(zk, "persistent://t1/ns/a", [], current=5)
    r = http.get(url("persistent://t1/ns/missing", "stats"))
    assert r.status_code == 404 and r.json() == {"reason": "Topic persistent://t1/ns/missing not found"}
    assert http.delete(url("persistent://t1/ns/missing", "subscription/s")).status_code == 404
    assert http.post(url("persistent://t1/other/a", "trim")).status_code == 404
    assert zk.exists("/managed-ledgers/t1/ns/persistent/missing") is None
    assert server.loaded_topics == []


# ---------------------------------------------------------------------- ownership


def test_lookup_unload_and_redirect_to_another_owner(zk: KazooClient, server: AdminServer, http: httpx.Client) -> None:
    topic = "persistent://t1/ns/a"
    hand_built(zk, topic, [(20, 5, 50, NOW - HOUR_MS)], current=21, retention=(60 * 24, -1))
    r = http.get(f"/lookup/v2/topic/persistent/t1/ns/{encode('a')}")
    assert r.status_code == 200 and r.json()["httpUrl"] == server.url
    assert r.json()["brokerUrl"].startswith("pulsar://127.0.0.1:")
    assert owner(zk, topic) is not None and server.loaded_topics == []  # the bundle is owned, the topic not open
    assert http.put(url(topic, "unload")).status_code == 204  # loads then releases
    assert owner(zk, topic) is None and server.loaded_topics == []
    # another broker (another session) owns the bundle: lookup names it, topic calls are redirected to it
    bundle = topic_bundle(zk, topic)
    other = {"nativeUrl": "pulsar://broker-9:6650", "httpUrl": "http://broker-9:8080"}
    zk.create(f"/namespace/t1/ns/{bundle}", json.dumps(other).encode(), ephemeral=True)
    assert http.get("/lookup/v2/topic/persistent/t1/ns/a").json()["httpUrl"] == "http://broker-9:8080"
    r = http.get(url(topic, "stats"))
    assert r.status_code == 307 and r.headers["Location"] == "http://broker-9:8080" + url(topic, "stats")
    assert server.loaded_topics == []


# ---------------------------------------------------------------------- compare-and-set


def test_a_lost_compare_and_set_fences_and_clobbers_nothing(
    zk: KazooClient, server: AdminServer, http: httpx.Client, clock: Clock
) -> None:
    topic = "persistent://t1/ns/cas"
    closed = [(30, 10, 100, NOW - 30 * MINUTE_MS), (31, 10, 100, NOW - 20 * MINUTE_MS)]
    hand_built(zk, topic, closed, current=32, retention=(60, -1))
    assert http.get(url(topic, "stats")).status_code == 200  # nothing expired yet
    # another writer (a second broker, an operator tool) rewrites the list with a property of its own
    path = ml_path(topic)
    info = decode_managed_ledger_info(zk.get(path)[0], path).info
    theirs = encode_managed_ledger_info(ManagedLedgerInfo(info.ledgers, None, (("written-by", "other"),)))
    zk.set(path, theirs)
    clock.now = NOW + 2 * HOUR_MS
    r = http.post(url(topic, "trim"))
    assert r.status_code == 500 and "BadVersion" in r.json()["reason"]
    assert zk.get(path)[0] == theirs  # not clobbered
    assert zk.exists(ledger_path(30)) is not None and zk.exists(ledger_path(31)) is not None
    assert http.post(url(topic, "trim")).status_code == 500  # fenced until unloaded
    assert http.put(url(topic, "unload")).status_code == 204
    assert http.post(url(topic, "trim")).status_code == 204  # reloaded from what is there now
    after = decode_managed_ledger_info(zk.get(path)[0], path).info
    assert 30 not in after.ledger_ids and 31 not in after.ledger_ids and after.property("written-by") == "other"
    assert zk.exists(ledger_path(30)) is None and dangling(zk) == []


def test_a_write_between_read_and_write_of_a_load_fails_the_load(
    zk: KazooClient, server: AdminServer, http: httpx.Client
) -> None:
    topic = "persistent://t1/ns/race"
    hand_built(zk, topic, [(40, 10, 100, NOW - HOUR_MS)], current=41, retention=(-1, -1))
    path = ml_path(topic)
    theirs = encode_managed_ledger_info(ManagedLedgerInfo((LedgerInfo(40, 10, 100, NOW - HOUR_MS),)))

    def concurrent_writer(p: str) -> None:
        server.before_info_write = None
        zk.set(p, theirs)

    server.before_info_write = concurrent_writer
    r = http.get(url(topic, "stats"))
    assert r.status_code == 500 and "BadVersion" in r.json()["reason"]
    assert zk.get(path)[0] == theirs and server.loaded_topics == []
    assert http.get(url(topic, "stats")).status_code == 200
    assert ledger_ids(zk, topic)[0] == 40 and dangling(zk) == []


# ---------------------------------------------------------------------- failure injection and auth


def test_injected_statuses_hangs_and_closed_connections(
    zk: KazooClient, server: AdminServer, http: httpx.Client
) -> None:
    topic = "persistent://public/default/t1"
    hand_built(zk, topic, [(50, 10, 100, NOW - DAY_MS)], current=51)
    path = "/admin/v2/persistent/public/default/t1/trim"
    server.fail("POST", path, status=500, times=1)
    r = http.post(path)
    assert r.status_code == 500 and r.json() == {"reason": "injected failure"}
    assert server.loaded_topics == [] and ledger_ids(zk, topic) == [50, 51]  # answered before any effect
    assert http.post(path).status_code == 204
    assert 50 not in ledger_ids(zk, topic)
    server.fail(endpoint="stats", status=503, after=True)  # the effect runs, the answer is lost
    assert http.put(url(topic, "unload")).status_code == 204
    assert http.get(url(topic, "stats")).status_code == 503 and server.loaded_topics == [topic]
    for status in (404, 409, 412):
        server.fail("GET", "/admin/v2/broker-stats/topics", status=status)
        assert http.get("/admin/v2/broker-stats/topics").status_code == status
    server.fail(endpoint="stats", hang=5.0)
    with pytest.raises(httpx.ReadTimeout):
        http.get(url(topic, "stats"), timeout=0.3)
    server.fail(endpoint="stats", close=True)
    with pytest.raises(httpx.RemoteProtocolError):
        http.get(url(topic, "stats"))
    assert http.get(url(topic, "stats")).status_code == 200
    stats_path = url(topic, "stats")
    assert server.calls[:2] == [Call("POST", path, 500), Call("POST", path, 204)]
    assert server.calls[-3:] == [
        Call("GET", stats_path, NO_RESPONSE),
        Call("GET", stats_path, NO_RESPONSE),
        Call("GET", stats_path, 200),
    ]


def test_token_auth(zk_hosts: str, clock: Clock) -> None:
    with AdminServer(zk_hosts, now_ms=clock, token="t0ken") as s, httpx.Client(base_url=s.url) as c:
        assert c.get("/admin/v2/broker-stats/topics").status_code == 401
        bad = {"Authorization": "Bearer other"}
        assert c.get("/admin/v2/broker-stats/topics", headers=bad).status_code == 401
        ok = {"Authorization": "Bearer t0ken"}
        r = c.get("/admin/v2/broker-stats/topics", headers=ok)
        assert r.status_code == 200 and r.json() == {}
        assert [call.status for call in s.calls] == [401, 401, 200]
