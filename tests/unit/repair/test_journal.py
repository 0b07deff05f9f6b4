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


# --- final and transient skips ----------------------------------------------------------------------------


def test_a_transient_skip_resumes_from_the_state_it_interrupted(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p) as j:
        j.record("a", J.SKIPPED, reason="cannot read", final=False)  # at mark, from pending
        st = j.state("a")
        assert st.transient and not st.final and st.live == J.PENDING
        with pytest.raises(JournalError):
            j.record("a", J.DELETING)  # still never marked
        j.record("a", J.SKIPPED, reason="still cannot read", final=False)  # another transient skip
        j.record("a", J.MARKED, backup=["x"])
        j.record("a", J.SKIPPED, reason="no answer", final=False)  # at delete, from marked
        assert j.state("a").live == J.MARKED and j.state("a").marked_at_ms is not None
        j.record("a", J.DELETING)
        j.record("a", J.COMMITTED)
        j.record("b", J.MARKED)
        j.record("b", J.SKIPPED, reason="changed", final=True)
        for state in (J.MARKED, J.DELETING, J.SKIPPED, J.FAILED, J.COMMITTED):
            with pytest.raises(JournalError):
                j.record("b", state)  # nothing follows a final skip
    j2 = J.Journal.read_only(p, plan_checksum="c1")
    assert j2.state("a").history == ["skipped", "skipped", "marked", "skipped", "deleting", "committed"]
    assert j2.state("b").final and j2.state("b").reason == "changed"
    recs = [json.loads(x) for x in p.read_text().splitlines()]
    assert [r["final"] for r in recs if r.get("state") == "skipped"] == [False, False, False, True]


def test_a_skip_not_said_transient_is_final_and_old_records_read_as_final(tmp_path: Path) -> None:
    p = tmp_path / "j.jsonl"
    with open_j(p) as j:
        j.record("a", J.SKIPPED, reason="changed")  # unsaid: final, and written so
    assert json.loads(p.read_text().splitlines()[-1])["final"] is True
    old = tmp_path / "old.jsonl"
    lines = [json.loads(x) for x in p.read_text().splitlines()]
    lines[-1].pop("final")
    old.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with J.Journal.open(old, plan_checksum="c1", plan_id="id-c1", actions=2, backup_dir="/b") as j:
        assert j.state("a").final
        with pytest.raises(JournalError):
            j.record("a", J.MARKED)


def test_a_transient_skip_is_settled_for_another_plan(tmp_path: Path) -> None:
    """Nothing of a transiently skipped action is in flight: another plan may use the journal."""
    p = tmp_path / "j.jsonl"
    with open_j(p, actions=1) as j:
        j.record("a", J.SKIPPED, reason="cannot read", final=False)
    with open_j(p, checksum="c2", actions=1) as j:
        j.record("x", J.MARKED)
