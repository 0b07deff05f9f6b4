"""The broker calls of admin-API actions: one request, never retried, never read as success unless it is one (the
caller then checks ZooKeeper). Paths: Pulsar's admin REST v2 (v1 for ``property/cluster/namespace`` topics),
names encoded as the admin client does (``Codec.encode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import httpx

from pulsar_ops.formats import names


@dataclass(frozen=True)
class AdminResult:
    status: int | None  # None: no answer (timeout, connection error)
    reason: str
    error_data: bool = False  # the body was Pulsar's ErrorData ({"reason": ...}): the broker itself answered

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def describe(self) -> str:
        """``HTTP 412 (reason)`` / ``no answer (TimeoutException: ...)``."""
        answer = "no answer" if self.status is None else f"HTTP {self.status}"
        return f"{answer} ({self.reason})" if self.reason else answer


class AdminApi(Protocol):
    def delete_subscription(self, topic: str, subscription: str) -> AdminResult: ...

    def trim_topic(self, topic: str) -> AdminResult: ...

    def load_topic(self, topic: str) -> AdminResult: ...


def topic_path(topic: str) -> str:
    """``/admin/v2/persistent/t/ns/<enc>`` (V1 topics: ``/admin/persistent/p/c/ns/<enc>``)."""
    ml = names.parse_topic(topic)
    base = "/admin/persistent" if ml.is_v1 else "/admin/v2/persistent"
    return f"{base}/{ml.namespace}/{ml.encoded_name}"


class HttpAdmin:
    """:class:`AdminApi` over an ``httpx.Client`` made by :func:`pulsar_ops.scrape.http.make_client`."""

    def __init__(self, client: httpx.Client) -> None:
        self._c = client

    def delete_subscription(self, topic: str, subscription: str) -> AdminResult:
        url = f"{topic_path(topic)}/subscription/{names.encode(subscription)}"
        return self._send("DELETE", url, params={"force": "false"})

    def trim_topic(self, topic: str) -> AdminResult:
        """``POST .../trim`` (``PersistentTopics.trimTopic``): loads the topic and runs one trim."""
        return self._send("POST", f"{topic_path(topic)}/trim", params={})

    def load_topic(self, topic: str) -> AdminResult:
        """``GET .../stats``: loads the topic (for brokers without the trim endpoint; they trim on their own
        schedule, ``retentionCheckIntervalInSeconds``)."""
        return self._send("GET", f"{topic_path(topic)}/stats", params={})

    def _send(self, method: str, url: str, *, params: dict[str, str]) -> AdminResult:
        try:
            r = self._c.request(method, url, params=params)
        except httpx.HTTPError as e:  # timeouts, refused or dropped connections: the outcome is unknown
            return AdminResult(None, f"{type(e).__name__}: {e}")
        reason, error_data = "", False
        if r.status_code >= 300:
            try:
                body = r.json()
                error_data = isinstance(body, dict) and "reason" in body
                reason = str(body.get("reason") or body) if isinstance(body, dict) else str(body)
            except ValueError:
                reason = r.text[:200]
        return AdminResult(r.status_code, reason, error_data)
