"""The bookie HTTP calls of ``bookie-gc`` actions (:mod:`pulsar_ops.repair.kinds.bookie_gc`): one request each, never
retried, the answer decoded as JSON when it is JSON and never read as success unless it is one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from pulsar_ops.repair.kinds.bookie_gc import BookieApi, HttpAnswer


class HttpBookie:
    """:class:`BookieApi` over an ``httpx.Client`` made by :func:`pulsar_ops.scrape.http.make_client`."""

    def __init__(self, client: httpx.Client) -> None:
        self._c = client

    def get(self, path: str) -> HttpAnswer:
        return self._send("GET", path, None)

    def put(self, path: str, body: Mapping[str, Any] | None) -> HttpAnswer:
        """None: a blank body (``TriggerGCService``: ``forceGC()``)."""
        return self._send("PUT", path, None if body is None else dict(body))

    def _send(self, method: str, path: str, body: dict[str, Any] | None) -> HttpAnswer:
        try:
            r = self._c.request(method, path, content=None if body is None else json.dumps(body).encode())
        except httpx.HTTPError as e:  # timeouts, refused or dropped connections: the outcome is unknown
            return HttpAnswer(None, error=f"{type(e).__name__}: {e}")
        try:
            decoded: Any = r.json()
        except ValueError:
            decoded = r.text[:2000]
        return HttpAnswer(r.status_code, decoded)


def bookie_client(url: str, timeout_s: float = 30.0) -> BookieApi:
    from pulsar_ops.scrape.http import HttpSettings, make_client

    return HttpBookie(make_client(url, HttpSettings(timeout_s=timeout_s, retries=0)))
