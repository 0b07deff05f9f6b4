"""`scrape --zk-data-dir`: the data directory a real server wrote (ZooKeeper 3.9 from pyspark's jars, 3.6.2 and
3.4.14 from older pyspark source artifacts) scrapes, offline, into the same tables a live scrape of the same tree
took just before the server stopped -- snapshots forced by a small snapCount (gz on 3.9, snappy on 3.6.2, plain
on 3.4), transactions after the last one (creates, sets, deletes, a multi, a failed multi, a closed session's
ephemeral), the seeding session's ephemerals still open (the server is killed, as a crash or a backup would leave
them). Then: a corrupt newest snapshot, a replay from the oldest snapshot across every log, a truncated log, one
snapshot file without logs, an empty directory, and no socket opened.

One server per version per module (the 3.6.2 / 3.4.14 jars are fetched once per machine; those versions skip
when the package index is unreachable and nothing is cached).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from kazoo.client import KazooClient
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.scrape.offline import OfflineScrapeConfig, scrape_data_dir
from pulsar_ops.scrape.run import ScrapeConfig, scrape
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.manifest import Manifest
from pulsar_ops.snapshot.reader import Snapshot, open_snapshot
from pulsar_ops.testing.model_spec import ALL_KINDS
from pulsar_ops.testing.seeder import SeedOptions, seed_cluster
from pulsar_ops.testing.zk_legacy import LegacyJarsUnavailable, legacy_jars_dir
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.zkdata import txnlog
from pulsar_ops.zkdata.datadir import load_snapshot_file, locate
from pulsar_ops.zkdata.snapshot import SnapshotCorrupt

pytestmark = pytest.mark.zk

CHROOT = "/pulsar"
COMPRESSION = {"3.9": "gz", "3.6.2": "snappy", "3.4.14": ""}
LAST = "/managed-ledgers/extra/last"


@dataclass
class Case:
    version: str
    data_dir: Path  # the killed server's dataDir (read-only for the tests: they copy it)
    live: Snapshot
    offline: Snapshot
    base: Path
    expected: dict[str, Any]  # the seeder's ground truth


def _comparable(snap: Snapshot, name: str) -> pa.Table:
    t = snap.table(name)
    keys = [(c, "ascending") for c in t.column_names if not str(t.schema.field(c).type).startswith("list")]
    return t.sort_by(keys) if t.num_rows else t


def _assert_same_tables(a: Snapshot, b: Snapshot) -> None:
    for t in schema.TABLES:
        ta, tb = _comparable(a, t.name), _comparable(b, t.name)
        assert ta.num_rows == tb.num_rows, t.name
        assert ta.equals(tb), t.name
    assert a.manifest.row_counts == b.manifest.row_counts
    assert a.manifest.identity == b.manifest.identity
    assert a.manifest.incomplete_scopes == b.manifest.incomplete_scopes
    assert a.manifest.zxid_range == b.manifest.zxid_range
    assert a.manifest.load_manager == b.manifest.load_manager  # an ELM cluster read offline is not modular


def _traffic(c: KazooClient) -> None:
    """Transactions of every kind the replay handles, enough of them for several snapshots (snapCount 40)."""
    c.create("/managed-ledgers/extra/x", b"hello", makepath=True)
    c.set("/managed-ledgers/extra/x", b"hello2")
    c.delete("/managed-ledgers/extra/x")
    for i in range(90):
        c.create(f"/managed-ledgers/extra/n{i}", b"v%d" % i)
        if i % 3 == 0:
            c.set(f"/managed-ledgers/extra/n{i}", b"w%d" % i)
        if i % 5 == 0:
            c.delete(f"/managed-ledgers/extra/n{i}")
    t = c.transaction()  # fails on its second op: logged with its ops as error txns, none applied
    t.create("/managed-ledgers/extra/phantom", b"p")
    t.create("/managed-ledgers/extra/no-parent/z", b"z")
    assert "RolledBackError" in repr(t.commit())
    t = c.transaction()
    t.create("/managed-ledgers/extra/m1", b"m")
    t.set_data("/managed-ledgers/extra", b"parent")
    t.delete("/managed-ledgers/extra/n1")
    t.commit()


@pytest.fixture(scope="module", params=["3.9", "3.6.2", "3.4.14"])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Case]:
    version: str = request.param
    jars = None
    if version != "3.9":
        try:
            jars = legacy_jars_dir(version)
        except LegacyJarsUnavailable as e:
            pytest.skip(f"ZooKeeper {version} jars not cached and not fetchable (package index unreachable?): {e}")
    base = tmp_path_factory.mktemp(f"zkdata-{version}")
    props = {"zookeeper.snapshot.compression.method": COMPRESSION[version]} if COMPRESSION[version] else {}
    server = EmbeddedZooKeeper(data_dir=base / "zk", heap_mb=256, jars_dir=jars, snap_count=40, system_properties=props)
    try:
        server.start()
        assert server.version().startswith(version)
        root = KazooClient(hosts=server.hosts)
        root.start(timeout=30)
        root.ensure_path(CHROOT)
        root.stop()
        root.close()
        c = KazooClient(hosts=server.hosts + CHROOT)
        c.start(timeout=30)
        # the seeded cluster's clock 25 h ahead, so its ledgers are old enough to plan (as test_apply_seeded does)
        now = int(time.time() * 1000) + 25 * 3_600_000
        res = seed_cluster(c, None, SeedOptions(topics=12, seed=5, now_ms=now, defects=frozenset(ALL_KINDS)))
        _traffic(c)
        brief = KazooClient(hosts=server.hosts + CHROOT)  # a session whose ephemeral goes with its closeSession
        brief.start(timeout=30)
        brief.create("/ledgers/available/gone-bookie:3181", b"", ephemeral=True)
        brief.stop()
        brief.close()
        c.create(LAST, b"the last transaction")
        live = base / "live"
        scrape(ScrapeConfig(zookeeper=server.hosts + CHROOT, out=live, workers=0))
        server.stop(kill=True)  # the seeding session's ephemerals stay (no closeSession logged)
        c.stop()
        c.close()
        # a roll's snapshot is written in place (SnapStream.getOutputStream without fsync), by its own thread: one
        # whose roll fell on the live scrape's last transactions may still be written when the kill comes, and is
        # left cut short (upstream's restore skips it: FileSnap.findNValidSnapshots). The tests' newest snapshot
        # is a whole one, whatever that race decided; a cut one is one test's subject (a corrupt newest snapshot)
        in_flight = _snapshots(base / "zk" / "data")[-1]
        try:
            load_snapshot_file(in_flight)
        except SnapshotCorrupt:
            in_flight.unlink()
        offline = base / "offline"
        scrape_data_dir(OfflineScrapeConfig(out=offline, zk_data_dir=base / "zk" / "data", chroot=CHROOT, workers=0))
        snaps = (open_snapshot(live), open_snapshot(offline))
        yield Case(version, base / "zk" / "data", *snaps, base, res.ground_truth["expected"])
    finally:
        server.cleanup()


def _copy(case: Case, name: str) -> Path:
    d = case.base / name
    shutil.copytree(case.data_dir, d)
    return d


def _offline(case: Case, name: str, **kw: object) -> Snapshot:
    out = case.base / f"out-{name}"
    scrape_data_dir(OfflineScrapeConfig(out=out, chroot=CHROOT, workers=0, **kw))  # type: ignore[arg-type]
    return open_snapshot(out)


def _snapshots(d: Path) -> list[Path]:
    v2 = locate(d)
    return sorted(
        (p for p in v2.iterdir() if p.name.startswith("snapshot.")), key=lambda p: int(p.name.split(".")[1], 16)
    )


def _records(d: Path) -> list[txnlog.LogRecord]:
    """Every record of every log, in zxid order."""
    out = []
    for p in locate(d).iterdir():
        if p.name.startswith("log."):
            out.extend(txnlog.read_log(p.read_bytes())[0])
    return sorted(out, key=lambda r: r.txn.zxid)


def test_offline_scrape_equals_the_live_scrape_table_by_table(case: Case) -> None:
    _assert_same_tables(case.live, case.offline)
    m = case.offline.manifest
    local = m.zk_data_dirs["local"]
    assert local["snapshot"].startswith("snapshot.") and local["snapshot"] != "snapshot.0"
    if COMPRESSION[case.version]:
        assert local["snapshot"].endswith("." + COMPRESSION[case.version])
    assert local["replayed_txns"] > 0 and local["stopped_early"] is None
    # the point in time: the last logged transaction (the live scrape's closeSession, after the create of LAST)
    last = _records(case.data_dir)[-1].txn
    row = next(r for r in case.live.table("znodes").to_pylist() if r["path"] == LAST)
    assert m.zxid == last.zxid > row["czxid"]
    assert m.last_txn_time_ms == last.time == m.finished_at_ms == m.started_at_ms
    assert not m.admin_scraped and not m.bookie_scraped
    digest = local["digest"]
    if case.version == "3.4.14":
        assert digest is None  # no digest before 3.6
    else:
        assert digest is not None and digest["matched"] is True  # DataTree.compareSnapshotDigests agrees


def test_replay_from_the_oldest_snapshot_across_every_log(case: Case) -> None:
    """Every log from the first snapshot on, the failed multi among them: still the live tree."""
    d = _copy(case, "oldest")
    snaps = _snapshots(d)
    for p in snaps[1:]:
        p.unlink()
    snap = _offline(case, "oldest", zk_data_dir=d)
    _assert_same_tables(case.live, snap)
    local = snap.manifest.zk_data_dirs["local"]
    assert local["snapshot"] == snaps[0].name and local["failed_multis"] >= 1
    assert len(local["logs"]) > 1
    paths = {r["path"] for r in snap.table("znodes").to_pylist()}
    assert "/managed-ledgers/extra/phantom" not in paths and "/ledgers/available/gone-bookie:3181" not in paths


def test_logs_in_a_separate_data_log_dir(case: Case) -> None:
    """zoo.cfg dataLogDir: the snapshots in one directory, the logs in another (--zk-data-log-dir)."""
    if case.version != "3.9":
        pytest.skip("one version is enough")
    d = _copy(case, "split")
    last = _records(d)[-1].txn.zxid  # the newest snapshot may already hold it: snapCount's roll is random
    newest = int(_snapshots(d)[-1].name.split(".")[1], 16)
    logs_dir = case.base / "split-logs" / "version-2"
    logs_dir.mkdir(parents=True)
    for p in locate(d).iterdir():
        if p.name.startswith("log."):
            shutil.move(p, logs_dir / p.name)
    snap = _offline(case, "split", zk_data_dir=d, zk_data_log_dir=logs_dir.parent)
    _assert_same_tables(case.live, snap)
    local = snap.manifest.zk_data_dirs["local"]
    assert local["log_directory"] == str(logs_dir) and local["replayed_txns"] > 0
    without = _offline(case, "split-no-logs", zk_data_dir=d)  # the logs missed: the snapshot's point in time
    assert without.manifest.zk_data_dirs["local"]["replayed_txns"] == 0
    assert snap.manifest.zxid == last and without.manifest.zxid == newest


def test_a_corrupt_newest_snapshot_falls_back_to_the_previous_one(case: Case) -> None:
    d = _copy(case, "corrupt")
    newest = _snapshots(d)[-1]
    raw = bytearray(newest.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    newest.write_bytes(bytes(raw))
    snap = _offline(case, "corrupt", zk_data_dir=d)
    _assert_same_tables(case.live, snap)
    local = snap.manifest.zk_data_dirs["local"]
    assert [f["snapshot"] for f in local["fallbacks"]] == [newest.name]
    assert local["snapshot"] == _snapshots(d)[-2].name


def test_a_truncated_log_stops_at_the_last_complete_transaction(case: Case) -> None:
    d = _copy(case, "truncated")
    v2 = locate(d)
    logs = sorted((p for p in v2.iterdir() if p.name.startswith("log.")), key=lambda p: int(p.name[4:], 16))
    every = _records(d)
    k = next(k for k, r in enumerate(every) if any(op.path == CHROOT + LAST for op in r.txn.ops))
    target = every[k]
    log = next(p for p in reversed(logs) if int(p.name[4:], 16) <= target.txn.zxid)
    buf = log.read_bytes()
    log.write_bytes(buf[: target.offset + 20])  # cut inside the create of LAST
    for p in [*logs, *_snapshots(d)]:  # what was written after it goes: the replay must end in that log
        if p != log and int(p.name.split(".")[1], 16) >= target.txn.zxid:
            p.unlink()
    for p in _snapshots(d):  # a snapshot is fuzzy: one named before LAST's zxid may have serialized LAST already
        if load_snapshot_file(p)[0].get(CHROOT + LAST) is not None:
            p.unlink()
    snap = _offline(case, "truncated", zk_data_dir=d)
    m = snap.manifest
    stop = m.zk_data_dirs["local"]["stopped_early"]
    assert stop is not None and stop["log"] == log.name and stop["offset"] == target.offset
    assert stop["reason"] == "partial" and m.zxid == every[k - 1].txn.zxid == stop["zxid"]
    assert m.last_txn_time_ms == every[k - 1].txn.time
    paths = {r["path"] for r in snap.table("znodes").to_pylist()}
    assert LAST not in paths and LAST in {r["path"] for r in case.live.table("znodes").to_pylist()}


def test_one_snapshot_file_without_logs(case: Case) -> None:
    newest = _snapshots(case.data_dir)[-1]
    snap = _offline(case, "one-file", zk_snapshot=newest)
    local = snap.manifest.zk_data_dirs["local"]
    assert local["logs"] == [] and snap.manifest.zxid == int(newest.name.split(".")[1], 16)
    assert snap.manifest.last_txn_time_ms is None  # no logged transaction: the manifest says so
    assert snap.manifest.row_counts["znodes"] > 0


def test_an_empty_or_foreign_directory_is_a_clear_error(tmp_path: Path) -> None:
    runner = CliRunner()
    empty = tmp_path / "empty"
    empty.mkdir()
    r = runner.invoke(app, ["scrape", "--zk-data-dir", str(empty), "--out", str(tmp_path / "o1"), "--json"])
    assert r.exit_code == 3, r.output
    assert "zk-data-dir-unusable" in r.output and "version-2" in r.output
    assert not (tmp_path / "o1").exists()  # nothing left behind
    (empty / "version-2").mkdir()
    r = runner.invoke(app, ["scrape", "--zk-data-dir", str(empty), "--out", str(tmp_path / "o2")])
    assert r.exit_code == 3 and "no snapshot" in r.output
    r = runner.invoke(
        app, ["scrape", "--zk-data-dir", str(empty), "--zookeeper", "127.0.0.1:1", "--out", str(tmp_path / "o3")]
    )
    assert r.exit_code == 3 and "cannot be combined" in r.output
    snap = empty / "version-2" / "snapshot.1"
    snap.write_bytes(b"")
    r = runner.invoke(
        app, ["scrape", "--zk-snapshot", str(snap), "--zk-data-log-dir", str(empty), "--out", str(tmp_path / "o4")]
    )
    assert r.exit_code == 3 and "--zk-data-log-dir goes with --zk-data-dir" in r.output
    assert not (tmp_path / "o4").exists()


_NO_SOCKETS = """
import sys

def _hook(event, args):
    if event in ("socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo"):
        raise RuntimeError("offline scrape opened a socket: " + event)

sys.addaudithook(_hook)
"""


def test_the_offline_scrape_opens_no_socket(case: Case, tmp_path: Path) -> None:
    """A sitecustomize in PYTHONPATH puts an audit hook into the CLI process and its decode workers that fails on
    any socket; the same hook does stop a process that opens one."""
    if case.version != "3.9":
        pytest.skip("one version is enough")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_NO_SOCKETS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(Path(__file__).resolve().parents[2])])}
    probe = subprocess.run([sys.executable, "-c", "import socket; socket.socket()"], env=env, capture_output=True)
    assert probe.returncode != 0 and b"opened a socket" in probe.stderr
    out = tmp_path / "snap"
    cmd = [sys.executable, "-m", "pulsar_ops.cli.main", "scrape", "--zk-data-dir", str(case.data_dir)]
    r = subprocess.run(
        [*cmd, "--zk-chroot", CHROOT, "--out", str(out), "--workers", "2", "--json", "-q"],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    doc = json.loads(r.stdout)
    assert doc["zxid"] == case.offline.manifest.zxid
    _assert_same_tables(case.live, open_snapshot(out))


def test_manifest_round_trips_the_point_in_time(case: Case) -> None:
    m = case.offline.manifest
    again = Manifest.from_json(json.loads(json.dumps(m.to_json())))
    assert again.zxid == m.zxid and again.last_txn_time_ms == m.last_txn_time_ms
    assert again.zk_data_dirs["local"]["snapshot"] == m.zk_data_dirs["local"]["snapshot"]
    assert case.live.manifest.zxid is None and case.live.manifest.zk_data_dirs == {}


def _detections(snap: Snapshot, now_ms: int) -> dict[str, list[tuple[object, ...]]]:
    """Every detection's rows over the snapshot, by the audit's own SQL files on DuckDB (the dev comparison
    engine of `bench audit`), at the clock ``now_ms``."""
    from pulsar_ops.audit.params import AuditParams
    from pulsar_ops.audit.sql_files import detect_files
    from pulsar_ops.bench import duckdb_sql
    from pulsar_ops.findings import STORAGE_DETECTIONS

    params = AuditParams(now_ms=now_ms)
    con = duckdb_sql.connect(snap.path, params, admin_scraped=snap.manifest.admin_scraped)
    out: dict[str, list[tuple[object, ...]]] = {}
    for f in detect_files():
        if f.name in STORAGE_DETECTIONS:
            continue
        try:
            out[f.name] = sorted((tuple(r) for r in con.execute(duckdb_sql.rewrite(f.text)).fetchall()), key=repr)
        except Exception as e:  # a Spark spelling the dev rewrite does not cover: the same on both sides
            out[f.name] = [("duckdb-cannot-run", type(e).__name__)]
    return out


def test_the_audit_sql_finds_the_same_in_both(case: Case) -> None:
    """The audit's detections (its SQL, on DuckDB to keep this quick) over the live and the offline snapshot, at
    one clock: the audit's clock is each snapshot's finished_at_ms, and the offline one's is its last transaction,
    a few hundred ms before the live scrape finished, so ages in the evidence differ by exactly that."""
    pytest.importorskip("duckdb")
    now = case.offline.manifest.finished_at_ms
    assert 0 <= case.live.manifest.finished_at_ms - now < 60_000
    live, off = _detections(case.live, now), _detections(case.offline, now)
    ran = [name for name, rows in live.items() if rows and rows[0][0] != "duckdb-cannot-run"]
    assert len(ran) >= 5 and "orphan-ledger" in ran, live  # the seeded defects give these rows
    assert live == off


def _ground_truth_audit(case: Case, snap: Snapshot, root: Path) -> Path:
    """An audit directory holding the seeder's expected orphan-ledger and znode-leak findings for ``snap`` (the
    findings themselves are compared by test_the_audit_sql_finds_the_same_in_both)."""
    from tests.zk.ground_truth import seeded_findings
    from tests.zk.repair_cluster import write_audit

    findings = seeded_findings(case.expected)
    return write_audit(root, {"snapshot_id": snap.manifest.snapshot_id, "path": str(snap.path)}, findings)


def test_plan_and_apply_from_the_offline_snapshot(case: Case, tmp_path: Path) -> None:
    """A plan from the offline snapshot holds the same actions, preconditions (the znode stats) included, as one
    from the live snapshot; apply says the snapshot's age and, against the server restarted on a copy of the
    directory, marks every action (compare-and-set on the recorded stats) after checking the ensemble recorded
    with --zk-ensemble."""
    if case.version != "3.9":
        pytest.skip("one version is enough")
    from pulsar_ops.repair.apply_run import ApplyRequest, run_apply
    from pulsar_ops.repair.plan_builder import build_plan
    from pulsar_ops.repair.planner import PlanParams

    copy = tmp_path / "server"
    shutil.copytree(case.data_dir, copy / "data")
    server = EmbeddedZooKeeper(data_dir=copy, heap_mb=256)
    try:
        server.start()
        off = tmp_path / "offline"
        scrape_data_dir(
            OfflineScrapeConfig(out=off, zk_data_dir=case.data_dir, chroot=CHROOT, ensemble=server.hosts, workers=0)
        )
        p_live = build_plan(
            _ground_truth_audit(case, case.live, tmp_path / "a-live"), tmp_path / "l.json", PlanParams()
        )
        p_off = build_plan(
            _ground_truth_audit(case, open_snapshot(off), tmp_path / "a-off"), tmp_path / "o.json", PlanParams()
        )
        live_actions = [a.to_json() for a in p_live.plan.actions]
        assert live_actions and [a.to_json() for a in p_off.plan.actions] == live_actions
        assert p_off.plan.snapshot["zxid"] == case.offline.manifest.zxid
        said: list[str] = []
        request = ApplyRequest(
            plan_path=tmp_path / "o.json",
            zookeeper=server.hosts + CHROOT,
            config_zookeeper=None,
            phase="mark",
            quarantine_ms=0,
            apply=True,
            yes=True,
        )
        report = run_apply(request, confirm=lambda q: None, say=said.append)
        assert any(" old (read from a ZooKeeper data directory at zxid " in line for line in said), said
        assert report.counts() == {"marked": len(live_actions)}, report.counts()
    finally:
        server.cleanup()


def test_a_missing_chroot_or_a_bad_ensemble_is_refused(case: Case, tmp_path: Path) -> None:
    if case.version != "3.9":
        pytest.skip("one version is enough")
    runner = CliRunner()
    base = ["scrape", "--zk-data-dir", str(case.data_dir), "--json"]
    r = runner.invoke(app, [*base, "--zk-chroot", "/nope", "--out", str(tmp_path / "a")])
    assert r.exit_code == 3 and "the chroot /nope does not exist" in r.output
    assert not (tmp_path / "a").exists()  # the decode workers were stopped and nothing is left behind
    r = runner.invoke(app, [*base, "--zk-chroot", CHROOT, "--zk-ensemble", "zk1:2181/x", "--out", str(tmp_path / "b")])
    assert r.exit_code == 3 and "--zk-ensemble" in r.output
    r = runner.invoke(
        app, [*base, "--zk-chroot", CHROOT, "--zk-ensemble", "zk1:2181,zk2:2181", "--out", str(tmp_path / "c")]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["stores"]["local"]["hosts"] == "zk1:2181,zk2:2181" and doc["stores"]["local"]["chroot"] == CHROOT
