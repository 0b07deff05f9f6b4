"""`scrape --client-conf`: the admin REST scrape takes webServiceUrl and the token from Pulsar's client.conf.

A small admin server on 127.0.0.1 serves the recorded JSON and records the Authorization header it got.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from tests.json_reply import reply_json

pytestmark = pytest.mark.zk

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "http"
TOKEN = "eyJ-test-token-not-a-secret-elsewhere"


@pytest.fixture
def admin_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            port = self.server.server_address[1]
            path = self.path.split("?")[0]
            if path == "/admin/v2/clusters":
                body: object = ["standalone"]
            elif path == "/admin/v2/brokers/standalone":
                body = [f"127.0.0.1:{port}"]
            elif path == "/admin/v2/broker-stats/topics":
                body = json.loads((FIX / "broker_stats_topics_broker0.json").read_text())
            else:
                body = None

            reply_json(self, body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_client_conf_token_and_url(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, admin_server: tuple[str, list[str]]
) -> None:
    url, seen = admin_server
    seed_cluster(zk, None, SeedOptions(topics=3, seed=1, defects=frozenset()))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    conf = tmp_path / "client.conf"
    conf.write_text(
        f"webServiceUrl={url}/\n"
        "authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n"
        f"authParams=file://{token_file}\n"
    )
    r = CliRunner().invoke(
        app,
        [
            "scrape",
            "--zookeeper",
            zk_hosts,
            "--out",
            str(tmp_path / "snap"),
            "--client-conf",
            str(conf),
            "-q",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["admin_scraped"] is True
    assert seen and set(seen) == {f"Bearer {TOKEN}"}
    assert TOKEN not in r.stdout + r.stderr
    for f in (tmp_path / "snap").rglob("*"):
        if f.is_file():
            assert TOKEN.encode() not in f.read_bytes()
