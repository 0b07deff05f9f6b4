"""client.conf as pulsar-admin reads it: Java properties, token and TLS auth plugins, trust settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsar_ops.errors import ConfigError
from pulsar_ops.scrape.client_conf import parse_properties, read_client_conf

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"


def _conf(tmp: Path, text: str) -> Path:
    p = tmp / "client.conf"
    p.write_text(text)
    return p


def test_java_properties_subset() -> None:
    props = parse_properties(
        "# comment\n! also a comment\n\nwebServiceUrl=http://b:8080/\nauthPlugin : x\nkey value\n"
        "long=a\\\n   b\nempty=\n"
    )
    assert props == {"webServiceUrl": "http://b:8080/", "authPlugin": "x", "key": "value", "long": "ab", "empty": ""}


@pytest.mark.parametrize(
    ("params", "token"),
    [("token:abc.def.ghi", "abc.def.ghi"), ("data:abc", "abc"), ("abc.def", "abc.def")],
)
def test_token_forms(tmp_path: Path, params: str, token: str) -> None:
    c = read_client_conf(
        _conf(tmp_path, f"webServiceUrl=https://broker:8443\nauthPlugin={TOKEN_PLUGIN}\nauthParams={params}\n")
    )
    assert c.web_service_url == "https://broker:8443" and c.token == token
    assert token not in repr(c)


def test_token_file_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tok = tmp_path / "token.txt"
    tok.write_text("from-file\n")
    c = read_client_conf(_conf(tmp_path, f"authPlugin={TOKEN_PLUGIN}\nauthParams=file://{tok}\n"))
    assert c.token == "from-file"
    monkeypatch.setenv("MY_TOKEN", "from-env")
    assert (
        read_client_conf(_conf(tmp_path, f"authPlugin={TOKEN_PLUGIN}\nauthParams=env:MY_TOKEN\n")).token == "from-env"
    )
    with pytest.raises(ConfigError, match="cannot be read"):
        read_client_conf(_conf(tmp_path, f"authPlugin={TOKEN_PLUGIN}\nauthParams=file:///nonexistent/t\n"))


@pytest.mark.parametrize(
    "params",
    ["tlsCertFile:/c/cert.pem,tlsKeyFile:/c/key.pem", '{"tlsCertFile": "/c/cert.pem", "tlsKeyFile": "/c/key.pem"}'],
)
def test_tls_auth_and_trust(tmp_path: Path, params: str) -> None:
    c = read_client_conf(
        _conf(
            tmp_path,
            f"authPlugin={TLS_PLUGIN}\nauthParams={params}\n"
            "tlsTrustCertsFilePath=/c/ca.pem\ntlsAllowInsecureConnection=false\n",
        )
    )
    assert (c.tls_cert, c.tls_key, c.trust_certs) == (Path("/c/cert.pem"), Path("/c/key.pem"), Path("/c/ca.pem"))
    assert c.allow_insecure is False and c.token is None


def test_unsupported_plugin_and_incomplete_tls(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not supported"):
        read_client_conf(_conf(tmp_path, "authPlugin=org.example.Oauth2\n"))
    with pytest.raises(ConfigError, match="tlsKeyFile"):
        read_client_conf(_conf(tmp_path, f"authPlugin={TLS_PLUGIN}\nauthParams=tlsCertFile:/c.pem\n"))
    c = read_client_conf(_conf(tmp_path, "tlsAllowInsecureConnection=true\n"))
    assert c.allow_insecure and c.web_service_url is None
