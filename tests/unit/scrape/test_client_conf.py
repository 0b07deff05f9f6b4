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
    [
        ("token:abc.def.ghi", "abc.def.ghi"),
        ('{"token": "abc.def.ghi"}', "abc.def.ghi"),  # JSON form (AuthenticationToken.configure)
        ("abc.def", "abc.def"),
        # upstream gives no meaning to data: / env: prefixes: the whole value is the token
        ("data:abc", "data:abc"),
        ("env:MY_TOKEN", "env:MY_TOKEN"),
    ],
)
def test_token_forms(tmp_path: Path, params: str, token: str) -> None:
    c = read_client_conf(
        _conf(tmp_path, f"webServiceUrl=https://broker:8443\nauthPlugin={TOKEN_PLUGIN}\nauthParams={params}\n")
    )
    assert c.web_service_url == "https://broker:8443" and c.token == token
    assert token not in repr(c)


def test_token_file_and_bad_json(tmp_path: Path) -> None:
    tok = tmp_path / "token.txt"
    tok.write_text("from-file\n")
    c = read_client_conf(_conf(tmp_path, f"authPlugin={TOKEN_PLUGIN}\nauthParams=file://{tok}\n"))
    assert c.token == "from-file"
    with pytest.raises(ConfigError, match="cannot be read"):
        read_client_conf(_conf(tmp_path, f"authPlugin={TOKEN_PLUGIN}\nauthParams=file:///nonexistent/t\n"))
    with pytest.raises(ConfigError, match='without a string "token"'):
        read_client_conf(_conf(tmp_path, f'authPlugin={TOKEN_PLUGIN}\nauthParams={{"jwt": "x"}}\n'))


def test_service_url_is_the_fallback_for_web_service_url(tmp_path: Path) -> None:
    c = read_client_conf(_conf(tmp_path, "serviceUrl=https://old:8443/\n"))
    assert c.admin_url() == "https://old:8443/" and c.url_key == "serviceUrl"
    c = read_client_conf(_conf(tmp_path, "webServiceUrl=  \nserviceUrl=http://old:8080/\n"))
    assert c.admin_url() == "http://old:8080/"
    c = read_client_conf(_conf(tmp_path, "webServiceUrl=http://new:8080/\nserviceUrl=http://old:8080/\n"))
    assert c.admin_url() == "http://new:8080/"
    c = read_client_conf(_conf(tmp_path, "serviceUrl=pulsar://b:6650\n"))
    with pytest.raises(ConfigError, match="serviceUrl=pulsar://b:6650 is not an http"):
        c.admin_url()
    assert read_client_conf(_conf(tmp_path, "brokerServiceUrl=pulsar://b:6650\n")).admin_url() is None


def test_client_certificate_without_plugin_and_hostname_verification(tmp_path: Path) -> None:
    c = read_client_conf(_conf(tmp_path, "tlsCertificateFilePath=/c/cert.pem\ntlsKeyFilePath=/c/key.pem\n"))
    assert (c.tls_cert, c.tls_key, c.hostname_verification, c.warnings) == (
        Path("/c/cert.pem"),
        Path("/c/key.pem"),
        False,
        (),
    )
    c = read_client_conf(_conf(tmp_path, "tlsCertificateFilePath=/c/cert.pem\ntlsEnableHostnameVerification=TRUE\n"))
    assert c.tls_cert is None and c.hostname_verification is True and "go together" in c.warnings[0]
    # AuthenticationTls's certificate wins over the tls*FilePath keys
    c = read_client_conf(
        _conf(
            tmp_path,
            f"authPlugin={TLS_PLUGIN}\nauthParams=tlsCertFile:/a/c.pem,tlsKeyFile:/a/k.pem\n"
            "tlsCertificateFilePath=/c/cert.pem\ntlsKeyFilePath=/c/key.pem\n",
        )
    )
    assert (c.tls_cert, c.tls_key) == (Path("/a/c.pem"), Path("/a/k.pem"))


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
