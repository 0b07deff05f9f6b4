"""The embedded ZooKeeper's ports: a port picked free but taken by another process before the server bound it
(the two test shards, or anything else on the machine, pick ports at the same time) costs a start on newly picked
ports, not a failed test; a port the caller gave is never changed."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pulsar_ops.testing import zk_server
from pulsar_ops.testing.zk_server import EmbeddedZooKeeper, ZooKeeperStartError, four_letter_word

pytestmark = pytest.mark.zk


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process holds (a listening socket of this one stands in)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def test_a_picked_port_taken_before_the_bind_is_picked_again(
    taken: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = zk_server.free_port
    picks = iter([taken])
    monkeypatch.setattr(zk_server, "free_port", lambda: next(picks, None) or real())
    server = EmbeddedZooKeeper(data_dir=tmp_path / "zk", heap_mb=128)
    try:
        server.start()
        assert server.port != taken and "Mode: standalone" in four_letter_word(server.host, server.port)
        assert b"Address already in use" in server.log_path.read_bytes()  # the first start did fail to bind
    finally:
        server.cleanup()


def test_a_port_the_caller_gave_is_kept_and_its_failure_said(taken: int, tmp_path: Path) -> None:
    server = EmbeddedZooKeeper(port=taken, data_dir=tmp_path / "zk", heap_mb=128)
    try:
        with pytest.raises(ZooKeeperStartError, match="exited with code"):
            server.start()
        assert server.port == taken
    finally:
        server.cleanup()
