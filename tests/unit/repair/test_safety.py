"""The static safety rules and the leak re-proof, as pure functions over a fake tree."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.actions import KIND_DELETE_LEDGER, KIND_DELETE_SUBTREE, Action, FindingRef, Precondition
from pulsar_ops.repair.safety import LEAK_KINDS, SubtreeNode, action_problem, leak_shape, prove_leak
from tests.unit.repair.factory import znode


@pytest.mark.parametrize(
    ("path", "leak"),
    [
        ("/managed-ledgers/gone", "managed-ledgers-tenant"),
        ("/managed-ledgers/t/ns", "managed-ledgers-namespace"),
        ("/managed-ledgers/t/c/ns", "managed-ledgers-namespace"),
        ("/admin/partitioned-topics/t/ns/persistent/x", "partitioned-topic"),
        ("/schemas/t/ns/x", "schema"),
        ("/loadbalance/bundle-data/t/ns", "bundle-data"),
        ("/loadbalance/bundle-data/t/ns/0x00000000_0x40000000", "bundle-data"),
        ("/admin/local-policies/t/ns", "local-policies"),
        # never a leak root:
        ("/managed-ledgers/t/ns/persistent", None),
        ("/managed-ledgers/t/ns/persistent/topic", None),
        ("/admin/clusters/standalone", None),
        ("/admin/partitioned-topics/t/ns/non-persistent/x", None),
        ("/ledgers/LAYOUT", None),
        ("/ledgers/00/0000/L0001", None),
        ("/namespace/t/ns/0x00000000_0xffffffff", None),
        ("/managed-ledgers/t/../x", None),
        ("/", None),
        ("/schemas/t/ns", None),
    ],
)
def test_leak_shapes(path: str, leak: str | None) -> None:
    shape = leak_shape(path)
    assert (shape.leak if shape else None) == leak


def _ledger_action(lid: int, path: str) -> Action:
    return Action(
        id=f"ledger-{lid}",
        kind=KIND_DELETE_LEDGER,
        store="local",
        path=path,
        ledger_id=lid,
        finding=FindingRef("k", "orphan-ledger"),
        preconditions=Precondition(znodes=(znode(path),)),
        bytes=0,
        time_ms=0,
    )


def _subtree_action(root: str, paths: list[str], store: str = "local", leak: str | None = None) -> Action:
    return Action(
        id="s",
        kind=KIND_DELETE_SUBTREE,
        store=store,
        path=root,
        leak=leak,
        finding=FindingRef("k", "znode-leak"),
        preconditions=Precondition(znodes=tuple(znode(p, store=store) for p in paths)),
        bytes=0,
        time_ms=0,
    )


@given(st.integers(min_value=0, max_value=2**63 - 1), st.integers(min_value=0, max_value=2**63 - 1))
def test_ledger_id_must_be_the_one_its_path_encodes(a: int, b: int) -> None:
    problem = action_problem(_ledger_action(a, ledger_path(b)), ledgers_root="/ledgers")
    assert (problem is None) == (a == b)


@pytest.mark.parametrize(
    ("action", "words"),
    [
        (_ledger_action(5, "/ledgers/INSTANCEID"), "not a ledger metadata znode"),
        (_subtree_action("/managed-ledgers/t/ns", ["/managed-ledgers/t/ns", "/admin/clusters/x"]), "outside"),
        (_subtree_action("/admin/clusters", ["/admin/clusters"], "config"), "protected root"),
        (
            _subtree_action(
                "/admin/partitioned-topics/t/ns/persistent/x", ["/admin/partitioned-topics/t/ns/persistent/x"], "local"
            ),
            "config store",
        ),
        (_subtree_action("/schemas/t/ns/x", ["/schemas/t/ns/x"], leak="bundle-data"), "is a schema root"),
        (_subtree_action("/schemas/t/ns/x", ["/schemas/t/ns/x/y"]), "not among the znodes"),
    ],
)
def test_unsafe_actions(action: Action, words: str) -> None:
    problem = action_problem(action, ledgers_root="/ledgers")
    assert problem is not None and words in problem


class FakeTree:
    def __init__(self, nodes: dict[tuple[str, str], bytes]) -> None:
        self.nodes = nodes

    def exists(self, store: str, path: str) -> bool:
        return (store, path) in self.nodes

    def children(self, store: str, path: str) -> list[str] | None:
        if (store, path) not in self.nodes:
            return None
        pre = path.rstrip("/") + "/"
        return sorted({p[len(pre) :].split("/")[0] for s, p in self.nodes if s == store and p.startswith(pre)})

    def data(self, store: str, path: str) -> bytes | None:
        return self.nodes.get((store, path))


def test_schema_leak_sees_a_v1_topic_in_any_cluster() -> None:
    a = _subtree_action("/schemas/t/ns/x", ["/schemas/t/ns/x"])
    empty = FakeTree({("local", "/managed-ledgers/t"): b""})
    assert prove_leak(a, [SubtreeNode("/schemas/t/ns/x", b"")], empty) is None
    v1 = FakeTree(
        {
            ("local", "/managed-ledgers/t"): b"",
            ("local", "/managed-ledgers/t/c1"): b"",
            ("local", "/managed-ledgers/t/c1/ns"): b"",
            ("local", "/managed-ledgers/t/c1/ns/persistent"): b"",
            ("local", "/managed-ledgers/t/c1/ns/persistent/x-partition-3"): b"",
        }
    )
    reason = prove_leak(a, [SubtreeNode("/schemas/t/ns/x", b"")], v1)
    assert reason is not None and "t/c1/ns/persistent/x-partition-3" in reason


def test_every_leak_kind_has_a_re_check() -> None:
    roots = {
        "managed-ledgers-tenant": "/managed-ledgers/g",
        "managed-ledgers-namespace": "/managed-ledgers/t/n",
        "partitioned-topic": "/admin/partitioned-topics/t/n/persistent/x",
        "schema": "/schemas/t/n/x",
        "bundle-data": "/loadbalance/bundle-data/t/n",
        "local-policies": "/admin/local-policies/t/n",
    }
    assert set(roots) == set(LEAK_KINDS)
    for kind, root in roots.items():
        shape = leak_shape(root)
        assert shape is not None and shape.leak == kind
        a = _subtree_action(root, [root], store=shape.store)
        assert prove_leak(a, [SubtreeNode(root, b"")], FakeTree({})) is None, kind
