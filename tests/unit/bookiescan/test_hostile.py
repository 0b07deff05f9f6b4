"""`scan-bookie` against hostile layouts (issue 36): each test builds the layout, scans it, and checks the scan
is bounded, partial rather than failed, and that the bookie's directories are unchanged (digest of the tree)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.bench.scan_bookie import run_cli_peak
from pulsar_ops.bookiescan import entrylog, local_index, run
from pulsar_ops.bookiescan.entrylog import read_entry_log, scan_default
from pulsar_ops.bookiescan.fileio import page_cache, read_small
from pulsar_ops.bookiescan.listing import LogList
from pulsar_ops.bookiescan.pairs import LedgerSums, aggregate
from pulsar_ops.bookiescan.run import ScanConfig, scan
from pulsar_ops.errors import ConfigError
from pulsar_ops.testing.bookie_dirs import skipped_of
from pulsar_ops.testing.entrylog_writer import (
    LocalIndexRow,
    entry_log_path,
    write_dense_log,
    write_entry_log,
    write_large_map_log,
    write_last_id,
    write_ledger_index,
)
from tests.unit.bookiescan.test_scan import tree_state

ENTRIES = [(1, 0, b"abc"), (2, 0, 10), (1, 1, 5), (7, 0, b"x" * 100)]
TRUTH = {1: 16 + 3 + 4 + 16 + 5 + 4, 2: 16 + 10 + 4, 7: 16 + 100 + 4}


def bookie(root: Path) -> Path:
    d = root / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, ENTRIES)
    write_last_id(d, 1)
    return d


def pairs_of(out: Path) -> dict[tuple[int, int], int]:
    import pyarrow.parquet as pq

    t = pq.read_table(out / "entry_log_ledgers.parquet").to_pylist()
    return {(r["log_id"], r["ledger_id"]): r["bytes"] for r in t}


def skipped(out: Path) -> dict[str, str]:
    return {s["file"]: s["reason"] for s in skipped_of(out)}


def out_error(cfg: ScanConfig) -> ConfigError:
    """Run a scan that must fail for its --out (``scan-out-invalid``, ENOSPC) and leave nothing: no manifest, no
    file under --out."""
    with pytest.raises(ConfigError) as e:
        scan(cfg)
    assert e.value.code == "scan-out-invalid" and "ENOSPC" in e.value.message
    out = Path(cfg.out)
    assert not (out / "manifest.json").exists()
    assert not [p for p in out.rglob("*") if p.is_file()]
    return e.value


def patch(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


# --- memory: peak RSS of a scan-bookie process ---------------------------------------------------------------


def _scan_rss(ledger_dir: Path, out: Path) -> tuple[int, float]:
    """Run scan-bookie in a child process; (exit code, its peak RSS in MB: VmHWM of the child's own image)."""
    args = ["scan-bookie", "--ledger-dirs", str(ledger_dir), "--bookie-id", "b:1", "--out", str(out),
            "--max-scan-mb-s", "0", "-q"]  # fmt: skip
    code, _, rss, err = run_cli_peak(args, out.parent)
    assert code in (0, 1), err
    assert rss > 0
    return code, rss


@pytest.mark.slow
def test_peak_rss_is_bounded_for_a_big_map_and_a_dense_small_record_log(tmp_path: Path) -> None:
    """A 256 MiB ledgers map (16.7M pairs; it peaked at 1.17 GB when read whole) and a 128 MiB active log of
    16-byte records (8.4M entries; ~850 MB when every record was kept): under 500 MB, every pair written."""
    d = tmp_path / "ledgers"
    pairs = (256 << 20) // 16
    map_bytes = write_large_map_log(entry_log_path(d, 1), 1, pairs, entry_bytes=20)
    dense = write_dense_log(entry_log_path(d, 2), 128 << 20, record_bytes=16, ledgers=50_000)
    before = tree_state(d)
    code, rss = _scan_rss(d, tmp_path / "scan")
    assert code == 0
    assert rss < 500, f"peak RSS {rss:.0f} MB"
    import json

    m = json.loads((tmp_path / "scan" / "manifest.json").read_text())
    assert m["tables"]["entry_log_ledgers"] == pairs + len(dense)
    assert m["logs"] == {"map": 1, "scanned": 1, "skipped": 0}
    import pyarrow.parquet as pq

    logs = {r["log_id"]: r for r in pq.read_table(tmp_path / "scan" / "entry_logs.parquet").to_pylist()}
    assert logs[1]["data_bytes"] == map_bytes and logs[2]["data_bytes"] == sum(dense.values())
    assert tree_state(d) == before
    assert not [p for p in (tmp_path / "scan").iterdir() if p.name.startswith(".")]  # no spill or tmp left


@pytest.mark.parametrize("limit", [1024, 5000])
def test_ledger_sums_spill_gives_the_in_memory_result(tmp_path: Path, limit: int) -> None:
    """LedgerSums over its memory limit spills to partitions and re-partitions; the sums are those of a sort."""
    rng = np.random.default_rng(7)
    ids = rng.integers(-(2**62), 2**62, 40_000, dtype=np.int64)
    ids = np.concatenate([ids, ids[:9_000], rng.integers(0, 300, 20_000, dtype=np.int64)])
    sizes = rng.integers(0, 1000, ids.shape[0], dtype=np.int64)
    s = LedgerSums(tmp_path / "spill", limit=limit)
    for lo in range(0, ids.shape[0], 700):
        s.add(ids[lo : lo + 700], sizes[lo : lo + 700])
    s.finish()
    assert s.spilled
    assert all(c[0].shape[0] <= 1000 for c in s.chunks(1000))
    want_ids, want_sizes = aggregate(ids, sizes)
    got_ids, got_sizes = s.arrays()
    assert np.array_equal(got_ids, want_ids) and np.array_equal(got_sizes, want_sizes)
    assert (s.pairs_in, s.ledgers, s.total) == (ids.shape[0], want_ids.shape[0], int(sizes.sum()))
    s.close()
    assert not list((tmp_path / "spill").iterdir())


def test_one_pair_pieces_cost_their_bytes_not_an_object_each(tmp_path: Path) -> None:
    """A valid ledgers map made of one-pair batches hands LedgerSums one tiny array per batch (a 64 MiB such map
    peaked at 863 MB RSS, ~300 bytes of objects per pair): 100,000 one-pair pieces stay within a few MB of Python
    memory under a 2M-pair limit (~2 MB; they took ~30 MB before), and the sums are exact."""
    import tracemalloc

    n = 100_000
    ids = (np.arange(n, dtype=np.int64) * 7) % 150_001
    tracemalloc.start()
    try:
        s = LedgerSums(tmp_path / "spill")
        for i in range(n):
            s.add(ids[i : i + 1], np.array([i], dtype=np.int64))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
    want_ids, want_sizes = aggregate(ids, np.arange(n, dtype=np.int64))
    got_ids, got_sizes = s.arrays()
    assert np.array_equal(got_ids, want_ids) and np.array_equal(got_sizes, want_sizes)
    s.close()


def test_no_room_under_out_is_an_out_error_not_a_bad_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--out filling up while a log's sums spill (a 4M-pair map on a 2 MiB tmpfs) skipped that log as
    ``read-error:None``: exit 1, a manifest blaming a sound log of the bookie. Now the run fails with
    scan-out-invalid and leaves no manifest."""
    import builtins
    import errno as _errno

    from pulsar_ops.bookiescan import pairs

    d = tmp_path / "ledgers"
    write_large_map_log(entry_log_path(d, 1), 1, 5_000, entry_bytes=33)

    def full(path: object, mode: str = "r", *a: object, **k: object) -> object:
        if "a" in mode or "w" in mode:
            raise OSError(_errno.ENOSPC, "No space left on device", str(path))
        return builtins.open(path, mode, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(pairs, "open", full, raising=False)
    out_error(ScanConfig([d], "b:1", tmp_path / "scan", sums_limit=1024))


def test_a_big_map_is_read_in_bounded_pieces(tmp_path: Path) -> None:
    """With a small in-memory limit the map spills, and the pairs written are exactly the map's."""
    d = tmp_path / "ledgers"
    total = write_large_map_log(entry_log_path(d, 1), 1, 30_017, entry_bytes=33)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan", sums_limit=1024))
    got = pairs_of(tmp_path / "scan")
    assert m["complete"] and m["logs"]["map"] == 1
    assert got == {(1, i): 33 for i in range(30_017)} and sum(got.values()) == total


def test_last_id_is_read_bounded_and_only_from_a_regular_file(tmp_path: Path) -> None:
    """lastId as a FIFO (an open or read would block), a symlink to /dev/zero (a whole read never ends) and a
    sparse 1 GiB file: the scan completes, the id is unknown (null), nothing was read past 4 KiB."""
    for name, make in (
        ("fifo", lambda p: os.mkfifo(p)),
        ("zero", lambda p: os.symlink("/dev/zero", p)),
        ("huge", lambda p: os.truncate(p, 1 << 30) if p.write_text("1a" + "0" * 5000) else None),
    ):
        d = bookie(tmp_path / name)
        (d / "current" / "lastId").unlink()
        make(d / "current" / "lastId")
        before = tree_state(d) if name == "huge" else None
        m = scan(ScanConfig([d], "b:1", tmp_path / f"scan-{name}"))
        assert m["complete"] and m["last_ids"] == {str(d): None}, name
        if before is not None:
            assert tree_state(d) == before
    assert len(read_small(tmp_path / "huge" / "ledgers" / "current" / "lastId")) == 4096


@pytest.mark.slow
def test_peak_rss_does_not_grow_with_the_names_in_a_ledger_dir(tmp_path: Path) -> None:
    """Names are streamed, not collected. Before, each junk `*.log` name cost ~1.3 KB (the sorted listing, a dict
    per skipped name, the manifest built whole: 500,000 names took 774 MB) and each empty log ~2 KB (a row object
    per log held to the end: 200,000 took 563 MB), so 100,000 + 50,000 grew the peak by ~230 MB over an empty
    directory's. Every junk name is still in skipped_logs with its reason; the manifest stays small."""
    empty = tmp_path / "empty" / "ledgers"
    (empty / "current").mkdir(parents=True)
    _, base = _scan_rss(empty, tmp_path / "scan0")
    d = tmp_path / "ledgers"
    cur = d / "current"
    cur.mkdir(parents=True)
    fd = os.open(cur, os.O_RDONLY)
    try:
        for i in range(100_000):
            os.close(os.open(f"zz{i}.log", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        for i in range(1, 50_001):
            os.close(os.open(f"{i:x}.log", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    out = tmp_path / "scan"
    code, rss = _scan_rss(d, out)
    assert code == 1  # partial: names like logs that are not logs
    assert rss - base < 40, f"peak RSS {rss:.0f} MB against {base:.0f} MB for an empty directory"
    import json

    import pyarrow.parquet as pq

    m = json.loads((out / "manifest.json").read_text())
    assert m["skipped"]["total"] == 100_000 and m["skipped"]["by_reason"] == {"bad-name": 100_000}
    assert (out / "manifest.json").stat().st_size < 64 << 10
    names = pq.read_table(out / "skipped_logs.parquet", columns=["file"]).column("file").to_pylist()
    assert len(names) == 100_000 and set(names) == {f"current/zz{i}.log" for i in range(100_000)}
    logs = pq.read_table(out / "entry_logs.parquet", columns=["log_id"]).column("log_id").to_pylist()
    assert sorted(logs) == list(range(1, 50_001))


# --- index --------------------------------------------------------------------------------------------------


def _index_bookie(root: Path, rows: int) -> Path:
    d = bookie(root)
    write_ledger_index(d, [LocalIndexRow(i, fenced=i % 3 == 0) for i in range(rows)])
    return d


def test_a_corrupted_sst_makes_the_index_error_not_a_short_read(tmp_path: Path) -> None:
    """64 bytes overwritten in the middle of the SST: the iterator stops early with an error status
    (Iterator::status), so the index is `error` and the scan partial, never `read` with fewer rows."""
    d = _index_bookie(tmp_path / "b", 20_000)
    ssts = sorted((d / "current" / "ledgers").glob("*.sst"))
    assert ssts
    sst = max(ssts, key=lambda p: p.stat().st_size)
    patch(sst, sst.stat().st_size // 2, b"\xa5" * 64)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["index"]["status"] == "error" and not m["complete"], m["index"]


def test_a_big_local_index_is_spooled_not_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bookie's index lists every ledger it holds (millions on a big bookie): one Python object per row took
    832 MB RSS for 2,000,000 ledgers, columns held whole 379 MB for 8,000,000 (9 bytes a ledger, growing with
    the index). Rows are spooled to the scratch directory ``SPOOL_ROWS`` at a time: with 10,000, reading 200,000
    ledgers holds under 0.5 MB of Python memory (columns held whole: 1.8 MB and more while they grew), and the
    table keeps each ledger's flags."""
    import tracemalloc

    import pyarrow.parquet as pq

    monkeypatch.setattr(local_index, "SPOOL_ROWS", 10_000, raising=False)
    monkeypatch.setattr(local_index, "COPY_CHUNK", 64 * 1024)  # the private copy's buffer, not what is measured
    n = 200_000
    rows = [LocalIndexRow(i * 3, exists=i % 7 != 0, fenced=i % 3 == 0, limbo=i % 5 == 0) for i in range(n)]
    d = bookie(tmp_path / "b")
    write_ledger_index(d, rows)
    tracemalloc.start()
    try:
        got = local_index.read_local_index(d, tmp_path / "scratch")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.status == "read" and got.count == n
    assert peak < 512 * 1024, peak
    assert [len(ids) for ids, _ in got.chunks(50_000)] == [50_000] * 4
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["tables"]["local_index"] == n and m["index"]["dirs"][0]["rows"] == n
    table = pq.read_table(tmp_path / "scan" / "local_index.parquet").to_pylist()
    want = [{"bookie_id": "b:1", "index_dir": str(d), "ledger_id": r.ledger_id, "exists": r.exists,
             "fenced": r.fenced, "limbo": r.limbo} for r in rows]  # fmt: skip
    assert sorted(table, key=lambda r: r["ledger_id"]) == want


def test_no_room_for_the_index_spool_is_an_out_error_not_an_unreadable_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's rows spool under --out: --out filling up there is the output's problem (scan-out-invalid, no
    manifest), not a bookie index reported `error` after three retries."""
    import builtins
    import errno as _errno

    d = bookie(tmp_path / "b")
    write_ledger_index(d, [LocalIndexRow(i) for i in range(50)])

    def full(path: object, mode: str = "r", *a: object, **k: object) -> object:
        if Path(str(path)).name in ("ids", "flags") and "w" in mode:
            raise OSError(_errno.ENOSPC, "No space left on device", str(path))
        return builtins.open(path, mode, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(local_index, "open", full, raising=False)
    out_error(ScanConfig([d], "b:1", tmp_path / "scan"))


def test_no_room_under_out_for_the_index_copy_is_an_out_error_not_an_unreadable_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is copied under --out before it is opened: --out too small for the copy (an 8 MiB tmpfs and a
    16 MB index of 2,000,000 ledgers, rehost30 N6) is the output's problem (scan-out-invalid, no manifest, nothing
    left), not a bookie index reported `error` in a partial scan; so is a write failing during the copy."""
    import errno as _errno
    import shutil as _shutil

    d = bookie(tmp_path / "b")
    write_ledger_index(d, [LocalIndexRow(i) for i in range(50)])
    real = _shutil.disk_usage

    def tiny(path: object) -> object:
        got = real(str(path))
        return type(got)(8 << 20, 0, 8 << 20)

    monkeypatch.setattr(local_index.shutil, "disk_usage", tiny)
    e = out_error(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert "index copy" in e.message
    monkeypatch.undo()

    class Full:
        def __init__(self, f: object) -> None:
            self.f = f

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *a: object) -> None:
            self.f.close()  # type: ignore[attr-defined]

        def write(self, data: bytes) -> int:
            raise OSError(_errno.ENOSPC, "No space left on device")

    import builtins

    def full(path: object, mode: str = "r", *a: object, **k: object) -> object:
        got = builtins.open(path, mode, *a, **k)  # type: ignore[call-overload]  # noqa: SIM115
        return Full(got) if mode == "xb" else got

    monkeypatch.setattr(local_index, "open", full, raising=False)
    out_error(ScanConfig([d], "b:1", tmp_path / "scan2"))


def test_an_index_claiming_more_than_its_own_disk_is_an_index_error_not_an_out_error(tmp_path: Path) -> None:
    """A 4 TiB sparse WAL in the index (session 29's X11) would need a 4 TiB copy: no --out is to blame, the files
    claim more than the filesystem they are on holds. The index is reported `error` (copy refused, nothing copied)
    and the scan is written, partial, as before a4c750a made a copy --out has no room for scan-out-invalid."""
    d = bookie(tmp_path / "b")
    write_ledger_index(d, [LocalIndexRow(i) for i in range(50)])
    wal = d / "current" / "ledgers" / "999999.log"
    with open(wal, "wb") as fh:
        fh.truncate(1 << 42)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["index"]["status"] == "error" and not m["complete"]
    assert "more than their filesystem holds" in json.dumps(m["index"])
    assert wal.stat().st_size == 1 << 42


def test_the_local_index_table_is_written_a_row_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bookie id and index directory repeat on every row of ``local_index``: built for the whole index at once
    they cost their bytes per ledger (8,000,000 ledgers: 659 MB RSS, 379 MB written a row group at a time). With
    row groups of 10,000, 200,000 rows of a 200-character index dir hold ~2 MB at a time, not ~40 MB."""
    import tracemalloc

    import pyarrow.parquet as pq

    from pulsar_ops.bookiescan import writer as writer_mod

    monkeypatch.setattr(writer_mod, "ROW_GROUP", 10_000)
    n = 200_000
    index_dir = "/" + "d" * 199
    w = writer_mod.ScanWriter(tmp_path / "scan")
    ids, flags = np.arange(n, dtype=np.int64), (np.arange(n) % 8).astype(np.uint8)
    tracemalloc.start()
    try:
        w.add_index_rows("b:1", index_dir, ids, flags)
        counts = w.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
    assert counts["local_index"] == n
    t = pq.read_table(tmp_path / "scan" / "local_index.parquet")
    assert t.num_rows == n and t.column("index_dir")[n - 1].as_py() == index_dir
    assert t.column("limbo").to_pylist()[:8] == [False] * 4 + [True] * 4
    assert t.column("fenced").to_pylist()[:4] == [False, False, True, True]


def test_pairs_repeat_a_long_ledger_dir_within_a_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger dir repeats on every ``entry_log_ledgers`` row: a 3,051-character ledger dir and a 2M-pair map
    took 3.2 GB RSS and then overflowed Arrow's 32-bit string offsets (internal-error, no manifest). The text
    built before a write stays within the budget (here 1 MiB: 200,000 rows of a 200-character dir traced
    52 MB before, 12 MB after), the rows unchanged."""
    import tracemalloc

    import pyarrow.parquet as pq

    from pulsar_ops.bookiescan import writer as writer_mod

    monkeypatch.setattr(writer_mod, "STRING_BUDGET", 1 << 20, raising=False)
    n = 200_000
    ledger_dir = "/" + "d" * 199
    w = writer_mod.ScanWriter(tmp_path / "scan")
    tracemalloc.start()
    try:
        for log_id in (1, 2):
            w.add_pairs("b:1", ledger_dir, log_id, np.arange(n // 2, dtype=np.int64), np.full(n // 2, 7, np.int64))
        counts = w.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 * 1024 * 1024, peak  # the numeric columns (~10 MB) and one budget of text; 52 MB before
    assert counts["entry_log_ledgers"] == n
    t = pq.read_table(tmp_path / "scan" / "entry_log_ledgers.parquet").to_pylist()
    assert t == [{"bookie_id": "b:1", "ledger_dir": ledger_dir, "log_id": log, "ledger_id": i, "bytes": 7}
                 for log in (1, 2) for i in range(n // 2)]  # fmt: skip


def test_index_copy_never_follows_links_nor_hard_links_the_bookies_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the index is read, every file of the copy is a private copy (st_nlink 1, another inode) and the
    bookie's SSTs keep st_nlink 1: a scan killed there leaves nothing linked to them. A `CURRENT` symlinked to
    /dev/zero is refused (index `error`), not copied until the disk is full."""
    d = _index_bookie(tmp_path / "b", 100)
    db = d / "current" / "ledgers"
    src_inodes = {p.stat().st_ino for p in db.iterdir()}
    seen: list[tuple[int, int]] = []
    real = local_index._iterate

    def spying(copy: Path) -> Iterator[tuple[bytes, bytes]]:
        for p in copy.iterdir():
            seen.append((p.stat().st_nlink, p.stat().st_ino))
        assert all(p.stat().st_nlink == 1 for p in db.iterdir())
        return real(copy)

    monkeypatch.setattr(local_index, "_iterate", spying)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["index"]["status"] == "read" and m["tables"]["local_index"] == 100
    assert seen and all(n == 1 and ino not in src_inodes for n, ino in seen)

    d2 = _index_bookie(tmp_path / "c", 10)
    cur = d2 / "current" / "ledgers" / "CURRENT"
    cur.unlink()
    os.symlink("/dev/zero", cur)
    before = tree_state(d2)
    m2 = scan(ScanConfig([d2], "b:1", tmp_path / "scan2"))
    assert m2["index"]["status"] == "error" and "symlink" in m2["index"]["reason"] and not m2["complete"]
    assert tree_state(d2) == before


def test_missing_index_dir_or_a_file_as_ledgers_is_an_error_not_absent(tmp_path: Path) -> None:
    d = bookie(tmp_path / "b")
    m = scan(ScanConfig([d], "b:1", tmp_path / "s1", index_dirs=[tmp_path / "no-such-index"]))
    assert m["index"]["status"] == "error" and not m["complete"]
    (d / "current" / "ledgers").write_bytes(b"not a database")
    m = scan(ScanConfig([d], "b:1", tmp_path / "s2"))
    assert m["index"]["status"] == "error" and not m["complete"]
    e = tmp_path / "e"
    (e / "current").mkdir(parents=True)  # an index dir without a ledgers database: absent, complete
    m = scan(ScanConfig([d], "b:1", tmp_path / "s3", index_dirs=[e]))
    assert m["index"]["status"] == "absent"


def test_an_unreadable_index_parent_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _index_bookie(tmp_path / "b", 5)
    real = os.listdir

    def denied(path: object) -> list[str]:
        if str(path).endswith("current/ledgers"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(local_index.os, "listdir", denied)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["index"]["status"] == "error" and not m["complete"] and m["logs"]["map"] == 1


# --- --out ----------------------------------------------------------------------------------------------------


def test_out_through_a_symlinked_current_or_a_symlink_alias_is_refused(tmp_path: Path) -> None:
    real_cur = tmp_path / "disk" / "cur"
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(tmp_path / "tmpd", 1), 1, ENTRIES)
    real_cur.parent.mkdir()
    os.rename(tmp_path / "tmpd" / "current", real_cur)
    d.mkdir()
    os.symlink(real_cur, d / "current")  # ledgers/current -> disk/cur
    alias = tmp_path / "alias"
    os.symlink(d, alias)
    before = tree_state(real_cur)
    for out in (real_cur / "x", d / "current" / "x", alias / "current" / "y" / "z", alias / "q"):
        with pytest.raises(ConfigError, match="inside the scanned directory"):
            scan(ScanConfig([d], "b:1", out))
    assert tree_state(real_cur) == before
    assert scan(ScanConfig([d], "b:1", tmp_path / "elsewhere"))["complete"]


def test_out_through_a_bind_mount_alias_is_refused(tmp_path: Path) -> None:
    d = bookie(tmp_path / "b")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "--bind", str(d / "current"), str(mnt)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts are not permitted here")
    try:
        before = tree_state(d)
        with pytest.raises(ConfigError, match="inside the scanned directory"):
            scan(ScanConfig([d], "b:1", mnt / "scan"))
        assert tree_state(d) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_out_through_a_bind_alias_of_a_deep_subdirectory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bind mount shows a directory under another name and its ``..`` leads out of the bookie's tree, so only
    the directories collected by the walk (3 levels) were recognised: an alias of current/a/b/c took the scan
    (exit 0, the Parquet files written under current/). The mount table's root field places any alias. Here the
    table is written by the test (its mount points are plain directories; the escapes as the kernel writes them),
    then, where permitted, a real bind mount."""
    d = bookie(tmp_path / "b")
    deep = d / "current" / "a" / "b" / "c" / "e"
    deep.mkdir(parents=True)
    alias = tmp_path / "alias dir"
    alias.mkdir()
    st = os.stat(tmp_path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    esc = str(alias).replace(" ", "\\040")
    table = tmp_path / "mountinfo"
    table.write_text(
        f"20 1 {dev} / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        f"99 20 {dev} {deep.parent} {esc} rw,relatime shared:1 - ext4 /dev/vda rw\n"
    )
    monkeypatch.setattr(run, "MOUNTINFO", str(table), raising=False)
    before = tree_state(d)
    for out in (alias / "scan", alias / "e" / "x"):
        with pytest.raises(ConfigError, match="inside the scanned directory"):
            scan(ScanConfig([d], "b:1", out))
    assert scan(ScanConfig([d], "b:1", tmp_path / "elsewhere"))["complete"]
    assert tree_state(d) == before
    monkeypatch.undo()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if subprocess.run(["mount", "--bind", str(deep), str(mnt)], capture_output=True).returncode != 0:
        return  # bind mounts are not permitted here: the table above stands for one
    try:
        with pytest.raises(ConfigError, match="inside the scanned directory"):
            scan(ScanConfig([d], "b:1", mnt / "scan"))
        assert tree_state(d) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_out_a_file_unwritable_or_looping_is_a_clear_error(tmp_path: Path) -> None:
    d = bookie(tmp_path / "b")
    f = tmp_path / "afile"
    f.write_text("x")
    for out in (f, f / "sub", Path("/proc/self/scan-out")):
        with pytest.raises(ConfigError) as e:
            scan(ScanConfig([d], "b:1", out))
        assert e.value.code == "scan-out-invalid", out
    os.symlink(tmp_path / "loop2", tmp_path / "loop1")
    os.symlink(tmp_path / "loop1", tmp_path / "loop2")
    with pytest.raises(ConfigError) as e:
        scan(ScanConfig([d], "b:1", tmp_path / "loop1" / "x"))
    assert e.value.code == "scan-out-invalid"


def test_a_ledger_dir_through_a_symlink_loop_is_bookie_dir_invalid(tmp_path: Path) -> None:
    os.symlink(tmp_path / "l2", tmp_path / "l1")
    os.symlink(tmp_path / "l1", tmp_path / "l2")
    with pytest.raises(ConfigError) as e:
        scan(ScanConfig([tmp_path / "l1"], "b:1", tmp_path / "scan"))
    assert e.value.code == "bookie-dir-invalid"


# --- throttle -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1e-9, 0.5, -1.0, float("nan"), float("inf")])
def test_throttle_has_a_floor(tmp_path: Path, value: float) -> None:
    d = bookie(tmp_path / "b")
    with pytest.raises(ConfigError) as e:
        scan(ScanConfig([d], "b:1", tmp_path / "scan", max_scan_mb_s=value))
    assert e.value.code == "scan-throttle-invalid"
    assert not (tmp_path / "scan").exists()


def test_maps_are_throttled_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "ledgers"
    write_large_map_log(entry_log_path(d, 1), 1, 200_000)  # a 3.2 MB map
    taken: list[int] = []

    class Recording(run.ByteThrottle):
        def __call__(self, n: int) -> None:
            taken.append(n)

    monkeypatch.setattr(run, "ByteThrottle", Recording)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan", max_scan_mb_s=1.0))
    assert m["logs"]["map"] == 1 and m["bytes_scanned"] == 0
    assert sum(taken) == m["bytes_read_headers_and_maps"] >= 200_000 * 16


# --- names that look like logs and are not read ---------------------------------------------------------------


def test_every_log_like_name_not_read_is_skipped_with_its_reason(tmp_path: Path) -> None:
    d = bookie(tmp_path / "b")
    cur = d / "current"
    outside = tmp_path / "outside.bin"
    write_entry_log(outside, 9, ENTRIES)
    os.mkfifo(cur / "1a.log")
    (cur / "2b.log").mkdir()
    os.symlink(outside, cur / "3c.log")
    write_entry_log(cur / "4.log", 4, [(40, 0, 5)])
    write_entry_log(cur / "04.log", 4, [(41, 0, 5)])  # same id: the bookie reads Long.toHexString(4) + ".log"
    write_entry_log(cur / "8000000000000000.log", 2**63, [(50, 0, 5)])  # Long.parseLong refuses it
    write_entry_log(cur / "zz.log", 0, [(51, 0, 5)])
    before = tree_state(d)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert skipped(tmp_path / "scan") == {
        "current/1a.log": "not-regular:fifo",
        "current/2b.log": "not-regular:directory",
        "current/3c.log": "not-regular:symlink",
        "current/04.log": "duplicate-id",
        "current/8000000000000000.log": "bad-id",
        "current/zz.log": "bad-name",
    }
    assert not m["complete"] and m["logs"]["map"] == 2
    assert {k: v for k, v in pairs_of(tmp_path / "scan").items() if k[0] == 4} == {(4, 40): 25}
    assert tree_state(d) == before
    assert not [p for p in (tmp_path / "scan").iterdir() if ".tmp" in p.name]


def test_a_log_replaced_by_a_fifo_after_listing_is_not_opened_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is on the open descriptor (O_NONBLOCK, fstat): a name swapped for a FIFO between the listing and
    the open is skipped, not read (a blocking read would hang the scan)."""
    d = bookie(tmp_path / "b")
    real = run.list_logs

    def swapped(ledger_dir: Path, on_bad: Callable[[str, str], None]) -> LogList:
        logs = real(ledger_dir, on_bad)
        p = Path(ledger_dir) / "current" / "1.log"
        p.unlink()
        os.mkfifo(p)
        return logs

    monkeypatch.setattr(run, "list_logs", swapped)
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert skipped(tmp_path / "scan") == {"current/1.log": "not-regular:fifo"} and not m["complete"]


def test_an_unlistable_ledger_dir_makes_the_scan_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d0 = bookie(tmp_path / "b0")
    d1 = bookie(tmp_path / "b1")
    real = os.scandir

    def denied(path: object = ".") -> object:
        if str(path) == str(d1 / "current"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(run.os, "scandir", denied)
    m = scan(ScanConfig([d0, d1], "b:1", tmp_path / "scan"))
    assert not m["complete"] and m["logs"]["map"] == 1
    assert skipped_of(tmp_path / "scan") == [{"ledger_dir": str(d1), "file": "current/", "reason": "list-error:EACCES"}]


def _listing_as_upstream(names: dict[str, str]) -> tuple[list[tuple[str, int, bool]], dict[str, str]]:
    """The rule written plainly (every name held, sorted): (rel, id, compacting) of the logs read, and the skipped
    names with their reason. ``names``: name -> kind (regular, fifo, directory)."""
    import re

    files: list[tuple[str, int, bool, int, int]] = []
    bad: dict[str, str] = {}
    for name, kind in names.items():
        m = re.fullmatch(r"([0-9a-fA-F]+)\.log", name)
        k = 0
        if m is None:
            m = re.fullmatch(r"([0-9a-fA-F]+)\.log\.([0-9a-fA-F]+)\.compacted", name)
            k = 1
        if m is None:
            m = re.fullmatch(r"([0-9a-fA-F]+)\.log\.compacting", name)
            k = 2
        if m is None:
            if name.endswith(".log"):
                bad[f"current/{name}"] = "bad-name"
            continue
        values = [int(g, 16) for g in m.groups()]
        if max(values) > 2**63 - 1:
            bad[f"current/{name}"] = "bad-id"
        elif kind != "regular":
            bad[f"current/{name}"] = f"not-regular:{kind}"
        else:
            files.append((name, values[0], k != 0, k, values[1] if k == 1 else 0))
    plain: dict[int, list[str]] = {}
    for name, log_id, compacting, _, _ in files:
        if not compacting:
            plain.setdefault(log_id, []).append(name)
    for log_id, same in plain.items():
        keep = f"{log_id:x}.log" if f"{log_id:x}.log" in same else min(same)
        bad.update({f"current/{n}": "duplicate-id" for n in same if n != keep})
    kept = sorted((f for f in files if f"current/{f[0]}" not in bad), key=lambda f: (f[1], f[3], f[4], f[0]))
    return [(f"current/{n}", log_id, c) for n, log_id, c, _, _ in kept], bad


_HEX = st.sampled_from(["0", "1", "a", "A", "00a", "1f", "01F", "7fffffffffffffff", "8000000000000000", "zz"])


@settings(max_examples=150)
@given(
    st.dictionaries(
        st.builds(
            lambda a, b, form: form.format(a=a, b=b),
            _HEX,
            _HEX,
            st.sampled_from(["{a}.log", "{a}.log.compacting", "{a}.log.{b}.compacted", "{a}.txt", "{a}.log.bak"]),
        ),
        st.sampled_from(["regular", "regular", "regular", "fifo", "directory"]),
        max_size=14,
    )
)
def test_the_streamed_listing_decides_as_the_plain_rule(names: dict[str, str]) -> None:
    """``listing.list_logs`` keeps no name it does not need (ids as columns, names only when not derived from the
    id): the same logs in the same order, the same skipped names and reasons as the plain sorted rule."""
    import tempfile

    from pulsar_ops.bookiescan.listing import list_logs

    with tempfile.TemporaryDirectory() as tmp:
        cur = Path(tmp) / "current"
        cur.mkdir()
        for name, kind in names.items():
            if kind == "regular":
                (cur / name).write_bytes(b"")
            elif kind == "fifo":
                os.mkfifo(cur / name)
            else:
                (cur / name).mkdir()
        bad: dict[str, str] = {}
        got = list_logs(Path(tmp), lambda rel, why: bad.__setitem__(rel, why))
        want_files, want_bad = _listing_as_upstream(names)
        assert [(f.rel, f.log_id, f.compacting) for f in got] == want_files
        assert bad == want_bad
        assert all(f.path == cur / f.rel.removeprefix("current/") for f in got)


# --- impossible maps --------------------------------------------------------------------------------------------


def _rewrite_map(path: Path, map_offset: int, pairs: list[tuple[int, int]], count: int) -> None:
    batch = struct.pack(">iqqi", 20 + 16 * len(pairs), -1, -2, len(pairs))
    batch += b"".join(struct.pack(">qq", *x) for x in pairs)
    with open(path, "r+b") as fh:
        fh.truncate(map_offset)
        fh.seek(map_offset)
        fh.write(batch)
    patch(path, 16, struct.pack(">i", count))


@pytest.mark.parametrize(
    ("pairs", "reason"),
    [
        ([(1, 31), (2, -100), (7, 120)], "map-invalid:negative-size"),
        ([(1, 31), (-1, 30), (7, 120)], "map-invalid:negative-ledger-id"),
        ([(1, 10), (2, 10), (7, 10), (1, 10), (2, 10), (7, 10)], "map-invalid:duplicate-ledger"),
        ([(1, 31), (2, 30), (7, 10**12)], "map-invalid:sizes-past-map"),
        ([(1, 2**62), (2, 2**62), (7, 2**62)], "map-invalid:sizes-past-map"),
    ],
)
def test_impossible_maps_fall_back_to_a_scan(tmp_path: Path, pairs: list[tuple[int, int]], reason: str) -> None:
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES)
    _rewrite_map(p, truth.map_offset, pairs, 3)
    fd = os.open(p, os.O_RDONLY)
    try:
        r = read_entry_log(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    assert (r.read_via, r.reason) == ("scan", reason)
    assert dict(zip(r.ledger_ids.tolist(), r.ledger_bytes.tolist(), strict=True)) == truth.bytes_per_ledger


# --- damaged regions --------------------------------------------------------------------------------------------


def _reference_scan(data: bytes) -> dict[int, int]:
    """DefaultEntryLogger.scanEntryLog byte by byte, as upstream loops (the slow reference)."""
    pos, out = 1024, {}
    while pos + 12 <= len(data):
        length, lid = struct.unpack_from(">iq", data, pos)
        if length <= 0:
            pos += 1
            continue
        pos += 4
        if lid < 0:
            pos += length
            continue
        if pos + length > len(data):
            break
        out[lid] = out.get(lid, 0) + length + 4
        pos += length
    return out


def _scan_bytes(tmp_path: Path, data: bytes, chunk: int = 64 * 1024) -> dict[int, int]:
    p = tmp_path / "x.log"
    p.write_bytes(data)
    fd = os.open(p, os.O_RDONLY)
    try:
        r = scan_default(fd, len(data), chunk=chunk)
    finally:
        os.close(fd)
    return dict(zip(r.ledger_ids.tolist(), r.ledger_bytes.tolist(), strict=True))


_piece = st.one_of(
    st.binary(min_size=1, max_size=40),
    st.builds(lambda n: b"\0" * n, st.integers(1, 9000)),
    st.builds(lambda n: b"\xff" * n, st.integers(1, 9000)),
    st.builds(lambda lid, n: struct.pack(">iq", 8 + n, lid) + b"\x07" * n, st.integers(0, 5), st.integers(0, 30)),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(pieces=st.lists(_piece, max_size=25))
def test_damaged_regions_are_searched_as_upstream_steps_them(tmp_path: Path, pieces: list[bytes]) -> None:
    """Zero runs, bytes reading as negative lengths and random damage between records: the numpy search finds
    exactly the records upstream's one-byte steps find (small chunks, so searches cross window edges)."""
    data = b"\0" * 1024 + b"".join(pieces)
    assert _scan_bytes(tmp_path, data, chunk=1) == _reference_scan(data)


class _Counting:
    def __init__(self) -> None:
        self.calls = 0
        self.real = entrylog._REC

    def unpack_from(self, buf: bytes, offset: int = 0) -> tuple[int, int]:
        self.calls += 1
        return self.real.unpack_from(buf, offset)  # type: ignore[return-value]


def test_damaged_regions_cost_no_step_per_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """8 MiB reading as negative lengths, then 8 MiB of zeros with an island (one 0x80 byte) every 512 bytes,
    then a record: the record is found with a few decodes per island, not one per damaged byte (16 million
    decodes and minutes before). Each island reads as a length of 128 three bytes before it (00 00 00 80), a
    record of ledger 0, exactly as upstream's one-byte steps read it (the property test above pins that)."""
    islands = bytearray(8 << 20)
    islands[::512] = b"\x80" * len(islands[::512])
    rec = struct.pack(">iq", 8 + 10, 42) + b"\x01" * 10
    data = b"\0" * 1024 + b"\xff" * (8 << 20) + bytes(islands) + rec
    counter = _Counting()
    monkeypatch.setattr(entrylog, "_REC", counter)
    got = _scan_bytes(tmp_path, data, chunk=1 << 20)
    assert got[42] == 22
    assert counter.calls < 50_000, counter.calls  # two per island (16,384 islands), not one per byte (16M)


class _NumpyCalls:
    """``entrylog``'s ``np``, counting the numpy functions it looks up (one per call site reached)."""

    def __init__(self) -> None:
        self.calls = 0

    def __getattr__(self, name: str) -> object:
        self.calls += 1
        return getattr(np, name)


@pytest.mark.parametrize(
    "period",
    [
        b"\xff" * 4 + struct.pack(">i", 4) + b"\xff" * 4,  # a negative length, then length 4 of a negative ledger id
        b"\x80\0\0\0\0\0\0\x01" + b"\xff" * 5,
        b"\xff" * 17 + struct.pack(">i", 4) + b"\xff" * 4,
    ],
)
def test_short_alternating_damage_costs_no_numpy_call_per_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, period: bytes
) -> None:
    """Damage that alternates a short bad run with a small length (each period: a search, then a record of a
    negative ledger id skipped by its length) crawled at 2.5 to 4 MB/s (a 64 MiB log in 17 to 27 s, a numpy
    search per 12 to 29 bytes). The search costs a few numpy calls per read window, not per period, and finds
    what upstream's one-byte steps find."""
    periods = 20_000
    data = b"\0" * 1024 + period * periods + struct.pack(">iq", 8 + 10, 42) + b"\x01" * 10
    want = _reference_scan(data)
    counter = _NumpyCalls()
    monkeypatch.setattr(entrylog, "np", counter)
    got = _scan_bytes(tmp_path, data, chunk=1 << 20)
    assert got == want and got[42] == 22
    assert counter.calls < periods // 100, counter.calls


def test_a_map_of_one_pair_batches_costs_no_numpy_call_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A valid map of one-pair batches (upstream caps batches at 10,000 pairs, it does not fill them) paid numpy's
    fixed cost per batch: 64 MiB (1.68M batches) in 14 s, a 1 GiB such map in ~4 minutes. Small batches are
    parsed with struct and handed over in bulk; the pairs are the map's."""
    n = 20_000
    body = b"".join(struct.pack(">iqqiqq", 36, -1, -2, 1, i * 3, 5) for i in range(n))
    head = bytearray(1024)
    head[:4] = b"BKLO"
    struct.pack_into(">iqi", head, 4, 1, 1024 + n * 5, n)
    p = tmp_path / "1.log"
    p.write_bytes(bytes(head) + b"\0" * (n * 5) + body)
    counter = _NumpyCalls()
    monkeypatch.setattr(entrylog, "np", counter)
    fd = os.open(p, os.O_RDONLY)
    try:
        got = read_entry_log(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    monkeypatch.undo()
    assert got.read_via == "map" and got.ledgers == n and got.data_bytes == 5 * n
    assert counter.calls < n // 100, counter.calls


# --- page cache -------------------------------------------------------------------------------------------------


def _resident_pages(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        got = page_cache().resident(fd, 0, os.fstat(fd).st_size)
        assert got is not None
        return int(got.sum())
    finally:
        os.close(fd)


def _drop(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_pages_resident_before_stay_and_pages_brought_in_are_released(tmp_path: Path) -> None:
    """A 16 MiB active log (scanned) made resident before the scan is still resident after; a second one, not
    resident before, has no page resident after (the scan released what it brought in)."""
    if not page_cache().ok:
        pytest.skip("mincore is not available")
    d = tmp_path / "ledgers"
    write_dense_log(entry_log_path(d, 1), 16 << 20, record_bytes=4096)
    write_dense_log(entry_log_path(d, 2), 16 << 20, record_bytes=4096)
    hot, cold = entry_log_path(d, 1), entry_log_path(d, 2)
    _drop(hot)
    _drop(cold)
    if _resident_pages(cold) > 16:
        pytest.skip("this filesystem keeps pages DONTNEED asks to drop")
    hot.read_bytes()
    pages = _resident_pages(hot)
    assert pages == (16 << 20) // 4096 or pages >= 4000
    m = scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert m["logs"]["scanned"] == 2
    assert _resident_pages(hot) == pages
    assert _resident_pages(cold) <= 1
    assert m["pages_released"] >= 4000


def test_a_failed_scan_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = bookie(tmp_path / "b")

    def broken(*_a: object, **_k: object) -> object:
        raise RuntimeError("boom")

    monkeypatch.setattr(run, "read_local_index", broken)
    with pytest.raises(RuntimeError):
        scan(ScanConfig([d], "b:1", tmp_path / "scan"))
    assert [p.name for p in (tmp_path / "scan").iterdir()] == []
