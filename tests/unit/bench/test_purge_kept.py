"""``bench scrape --keep-data-dir``: the kept directory keeps ZooKeeper's ``PurgeTxnLog`` set, not every snapshot
the server's starts wrote."""

from __future__ import annotations

from pathlib import Path

from pulsar_ops.bench.scrape import purge_kept


def _touch(d: Path, *names: str) -> None:
    for n in names:
        (d / n).write_bytes(b"x")


def test_keeps_three_newest_snapshots_and_the_logs_they_need(tmp_path: Path) -> None:
    d = tmp_path / "data" / "version-2"
    d.mkdir(parents=True)
    _touch(d, "snapshot.0", "snapshot.fbe", "snapshot.fc0", "snapshot.fc2", "snapshot.fc4.gz", "snapshot.fc6")
    _touch(d, "log.1", "log.fbf", "log.fc1", "log.fc3", "log.fc5", "log.fc7", "acceptedEpoch", "snapshot.zz")
    removed = purge_kept(tmp_path / "data")
    assert removed == ["log.1", "log.fbf", "snapshot.0", "snapshot.fbe", "snapshot.fc0"]
    left = sorted(p.name for p in d.iterdir())
    # log.fc1 starts before snapshot.fc2 (the oldest kept): FileTxnLog.getLogFiles names it for that snapshot
    assert left == [
        "acceptedEpoch",
        "log.fc1",
        "log.fc3",
        "log.fc5",
        "log.fc7",
        "snapshot.fc2",
        "snapshot.fc4.gz",
        "snapshot.fc6",
        "snapshot.zz",
    ]
    assert purge_kept(tmp_path / "data") == []


def test_three_or_fewer_snapshots_remove_nothing(tmp_path: Path) -> None:
    d = tmp_path / "data" / "version-2"
    d.mkdir(parents=True)
    _touch(d, "snapshot.0", "snapshot.5", "log.1", "log.6")
    assert purge_kept(tmp_path / "data") == []
    assert len(list(d.iterdir())) == 4
