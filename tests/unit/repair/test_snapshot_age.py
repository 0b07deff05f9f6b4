"""apply says how old the plan's snapshot is, and whether it was read from a ZooKeeper data directory."""

from __future__ import annotations

from pulsar_ops.repair.apply_run import snapshot_age_line


def test_a_live_snapshot_age() -> None:
    line = snapshot_age_line({"id": "s1", "finished_at_ms": 1_000}, 1_000 + 3_723_000)
    assert line.startswith("snapshot s1 is 1h2m old;") and "data directory" not in line


def test_a_data_directory_snapshot_names_its_zxid() -> None:
    line = snapshot_age_line({"id": "s2", "finished_at_ms": 0, "zxid": 0x1F}, 2 * 86_400_000 + 5 * 3_600_000)
    assert "is 2d5h old (read from a ZooKeeper data directory at zxid 0x1f)" in line


def test_no_recorded_time_is_unknown_not_zero() -> None:
    assert "age is unknown" in snapshot_age_line({"id": "s3"}, 5)
