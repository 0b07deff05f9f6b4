"""How the admin client reads a broker's answers (httpx MockTransport: no network)."""

from __future__ import annotations

import httpx

from pulsar_ops.repair.admin_writer import HttpAdmin, topic_path


def _admin(status: int, body: bytes, ctype: str) -> HttpAdmin:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"Content-Type": ctype})

    return HttpAdmin(httpx.Client(base_url="http://broker", transport=httpx.MockTransport(handler)))


def test_the_brokers_error_data_is_told_from_a_web_servers_page() -> None:
    pulsar = _admin(404, b'{"reason": "Topic persistent://t/ns/x not found"}', "application/json")
    r = pulsar.trim_topic("persistent://t/ns/x")
    assert (r.status, r.error_data, r.ok) == (404, True, False) and "not found" in r.reason
    jetty = _admin(404, b"<html><body>Error 404 Not Found</body></html>", "text/html").trim_topic("persistent://t/ns/x")
    assert (jetty.status, jetty.error_data) == (404, False)
    assert _admin(204, b"", "text/plain").delete_subscription("persistent://t/ns/x", "a b").ok


def test_v1_topics_use_the_v1_path_and_names_are_encoded() -> None:
    assert topic_path("persistent://t/ns/a b") == "/admin/v2/persistent/t/ns/a+b"
    assert topic_path("persistent://p/c/ns/x") == "/admin/persistent/p/c/ns/x"
