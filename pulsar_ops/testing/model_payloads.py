"""JSON and text payloads of the synthetic cluster (pure): Pulsar admin/load-balance JSON, BookKeeper text.

Shapes follow the public formats (reference pulsar-http-apis.md §2.9, pulsar-metadata.md §2.2-§2.4).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

BUNDLE_SPACE = 0x100000000


def bundle_boundaries(num_bundles: int) -> list[str]:
    """Equal split of the hash space like the broker: ``0x%08x`` boundaries, the last one ``0xffffffff``."""
    step = BUNDLE_SPACE // num_bundles
    bounds = [f"0x{i * step:08x}" for i in range(num_bundles)]
    bounds.append("0xffffffff")
    return bounds


def split_first(boundaries: list[str]) -> list[str]:
    """The boundaries after the broker splits the first bundle in two (``range_equally_divide``:
    ``NamespaceBundleFactory.splitBundles`` adds ``(upper - lower) / 2`` to the lower bound); a split is
    written to the local policies first; the seeder leaves the policies as they were (the second write failed,
    or another cluster sharing the configuration store wrote them)."""
    lower, upper = int(boundaries[0], 16), int(boundaries[1], 16)
    return [boundaries[0], f"0x{lower + (upper - lower) // 2:08x}", *boundaries[1:]]


def bundle_ranges(boundaries: list[str]) -> list[str]:
    return [f"{lo}_{hi}" for lo, hi in itertools.pairwise(boundaries)]


def dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def cluster_data(name: str) -> dict[str, Any]:
    host = f"{name}.pulsar.example"
    return {
        "serviceUrl": f"http://{host}:8080",
        "serviceUrlTls": f"https://{host}:8443",
        "brokerServiceUrl": f"pulsar://{host}:6650",
        "brokerServiceUrlTls": f"pulsar+ssl://{host}:6651",
        "peerClusterNames": None,
        "authenticationPlugin": None,
        "authenticationParameters": None,
        "proxyServiceUrl": None,
        "proxyProtocol": None,
        "brokerClientTlsEnabled": False,
    }


def tenant_info(clusters: list[str], admin: str) -> dict[str, Any]:
    return {"adminRoles": [admin], "allowedClusters": sorted(clusters)}


def local_policies(boundaries: list[str]) -> dict[str, Any]:
    return {
        "bundles": {"boundaries": boundaries, "numBundles": len(boundaries) - 1},
        "bookieAffinityGroup": None,
        "namespaceAntiAffinityGroup": None,
        "migrated": False,
    }


def partitioned_topic(partitions: int) -> dict[str, Any]:
    return {"partitions": partitions, "deleted": False}


def broker_urls(broker: str) -> dict[str, Any]:
    return {
        "nativeUrl": f"pulsar://{broker}:6650",
        "nativeUrlTls": f"pulsar+ssl://{broker}:6651",
        "httpUrl": f"http://{broker}:8080",
        "httpUrlTls": f"https://{broker}:8443",
        "disabled": False,
        "advertisedListeners": {},
    }


def bundle_data(topics: int, rate: float) -> dict[str, Any]:
    def sample(samples: int) -> dict[str, Any]:
        return {
            "maxSamples": samples,
            "numSamples": samples,
            "msgThroughputIn": rate * 1024.0,
            "msgThroughputOut": rate * 2048.0,
            "msgRateIn": rate,
            "msgRateOut": rate * 2.0,
        }

    return {"shortTermData": sample(10), "longTermData": sample(1000), "topics": topics}


def local_broker_data(broker: str, bundles: list[str]) -> dict[str, Any]:
    urls = broker_urls(broker)
    return {
        "webServiceUrl": urls["httpUrl"],
        "webServiceUrlTls": urls["httpUrlTls"],
        "pulsarServiceUrl": urls["nativeUrl"],
        "pulsarServiceUrlTls": urls["nativeUrlTls"],
        "persistentTopicsEnabled": True,
        "nonPersistentTopicsEnabled": True,
        "bundles": sorted(bundles),
        "brokerVersionString": "3.3.2",
        "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
    }


def bk_layout() -> bytes:
    return b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1\n"


def bk_cookie(bookie: str, instance_id: str) -> bytes:
    body = (
        f'bookieHost: "{bookie}"\n'
        'journalDir: "/pulsar/data/bookkeeper/journal"\n'
        'ledgerDirs: "1\\t/pulsar/data/bookkeeper/ledgers"\n'
        f'instanceId: "{instance_id}"\n'
    )
    return b"5\n" + body.encode()


def underreplication_layout() -> bytes:
    return b'type: "org.apache.bookkeeper.meta.ZkLedgerUnderreplicationManager"\nversion: 1\n'
