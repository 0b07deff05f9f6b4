"""Bookie registrations read from ZooKeeper: each bookie's id, read-only state and published BookieServiceInfo.

Reads ``<ledgers_root>/available`` and ``<ledgers_root>/available/readonly`` (children, then each child's data) as
upstream ``ZKRegistrationClient`` does (``getChildren`` of both paths, ``readonly`` itself skipped among the
writable ones, then the data of each ``<path>/<id>``). The data is kept undecoded: the bookie scrape decodes it
(:mod:`pulsar_ops.formats.bookie_service_info`) so one corrupt registration makes only that bookie partial.

A failed listing is never "no bookies": it is returned as an error and the bookie scope is reported partial.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoAuthError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from pulsar_ops.errors import PulsarOpsError
from pulsar_ops.scrape import zk
from pulsar_ops.zkconn import NO_SECURITY, ZkSecurity

READONLY = "readonly"


@dataclass(frozen=True)
class Registration:
    bookie_id: str
    readonly: bool
    data: bytes


@dataclass(frozen=True)
class Registrations:
    """What could be read. ``errors``: (path, code, message) of every listing or read that failed;
    ``listed``: both listings were read (else a bookie missing here may still be registered);
    ``unreadable``: ids whose registration data could not be read."""

    bookies: tuple[Registration, ...] = ()
    errors: tuple[tuple[str, str, str], ...] = ()
    listed: bool = True
    unreadable: frozenset[str] = frozenset()

    def by_id(self) -> dict[str, Registration]:
        out: dict[str, Registration] = {}
        for r in self.bookies:
            out.setdefault(r.bookie_id, r)  # writable first: a bookie caught mid-transition counts as writable
        return out


def _code(e: BaseException) -> str:
    return zk.CODE_NO_AUTH if isinstance(e, NoAuthError) else zk.CODE_READ_FAILED


def read_registrations(client: KazooClient, ledgers_root: str, *, timeout: float = 10.0) -> Registrations:
    """Every registered bookie with the data of its registration znode. Bounded by ``timeout`` per request."""
    base = ledgers_root.rstrip("/") + "/available"
    found: list[Registration] = []
    errors: list[tuple[str, str, str]] = []
    unreadable: set[str] = set()
    listed = True
    for path, readonly in ((base, False), (f"{base}/{READONLY}", True)):
        try:
            children = sorted(client.get_children_async(path).get(timeout=timeout))
        except NoNodeError:
            continue  # no bookie ever registered (read-only)
        except (KazooException, KazooTimeoutError) as e:
            errors.append((path, _code(e), f"cannot list {path}: {type(e).__name__}"))
            listed = False
            continue
        for child in children:
            if not readonly and child == READONLY:
                continue
            try:
                data, _stat = client.get_async(f"{path}/{child}").get(timeout=timeout)
            except NoNodeError:
                continue  # unregistered between the listing and the read (an ephemeral node)
            except (KazooException, KazooTimeoutError) as e:
                errors.append((f"{path}/{child}", _code(e), f"cannot read {path}/{child}: {type(e).__name__}"))
                unreadable.add(child)
                continue
            found.append(Registration(child, readonly, bytes(data or b"")))
    return Registrations(tuple(found), tuple(errors), listed, frozenset(unreadable))


def registration_reader(
    zookeeper: str,
    ledgers_root: str,
    security: ZkSecurity = NO_SECURITY,
    *,
    connect_timeout: float = 30.0,
) -> Callable[[], Registrations]:
    """A callable that opens its own session on ``zookeeper`` (HOSTS[/chroot]), reads the registrations, closes."""

    def read() -> Registrations:
        root = "/" + ledgers_root.strip().strip("/")
        try:
            client = zk.connect(zk.ZkTarget.parse(zookeeper), security, timeout=connect_timeout)
        except PulsarOpsError as e:
            return Registrations(errors=((f"{root}/available", e.code, e.message),), listed=False)
        try:
            return read_registrations(client, root)
        finally:
            zk.close(client)

    return read
