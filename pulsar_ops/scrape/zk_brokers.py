"""Read the brokers' registrations, ``/loadbalance/brokers/<id>``, from the local metadata store.

The admin scrape runs after the walk (its ZooKeeper sessions are closed by then), so this opens its own
short session: :func:`broker_registration_reader` returns an ``admin.RegistrationReader``. Upstream: the modular load
manager registers each broker at ``LoadManager.LOADBALANCE_BROKERS_ROOT + "/" + lookupServiceAddress``
(`ModularLoadManagerImpl.start`, LocalBrokerData JSON); the extensible one at the same root (`BrokerRegistryImpl`,
BrokerLookupData JSON). Both carry ``webServiceUrl`` and ``webServiceUrlTls``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from pulsar_ops.errors import ZooKeeperError
from pulsar_ops.scrape import zk
from pulsar_ops.scrape.admin import RegistrationReader
from pulsar_ops.zkconn import NO_SECURITY, ZkSecurity

BROKERS_ROOT = "/loadbalance/brokers"


def broker_registration_reader(
    zookeeper: str, security: ZkSecurity = NO_SECURITY, *, timeout: float = 10.0
) -> RegistrationReader:
    """A reader of ``/loadbalance/brokers/<id>`` for the given ids over ``zookeeper`` (HOSTS[/chroot]): the
    data of each (None when the znode does not exist). Raises ZooKeeperError when the store cannot be read."""

    def read(brokers: Sequence[str]) -> Mapping[str, bytes | None]:
        client = zk.connect(zk.ZkTarget.parse(zookeeper), security, timeout=timeout)
        try:
            out: dict[str, bytes | None] = {}
            for b in brokers:
                try:
                    data, _ = client.get_async(f"{BROKERS_ROOT}/{b}").get(timeout=timeout)
                except NoNodeError:
                    out[b] = None
                    continue
                out[b] = bytes(data or b"")
            return out
        except (KazooException, KazooTimeoutError) as e:
            raise ZooKeeperError(f"cannot read {BROKERS_ROOT}: {e!r}") from e
        finally:
            zk.close(client)

    return read
