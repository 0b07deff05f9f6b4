"""`scan-bookie` as a whole: listing, the no-write guarantee, vanishing logs, compaction names, the local index."""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pulsar_ops.bookiescan import local_index, run
from pulsar_ops.bookiescan.local_index import decode_ledger_data, read_local_index
from pulsar_ops.bookiescan.run import ByteThrottle, ScanConfig, scan
from pulsar_ops.errors import ConfigError
from pulsar_ops.testing.bookie_dirs import skipped_of
from pulsar_ops.testing.entrylog_writer import (
    LocalIndexRow,
    encode_ledger_data,
    entry_log_path,
    write_entry_log,
    write_last_id,
    write_ledger_index,
)

ENTRIES = [(1, 0, b"abc"), (2, 0, 10), (1, 1, 5)]


def make_bookie(root: Path) -> tuple[Path, Path]:
    """Two ledger dirs (the same log id in both), every variant, a local index in each."""
    d0, d1 = root / "ledgers0", root / "ledgers1"
    write_entry_log(entry_log_path(d0, 1), 1, ENTRIES)
    write_entry_log(entry_log_path(d0, 2), 2, [(4, 0, 30)], logger="direct")
    write_entry_log(entry_log_path(d0, 3), 3, ENTRIES, header_version=0, with_map=False)
    write_entry_log(entry_log_path(d0, 4), 4, [(5, 0, 1), (6, 0, 2)], with_map=False, truncate_last=True)
    write_last_id(d0, 4)
    write_entry_log(entry_log_path(d1, 1), 1, [(9, 0, 7)])
    write_ledger_index(d0, [LocalIndexRow(1), LocalIndexRow(2, fenced=True), LocalIndexRow(5, limbo=True)])
    write_ledger_index(d1, [LocalIndexRow(9)])
    return d0, d1


def tree_state(root: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            out[str(p.relative_to(root))] = (st.st_size if p.is_file() else 0, st.st_mtime_ns, digest)
    return out


def table(out: Path, name: str) -> list[dict[str, object]]:
    return pq.read_table(out / f"{name}.parquet").to_pylist()  # type: ignore[no-any-return]


def test_scan_reads_every_variant(tmp_path: Path) -> None:
    d0, d1 = make_bookie(tmp_path / "bookie")
    out = tmp_path / "scan"
    m = scan(ScanConfig([d0, d1], "bk-0:3181", out))
    assert m["format"] == "pulsar-ops-bookie-scan" and m["format_version"] == 2 and m["complete"]
    assert m["logs"] == {"map": 3, "scanned": 2, "skipped": 0}
    assert m["index"]["status"] == "read" and m["index"]["binding"].startswith("rocksdict ")
    assert m["last_ids"] == {str(d0): 4, str(d1): None}
    logs = {(r["ledger_dir"], r["log_id"]): r for r in table(out, "entry_logs")}
    assert logs[(str(d0), 1)]["read_via"] == "map" and logs[(str(d1), 1)]["read_via"] == "map"
    assert logs[(str(d0), 2)]["logger"] == "direct"
    assert (logs[(str(d0), 3)]["reason"], logs[(str(d0), 3)]["header_version"]) == ("version-0", 0)
    assert logs[(str(d0), 4)]["reason"] == "active:truncated"  # the newest log, no map, last record cut
    assert logs[(str(d0), 1)]["file"] == "current/1.log" and logs[(str(d0), 1)]["data_bytes"] == 78
    pairs = {(r["ledger_dir"], r["log_id"], r["ledger_id"]): r["bytes"] for r in table(out, "entry_log_ledgers")}
    assert pairs[(str(d1), 1, 9)] == 4 + 16 + 7
    assert pairs[(str(d0), 4, 5)] == 21 and (str(d0), 4, 6) not in pairs
    idx = {(r["index_dir"], r["ledger_id"]): (r["fenced"], r["limbo"]) for r in table(out, "local_index")}
    assert idx == {(str(d0), 1): (False, False), (str(d0), 2): (True, False), (str(d0), 5): (False, True),
                   (str(d1), 9): (False, False)}  # fmt: skip
    assert m["tables"] == {"entry_logs": 5, "entry_log_ledgers": 7, "local_index": 4, "skipped_logs": 0}
    assert json.loads((out / "manifest.json").read_text()) == m
    assert sorted(p.name for p in out.iterdir()) == [
        "entry_log_ledgers.parquet", "entry_logs.parquet", "local_index.parquet", "manifest.json",
        "skipped_logs.parquet"]  # fmt: skip


def test_scan_writes_nothing_into_the_bookie(tmp_path: Path) -> None:
    """Names, sizes, contents and mtimes of the ledger dirs and the RocksDB index dirs are unchanged; no new file."""
    root = tmp_path / "bookie"
    d0, d1 = make_bookie(root)
    before = tree_state(root)
    assert any("ledgers/CURRENT" in k for k in before)
    scan(ScanConfig([d0, d1], "bk-0:3181", tmp_path / "scan", max_scan_mb_s=0))
    assert tree_state(root) == before


def test_a_log_deleted_while_read_and_one_deleted_before(tmp_path: Path) -> None:
    """GC deletes logs at any time: a log unlinked after open (still readable) or before open is skipped as
    vanished, its bytes are not reported, and the scan stays complete."""
    d = tmp_path / "ledgers"
    for i in (1, 2, 3):
        write_entry_log(entry_log_path(d, i), i, [(i, 0, 5)])

    def on_open(path: Path) -> None:
        if path.name == "1.log":
            path.unlink()  # the open one: deleted while being read
            entry_log_path(d, 2).unlink()  # the next one: gone before it is opened

    m = scan(ScanConfig([d], "b:1", tmp_path / "scan", on_open=on_open))
    assert m["complete"] and m["logs"] == {"map": 1, "scanned": 0, "skipped": 2}
    assert sorted(s["file"] for s in skipped_of(tmp_path / "scan")) == ["current/1.log", "current/2.log"]
    assert m["skipped"]["by_reason"] == {"vanished": 2}
    assert {r["log_id"] for r in table(tmp_path / "scan", "entry_log_ledgers")} == {3}


def test_compaction_file_names(tmp_path: Path) -> None:
    """TransactionalEntryLogCompactor: <new>.log.compacting, then a hard link <new>.log.<old>.compacted
    (LedgerDirUtil.COMPACTED_FILE_PATTERN); listed, flagged, their pairs not counted as a log's."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    write_entry_log(d / "current" / "a.log.compacting", 10, [(1, 0, 5)])
    write_entry_log(d / "current" / "b.log.1.compacted", 11, [(1, 0, 5)])
    (d / "current" / "zz.log").write_bytes(b"")  # not a hex id
    (d / "current" / "notes.txt").write_bytes(b"x")
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    rows = {r["file"]: r for r in table(tmp_path / "scan", "entry_logs")}
    assert set(rows) == {"current/1.log", "current/a.log.compacting", "current/b.log.1.compacted"}
    assert rows["current/a.log.compacting"]["compacting"] and rows["current/a.log.compacting"]["log_id"] == 10
    assert rows["current/b.log.1.compacted"]["log_id"] == 11 and not rows["current/1.log"]["compacting"]
    assert {r["log_id"] for r in table(tmp_path / "scan", "entry_log_ledgers")} == {1}
    assert skipped_of(tmp_path / "scan") == [{"ledger_dir": str(d), "file": "current/zz.log", "reason": "bad-name"}]
    assert not m["complete"]


def test_index_absent_unavailable_and_undecodable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `ledgers` DB: absent (complete); binding missing with a DB present: unavailable (not complete)."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    m = scan(ScanConfig([d], "b:1", tmp_path / "s1"))
    assert m["index"]["status"] == "absent" and m["complete"]
    write_ledger_index(d, [LocalIndexRow(1)])
    monkeypatch.setattr(local_index, "binding", lambda: None)
    monkeypatch.setattr(run, "binding", lambda: None)
    m = scan(ScanConfig([d], "b:1", tmp_path / "s2"))
    assert m["index"]["status"] == "unavailable" and m["index"]["binding"] is None and not m["complete"]
    assert m["logs"]["map"] == 1  # the scan went on without the index


def test_undecodable_index_value(tmp_path: Path) -> None:
    """LedgerMetadataIndex parses every value of a key >= 0 as LedgerData; one that is not makes the index an
    error (the rest is still reported); the reserved negative key is skipped."""
    from rocksdict import Options, Rdict

    d = tmp_path / "ledgers"
    write_ledger_index(d, [LocalIndexRow(1)])
    db = Rdict(str(d / "current" / "ledgers"), Options(raw_mode=True))
    db[struct.pack(">q", 2)] = b"\x08"  # truncated
    db.close()
    r = read_local_index(d, tmp_path / "scratch")
    assert r.status == "error" and r.undecodable == 1 and [x.ledger_id for x in r.rows] == [1]


def test_decode_ledger_data() -> None:
    """DbLedgerStorageDataFormats.proto LedgerData: exists=1, fenced=2, masterKey=3 required, limbo=5 optional."""
    assert decode_ledger_data(encode_ledger_data(LocalIndexRow(1, fenced=True, limbo=True), b"k")) == (True, True, True)
    assert decode_ledger_data(encode_ledger_data(LocalIndexRow(1), b"")) == (True, False, False)
    assert decode_ledger_data(b"\x08\x01\x10\x00\x1a\x00\x22\x02ab") == (True, False, False)  # explicitLac
    for bad in (b"", b"\x08\x01\x10\x00", b"\x08\x01\x1a\x00", b"\x08\x01\x10\x00\x1a\x05ab", b"\x0b"):
        with pytest.raises(ValueError):
            decode_ledger_data(bad)


def test_refuses_out_inside_a_scanned_dir_and_non_bookie_dirs(tmp_path: Path) -> None:
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    with pytest.raises(ConfigError, match="inside the scanned directory"):
        scan(ScanConfig([d], "b:1", d / "current" / "scan"))
    with pytest.raises(ConfigError) as e:
        scan(ScanConfig([tmp_path], "b:1", tmp_path.parent / "scan-x"))
    assert e.value.code == "bookie-dir-invalid"
    with pytest.raises(ConfigError, match="twice"):
        scan(ScanConfig([d, tmp_path / "ledgers" / "."], "b:1", tmp_path / "s"))
    with pytest.raises(ConfigError, match="2 index dir"):
        scan(ScanConfig([d], "b:1", tmp_path / "s", index_dirs=[d, d]))


def test_throttle_limits_the_average_rate() -> None:
    slept: list[float] = []
    t = ByteThrottle(10.0, sleep=slept.append)  # 10 MB/s, 5 MB burst
    for _ in range(10):
        t(2_000_000)
    assert sum(slept) >= (20_000_000 - 5_000_000) / 10e6 * 0.9
    unlimited: list[float] = []
    u = ByteThrottle(0, sleep=unlimited.append)
    u(10**9)
    assert unlimited == []


def test_scanned_logs_are_throttled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--max-scan-mb-s bounds the scanned path (GC's own scans go through a throttle too), maps included."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(i, 0, 20_000) for i in range(150)], with_map=False)  # ~3 MB
    write_entry_log(entry_log_path(d, 2), 2, [(i, 0, 20_000) for i in range(150)])
    slept: list[float] = []

    class Recording(ByteThrottle):
        def __init__(self, mb_per_s: float) -> None:
            super().__init__(mb_per_s, sleep=slept.append)

    monkeypatch.setattr(run, "ByteThrottle", Recording)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan", max_scan_mb_s=1.0, chunk=256 * 1024))
    assert m["logs"] == {"map": 1, "scanned": 1, "skipped": 0}
    assert m["bytes_scanned"] >= 2_500_000
    # 1 MB/s with half a second of burst: at least (bytes - 0.5 MB) / 1 MB/s of sleeping was asked for
    assert sum(slept) >= (m["bytes_scanned"] - 500_000) / 1e6 * 0.95
    assert m["throttled_s"] == pytest.approx(sum(slept), abs=0.01)
    assert m["settings"] == {"max_scan_mb_s": 1.0}


def test_a_read_error_makes_the_scan_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreadable log is skipped with its errno and the scan is not complete (an error is not absence)."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    write_entry_log(entry_log_path(d, 2), 2, [(2, 0, 5)])
    real = run.read_entry_log

    def failing(fd: int, size: int, **kw: object) -> object:
        if size and os.readlink(f"/proc/self/fd/{fd}").endswith("/1.log"):
            raise OSError(5, "Input/output error")
        return real(fd, size, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(run, "read_entry_log", failing)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert not m["complete"]
    want = [{"ledger_dir": str(d), "file": "current/1.log", "reason": "read-error:EIO"}]
    assert skipped_of(tmp_path / "scan") == want
    rows = {r["log_id"]: r for r in table(tmp_path / "scan", "entry_logs")}
    assert rows[1]["read_via"] == "skipped" and rows[2]["read_via"] == "map"


def test_an_index_that_cannot_be_opened_is_an_error(tmp_path: Path) -> None:
    """A `ledgers` directory RocksDB cannot open (here: CURRENT names a missing MANIFEST) is status error, and the
    scan is partial; the entry logs are still read."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    write_ledger_index(d, [LocalIndexRow(1)])
    (d / "current" / "ledgers" / "CURRENT").write_text("MANIFEST-999999\n")
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["index"]["status"] == "error" and m["index"]["reason"] and not m["complete"]
    assert m["logs"]["map"] == 1 and m["tables"]["local_index"] == 0
