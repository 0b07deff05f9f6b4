"""Secured ZooKeeper, end to end through the CLI: digest ACLs, SASL DIGEST-MD5 and TLS (secureClientPort).

For each mode: `scrape`, `apply` (both phases) and `restore` work with the right options; without them each
command fails with a stable error code and a hint naming a flag the command has; and the secret appears in no
file written and in no output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper
from pulsar_ops.testing.zk_tls import make_tls_material
from tests.zk.repair_cluster import build_cluster, findings_for, walk, write_audit, write_snapshot

pytestmark = [pytest.mark.zk, pytest.mark.slow]

SECRET = "Zq8-very-secret-pw"


class Run:
    """Every CLI call of one scenario; keeps all output to grep for the secret."""

    def __init__(self) -> None:
        self.output: list[str] = []

    def __call__(self, *args: str) -> tuple[int, str, str]:
        r = CliRunner().invoke(app, list(args))
        self.output += [r.stdout, r.stderr]
        return r.exit_code, r.stdout, r.stderr


def _no_secret_anywhere(tmp: Path, run: Run) -> None:
    for text in run.output:
        assert SECRET not in text
    for f in tmp.rglob("*"):
        if f.is_file() and f.suffix != ".pem" and f.name != "secret.txt":
            assert SECRET.encode() not in f.read_bytes(), f


def _scenario(client: KazooClient, tmp: Path) -> Path:
    """The repair scenario (orphans + leaks) in this chroot, its snapshot, its findings and a plan."""
    s = build_cluster(client)
    snap = write_snapshot(client, tmp / "snap")
    return write_audit(tmp / "audit", snap, findings_for(s))


def _round_trip(run: Run, tmp: Path, hosts: str, audit: Path, creds: list[str], denied_code: str, flag: str) -> None:
    plan = tmp / "plan.json"
    assert run("plan", str(audit), "--out", str(plan))[0] == 0
    base = ["apply", str(plan), "--zookeeper", hosts, "--apply", "--yes", "--quarantine", "0"]
    # without credentials: refused, with a code and a hint naming a flag `apply` has
    code, _o, err = run(*base, "--phase", "mark")
    assert code == 3 and f"error[{denied_code}]" in err and flag in err, err
    journal = Path(str(plan) + ".journal.jsonl")
    assert not journal.exists()
    for phase in ("mark", "delete"):
        code, out, err = run(*base, *creds, "--phase", phase, "--json")
        assert code == 0, err
        assert set(json.loads(out)["counts"]) == {"marked" if phase == "mark" else "committed"}
    backup = Path(str(plan) + ".backup")
    code, _o, err = run("restore", str(backup), "--zookeeper", hosts, "--apply", "--yes")
    assert code == 3 and f"error[{denied_code}]" in err and flag in err, err
    code, out, err = run("restore", str(backup), "--zookeeper", hosts, *creds, "--apply", "--yes", "--json")
    assert code == 0, err
    assert set(json.loads(out)["counts"]) == {"restored"}
    code, out, err = run("scrape", "--zookeeper", hosts, *creds, "--out", str(tmp / "snap2"), "--json", "-q")
    assert code == 0, err
    # everything is readable with the credentials (the scenario's bare tenant node does not decode: not auth)
    assert [s["code"] for s in json.loads(out)["incomplete_scopes"]] in ([], ["decode-failed"])


# --- digest ACLs ------------------------------------------------------------------------------------------


def test_digest_acls(zk_server: EmbeddedZooKeeper, zk_chroot: str, tmp_path: Path) -> None:
    owner = KazooClient(hosts=zk_server.hosts + zk_chroot, auth_data=[("digest", f"owner:{SECRET}")])
    owner.start(timeout=30)
    try:
        audit = _scenario(owner, tmp_path)
        acl = [make_digest_acl("owner", SECRET, all=True)]
        for path in sorted(walk(owner), key=len, reverse=True):
            if path != "/":
                owner.set_acls(path, acl)
    finally:
        owner.stop()
        owner.close()
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(f"digest:owner:{SECRET}\n")
    run = Run()
    _round_trip(
        run,
        tmp_path,
        zk_server.hosts + zk_chroot,
        audit,
        ["--zk-auth-file", str(secret_file)],
        "zookeeper-auth-failed",
        "--zk-auth",
    )
    _no_secret_anywhere(tmp_path, run)


# --- SASL DIGEST-MD5 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sasl_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedZooKeeper]:
    zk = EmbeddedZooKeeper(data_dir=tmp_path_factory.mktemp("zk-sasl"), sasl_users={"alice": SECRET})
    zk.start()
    try:
        yield zk
    finally:
        zk.cleanup()


def test_sasl_digest_md5(sasl_zk: EmbeddedZooKeeper, tmp_path: Path) -> None:
    opts: dict[str, Any] = {"mechanism": "DIGEST-MD5", "username": "alice", "password": SECRET}
    root = KazooClient(hosts=sasl_zk.hosts, sasl_options=opts)
    root.start(timeout=30)
    try:
        root.ensure_path("/pulsar")
    finally:
        root.stop()
        root.close()
    alice = KazooClient(hosts=sasl_zk.hosts + "/pulsar", sasl_options=opts)
    alice.start(timeout=30)
    try:
        audit = _scenario(alice, tmp_path)
    finally:
        alice.stop()
        alice.close()
    run = Run()
    _round_trip(
        run,
        tmp_path,
        sasl_zk.hosts + "/pulsar",
        audit,
        ["--zk-sasl", f"DIGEST-MD5:alice:{SECRET}"],
        "zookeeper-auth-failed",
        "--zk-sasl",
    )
    code, _o, err = run(
        "apply",
        str(tmp_path / "plan.json"),
        "--zookeeper",
        sasl_zk.hosts + "/pulsar",
        "--zk-sasl",
        "DIGEST-MD5:alice:wrong-password",
        "--phase",
        "mark",
        "--apply",
        "--yes",
    )
    assert code == 3 and "--zk-sasl" in err
    for text in run.output:
        assert SECRET not in text
    _no_secret_anywhere(tmp_path, run)


# --- TLS (secureClientPort, client certificates required) ------------------------------------------------


@pytest.fixture(scope="module")
def tls_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedZooKeeper, Any]]:
    material = make_tls_material(tmp_path_factory.mktemp("tls"))
    zk = EmbeddedZooKeeper(data_dir=tmp_path_factory.mktemp("zk-tls"), tls=material)
    zk.start()
    try:
        yield zk, material
    finally:
        zk.cleanup()


def test_tls_secure_client_port(tls_zk: tuple[EmbeddedZooKeeper, Any], tmp_path: Path) -> None:
    zk, m = tls_zk
    tls = {"ca": str(m.ca_pem), "certfile": str(m.client_cert), "keyfile": str(m.client_key)}
    root = KazooClient(hosts=zk.secure_hosts, use_ssl=True, verify_certs=True, **tls)
    root.start(timeout=30)
    try:
        root.ensure_path("/pulsar")
    finally:
        root.stop()
        root.close()
    client = KazooClient(hosts=zk.secure_hosts + "/pulsar", use_ssl=True, verify_certs=True, **tls)
    client.start(timeout=30)
    try:
        audit = _scenario(client, tmp_path)
    finally:
        client.stop()
        client.close()
    creds = ["--zk-tls-ca", str(m.ca_pem), "--zk-tls-cert", str(m.client_cert), "--zk-tls-key", str(m.client_key)]
    run = Run()
    plan = tmp_path / "plan.json"
    assert run("plan", str(audit), "--out", str(plan))[0] == 0
    # plain text to a TLS port: a clear error whose hint names --zk-tls-ca (it never connects: it fails after
    # --zk-timeout, 30 s by default)
    code, _o, err = run(
        "apply", str(plan), "--zookeeper", zk.secure_hosts + "/pulsar", "--phase", "mark", "--apply", "--yes",
        "--zk-timeout", "5",
    )  # fmt: skip
    assert code == 3 and "error[zookeeper-unavailable]" in err and "--zk-tls-ca" in err, err
    assert "within 5s" in err, err
    for phase in ("mark", "delete"):
        code, out, err = run(
            "apply",
            str(plan),
            "--zookeeper",
            zk.secure_hosts + "/pulsar",
            *creds,
            "--phase",
            phase,
            "--apply",
            "--yes",
            "--quarantine",
            "0",
            "--json",
        )
        assert code == 0, err
    code, out, err = run(
        "restore",
        str(plan) + ".backup",
        "--zookeeper",
        zk.secure_hosts + "/pulsar",
        *creds,
        "--apply",
        "--yes",
        "--json",
    )
    assert code == 0 and set(json.loads(out)["counts"]) == {"restored"}, err
    code, out, err = run(
        "scrape", "--zookeeper", zk.secure_hosts + "/pulsar", *creds, "--out", str(tmp_path / "snap2"), "--json", "-q"
    )
    assert code == 0, err
    assert [s["code"] for s in json.loads(out)["incomplete_scopes"]] in ([], ["decode-failed"])
