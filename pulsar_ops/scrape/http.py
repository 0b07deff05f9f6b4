"""The one HTTP client factory: explicit timeouts, auth, redirects, and tenacity retries for idempotent GETs.

Every HTTP scraper takes an ``httpx.Client`` built here; tests swap the transport (``httpx.MockTransport``).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import (
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from pulsar_ops.errors import HttpError
from pulsar_ops.scrape.client_conf import ClientConf


@dataclass(frozen=True)
class HttpSettings:
    timeout_s: float = 10.0
    connect_timeout_s: float = 5.0
    retries: int = 3
    token: str | None = field(default=None, repr=False)
    basic: tuple[str, str] | None = field(default=None, repr=False)
    verify: bool | str = True  # False: no verification; a path: this CA bundle
    cert: tuple[str, str] | None = None  # client certificate and key (PEM), for TLS authentication
    check_hostname: bool = True  # False: the certificate is verified but need not name the URL's host

    def __repr__(self) -> str:  # never print credentials
        auth = "token" if self.token else ("basic" if self.basic else "none")
        return f"HttpSettings(timeout_s={self.timeout_s}, retries={self.retries}, auth={auth})"


def make_client(
    base_url: str, settings: HttpSettings | None = None, *, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    s = settings or HttpSettings()
    headers: dict[str, str] = {"Accept": "application/json", "User-Agent": "pulsar-ops"}
    if s.token:
        headers["Authorization"] = f"Bearer {s.token}"
    auth = httpx.BasicAuth(*s.basic) if s.basic else None
    return httpx.Client(
        base_url=base_url,
        headers=headers,
        auth=auth,
        timeout=httpx.Timeout(s.timeout_s, connect=s.connect_timeout_s),
        follow_redirects=True,  # brokers answer 307 to the owner; httpx keeps auth on same-origin redirects
        verify=_verify(s),
        transport=transport,
    )


def _verify(s: HttpSettings) -> bool | ssl.SSLContext:
    """httpx's ``verify``: an SSL context when a CA bundle or a client certificate is given or the host name is not
    checked. A client certificate is presented even when verification is off (as pulsar-admin does)."""
    if s.verify is False and s.cert is None:
        return False
    if s.verify is True and s.cert is None and s.check_hostname:
        return True
    try:
        ctx = ssl.create_default_context(cafile=s.verify if isinstance(s.verify, str) else None)
        if s.verify is False:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif not s.check_hostname:
            ctx.check_hostname = False  # the chain is still verified (verify_mode stays CERT_REQUIRED)
        if s.cert is not None:
            ctx.load_cert_chain(s.cert[0], s.cert[1])
    except (OSError, ssl.SSLError) as e:
        raise HttpError(
            f"cannot load the TLS files ({type(e).__name__}: {e})",
            code="config-invalid",
            hint="check --client-conf tlsTrustCertsFilePath / tlsCertificateFilePath / authParams, or --bookie-tls-*",
        ) from None
    return ctx


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in (502, 503, 504)


def get_json(client: httpx.Client, url: str, *, params: Mapping[str, str] | None = None, retries: int = 3) -> Any:
    """GET a JSON document; retries transport errors and 502/503/504; raises HttpError with the URL."""

    @retry(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(max(1, retries)),
        wait=wait_exponential(multiplier=0.2, max=2.0),
        reraise=True,
    )
    def _get() -> Any:
        r = client.get(url, params=params)
        r.raise_for_status()
        return r.json()

    try:
        return _get()
    except httpx.HTTPStatusError as e:
        raise HttpError(
            f"GET {e.request.url} answered HTTP {e.response.status_code}: {e.response.text[:200]!r}",
            code=f"http-{e.response.status_code}",
        ) from e
    except httpx.TransportError as e:
        raise HttpError(f"GET {client.base_url.join(url)} failed: {type(e).__name__}: {e}") from e
    except ValueError as e:  # JSON decoding
        raise HttpError(f"GET {client.base_url.join(url)} did not return JSON: {e}", code="http-bad-json") from e


def admin_settings(conf: ClientConf | None, token: str | None, timeout_s: float) -> tuple[HttpSettings, bool]:
    """(settings for a broker's admin REST API, whether verification is off) from ``client.conf`` as
    ``pulsar-admin`` reads it and the ``--token`` flag (which wins over the file's token). Without a client.conf
    the broker's certificate is verified with its host name; with one, as its TLS keys say."""
    verify: bool | str = True
    insecure = conf is not None and conf.allow_insecure
    if insecure:
        verify = False
    elif conf is not None and conf.trust_certs is not None:
        verify = str(conf.trust_certs)
    cert = (str(conf.tls_cert), str(conf.tls_key)) if conf and conf.tls_cert and conf.tls_key else None
    settings = HttpSettings(
        timeout_s=timeout_s,
        token=token or (conf.token if conf else None),
        verify=verify,
        cert=cert,
        check_hostname=conf.hostname_verification if conf is not None else True,
    )
    return settings, insecure
