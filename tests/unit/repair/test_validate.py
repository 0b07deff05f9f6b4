"""Re-verification rules: targets, custom metadata, references re-decoded, check ops, delete order."""

from __future__ import annotations

from pulsar_ops.formats.ledger_path import ledger_path
from pulsar_ops.repair.actions import (
    KIND_DELETE_LEDGER,
    KIND_DELETE_SUBTREE,
    Action,
    FindingRef,
    Precondition,
    Reference,
    ZnodeRef,
)
from pulsar_ops.repair.validate import (
    Observed,
    ObservedRef,
    decide_delete,
    decide_mark,
    delete_order,
    sha256_hex,
)
from tests.unit.repair.encoders import cursor_info, ledger_md, ml_info, schema_locator

ML = "t/ns/persistent/topic"
ML_PATH = "/managed-ledgers/" + ML
CUSTOM = {"application": "pulsar", "component": "managed-ledger", "pulsar/managed-ledger": ML}
LID = 42
MD = ledger_md(CUSTOM)
PATH = ledger_path(LID)


def ledger_action(data: bytes = MD, refs: tuple[Reference, ...] = ()) -> Action:
    target = ZnodeRef("local", PATH, 0, 500, sha256_hex(data))
    return Action(
        id=f"ledger-{LID}",
        kind=KIND_DELETE_LEDGER,
        store="local",
        path=PATH,
        ledger_id=LID,
        finding=FindingRef("k", "orphan-ledger"),
        preconditions=Precondition(znodes=(target,), custom_metadata=tuple(sorted(CUSTOM.items())), references=refs),
        bytes=1000,
        time_ms=0,
    )


def node(path: str, data: bytes, version: int = 0, mzxid: int = 500, exists: bool = True) -> Observed:
    return Observed("local", path, exists, data, version, mzxid)


def test_target_unchanged_proceeds_and_deletes_with_its_version() -> None:
    v = decide_mark(ledger_action(), [node(PATH, MD)])
    assert v.proceed and v.deletes == ((PATH, 0),)


def test_target_changes_are_skips() -> None:
    a = ledger_action()
    assert "gone" in decide_mark(a, [node(PATH, MD, exists=False)]).reason
    assert "version 0 -> 1" in decide_mark(a, [node(PATH, MD, version=1)]).reason
    assert "mzxid" in decide_mark(a, [node(PATH, MD, mzxid=999)]).reason
    other = ledger_md(CUSTOM, length=2000)
    assert "bytes changed" in decide_mark(a, [node(PATH, other)]).reason
    eph = Observed("local", PATH, True, MD, 0, 500, ephemeral_owner=7)
    assert "ephemeral" in decide_mark(a, [eph]).reason


def test_custom_metadata_mismatch_is_a_skip_even_when_plan_hash_matches() -> None:
    moved = ledger_md({**CUSTOM, "pulsar/managed-ledger": "t/ns/persistent/other"})
    a = ledger_action(data=moved)  # plan recorded these bytes, but expected identity says topic
    v = decide_mark(a, [node(PATH, moved)])
    assert not v.proceed and "pulsar/managed-ledger changed" in v.reason


def refs_action() -> Action:
    return ledger_action(
        refs=(
            Reference("managed-ledger", ZnodeRef("local", ML_PATH, 3, 10, None)),
            Reference("cursor", ZnodeRef("local", ML_PATH + "/sub", 1, 11, None)),
        )
    )


def test_changed_reference_versions_are_rechecked_and_guarded() -> None:
    refs = [
        ObservedRef("managed-ledger", node(ML_PATH, ml_info([40, 41, 43]), version=9)),
        ObservedRef("cursor", node(ML_PATH + "/sub", cursor_info(44), version=5)),
        ObservedRef("cursor", node(ML_PATH + "/new", cursor_info(-1, compacted=45), version=0)),
    ]
    v = decide_delete(refs_action(), [node(PATH, MD)], refs)
    assert v.proceed
    assert v.checks == ((ML_PATH, 9), (ML_PATH + "/new", 0), (ML_PATH + "/sub", 5))


def test_re_referenced_ledger_is_skipped_for_every_reference_kind() -> None:
    cases = [
        ("managed-ledger", ml_info([41, LID])),
        ("managed-ledger", ml_info([LID], compression="LZ4")),
        ("cursor", cursor_info(LID)),
        ("cursor", cursor_info(-1, compacted=LID)),
        ("cursor", cursor_info(-1, buckets={"#pulsar.internal.delayed.bucket_1_2": str(LID)})),
        ("schema-locator", schema_locator([7, LID])),
    ]
    for role, data in cases:
        v = decide_delete(refs_action(), [node(PATH, MD)], [ObservedRef(role, node("/x", data, version=2))])
        assert not v.proceed, (role, data)
        assert f"ledger {LID} is referenced again by /x" in v.reason


def test_undecodable_reference_is_never_evidence_of_absence() -> None:
    bad = [
        ObservedRef("managed-ledger", node(ML_PATH, b"\xff\xfe garbage")),
        ObservedRef("cursor", node("/c", cursor_info(-1, buckets={"#pulsar.internal.delayed.bucket_1_2": "x"}))),
    ]
    for r in bad:
        v = decide_delete(refs_action(), [node(PATH, MD)], [r])
        assert not v.proceed and "cannot be decoded" in v.reason


def test_missing_references_need_no_check() -> None:
    refs = [ObservedRef("managed-ledger", node(ML_PATH, b"", exists=False))]
    v = decide_delete(refs_action(), [node(PATH, MD)], refs)
    assert v.proceed and v.checks == ()


def subtree_action() -> Action:
    zs = (
        ZnodeRef("local", "/r", 0, 1, sha256_hex(b"")),
        ZnodeRef("local", "/r/a", 2, 2, sha256_hex(b"a")),
        ZnodeRef("local", "/r/a/b", 0, 3, sha256_hex(b"b")),
        ZnodeRef("local", "/r/c", 0, 4, sha256_hex(b"c")),
    )
    return Action(
        id="s",
        kind=KIND_DELETE_SUBTREE,
        store="local",
        path="/r",
        finding=FindingRef("k", "znode-leak"),
        preconditions=Precondition(znodes=zs),
        bytes=3,
        time_ms=0,
    )


def test_subtree_children_first_and_new_child_is_a_skip() -> None:
    a = subtree_action()
    assert delete_order(a) == (("/r/a/b", 0), ("/r/a", 2), ("/r/c", 0), ("/r", 0))
    now = [node("/r", b"", 0, 1), node("/r/a", b"a", 2, 2), node("/r/a/b", b"b", 0, 3), node("/r/c", b"c", 0, 4)]
    assert decide_delete(a, now, []).proceed
    v = decide_delete(a, [*now, node("/r/a/new", b"")], [])
    assert not v.proceed and "/r/a/new appeared" in v.reason
    v = decide_delete(a, now[:-1], [])
    assert not v.proceed and "/r/c is gone" in v.reason


def test_pure_modules_import_no_io_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import pulsar_ops.repair.planner, pulsar_ops.repair.validate, pulsar_ops.repair.plan_file;"
        "from tests.unit.repair.encoders import ml_info;"
        "from pulsar_ops.repair.validate import referenced_ledgers;"
        "referenced_ledgers('managed-ledger', ml_info([1]), '/x');"
        "print(sorted(m for m in ('kazoo', 'httpx', 'pyspark', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
