"""Pure parts of the ZooKeeper walker: HOSTS[/chroot] parsing, --zk-auth, server version -> multiRead choice."""

from __future__ import annotations

import pytest

from pulsar_ops.errors import ConfigError
from pulsar_ops.scrape.zk import (
    ZkTarget,
    parse_server_version,
    version_supports_multiread,
)
from pulsar_ops.zkconn import parse_auth


@pytest.mark.parametrize(
    ("spec", "hosts", "chroot"),
    [
        ("127.0.0.1:2181", "127.0.0.1:2181", ""),
        ("a:2181,b:2181/pulsar", "a:2181,b:2181", "/pulsar"),
        ("a:2181/pulsar/", "a:2181", "/pulsar"),
        ("a:2181/", "a:2181", ""),
        ("a:2181/x/y", "a:2181", "/x/y"),
    ],
)
def test_target_parsing(spec: str, hosts: str, chroot: str) -> None:
    t = ZkTarget.parse(spec)
    assert (t.hosts, t.chroot) == (hosts, chroot)
    assert t.describe() == {"hosts": hosts, "chroot": chroot}


@pytest.mark.parametrize("spec", ["", "user:pw@a:2181", "a", "a:port", ":2181"])
def test_bad_targets_are_config_errors_with_a_hint(spec: str) -> None:
    with pytest.raises(ConfigError) as ei:
        ZkTarget.parse(spec)
    assert "--zookeeper" in ei.value.hint


def test_auth_parsing_never_echoes_the_password() -> None:
    assert parse_auth("digest:user:p:w") == ("digest", "user:p:w")
    for bad in ("digest", "digest:", "digest:useronly", ":x"):
        with pytest.raises(ConfigError) as ei:
            parse_auth(bad)
        assert "useronly" not in ei.value.message


SRVR = """Zookeeper version: 3.9.5-5a3cce8b3e8c1e8b1e3, built on 2025-01-01 00:00 UTC
Latency min/avg/max: 0/0.0/0
Mode: standalone
"""


def test_server_version_and_multiread_choice() -> None:
    assert parse_server_version(SRVR) == "3.9.5"
    assert parse_server_version("srvr is not executed because it is not in the whitelist.") is None
    assert version_supports_multiread("3.9.5") is True
    assert version_supports_multiread("3.6.0") is True
    assert version_supports_multiread("3.5.10") is False
    assert version_supports_multiread("3.4.14") is False
    assert version_supports_multiread("unknown") is None
