"""`scrape --client-conf` reads client.conf's TLS and auth keys as pulsar-admin does, one test per key, against an
HTTPS admin stand-in on 127.0.0.1 whose certificate names another host (tests/zk/https_admin.py).

Upstream: pulsar-client-tools PulsarAdminTool.createAdminBuilderFromProperties / setProperties, pulsar-client
AuthenticationToken.configure. The assertions are on what the server saw (the requests to the admin URL itself),
so they hold whichever broker URLs the loaded-topic listing goes on to use.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app

if shutil.which("openssl") is None:
    pytest.skip("no `openssl` on PATH to make the test certificates", allow_module_level=True)

from tests.zk.https_admin import CLIENT_CN, Certs, Seen, https_admin, make_certs

pytestmark = pytest.mark.zk

TOKEN = "eyJ-json-form-test-token"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def admin(certs: Certs) -> Iterator[tuple[str, Seen]]:
    with https_admin(certs) as server:
        yield server


def _scrape(zk_hosts: str, tmp_path: Path, conf_text: str) -> tuple[Any, dict[str, Any]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    conf = tmp_path / "client.conf"
    conf.write_text(conf_text)
    out = tmp_path / "snap"
    r = CliRunner().invoke(
        app, ["scrape", "--zookeeper", zk_hosts, "--out", str(out), "--client-conf", str(conf), "--http-timeout", "5"]
    )
    assert r.exception is None or isinstance(r.exception, SystemExit), r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    return r, manifest


def _asked(seen: Seen) -> set[str]:
    return {path for path, _auth, _cn in seen.requests}


def test_hostname_verification_is_off_by_default_and_on_when_set(
    zk_hosts: str, tmp_path: Path, certs: Certs, admin: tuple[str, Seen]
) -> None:
    url, seen = admin
    base = f"webServiceUrl={url}\ntlsTrustCertsFilePath={certs.ca}\n"
    _r, m = _scrape(zk_hosts, tmp_path / "a", base)
    assert "/admin/v2/clusters" in _asked(seen)  # the certificate names another host: accepted, as pulsar-admin does
    assert not any(s["store"] == "admin" and s["scope"] == "brokers" for s in m["incomplete_scopes"])

    seen.requests.clear()
    _r, m = _scrape(zk_hosts, tmp_path / "b", base + "tlsEnableHostnameVerification=true\n")
    assert seen.requests == []  # refused during the handshake
    admin_scopes = [s for s in m["incomplete_scopes"] if s["store"] == "admin"]
    assert admin_scopes and "certificate" in json.dumps(admin_scopes).lower()
    assert m["admin_scraped"] is False


def test_auth_params_json_token(zk_hosts: str, tmp_path: Path, certs: Certs, admin: tuple[str, Seen]) -> None:
    url, seen = admin
    r, _m = _scrape(
        zk_hosts,
        tmp_path,
        f"webServiceUrl={url}\ntlsTrustCertsFilePath={certs.ca}\n"
        f'authPlugin={TOKEN_PLUGIN}\nauthParams={{"token": "{TOKEN}"}}\n',
    )
    assert seen.requests and {auth for _p, auth, _cn in seen.requests} == {f"Bearer {TOKEN}"}
    assert TOKEN not in r.stdout + r.stderr


def test_client_certificate_without_an_auth_plugin(
    zk_hosts: str, tmp_path: Path, certs: Certs, admin: tuple[str, Seen]
) -> None:
    url, seen = admin
    _scrape(
        zk_hosts,
        tmp_path,
        f"webServiceUrl={url}\ntlsTrustCertsFilePath={certs.ca}\n"
        f"tlsCertificateFilePath={certs.client_cert}\ntlsKeyFilePath={certs.client_key}\n",
    )
    assert seen.requests and {cn for _p, _a, cn in seen.requests} == {CLIENT_CN}
    assert {auth for _p, auth, _cn in seen.requests} == {""}


def test_service_url_is_used_when_web_service_url_is_absent(
    zk_hosts: str, tmp_path: Path, certs: Certs, admin: tuple[str, Seen]
) -> None:
    url, seen = admin
    _scrape(zk_hosts, tmp_path / "a", f"serviceUrl={url}/\ntlsTrustCertsFilePath={certs.ca}\n")
    assert {"/admin/v2/clusters", "/admin/v2/brokers/standalone"} <= _asked(seen)

    r, m = _scrape(zk_hosts, tmp_path / "b", "brokerServiceUrl=pulsar://127.0.0.1:6650\n")
    assert "names no webServiceUrl or serviceUrl" in " ".join(r.stderr.split())
    assert m["admin_scraped"] is False


def test_client_certificate_is_sent_with_insecure_connection(
    zk_hosts: str, tmp_path: Path, certs: Certs, admin: tuple[str, Seen]
) -> None:
    url, seen = admin
    r, _m = _scrape(
        zk_hosts,
        tmp_path,
        f"webServiceUrl={url}\ntlsAllowInsecureConnection=true\n"
        f"authPlugin={TLS_PLUGIN}\nauthParams=tlsCertFile:{certs.client_cert},tlsKeyFile:{certs.client_key}\n",
    )
    assert "tlsAllowInsecureConnection=true" in r.stderr
    assert seen.requests and {cn for _p, _a, cn in seen.requests} == {CLIENT_CN}
