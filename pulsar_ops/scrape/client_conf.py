"""Pulsar's ``client.conf``, read as ``pulsar-admin`` reads it, for the admin REST scrape. Pure (no HTTP).

Upstream: pulsar-client-tools ``PulsarAdminTool`` (``createAdminBuilderFromProperties`` and ``setProperties``),
pulsar-client ``AuthenticationToken.configure`` and ``AuthenticationTls.configure``. Keys used (the rest of the
file is ignored, as pulsar-admin ignores keys it does not use):

* ``webServiceUrl``: the admin REST endpoint; when it is blank, ``serviceUrl`` (pulsar-admin's fallback to the
  older key). ``--admin-url`` overrides both. A URL that is not ``http``/``https`` (e.g. ``pulsar://``, the binary
  protocol) is refused when it would be used (:meth:`ClientConf.admin_url`);
* ``authPlugin`` + ``authParams``: ``org.apache.pulsar.client.impl.auth.AuthenticationToken`` with
  ``token:JWT``, ``file:///path`` (the token file, trimmed), a JSON object ``{"token": "JWT"}``, or else the
  whole value as the token (the forms ``AuthenticationToken.configure(String)`` accepts);
  ``org.apache.pulsar.client.impl.auth.AuthenticationTls`` with ``tlsCertFile:PATH,tlsKeyFile:PATH`` (or the
  same as a JSON object), as ``AuthenticationTls`` reads them;
* ``tlsCertificateFilePath`` + ``tlsKeyFilePath``: a client certificate without an auth plugin (pulsar-admin
  passes both to the admin builder; it is used only when both are set, and AuthenticationTls's certificate wins);
* ``tlsTrustCertsFilePath``: the CA bundle that verifies the broker;
* ``tlsAllowInsecureConnection=true``: no verification of the broker's certificate (a warning is printed); the
  client certificate is still presented (pulsar-client-admin ``AsyncHttpConnector`` builds its SSL context with
  the client certificate and the insecure flag side by side);
* ``tlsEnableHostnameVerification``: whether the broker's certificate must name the host of the URL; ``false``
  unless set to ``true`` (pulsar-admin's default). Without ``--client-conf`` pulsar-ops verifies the host name.

Booleans are read as Java's ``Boolean.parseBoolean``: ``true`` in any case is true, anything else false.
The file format is Java's ``Properties``: ``key=value`` / ``key: value`` / ``key value``, ``#`` and ``!``
comments, a trailing backslash continues a line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from pulsar_ops.errors import ConfigError

TOKEN_PLUGINS = ("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token")
TLS_PLUGINS = ("org.apache.pulsar.client.impl.auth.AuthenticationTls", "tls")


@dataclass(frozen=True)
class ClientConf:
    web_service_url: str | None = None
    token: str | None = field(default=None, repr=False)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    trust_certs: Path | None = None
    allow_insecure: bool = False
    hostname_verification: bool = False
    url_key: str = "webServiceUrl"  # the key web_service_url was read from (webServiceUrl or serviceUrl)
    source: Path | None = None
    warnings: tuple[str, ...] = ()  # keys read but not used, as pulsar-admin does not use them either

    def admin_url(self) -> str | None:
        """The admin REST URL this file names (None: none), refused when it is not an HTTP(S) URL."""
        url = self.web_service_url
        if url is None:
            return None
        if urlparse(url).scheme.lower() not in ("http", "https"):
            raise ConfigError(
                f"{self.source or 'client.conf'}: {self.url_key}={url} is not an http(s) URL, so it cannot reach the "
                "admin REST API (pulsar-admin fails on it too)",
                hint="set webServiceUrl=http(s)://BROKER:PORT in client.conf, or pass --admin-url",
            )
        return url


def parse_properties(text: str) -> dict[str, str]:
    """Java ``Properties.load`` for the subset client.conf uses."""
    out: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry, logical = "".join(logical), []
        key_end = next((i for i, c in enumerate(entry) if c in "=: \t"), len(entry))
        key, rest = entry[:key_end], entry[key_end:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        out[key] = rest.strip()
    return out


def _token(params: str, conf: Path) -> str:
    """The token as upstream ``AuthenticationToken.configure(String)`` reads ``authParams``: ``token:`` prefix,
    ``file:`` URI (the file's content, trimmed), a JSON object's ``"token"``, else the whole string."""
    if params.startswith("token:"):
        value = params[len("token:") :]
    elif params.startswith("file:"):
        path = Path(unquote(urlparse(params).path))
        try:
            value = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(
                f"{conf}: authParams names token file {path}, which cannot be read ({type(e).__name__})",
                hint="fix authParams=file:///path/to/token in client.conf",
            ) from None
    else:
        value = params
        try:
            doc = json.loads(params)
        except json.JSONDecodeError:
            doc = None  # not JSON: the whole value is the token
        if isinstance(doc, dict):
            token = doc.get("token")
            if not isinstance(token, str):
                raise ConfigError(
                    f'{conf}: authParams is a JSON object without a string "token"',
                    hint='write authParams={"token": "<JWT>"} or authParams=token:<JWT> in client.conf',
                )
            value = token
    value = value.strip()
    if not value:
        raise ConfigError(f"{conf}: the token in authParams is empty", hint="fix authParams in client.conf")
    return value


def _tls_params(params: str) -> dict[str, str]:
    if params.lstrip().startswith("{"):
        try:
            doc = json.loads(params)
        except json.JSONDecodeError:
            return {}
        return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}
    out: dict[str, str] = {}
    for part in params.split(","):
        k, sep, v = part.partition(":")
        if sep:
            out[k.strip()] = v.strip()
    return out


def read_client_conf(path: Path) -> ClientConf:
    p = Path(path)
    try:
        props = parse_properties(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(
            f"--client-conf {p}: cannot read it ({type(e).__name__})",
            hint="pass the client.conf pulsar-admin uses (e.g. conf/client.conf)",
        ) from None
    plugin = props.get("authPlugin", "").strip()
    params = props.get("authParams", "").strip()
    token = None
    cert = key = None
    if plugin in TOKEN_PLUGINS:
        token = _token(params, p)
    elif plugin in TLS_PLUGINS:
        tls = _tls_params(params)
        if not tls.get("tlsCertFile") or not tls.get("tlsKeyFile"):
            raise ConfigError(
                f"{p}: AuthenticationTls needs tlsCertFile and tlsKeyFile in authParams",
                hint="authParams=tlsCertFile:/path/cert.pem,tlsKeyFile:/path/key.pem",
            )
        cert, key = Path(tls["tlsCertFile"]), Path(tls["tlsKeyFile"])
    elif plugin:
        raise ConfigError(
            f"{p}: authPlugin {plugin} is not supported by pulsar-ops (token and TLS are)",
            hint="use AuthenticationToken or AuthenticationTls, or pass --token",
        )
    warnings: list[str] = []
    conf_cert = props.get("tlsCertificateFilePath", "").strip()
    conf_key = props.get("tlsKeyFilePath", "").strip()
    if cert is None and conf_cert and conf_key:
        cert, key = Path(conf_cert), Path(conf_key)
    elif cert is None and (conf_cert or conf_key):
        warnings.append(
            f"{p}: tlsCertificateFilePath and tlsKeyFilePath go together; with only one set no client certificate "
            "is sent (as pulsar-admin does)"
        )
    trust = props.get("tlsTrustCertsFilePath", "").strip()
    url_key = "webServiceUrl" if props.get("webServiceUrl", "").strip() else "serviceUrl"
    return ClientConf(
        web_service_url=props.get(url_key, "").strip() or None,
        token=token,
        tls_cert=cert,
        tls_key=key,
        trust_certs=Path(trust) if trust else None,
        allow_insecure=_java_bool(props.get("tlsAllowInsecureConnection", "false")),
        hostname_verification=_java_bool(props.get("tlsEnableHostnameVerification", "false")),
        url_key=url_key,
        source=p,
        warnings=tuple(warnings),
    )


def _java_bool(value: str) -> bool:
    """Java's ``Boolean.parseBoolean``: ``true`` in any case, else false."""
    return value.strip().lower() == "true"
