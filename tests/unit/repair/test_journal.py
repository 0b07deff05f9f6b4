"""Journal: state machine, fsync'd JSONL, torn last line, refusing another unfinished plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pulsar_ops.errors import JournalError
from pulsar_ops.repair import journal as J


def open_j(path: Path, checksum: str = "c1", actions: int = 2) -> J.Journal:
    return J.Journal.open(path, plan_checksum=checksum, plan_id=f"id-{checksum}", actions=actions, backup_dir="/b")


def test_states_persist_and_reload(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p) as j:
        j.record("a", J.MARKED, backup=["x"])
        j.record("a", J.DELETING)
        j.record("a", J.COMMITTED)
        j.record("b", J.SKIPPED, reason="changed")
    j2 = J.Journal.read_only(p, plan_checksum="c1")
    assert j2.state("a").state == J.COMMITTED and j2.state("a").history == ["marked", "deleting", "committed"]
    assert j2.state("a").marked_at_ms is not None and j2.state("a").backup == ("x",)
    assert j2.state("b").reason == "changed" and j2.state("zzz").state == J.PENDING
    lines = [json.loads(x) for x in p.read_text().splitlines()]
    assert lines[0]["type"] == "plan" and all(x["plan"] == "c1" for x in lines)


def test_illegal_transitions_refused(tmp_path: Path) -> None:
    with open_j(tmp_path / "j.jsonl") as j:
        with pytest.raises(JournalError):
            j.record("a", J.DELETING)  # never marked
        j.record("a", J.MARKED)
        j.record("a", J.DELETING)
        j.record("a", J.COMMITTED)
        for state in (J.DELETING, J.COMMITTED, J.FAILED, J.MARKED):
            with pytest.raises(JournalError):
                j.record("a", state)  # nothing follows committed: no double delete


def test_torn_last_line_is_dropped_before_appending(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p) as j:
        j.record("a", J.MARKED)
    with open(p, "ab") as fh:
        fh.write(b'{"type":"action","plan":"c1","action":"a","sta')
    with open_j(p) as j:
        assert j.state("a").state == J.MARKED
        j.record("a", J.DELETING)
    assert J.Journal.read_only(p, plan_checksum="c1").state("a").state == J.DELETING
    assert all(json.loads(x) for x in p.read_text().splitlines())


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p) as j:
        j.record("a", J.MARKED)
    p.write_text(p.read_text() + "garbage\n" + p.read_text().splitlines()[1] + "\n")
    with pytest.raises(JournalError):
        open_j(p)


def test_refuses_another_plan_over_an_unfinished_journal(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p, "c1", actions=2) as j:
        j.record("a", J.MARKED)
    with pytest.raises(JournalError) as e:
        open_j(p, "c2")
    assert e.value.code == "journal-conflict" and "id-c1" in e.value.message
    with open_j(p, "c1") as j:  # the same plan resumes
        j.record("a", J.DELETING)
        j.record("a", J.COMMITTED)
        j.record("b", J.SKIPPED, reason="r")
    with open_j(p, "c2") as j:  # once settled another plan may use the file
        j.record("x", J.MARKED)
    assert J.Journal.read_only(p, plan_checksum="c1").state("a").state == J.COMMITTED


def test_one_apply_per_journal_at_a_time(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p):
        with pytest.raises(JournalError) as e:
            open_j(p)
        assert "locked" in e.value.message
    with open_j(p) as j:  # released on close
        j.record("a", J.MARKED)
