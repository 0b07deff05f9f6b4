"""A forged ``trim-unloaded`` under the extensible load manager whose metadata-store table view keeps ownership in
``/service_unit_state`` (issue 33): even when the bundle's value says ``Free`` (the audit then calls the topic
unloaded), apply refuses the offline rewrite at mark and at delete with the tree unchanged. Apply re-reads the
registrations (repair/live_facts.py ownership_unknown), not the bundle's value, so it cannot re-verify that no
broker took the bundle since the snapshot: the trim stays refused; ``load-topic`` is the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from pulsar_ops.testing import model_upstream as up
from tests.zk.repair_cluster import dump
from tests.zk.test_apply_rules import _env, _forge, _now, _policies, _refused, _topic, _trim_action

pytestmark = pytest.mark.zk

FULL_RANGE = "0x00000000_0xffffffff"


@pytest.mark.parametrize("state", ["Free", "Owned"])
def test_a_trim_under_the_metadata_store_table_view_is_refused(
    zk: KazooClient, zk_hosts: str, tmp_path: Path, state: str
) -> None:
    reg = json.dumps(up.lookup_data("b1", _now())).encode()
    value = (
        up.service_unit_state_free("b1:8080", _now()) if state == "Free" else up.service_unit_state("b1:8080", _now())
    )
    nodes = {
        **_topic(_now(), (101, 9), _policies(60, -1)),
        "/loadbalance/brokers/b1:8080": reg,
        f"{up.SERVICE_UNIT_STATE_ROOT}/t/ns/{FULL_RANGE}": json.dumps(value).encode(),
    }
    env = _env(zk, zk_hosts, tmp_path, nodes)
    _forge(env, [_trim_action(zk, [100, 101])])
    before = dump(zk)
    _refused(env, "bundle ownership is unknown (load manager 'extensible' now")
    _refused(env, "bundle ownership is unknown", phase="delete")
    assert dump(zk) == before
