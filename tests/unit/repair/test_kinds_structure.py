"""The shape of ``pulsar_ops/repair/`` (issue 34): a kind is one module, the rest dispatches through the registry.

* every action kind has its module ``repair/kinds/<kind>.py`` defining ``KIND`` and is in the registry;
* ``kinds/*`` import the facts and the ZooKeeper writer, never each other (nor the registry, planner or executor);
* kazoo is imported only by the ZooKeeper writer (the live facts read through its session);
* nothing outside ``kinds/`` and the registry branches on an action's kind.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from pulsar_ops.repair import registry
from pulsar_ops.repair.actions import ACTION_KINDS

REPAIR = Path(__file__).resolve().parents[3] / "pulsar_ops" / "repair"
KINDS_DIR = REPAIR / "kinds"
BRANCH = re.compile(r"kind (==|!=|in \()|\.kind (==|!=|in \()|match [a-z_.]*kind")


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _kind_modules() -> list[Path]:
    return sorted(p for p in KINDS_DIR.glob("*.py") if p.name != "__init__.py")


def test_every_kind_is_one_module_in_the_registry() -> None:
    assert sorted(registry.KINDS) == sorted(ACTION_KINDS)
    by_module = {p.stem.replace("_", "-") for p in _kind_modules()}
    assert by_module == {k.replace("delete-ledger-metadata", "delete-ledger") for k in ACTION_KINDS}
    for name, kind in registry.KINDS.items():
        assert registry.kind_of(name) is kind and kind.name == name


def test_kinds_never_import_each_other() -> None:
    forbidden = ("pulsar_ops.repair.kinds", "pulsar_ops.repair.registry", "pulsar_ops.repair.executor",
                 "pulsar_ops.repair.planner")  # fmt: skip
    for p in _kind_modules():
        bad = sorted(m for m in _imports(p) if m.startswith(forbidden))
        assert bad == [], (p.name, bad)
        assert any(m.startswith("pulsar_ops.repair.facts") for m in _imports(p)), p.name


def test_kazoo_is_confined_to_the_writer() -> None:
    users = sorted(
        str(p.relative_to(REPAIR)) for p in REPAIR.rglob("*.py") if any(m.split(".")[0] == "kazoo" for m in _imports(p))
    )
    assert users == ["zk_writer.py"]


def test_no_branch_on_the_action_kind_outside_the_kinds() -> None:
    hits = [
        f"{p.relative_to(REPAIR)}:{i}"
        for p in sorted(REPAIR.rglob("*.py"))
        if p.parent != KINDS_DIR and p.name != "registry.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if BRANCH.search(line)
    ]
    assert hits == []


def test_the_check_above_can_fail() -> None:
    assert BRANCH.search("    if a.kind == KIND_LOAD_TOPIC:")
    assert BRANCH.search("    if kind in (KIND_A, KIND_B):")
