"""A ZooKeeper without multiRead (3.4.14) and one with it (the 3.9 of the installed pyspark) in one connect
string: every scrape is complete with exactly the seeded znodes, or fails clearly with a non-zero exit.

The two are standalone servers seeded with the same deterministic cluster (same bytes, same versions), so
kazoo has two hosts to pick from and can move between them mid-walk. A session that moves to the other
standalone server is unknown there (kazoo gets a new one); the 3.9 server is padded with extra transactions so
a client that has seen the 3.4 server's zxid may connect to it (upstream ``ZooKeeperServer.processConnectRequest``
refuses a client that has seen a newer zxid than the server's own).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops import zkconn
from pulsar_ops.cli.main import app
from pulsar_ops.scrape import zk
from pulsar_ops.scrape.run import ScrapeConfig, ScrapeProgress, scrape
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.manifest import MANIFEST_NAME, Manifest
from pulsar_ops.snapshot.reader import Snapshot, open_snapshot
from pulsar_ops.testing.seeder import SeedOptions, seed_cluster
from pulsar_ops.testing.zk_legacy import LEGACY_VERSION, LegacyJarsUnavailable, legacy_jars_dir
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper, four_letter_word

pytestmark = [pytest.mark.zk, pytest.mark.slow]

SEED = SeedOptions(
    topics=30, seed=11, persistent_ownership=True, now_ms=1_700_000_000_000, znode_time_ms=1_699_000_000_000
)
# what differs between two servers holding the same tree: zxids, server clocks, session ids
_SERVER_LOCAL = {
    "czxid",
    "mzxid",
    "pzxid",
    "ctime_ms",
    "mtime_ms",
    "znode_ctime_ms",
    "znode_mtime_ms",
    "ephemeral_owner",
}


@dataclass
class Pair:
    old: EmbeddedZooKeeper  # 3.4.14: no multiRead
    new: EmbeddedZooKeeper  # 3.9 (pyspark's): multiRead
    baseline: Snapshot  # the 3.9 server alone


def _zxid(server: EmbeddedZooKeeper) -> int:
    for line in four_letter_word(server.host, server.port, "srvr").splitlines():
        if line.startswith("Zxid:"):
            return int(line.split(":", 1)[1].strip(), 16)
    raise AssertionError("srvr without a Zxid line")


def _seed(server: EmbeddedZooKeeper) -> None:
    c = KazooClient(hosts=server.hosts)
    c.start(timeout=30)
    try:
        seed_cluster(c, None, SEED)
    finally:
        c.stop()
        c.close()


def _pad(server: EmbeddedZooKeeper, txns: int) -> None:
    """Raise the server's zxid by ``txns`` transactions on a znode outside the walked roots."""
    c = KazooClient(hosts=server.hosts)
    c.start(timeout=30)
    try:
        c.ensure_path("/zxid-pad")
        for ar in [c.set_async("/zxid-pad", str(i).encode()) for i in range(txns)]:
            ar.get(timeout=30)
    finally:
        c.stop()
        c.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    try:
        jars = legacy_jars_dir()
    except LegacyJarsUnavailable as e:
        pytest.skip(f"ZooKeeper {LEGACY_VERSION} jars not cached and not fetchable (package index unreachable?): {e}")
    base = tmp_path_factory.mktemp("mixed")
    old = EmbeddedZooKeeper(data_dir=base / "old", heap_mb=256, jars_dir=jars)
    new = EmbeddedZooKeeper(data_dir=base / "new", heap_mb=256)
    try:
        old.start()
        new.start()
        assert old.version() == LEGACY_VERSION and new.version().startswith("3.9")
        _seed(old)
        _seed(new)
        # every scrape session on the old server adds a few transactions there; leave a wide margin
        _pad(new, max(0, _zxid(old) - _zxid(new)) + 2000)
        out = base / "baseline"
        m = scrape(ScrapeConfig(zookeeper=new.hosts, out=out, workers=0))
        assert m.complete and m.multiread
        yield Pair(old, new, open_snapshot(out))
    finally:
        old.cleanup()
        new.cleanup()


def _comparable(snap: Snapshot, name: str) -> pa.Table:
    t = snap.table(name)
    t = t.select([c for c in t.column_names if c not in _SERVER_LOCAL])
    keys = [(c, "ascending") for c in t.column_names if not str(t.schema.field(c).type).startswith("list")]
    return t.sort_by(keys) if t.num_rows else t


def _same_tables(a: Snapshot, b: Snapshot) -> None:
    for t in schema.TABLES:
        ta, tb = _comparable(a, t.name), _comparable(b, t.name)
        assert ta.num_rows == tb.num_rows, t.name
        assert ta.equals(tb), t.name


def _check_run(pair: Pair, out: Path, exit_code: int | None = None) -> Manifest | None:
    """The contract of one run: complete with exactly the baseline's znodes, or a clear non-zero failure."""
    mpath = out / MANIFEST_NAME
    if not mpath.exists():  # the tool failed: only with a non-zero exit
        assert exit_code not in (None, 0)
        return None
    doc = json.loads(mpath.read_text())
    m = Manifest.from_json(doc)
    if m.complete:
        assert m.incomplete_scopes == () and exit_code in (None, 0)
        _same_tables(open_snapshot(out), pair.baseline)
    else:
        assert m.incomplete_scopes and exit_code not in (None, 0)
    return m


@pytest.fixture
def ordered_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    """kazoo tries the hosts in the connect string's order (its default shuffles them)."""
    monkeypatch.setattr(zkconn, "KazooClient", functools.partial(KazooClient, randomize_hosts=False))


@pytest.fixture
def no_srvr(monkeypatch: pytest.MonkeyPatch) -> None:
    """As with 4lw.commands.whitelist empty or a TLS-only port: the walk cannot ask a server's version, so it
    tries multiRead and learns from the 3.4 server's ZUNIMPLEMENTED reply."""
    monkeypatch.setattr(zk, "host_version", lambda host, port, timeout=3.0: None)


def test_the_legacy_server_alone_and_the_current_one_alone_give_the_same_tables(pair: Pair, tmp_path: Path) -> None:
    m = scrape(ScrapeConfig(zookeeper=pair.old.hosts, out=tmp_path / "old", workers=0))
    assert m.complete and not m.multiread
    assert m.server_versions["local"] == LEGACY_VERSION
    assert m.zookeeper_servers["local"] == {
        pair.old.hosts: {"version": LEGACY_VERSION, "multiread": False, "refused_multiread": False}
    }
    _same_tables(open_snapshot(tmp_path / "old"), pair.baseline)
    assert pair.baseline.manifest.zookeeper_servers["local"][pair.new.hosts]["multiread"] is True


def test_zunimplemented_falls_back_to_single_reads_on_that_server(
    pair: Pair, tmp_path: Path, no_srvr: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="pulsar_ops.scrape.zk")
    m = scrape(ScrapeConfig(zookeeper=pair.old.hosts, out=tmp_path / "s", workers=0))
    _check_run(pair, tmp_path / "s")
    assert m.complete and m.errors_count == 0
    for store in ("config", "local"):
        info = m.zookeeper_servers[store][pair.old.hosts]
        assert info == {"version": "unknown", "multiread": False, "refused_multiread": True}
    # learnt once: the second store's walk does not try multiRead (and lose the connection) again
    assert sum("has no multiRead" in r.getMessage() for r in caplog.records) == 1


def test_forced_multiread_against_a_server_without_it_is_a_clear_error(pair: Pair, tmp_path: Path) -> None:
    out = tmp_path / "forced"
    r = CliRunner().invoke(app, ["scrape", "--zookeeper", pair.old.hosts, "--out", str(out), "--multiread", "--json"])
    assert r.exit_code == 3, r.stderr
    err = json.loads(r.stdout)["error"]
    assert err["code"] == "zookeeper-multiread-unsupported"
    assert pair.old.hosts in err["message"] and LEGACY_VERSION in err["message"]
    assert "--no-multiread" in err["hint"]
    assert not (out / MANIFEST_NAME).exists()


@pytest.mark.parametrize("srvr", ["srvr", "no-srvr"])
def test_the_mixed_pair_scraped_repeatedly_is_always_complete(
    pair: Pair, tmp_path: Path, srvr: str, ordered_hosts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if srvr == "no-srvr":
        monkeypatch.setattr(zk, "host_version", lambda host, port, timeout=3.0: None)
    orders = [(pair.old, pair.new), (pair.new, pair.old)] * 3
    for i, (first, second) in enumerate(orders):
        out = tmp_path / f"run{i}"
        r = CliRunner().invoke(
            app, ["scrape", "--zookeeper", f"{first.hosts},{second.hosts}", "--out", str(out), "--json", "-q"]
        )
        m = _check_run(pair, out, r.exit_code)
        assert m is not None and m.complete, (i, r.exit_code, r.stderr)
        assert r.exit_code == 0 and json.loads(r.stdout)["complete"] is True
        config = m.zookeeper_servers["config"]
        if first is pair.new:  # landed on the 3.9 server and stayed: multiRead throughout
            assert config == {
                pair.new.hosts: {
                    "version": config[pair.new.hosts]["version"],
                    "multiread": True,
                    "refused_multiread": False,
                }
            }
            assert m.multiread
        elif srvr == "srvr":  # landed on the 3.4 server, asked its version: single reads, no refusal, no move
            assert set(config) == {pair.old.hosts} and config[pair.old.hosts]["multiread"] is False
            assert not config[pair.old.hosts]["refused_multiread"] and not m.multiread
        else:  # landed on the 3.4 server, tried multiRead: ZUNIMPLEMENTED (the server closes the connection;
            # kazoo connects again, to either server), then single reads from it
            assert config[pair.old.hosts] == {"version": "unknown", "multiread": False, "refused_multiread": True}
            assert not m.multiread


class _LocalBatchHook:
    """Acts inside the walk after the Nth read batch of the local store (progress names the store and is called
    just before on_batch, both synchronously from the walk)."""

    def __init__(self, n: int, action: Callable[[], None]) -> None:
        self.n, self.action, self.store, self.fired = n, action, "", False

    def progress(self, p: ScrapeProgress) -> None:
        self.store = p.store

    def on_batch(self, n: int) -> None:
        if self.store == "local" and n == self.n and not self.fired:
            self.fired = True
            self.action()


def _moved_scrape(pair: Pair, out: Path, hosts: str, hook: _LocalBatchHook) -> Manifest:
    return scrape(
        ScrapeConfig(
            zookeeper=hosts,
            out=out,
            batch=20,
            window=2,
            workers=0,
            progress=hook.progress,
            on_batch=hook.on_batch,
            retry_seconds=60,
        )
    )


def test_a_session_moved_from_the_legacy_server_to_the_current_one_mid_walk(
    pair: Pair, tmp_path: Path, ordered_hosts: None
) -> None:
    hook = _LocalBatchHook(5, lambda: pair.old.stop(kill=True))  # lose the 3.4 server the session is on
    try:
        m = _moved_scrape(pair, tmp_path / "moved", f"{pair.old.hosts},{pair.new.hosts}", hook)
    finally:
        pair.old.start()
    assert hook.fired
    _check_run(pair, tmp_path / "moved")
    assert m.complete, m.incomplete_scopes
    local = m.zookeeper_servers["local"]
    assert local[pair.old.hosts]["multiread"] is False and local[pair.new.hosts]["multiread"] is True


@pytest.mark.parametrize("srvr", ["srvr", "no-srvr"])
def test_a_session_moved_from_the_current_server_to_the_legacy_one_mid_walk(
    pair: Pair, tmp_path: Path, srvr: str, ordered_hosts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """multiRead batches in flight on the 3.9 server, then only the 3.4 server is left: the walk goes on with
    single reads (asked its version, or told by its ZUNIMPLEMENTED reply) and loses nothing."""
    if srvr == "no-srvr":
        monkeypatch.setattr(zk, "host_version", lambda host, port, timeout=3.0: None)

    def lose_the_current_server() -> None:
        # standalone servers: let the 3.4 one accept a client that has seen the 3.9 one's zxid
        _pad(pair.old, max(0, _zxid(pair.new) - _zxid(pair.old)) + 100)
        pair.new.stop(kill=True)

    hook = _LocalBatchHook(5, lose_the_current_server)
    try:
        m = _moved_scrape(pair, tmp_path / "moved", f"{pair.new.hosts},{pair.old.hosts}", hook)
    finally:
        pair.new.start()
        _pad(pair.new, max(0, _zxid(pair.old) - _zxid(pair.new)) + 2000)  # the other tests' order again
    assert hook.fired
    _check_run(pair, tmp_path / "moved")
    assert m.complete, m.incomplete_scopes
    local = m.zookeeper_servers["local"]
    assert local[pair.new.hosts]["multiread"] is True and local[pair.old.hosts]["multiread"] is False
    assert local[pair.old.hosts]["refused_multiread"] is (srvr == "no-srvr")


def test_a_session_that_cannot_move_fails_clearly_with_a_non_zero_exit(
    pair: Pair, tmp_path: Path, ordered_hosts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the padded 3.9 server to the 3.4 one: the 3.4 server refuses a client that has seen a newer zxid
    (upstream processConnectRequest), so the walk cannot go on; the scrape says what is missing and exits 1."""
    stopped: list[int] = []

    def on_batch(n: int) -> None:
        if n == 3 and not stopped:
            stopped.append(n)
            pair.new.stop(kill=True)

    real_scrape = scrape

    def short_retry(config: ScrapeConfig) -> Manifest:
        from dataclasses import replace

        return real_scrape(replace(config, on_batch=on_batch, retry_seconds=5, batch=20, window=2))

    monkeypatch.setattr("pulsar_ops.cli.scrape.scrape", short_retry)
    out = tmp_path / "stuck"
    try:
        r = CliRunner().invoke(
            app, ["scrape", "--zookeeper", f"{pair.new.hosts},{pair.old.hosts}", "--out", str(out), "--json", "-q"]
        )
    finally:
        pair.new.start()
    assert stopped
    m = _check_run(pair, out, r.exit_code)
    assert m is not None and not m.complete and r.exit_code == 1, r.stderr
    assert {s.code for s in m.incomplete_scopes} == {"zookeeper-unavailable"}
    assert "incomplete" in r.stderr
