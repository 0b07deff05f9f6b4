"""Admin REST and bookie HTTP scrapers against recorded JSON served by httpx.MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import HttpError
from pulsar_ops.scrape.admin import (
    BrokerRegistration,
    broker_url,
    iter_loaded_topics,
    parse_registration,
    scrape_admin,
)
from pulsar_ops.scrape.bookie import bookie_http_url, scrape_bookies
from pulsar_ops.scrape.http import HttpSettings, get_json, make_client
from pulsar_ops.scrape.http_sources import http_sources
from pulsar_ops.scrape.run import ExtraTables

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "http"


def _load(name: str) -> object:
    return json.loads((FIX / name).read_text())


Routes = dict[tuple[str, str], Callable[[httpx.Request], httpx.Response]]


def _factory(routes: Routes, calls: list[str]) -> Callable[[str], httpx.Client]:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(f"{request.method} {request.url.host}{request.url.path}")
        key = (request.url.host, request.url.path)
        if key not in routes:
            return httpx.Response(404, text="not found")
        return routes[key](request)

    def client_for(base: str) -> httpx.Client:
        return make_client(base, HttpSettings(retries=2), transport=httpx.MockTransport(handler))

    return client_for


def _json(name: str) -> Callable[[httpx.Request], httpx.Response]:
    return lambda _r: httpx.Response(200, json=_load(name))


def test_admin_lists_loaded_topics_of_every_broker_without_loading_calls() -> None:
    calls: list[str] = []
    routes: Routes = {
        ("admin.pulsar", "/admin/v2/brokers/standalone"): _json("brokers_standalone.json"),
        ("broker-0.pulsar.svc", "/admin/v2/broker-stats/topics"): _json("broker_stats_topics_broker0.json"),
        ("broker-1.pulsar.svc", "/admin/v2/broker-stats/topics"): _json("broker_stats_topics_broker1.json"),
    }
    res = scrape_admin("http://admin.pulsar:8080", "standalone", _factory(routes, calls))
    assert res.complete
    assert [t.topic for t in res.loaded_topics] == [
        "persistent://acme/payments/ledger-events",
        "persistent://public/default/my topic~1",
        "persistent://public/default/orders-partition-0",
    ]
    assert {t.broker for t in res.loaded_topics} == {"broker-0.pulsar.svc:8080", "broker-1.pulsar.svc:8080"}
    # non-persistent topics are not managed ledgers and are not reported
    assert not any(t.topic.startswith("non-persistent") for t in res.loaded_topics)
    # only side-effect-free endpoints were called
    assert all(("/stats" not in c and "internalStats" not in c) for c in calls)


def test_admin_broker_failure_makes_listing_incomplete_not_empty() -> None:
    calls: list[str] = []
    routes: Routes = {
        ("admin.pulsar", "/admin/v2/brokers/standalone"): _json("brokers_standalone.json"),
        ("broker-0.pulsar.svc", "/admin/v2/broker-stats/topics"): _json("broker_stats_topics_broker0.json"),
        ("broker-1.pulsar.svc", "/admin/v2/broker-stats/topics"): lambda _r: httpx.Response(500, text="boom"),
    }
    res = scrape_admin("http://admin.pulsar:8080", "standalone", _factory(routes, calls))
    assert not res.complete
    assert len(res.errors) == 1 and res.errors[0].code == "http-500"
    assert "broker-1" in res.errors[0].message


def test_admin_follows_redirect_to_owner() -> None:
    calls: list[str] = []
    routes: Routes = {
        ("admin.pulsar", "/admin/v2/brokers/standalone"): lambda _r: httpx.Response(
            307, headers={"Location": "http://leader.pulsar:8080/admin/v2/brokers/standalone"}
        ),
        ("leader.pulsar", "/admin/v2/brokers/standalone"): lambda _r: httpx.Response(200, json=[]),
    }
    res = scrape_admin("http://admin.pulsar:8080", "standalone", _factory(routes, calls))
    assert calls == ["GET admin.pulsar/admin/v2/brokers/standalone", "GET leader.pulsar/admin/v2/brokers/standalone"]
    assert not res.complete  # no brokers answered: never "complete and empty"


def test_broker_stats_bad_shape_is_a_clear_error() -> None:
    with pytest.raises(HttpError) as ei:
        list(iter_loaded_topics("b:8080", ["not", "an", "object"]))
    assert ei.value.code == "http-bad-shape"


def test_get_json_retries_503_then_succeeds_and_reports_non_json() -> None:
    attempts = {"n": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        attempts["n"] += 1
        if request.url.path == "/flaky":
            return httpx.Response(503) if attempts["n"] < 2 else httpx.Response(200, json={"ok": True})
        return httpx.Response(200, text="<html>")

    with make_client("http://x", transport=httpx.MockTransport(handler)) as c:
        assert get_json(c, "/flaky") == {"ok": True}
        assert attempts["n"] == 2
        with pytest.raises(HttpError) as ei:
            get_json(c, "/html")
    assert ei.value.code == "http-bad-json"
    assert "pulsar-ops scrape" in ei.value.hint


def test_transport_error_is_http_error_after_retries() -> None:
    n = {"calls": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        n["calls"] += 1
        raise httpx.ConnectError("refused", request=request)

    with make_client("http://x", transport=httpx.MockTransport(handler)) as c, pytest.raises(HttpError) as ei:
        get_json(c, "/a", retries=3)
    assert n["calls"] == 3
    assert ei.value.code == "http-failed"


def test_settings_repr_hides_credentials() -> None:
    s = HttpSettings(token="s3cr3t", basic=("u", "pw"))
    assert "s3cr3t" not in repr(s) and "pw" not in repr(s)


def test_bookies_rw_ro_and_space() -> None:
    calls: list[str] = []
    routes: Routes = {
        ("bookie-0.bookkeeper.svc", "/api/v1/bookie/list_bookies"): lambda r: httpx.Response(
            200, json=_load("list_bookies_rw.json" if r.url.params["type"] == "rw" else "list_bookies_ro.json")
        ),
        ("bookie-0.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_0.json"),
        ("bookie-1.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_1.json"),
        ("bookie-2.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_2.json"),
    }
    res = scrape_bookies("http://bookie-0.bookkeeper.svc:8000", _factory(routes, calls))
    assert res.complete
    by_id = {b.bookie_id: b for b in res.bookies}
    assert set(by_id) == {
        "bookie-0.bookkeeper.svc:3181",
        "bookie-1.bookkeeper.svc:3181",
        "bookie-2.bookkeeper.svc:3181",
    }
    assert by_id["bookie-2.bookkeeper.svc:3181"].readonly
    assert by_id["bookie-1.bookkeeper.svc:3181"].free_bytes == 10737418240
    assert by_id["bookie-0.bookkeeper.svc:3181"].total_bytes == 107374182400


def test_bookie_down_keeps_row_with_unknown_space() -> None:
    calls: list[str] = []
    routes: Routes = {
        ("bookie-0.bookkeeper.svc", "/api/v1/bookie/list_bookies"): lambda r: httpx.Response(
            200, json=_load("list_bookies_rw.json" if r.url.params["type"] == "rw" else "list_bookies_ro.json")
        ),
        ("bookie-0.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_0.json"),
        ("bookie-1.bookkeeper.svc", "/api/v1/bookie/info"): lambda _r: httpx.Response(502),
        ("bookie-2.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_2.json"),
    }
    res = scrape_bookies("http://bookie-0.bookkeeper.svc:8000", _factory(routes, calls))
    assert not res.complete
    row = next(b for b in res.bookies if b.bookie_id.startswith("bookie-1"))
    assert row.free_bytes is None and row.total_bytes is None
    assert len(res.bookies) == 3


def test_bookies_configured_directories_from_server_config() -> None:
    """GET /api/v1/config/server_config (AbstractConfiguration.asJson: a list property reads "[a, b]"): each
    bookie's directories; one that does not answer has none, and the scrape stays complete (optional knowledge)."""
    calls: list[str] = []
    routes: Routes = {
        ("bookie-0.bookkeeper.svc", "/api/v1/bookie/list_bookies"): lambda r: httpx.Response(
            200, json=_load("list_bookies_rw.json" if r.url.params["type"] == "rw" else "list_bookies_ro.json")
        ),
        ("bookie-0.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_0.json"),
        ("bookie-1.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_1.json"),
        ("bookie-2.bookkeeper.svc", "/api/v1/bookie/info"): _json("bookie_info_2.json"),
        ("bookie-0.bookkeeper.svc", "/api/v1/config/server_config"): lambda _r: httpx.Response(
            200, json={"ledgerDirectories": "[/pulsar/data/l0, /pulsar/data/l1]", "bookiePort": "3181"}
        ),
        ("bookie-1.bookkeeper.svc", "/api/v1/config/server_config"): lambda _r: httpx.Response(
            200, json={"ledgerDirectories": "/pulsar/data/l0", "indexDirectories": "/pulsar/index0",
                       "gcWaitTime": "1800000", "forceAllowCompaction": "false", "majorCompactionInterval": " "}
        ),
    }  # fmt: skip
    res = scrape_bookies("http://bookie-0.bookkeeper.svc:8000", _factory(routes, calls))
    assert res.complete
    # the GC keys each answer sets (blank: unset), kept for the plan's bookie-gc rule; none without an answer
    gc = {b.bookie_id.split(".")[0]: b.gc for b in res.bookies}
    assert gc == {"bookie-0": {}, "bookie-1": {"gcWaitTime": "1800000", "forceAllowCompaction": "false"},
                  "bookie-2": None}  # fmt: skip
    by_id = {b.bookie_id.split(".")[0]: b.dirs for b in res.bookies}
    assert by_id["bookie-0"] == {"ledger_dirs": ["/pulsar/data/l0", "/pulsar/data/l1"], "index_dirs": None}
    assert by_id["bookie-1"] == {"ledger_dirs": ["/pulsar/data/l0"], "index_dirs": ["/pulsar/index0"]}
    assert by_id["bookie-2"] is None  # 404: unknown, not an error


def test_bookie_http_url_uses_http_port() -> None:
    assert bookie_http_url("10.0.0.7:3181", "http", 8000) == "http://10.0.0.7:8000"


def test_a_custom_bookie_id_is_not_a_host() -> None:
    assert bookie_http_url("bookie-0", "http", 8000) is None
    assert bookie_http_url("[::1]:3181", "https", 8443) == "https://[::1]:8443"


def test_resolve_endpoint_published_fallback_or_none() -> None:
    from pulsar_ops.formats.bookie_service_info import Endpoint, ServiceInfo, encode_service_info
    from pulsar_ops.scrape.bookie import resolve_endpoint

    def info(*eps: tuple[str, int, str]) -> bytes:
        return encode_service_info(ServiceInfo(tuple(Endpoint(i, p, h, "http") for i, p, h in eps)))

    published = resolve_endpoint(
        "10.0.0.1:3181", info(("httpserver", 8443, "bk-0.svc")), scheme="https", fallback_port=8000
    )
    assert (published.url, published.source, published.problem) == ("https://bk-0.svc:8443", "published", None)
    legacy = resolve_endpoint("10.0.0.1:3181", b"", scheme="https", fallback_port=8000)
    assert (legacy.url, legacy.source) == ("https://10.0.0.1:8000", "bookie-url-port")
    # HTTP server not published: the published RPC host with the fallback port, even for a custom id
    rpc_only = resolve_endpoint("bookie-0", info(("bookie", 3181, "bk-0.svc")), scheme="https", fallback_port=8000)
    assert (rpc_only.url, rpc_only.source) == ("https://bk-0.svc:8000", "bookie-url-port")
    custom = resolve_endpoint("bookie-0", b"", scheme="https", fallback_port=8000)
    assert custom.url is None and custom.source == "none" and custom.problem is not None
    assert custom.problem.code == "bookie-endpoint-unknown" and "publishes no httpserver" in custom.problem.message
    unknown = resolve_endpoint("bookie-0", None, known=False, scheme="https", fallback_port=8000)
    assert unknown.problem is not None and "was not read" in unknown.problem.message
    corrupt = resolve_endpoint("bookie-0", b"\x32\xff", scheme="https", fallback_port=8000)
    assert corrupt.url is None and corrupt.problem is not None and corrupt.problem.code == "decode-failed"


# --- several brokers: empty answers, registrations -------------------------------------------------------------


def _two_brokers(broker1: Callable[[httpx.Request], httpx.Response]) -> Routes:
    return {
        ("admin.pulsar", "/admin/v2/brokers/standalone"): _json("brokers_standalone.json"),
        ("broker-0.pulsar.svc", "/admin/v2/broker-stats/topics"): _json("broker_stats_topics_broker0.json"),
        ("broker-1.pulsar.svc", "/admin/v2/broker-stats/topics"): broker1,
    }


def test_an_empty_topic_listing_is_asked_again_until_the_broker_has_written_it() -> None:
    """A broker's stats dump is empty until its first stats update (BrokerService.updateRates): asked again."""
    answers = iter([httpx.Response(200, content=b""), httpx.Response(200, content=b"  \n")])

    def broker1(_r: httpx.Request) -> httpx.Response:
        return next(answers, None) or httpx.Response(200, json=_load("broker_stats_topics_broker1.json"))

    calls: list[str] = []
    sleeps: list[float] = []
    res = scrape_admin(
        "http://admin.pulsar:8080",
        "standalone",
        _factory(_two_brokers(broker1), calls),
        not_ready_wait_s=60,
        not_ready_poll_s=0.01,
        sleep=sleeps.append,
    )
    assert res.complete and not res.errors
    assert calls.count("GET broker-1.pulsar.svc/admin/v2/broker-stats/topics") == 3
    assert calls.count("GET broker-0.pulsar.svc/admin/v2/broker-stats/topics") == 1  # only the empty one again
    assert len(sleeps) == 2
    assert {t.broker for t in res.loaded_topics} == {"broker-0.pulsar.svc:8080", "broker-1.pulsar.svc:8080"}
    assert [(b.broker, b.complete) for b in res.listings] == [
        ("broker-0.pulsar.svc:8080", True),
        ("broker-1.pulsar.svc:8080", True),
    ]


def test_a_broker_that_stays_empty_is_not_ready_and_named() -> None:
    calls: list[str] = []
    res = scrape_admin(
        "http://admin.pulsar:8080",
        "standalone",
        _factory(_two_brokers(lambda _r: httpx.Response(200, content=b"")), calls),
        not_ready_wait_s=0.05,
        not_ready_poll_s=0.01,
    )
    assert not res.complete
    assert [e.code for e in res.errors] == ["broker-stats-not-ready"]
    assert "broker-1.pulsar.svc:8080" in res.errors[0].message
    listing = {b.broker: b for b in res.listings}
    assert listing["broker-0.pulsar.svc:8080"].complete and listing["broker-0.pulsar.svc:8080"].topics > 0
    assert listing["broker-1.pulsar.svc:8080"].error is res.errors[0]
    assert calls.count("GET broker-1.pulsar.svc/admin/v2/broker-stats/topics") >= 2  # asked again, then given up
    assert {t.broker for t in res.loaded_topics} == {"broker-0.pulsar.svc:8080"}


def test_an_empty_json_object_is_an_answer_not_a_missing_one() -> None:
    """`{}` is a written dump with nothing loaded: complete, never asked again."""
    calls: list[str] = []
    res = scrape_admin(
        "http://admin.pulsar:8080",
        "standalone",
        _factory(_two_brokers(lambda _r: httpx.Response(200, json={})), calls),
        not_ready_wait_s=30,
        sleep=lambda _s: pytest.fail("nothing to wait for"),
    )
    assert res.complete
    assert calls.count("GET broker-1.pulsar.svc/admin/v2/broker-stats/topics") == 1


REG = {
    "broker-0.pulsar.svc:8080": json.dumps(
        {"webServiceUrl": "http://broker-0.pulsar.svc:8080", "webServiceUrlTls": "https://broker-0.pulsar.svc:8443"}
    ).encode(),
    "broker-1.pulsar.svc:8080": json.dumps(
        {"webServiceUrl": "http://broker-1.pulsar.svc:8080", "webServiceUrlTls": "https://broker-1.pulsar.svc:8443/"}
    ).encode(),
}


def _port_routes() -> tuple[Routes, list[str]]:
    ports: list[str] = []

    def stats(name: str) -> Callable[[httpx.Request], httpx.Response]:
        def answer(r: httpx.Request) -> httpx.Response:
            ports.append(f"{r.url.scheme}://{r.url.host}:{r.url.port}")
            return httpx.Response(200, json=_load(f"broker_stats_topics_{name}.json"))

        return answer

    routes: Routes = {
        ("admin.pulsar", "/admin/v2/brokers/standalone"): _json("brokers_standalone.json"),
        ("broker-0.pulsar.svc", "/admin/v2/broker-stats/topics"): stats("broker0"),
        ("broker-1.pulsar.svc", "/admin/v2/broker-stats/topics"): stats("broker1"),
    }
    return routes, ports


def test_an_https_admin_url_asks_each_broker_at_its_registered_tls_address() -> None:
    routes, ports = _port_routes()
    asked: list[list[str]] = []

    def reader(ids: Sequence[str]) -> dict[str, bytes | None]:
        asked.append(list(ids))
        return dict(REG)

    res = scrape_admin("https://admin.pulsar:8443", "standalone", _factory(routes, []), registrations=reader)
    assert res.complete
    assert ports == ["https://broker-0.pulsar.svc:8443", "https://broker-1.pulsar.svc:8443"]
    assert asked == [["broker-0.pulsar.svc:8080", "broker-1.pulsar.svc:8080"]]
    assert [b.url for b in res.listings] == ["https://broker-0.pulsar.svc:8443", "https://broker-1.pulsar.svc:8443"]


def test_an_http_admin_url_asks_the_registered_web_service_url() -> None:
    routes, ports = _port_routes()
    res = scrape_admin("http://admin.pulsar:8080", "standalone", _factory(routes, []), registrations=lambda _i: REG)
    assert res.complete
    assert ports == ["http://broker-0.pulsar.svc:8080", "http://broker-1.pulsar.svc:8080"]


def test_a_broker_without_a_tls_address_is_not_asked_at_its_plain_port_over_https() -> None:
    routes, ports = _port_routes()
    regs = {
        **REG,
        "broker-1.pulsar.svc:8080": b'{"webServiceUrl": "http://broker-1.pulsar.svc:8080", "webServiceUrlTls": null}',
    }
    res = scrape_admin("https://admin.pulsar:8443", "standalone", _factory(routes, []), registrations=lambda _i: regs)
    assert not res.complete
    assert ports == ["https://broker-0.pulsar.svc:8443"]
    assert [e.code for e in res.errors] == ["broker-no-tls-address"]
    assert "broker-1.pulsar.svc:8080" in res.errors[0].message


def test_without_a_registration_the_broker_id_is_asked() -> None:
    """No /loadbalance/brokers/<id> znode (or no reader): scheme://id, as before."""
    routes, ports = _port_routes()
    res = scrape_admin(
        "https://admin.pulsar:8443",
        "standalone",
        _factory(routes, []),
        registrations=lambda ids: dict.fromkeys(ids),
    )
    assert res.complete
    assert ports == ["https://broker-0.pulsar.svc:8080", "https://broker-1.pulsar.svc:8080"]


def test_an_unreadable_registration_makes_that_broker_incomplete() -> None:
    routes, ports = _port_routes()
    regs = {**REG, "broker-0.pulsar.svc:8080": b"\x00not json"}
    res = scrape_admin("https://admin.pulsar:8443", "standalone", _factory(routes, []), registrations=lambda _i: regs)
    assert [e.code for e in res.errors] == ["broker-registration-invalid"]
    assert ports == ["https://broker-1.pulsar.svc:8443"]
    assert not res.listings[0].complete and res.listings[1].complete


def test_broker_url_rules() -> None:
    reg = parse_registration("b:8080", b'{"webServiceUrl": "http://b:8080/", "webServiceUrlTls": "https://b:8443"}')
    assert reg == BrokerRegistration("http://b:8080", "https://b:8443")
    assert broker_url("b:8080", "https", reg) == "https://b:8443"
    assert broker_url("b:8080", "http", reg) == "http://b:8080"
    assert broker_url("b:8080", "https", None) == "https://b:8080"
    assert broker_url("http://b:8080", "https", reg) == "http://b:8080"  # a listed URL is used as listed
    with pytest.raises(HttpError) as ei:
        parse_registration("b:8080", b"[1]")
    assert ei.value.code == "broker-registration-invalid"


_URL = st.one_of(st.none(), st.text(max_size=30), st.integers(), st.booleans())


@given(web=_URL, tls=_URL, other=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=3))
def test_parse_registration_takes_only_non_blank_string_urls(web: object, tls: object, other: dict[str, str]) -> None:
    doc = {**other, "webServiceUrl": web, "webServiceUrlTls": tls}
    reg = parse_registration("b:1", json.dumps(doc).encode())

    def want(v: object) -> str | None:
        return v.rstrip("/") if isinstance(v, str) and v.strip() else None

    assert reg == BrokerRegistration(want(web), want(tls))


@given(data=st.binary(max_size=64))
def test_parse_registration_of_any_bytes_is_a_registration_or_a_clear_error(data: bytes) -> None:
    try:
        reg = parse_registration("b:1", data)
    except HttpError as e:
        assert e.code == "broker-registration-invalid" and "/loadbalance/brokers/b:1" in e.message
    else:
        assert isinstance(reg, BrokerRegistration)


def test_http_sources_write_one_scope_per_broker_and_one_for_a_failed_broker_list() -> None:
    routes = _two_brokers(lambda _r: httpx.Response(502))

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "down.pulsar":
            raise httpx.ConnectError("refused", request=request)
        return routes.get((request.url.host, request.url.path), lambda _r: httpx.Response(500))(request)

    def collect(url: str, cluster: str | None) -> ExtraTables:
        extra = http_sources(
            admin_url=url,
            bookie_url=None,
            cluster=cluster,
            settings=HttpSettings(retries=1),
            transport=httpx.MockTransport(handler),
        )
        return extra()

    got = collect("http://admin.pulsar:8080", "standalone")
    assert not got.admin_scraped
    assert got.complete == [("admin", "broker-stats/topics/broker-0.pulsar.svc:8080", 2)]
    [(source, scope, code, error)] = got.incomplete
    assert (source, scope, code) == ("admin", "broker-stats/topics/broker-1.pulsar.svc:8080", "http-502")
    assert error.endswith("the topics of the bundles it owns are not called unloaded")
    assert [(s, c) for _, s, c, _ in collect("http://admin.pulsar:8080", "other").incomplete] == [
        ("brokers/other", "http-500")
    ]
    down = collect("http://down.pulsar:8080", None)
    assert [(s, c) for _, s, c, _ in down.incomplete] == [("brokers", "http-failed")]
    assert not down.complete and not down.admin_scraped
