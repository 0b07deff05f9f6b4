"""Restore's grouping (no ZooKeeper): a backed-up znode an action rewrote (``replaced_by``) is only ever restored
with its whole action, whatever ``--only`` selects and however many plans share the path. This is why restore
has no path that puts a rewritten znode back on its own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pulsar_ops.repair.backup import BackupEntry
from pulsar_ops.repair.restore import rewrite_groups, select_entries

ML = "/managed-ledgers/t/ns/persistent/x"
ACL = ({"perms": 31, "scheme": "world", "id": "anyone"},)


def entry(path: str, action: str, at: int, *, sha: str = "1", replaced_by: str | None = None) -> BackupEntry:
    return BackupEntry("local", path, sha * 64, {"version": 0}, ACL, action, "p", "c", at, replaced_by)


TRIM = (  # a trim-unloaded action: its managed-ledger znode rewritten, two ledger znodes deleted
    entry(ML, "trim-1", 10, replaced_by="2" * 64),
    entry("/ledgers/00/0000/L0007", "trim-1", 10, sha="3"),
    entry("/ledgers/00/0000/L0008", "trim-1", 10, sha="4"),
)
LOAD = entry(ML, "load-1", 5)  # an earlier load-topic of the same topic (same bytes, nothing rewritten)
OTHER = entry("/ledgers/00/0000/L0100", "ledger-100", 7, sha="5")


@pytest.mark.parametrize("only", [None, ML, "/ledgers", "/ledgers/00/0000/L0008", "/managed-ledgers/t"])
@pytest.mark.parametrize("everything", [(*TRIM, OTHER), (LOAD, *TRIM, OTHER), (OTHER, *TRIM, LOAD)])
def test_every_selected_rewritten_znode_is_in_its_whole_action(
    only: str | None, everything: tuple[BackupEntry, ...]
) -> None:
    selected = select_entries(everything, only)
    groups = rewrite_groups(everything, selected, None)
    grouped = {(e.store, e.path, e.action_id) for g in groups for e in g.entries}
    for e in selected:
        if e.replaced_by is not None:
            assert (e.store, e.path, e.action_id) in grouped, (only, e)
    for g in groups:  # whole: the rewritten znode and every znode its action deleted
        assert g.info.replaced_by is not None and {e.path for e in g.others} == {e.path for e in TRIM[1:]}
    assert ({g.action_id for g in groups} == {"trim-1"}) == any(e.action_id == "trim-1" for e in selected)


def test_a_newer_plain_backup_of_the_path_leaves_no_rewritten_entry_selected() -> None:
    later = replace(LOAD, backed_up_at_ms=20)  # backed up after the trim: the newest backup of the path wins
    selected = select_entries((*TRIM, later), ML)
    assert [e.action_id for e in selected] == ["load-1"] and all(e.replaced_by is None for e in selected)
    assert rewrite_groups((*TRIM, later), selected, None) == []
