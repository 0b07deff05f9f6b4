"""Bookies reached at the HTTP endpoint they publish in their registration znode (BookieServiceInfo).

Real embedded ZooKeeper; the bookies' HTTP APIs are small servers on 127.0.0.1. Registered: a legacy bookie
``127.0.0.1:3181`` (empty data: reached at its host with --bookie-url's port), a bookie with the custom id
``bookie-0`` publishing ``httpserver`` at its own server, and (in the partial case) a read-only custom-id bookie
that publishes nothing and one whose registration is corrupt.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.formats.bookie_service_info import Endpoint, ServiceInfo, encode_service_info
from pulsar_ops.scrape.http import HttpSettings
from pulsar_ops.scrape.http_sources import http_sources
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.scrape.zk_bookies import registration_reader
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.testing.model_spec import SeedOptions
from pulsar_ops.testing.seeder import seed_cluster
from tests.json_reply import reply_json

pytestmark = pytest.mark.zk

GiB = 1 << 30


@dataclass
class BookieHttp:
    free: int
    rw: dict[str, None] = field(default_factory=dict)
    ro: dict[str, None] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    port: int = 0
    config: dict[str, str] | None = None  # GET /api/v1/config/server_config (None: not answered)


def _serve(state: BookieHttp) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.seen.append(self.path)
            path, _, query = self.path.partition("?")
            if path == "/api/v1/bookie/list_bookies":
                body: object = state.ro if "type=ro" in query else state.rw
            elif path == "/api/v1/bookie/info":
                body = {"freeSpace": state.free, "totalSpace": 100 * GiB}
            elif path == "/api/v1/config/server_config" and state.config is not None:
                body = state.config
            else:
                body = None

            reply_json(self, body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def bookie_servers() -> Iterator[tuple[BookieHttp, BookieHttp]]:
    """(the --bookie-url bookie, the custom-id bookie's published endpoint)."""
    legacy, custom = BookieHttp(free=7 * GiB), BookieHttp(free=42 * GiB)
    servers = [_serve(legacy), _serve(custom)]
    try:
        yield legacy, custom
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def _register(zk: KazooClient, custom_port: int, *, partial: bool) -> None:
    seed_cluster(zk, None, SeedOptions(topics=3, seed=1, defects=frozenset()))
    for child in zk.get_children("/ledgers/available"):
        if child != "readonly":
            zk.delete(f"/ledgers/available/{child}")  # the seeded bookies' hosts do not exist here
    info = ServiceInfo(
        (
            Endpoint("bookie", 3181, "0.0.0.0", "bookie-rpc"),
            Endpoint("httpserver", custom_port, "127.0.0.1", "http"),
        ),
        {"autorecoveryEnabled": "false"},
    )
    zk.create("/ledgers/available/127.0.0.1:3181", b"")
    zk.create("/ledgers/available/bookie-0", encode_service_info(info))
    if partial:
        zk.ensure_path("/ledgers/available/readonly")
        zk.create("/ledgers/available/readonly/bookie-1", b"")  # custom id, nothing published
        zk.create("/ledgers/available/bookie-2", encode_service_info(info)[:-4])  # truncated


def test_published_endpoint_and_fallback_say_which_was_used(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, bookie_servers: tuple[BookieHttp, BookieHttp]
) -> None:
    legacy, custom = bookie_servers
    _register(zk, custom.port, partial=False)
    legacy.rw = {"127.0.0.1:3181": None, "bookie-0": None}
    custom.config = {"ledgerDirectories": "[/pulsar/data/l0, /pulsar/data/l1]", "bookieId": "bookie-0",
                     "gcWaitTime": "1800000"}  # fmt: skip
    out = tmp_path / "snap"
    r = CliRunner().invoke(
        app,
        ["scrape", "--zookeeper", zk_hosts, "--out", str(out), "--bookie-url", f"http://127.0.0.1:{legacy.port}"],
    )
    assert r.exit_code == 0, r.stderr
    m = open_snapshot(out).manifest
    assert m.bookie_scraped and m.complete  # the legacy bookie does not answer server_config: still complete
    # the configured directories as scraped, for the audit's check of the bookie scans
    assert m.bookie_dirs == {"bookie-0": {"ledger_dirs": ["/pulsar/data/l0", "/pulsar/data/l1"], "index_dirs": None}}
    # and its GC keys, for the plan's bookie-gc rule on that bookie (the legacy one answered none: not recorded)
    assert m.bookie_gc == {"bookie-0": {"gcWaitTime": "1800000"}}
    assert m.bookie_endpoints == {
        "127.0.0.1:3181": {"url": f"http://127.0.0.1:{legacy.port}", "source": "bookie-url-port"},
        "bookie-0": {"url": f"http://127.0.0.1:{custom.port}", "source": "published"},
    }
    assert "/api/v1/bookie/info" in custom.seen  # the custom-id bookie was asked at its published endpoint
    rows = {r["bookie_id"]: r for r in pq.read_table(open_snapshot(out).table_dir("bookies")).to_pylist()}
    assert rows["bookie-0"]["free_bytes"] == 42 * GiB and rows["127.0.0.1:3181"]["free_bytes"] == 7 * GiB
    text = " ".join(r.stderr.split())
    assert f"bookie-0: http://127.0.0.1:{custom.port} (published in its registration)" in text
    assert f"127.0.0.1:3181: http://127.0.0.1:{legacy.port} (nothing published" in text


def test_unreachable_custom_id_and_corrupt_registration_make_the_bookie_scope_partial(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, bookie_servers: tuple[BookieHttp, BookieHttp]
) -> None:
    legacy, custom = bookie_servers
    _register(zk, custom.port, partial=True)
    legacy.rw = {"127.0.0.1:3181": None, "bookie-0": None, "bookie-2": None}
    legacy.ro = {"bookie-1": None}
    extra = http_sources(
        admin_url=None,
        bookie_url=f"http://127.0.0.1:{legacy.port}",
        cluster=None,
        settings=HttpSettings(retries=1),
        bookie_registrations=registration_reader(zk_hosts, "/ledgers"),
    )
    out = tmp_path / "snap"
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=out, extra=extra, workers=0))
    assert not m.bookie_scraped  # the audit will not use the bookie source as complete
    assert m.bookie_endpoints["bookie-0"]["source"] == "published"
    assert m.bookie_endpoints["bookie-1"] == {"url": None, "source": "none"}
    assert m.bookie_endpoints["bookie-2"] == {"url": None, "source": "none"}
    bad = {s.error.split()[1].rstrip(":"): s for s in m.incomplete_scopes if s.store == "bookie"}
    assert set(bad) == {"bookie-1", "bookie-2"} and {s.scope for s in bad.values()} == {"bookie-endpoint"}
    assert bad["bookie-1"].code == "bookie-endpoint-unknown" and "custom BookieId" in bad["bookie-1"].error
    assert bad["bookie-2"].code == "decode-failed" and "BookieServiceInfoFormat" in bad["bookie-2"].error
    rows = {r["bookie_id"]: r for r in pq.read_table(open_snapshot(out).table_dir("bookies")).to_pylist()}
    assert rows["bookie-1"]["readonly"] is True and rows["bookie-1"]["free_bytes"] is None  # kept, space unknown
    assert rows["bookie-0"]["free_bytes"] == 42 * GiB


def test_unreadable_registrations_are_reported_not_taken_as_nothing_published(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, bookie_servers: tuple[BookieHttp, BookieHttp]
) -> None:
    legacy, custom = bookie_servers
    _register(zk, custom.port, partial=False)
    legacy.rw = {"127.0.0.1:3181": None, "bookie-0": None}
    extra = http_sources(
        admin_url=None,
        bookie_url=f"http://127.0.0.1:{legacy.port}",
        cluster=None,
        settings=HttpSettings(retries=1),
        bookie_registrations=registration_reader("127.0.0.1:1", "/ledgers", connect_timeout=1.0),
    )
    m = scrape(ScrapeConfig(zookeeper=zk_hosts, out=tmp_path / "snap", extra=extra, workers=0))
    assert not m.bookie_scraped
    scopes = [s for s in m.incomplete_scopes if s.store == "bookie"]
    assert any(s.scope == "registrations" for s in scopes)
    assert any("bookie-0" in s.error for s in scopes)  # its endpoint is unknown, not guessed
    assert m.bookie_endpoints["127.0.0.1:3181"]["source"] == "bookie-url-port"
