"""Pulsar's ``client.conf``, read as ``pulsar-admin`` reads it, for the admin REST scrape. Pure (no HTTP).

Keys used (the rest of the file is ignored, as pulsar-admin ignores keys it does not use):

* ``webServiceUrl``: the admin REST endpoint (``--admin-url`` overrides it);
* ``authPlugin`` + ``authParams``: ``org.apache.pulsar.client.impl.auth.AuthenticationToken`` with
  ``token:JWT``, ``data:JWT``, ``file:///path`` (the token file), ``env:VAR`` or the bare token — the forms
  upstream's ``AuthenticationToken.configure`` accepts; ``org.apache.pulsar.client.impl.auth.AuthenticationTls``
  with ``tlsCertFile:PATH,tlsKeyFile:PATH`` (or the same as a JSON object), as ``AuthenticationTls`` reads them
  (upstream: pulsar-client/src/main/java/org/apache/pulsar/client/impl/auth/AuthenticationToken.java and
  AuthenticationTls.java);
* ``tlsTrustCertsFilePath``: the CA bundle that verifies the broker; ``tlsAllowInsecureConnection=true`` turns
  verification off (as in pulsar-admin; a warning is printed).

The file format is Java's ``Properties``: ``key=value`` / ``key: value`` / ``key value``, ``#`` and ``!``
comments, a trailing backslash continues a line.
"""

from __future__ import annotations

import json
import os
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
    if params.startswith("token:"):
        value = params[len("token:") :]
    elif params.startswith("data:"):
        value = params[len("data:") :]
    elif params.startswith("file:"):
        path = Path(unquote(urlparse(params).path))
        try:
            value = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(
                f"{conf}: authParams names token file {path}, which cannot be read ({type(e).__name__})",
                hint="fix authParams=file:///path/to/token in client.conf",
            ) from None
    elif params.startswith("env:"):
        var = params[len("env:") :]
        value = os.environ.get(var, "")
        if not value:
            raise ConfigError(
                f"{conf}: authParams names environment variable {var}, which is not set", hint=f"export {var}=<token>"
            )
    else:
        value = params
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
    trust = props.get("tlsTrustCertsFilePath", "").strip()
    return ClientConf(
        web_service_url=props.get("webServiceUrl", "").strip() or None,
        token=token,
        tls_cert=cert,
        tls_key=key,
        trust_certs=Path(trust) if trust else None,
        allow_insecure=props.get("tlsAllowInsecureConnection", "false").strip().lower() == "true",
    )
