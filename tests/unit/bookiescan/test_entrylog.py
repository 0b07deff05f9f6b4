"""Entry-log reader, one test per variant of bookie-storage.md §2 and §10; each docstring names the upstream
method (apache/bookkeeper) whose behaviour it pins."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pulsar_ops.bookiescan.entrylog import LogRead, read_entry_log
from pulsar_ops.testing.entrylog_writer import (
    EntryLogTruth,
    entry_log_path,
    write_entry_log,
)

ENTRIES = [(1, 0, b"abc"), (2, 0, 10), (1, 1, 5), (7, 0, b"x" * 100), (2, 1, 0)]


@contextmanager
def opened(path: Path) -> Iterator[tuple[int, int]]:
    fd = os.open(path, os.O_RDONLY)
    try:
        yield fd, os.fstat(fd).st_size
    finally:
        os.close(fd)


def read(path: Path, **kw: object) -> LogRead:
    with opened(path) as (fd, size):
        return read_entry_log(fd, size, **kw)  # type: ignore[arg-type]


def as_dict(r: LogRead) -> dict[int, int]:
    return dict(zip(r.ledger_ids.tolist(), r.ledger_bytes.tolist(), strict=True))


def check(r: LogRead, truth: EntryLogTruth) -> None:
    assert as_dict(r) == truth.bytes_per_ledger
    assert r.data_bytes == truth.data_bytes
    assert r.ledger_ids.tolist() == sorted(truth.bytes_per_ledger)


def patch(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def test_default_map(tmp_path: Path) -> None:
    """DefaultEntryLogger.extractEntryLogMetadataFromIndex: header v1, map offset, count; L + 4 per entry."""
    p = entry_log_path(tmp_path, 0x1A)
    truth = write_entry_log(p, 0x1A, ENTRIES)
    assert p.name == "1a.log"
    r = read(p)
    assert (r.read_via, r.reason, r.logger, r.header_version) == ("map", None, "default", 1)
    check(r, truth)
    assert truth.bytes_per_ledger[1] == (4 + 16 + 3) + (4 + 16 + 5)
    assert r.bytes_read == 0


def test_direct_map(tmp_path: Path) -> None:
    """directentrylogger.LogMetadata.read: 4 KiB header (dummy record at 1024), 0xF0 padding, zeros after."""
    p = entry_log_path(tmp_path, 3)
    truth = write_entry_log(p, 3, ENTRIES, logger="direct")
    raw = p.read_bytes()
    assert struct.unpack_from(">iq", raw, 1024) == (3068, -1)
    assert truth.map_offset % 4096 == 0 and raw[truth.map_offset - 1] == 0xF0 and raw[-1] == 0
    r = read(p)
    assert (r.read_via, r.logger) == ("map", "direct")
    check(r, truth)


def test_map_in_several_batches(tmp_path: Path) -> None:
    """DefaultEntryLogger.extractEntryLogMetadataFromIndex reads batches of at most 10,000 pairs until L <= 0."""
    entries = [(lid, 0, 1) for lid in range(25_001)]
    for logger in ("default", "direct"):
        p = tmp_path / logger / "current" / "5.log"
        truth = write_entry_log(p, 5, entries, logger=logger)  # type: ignore[arg-type]
        r = read(p)
        assert r.read_via == "map" and r.ledgers == 25_001
        check(r, truth)


def test_default_count_disagrees_falls_back_to_scan(tmp_path: Path) -> None:
    """DefaultEntryLogger.extractEntryLogMetadataFromIndex: pairs read != header count -> IOException ->
    getEntryLogMetadata falls back to extractEntryLogMetadataByScanning."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES)
    patch(p, 16, struct.pack(">i", 99))
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:count")
    check(r, truth)


def test_direct_does_not_check_the_count(tmp_path: Path) -> None:
    """directentrylogger.LogMetadata.read does not compare the pairs with the header's count."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES, logger="direct")
    patch(p, 16, struct.pack(">i", 99))
    r = read(p)
    assert r.read_via == "map"
    check(r, truth)


def test_default_zero_count_is_scanned(tmp_path: Path) -> None:
    """DefaultEntryLogger.extractEntryLogMetadataFromIndex: a count of 0 -> "do scan to double confirm"."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, [])
    assert truth.map_offset == 0
    r = read(p)
    assert (r.read_via, r.reason, r.ledgers) == ("scan", "no-map", 0)
    patch(p, 8, struct.pack(">qi", 1024, 0))  # a map offset pointing at an empty map
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:empty")


@pytest.mark.parametrize(
    ("where", "value", "reason"),
    [(4, struct.pack(">q", -7), "map-invalid:ledger-id"), (12, struct.pack(">q", 0), "map-invalid:entry-id")],
)
def test_bad_batch_ids_fall_back(tmp_path: Path, where: int, value: bytes, reason: str) -> None:
    """extractEntryLogMetadataFromIndex / LogMetadata.read: a batch must carry ledger id -1 and entry id -2."""
    for logger in ("default", "direct"):
        p = tmp_path / logger / "current" / "1.log"
        truth = write_entry_log(p, 1, ENTRIES, logger=logger)  # type: ignore[arg-type]
        patch(p, truth.map_offset + where, value)
        r = read(p)
        assert (r.read_via, r.reason) == ("scan", reason)
        check(r, truth)


def test_batch_size_mismatch_falls_back(tmp_path: Path) -> None:
    """extractEntryLogMetadataFromIndex: "Invalid entry size when reading ledgers map" (bytes left in a batch)."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES)
    patch(p, truth.map_offset + 20, struct.pack(">i", 2))  # 3 pairs in the batch, n says 2
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:batch-size")
    check(r, truth)


def test_map_past_end_of_file_falls_back(tmp_path: Path) -> None:
    """extractEntryLogMetadataFromIndex: a batch cut by the end of the file fails (IndexOutOfBounds -> scan)."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES)
    os.truncate(p, p.stat().st_size - 8)
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:truncated")
    check(r, truth)


def test_duplicate_pairs_make_the_map_impossible(tmp_path: Path) -> None:
    """The map is written from EntryLogMetadata's hash map (one pair per ledger): a ledger listed twice is a
    damaged map (upstream's addAndGet would double it), so the log is scanned and its records counted."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES)
    # rewrite the map: one batch with ledger 1 twice
    pairs = [(1, 10), (2, 20), (1, 5), (7, 1)]
    batch = struct.pack(">iqqi", 20 + 16 * 4, -1, -2, 4) + b"".join(struct.pack(">qq", *x) for x in pairs)
    patch(p, truth.map_offset, batch + b"\0\0\0\0")
    patch(p, 16, struct.pack(">i", 3))
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:duplicate-ledger")
    check(r, truth)


def test_version_0_is_scanned(tmp_path: Path) -> None:
    """extractEntryLogMetadataFromIndex: "Old log file header without ledgers map" (HEADER_V0) -> scan."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES, header_version=0, with_map=False)
    r = read(p)
    assert (r.read_via, r.reason, r.header_version) == ("scan", "version-0", 0)
    check(r, truth)


def test_short_file(tmp_path: Path) -> None:
    """scanEntryLog starts at LOGFILE_HEADER_SIZE: a file under 1024 bytes (the pre-allocated next log) has none."""
    p = entry_log_path(tmp_path, 9)
    p.parent.mkdir(parents=True)
    for content in (b"", b"BKLO", b"BKLO\0\0\0\1" + bytes(100)):
        p.write_bytes(content)
        r = read(p)
        assert (r.read_via, r.reason, r.ledgers, r.data_bytes, r.header_version) == ("scan", "short-file", 0, 0, None)


def test_active_log_without_map(tmp_path: Path) -> None:
    """extractEntryLogMetadataFromIndex: "No ledgers map index found" (offset 0: active or crashed) -> scan."""
    for logger in ("default", "direct"):
        p = tmp_path / logger / "current" / "1.log"
        truth = write_entry_log(p, 1, ENTRIES, logger=logger, with_map=False)  # type: ignore[arg-type]
        r = read(p)
        assert (r.read_via, r.reason, r.logger) == ("scan", "no-map", logger)
        check(r, truth)


@pytest.mark.parametrize("logger", ["default", "direct"])
def test_truncated_active_log(tmp_path: Path, logger: str) -> None:
    """scanEntryLog ("Short read for ledger entry") / LogReaderScan (EOF): the cut last record is not counted."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES, logger=logger, with_map=False, truncate_last=True)  # type: ignore[arg-type]
    assert truth.entries == len(ENTRIES) - 1
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "no-map:truncated")
    check(r, truth)


def test_truncated_inside_the_length_prefix(tmp_path: Path) -> None:
    """scanEntryLog: fewer than 12 bytes left ("Short read for entry size") ends the scan."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES[:2], with_map=False)
    with open(p, "ab") as fh:
        fh.write(struct.pack(">i", 50) + b"\0\0\0")
    r = read(p)
    assert r.reason == "no-map:truncated"
    check(r, truth)


def test_default_scan_steps_over_padding(tmp_path: Path) -> None:
    """scanEntryLog: a length <= 0 is padding, step one byte (zeros and negative lengths alike)."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES[:1], with_map=False)
    tail = bytes(7) + struct.pack(">iqq", 16 + 2, 4, 0) + b"zz" + b"\xff" * 5 + struct.pack(">iqq", 16, 5, 0) + bytes(9)
    with open(p, "ab") as fh:
        fh.write(tail)
    r = read(p)
    assert as_dict(r) == {**truth.bytes_per_ledger, 4: 22, 5: 20}
    assert r.reason == "no-map"


def test_direct_scan_padding_blocks_and_preallocated_zeros(tmp_path: Path) -> None:
    """LogReaderScan.scan: negative length -> next 4 KiB boundary; zero length -> end (pre-allocated space)."""
    entries = [(lid % 37, i, 700 + (i * 13) % 900) for i, lid in enumerate(range(400))]  # many 64 KiB buffers
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, entries, logger="direct", with_map=False, sparse_size=1 << 24)
    raw = p.read_bytes()
    assert raw.count(b"\xf0" * 64) > 2 and p.stat().st_size == 1 << 24
    r = read(p)
    assert (r.read_via, r.logger) == ("scan", "direct")
    check(r, truth)


def test_sparse_default_log_skips_the_hole(tmp_path: Path) -> None:
    """scanEntryLog over a 1 GiB sparse log (records, hole, map at the end): every position of the hole reads
    length 0 and is stepped over; the map batch (ledger id -1) is skipped by its length."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES, sparse_size=1 << 30)
    assert truth.map_offset > (1 << 30) - 200
    r = read(p, force_scan=True)
    check(r, truth)
    assert r.bytes_read < 64 << 20  # the hole was not read through
    m = read(p)
    assert m.read_via == "map"
    check(m, truth)


def test_negative_ledger_ids_are_not_counted(tmp_path: Path) -> None:
    """extractEntryLogMetadataByScanning accepts ledgerId >= 0 only; LogReaderScan the same."""
    for logger in ("default", "direct"):
        p = tmp_path / logger / "current" / "1.log"
        truth = write_entry_log(p, 1, [(-5, 0, 3), *ENTRIES], logger=logger, with_map=False)  # type: ignore[arg-type]
        r = read(p)
        assert -5 not in as_dict(r)
        assert as_dict(r) == {k: v for k, v in truth.bytes_per_ledger.items() if k >= 0}


entry_st = st.tuples(
    st.integers(min_value=0, max_value=2**63 - 1) | st.integers(min_value=0, max_value=20),
    st.integers(min_value=0, max_value=10_000),
    st.integers(min_value=0, max_value=5000),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    entries=st.lists(entry_st, min_size=1, max_size=60),
    logger=st.sampled_from(["default", "direct"]),
    sparse=st.sampled_from([None, 1 << 20, 1 << 24]),
)
def test_map_and_scan_agree(
    tmp_path: Path, entries: list[tuple[int, int, int]], logger: str, sparse: int | None
) -> None:
    """getEntryLogMetadata: extractEntryLogMetadataFromIndex / LogMetadata.read and the scan
    (extractEntryLogMetadataByScanning / LogReaderScan) give the same per-ledger bytes on any log, dense or
    sparse (a hole before the map, or pre-allocated zeros after it)."""
    p = tmp_path / "current" / f"{logger}.log"
    truth = write_entry_log(p, 1, entries, logger=logger, sparse_size=sparse)  # type: ignore[arg-type]
    by_map = read(p)
    by_scan = read(p, force_scan=True, chunk=64 * 1024)
    assert by_map.read_via == "map" and by_scan.read_via == "scan"
    assert np.array_equal(by_map.ledger_ids, by_scan.ledger_ids)
    assert np.array_equal(by_map.ledger_bytes, by_scan.ledger_bytes)
    check(by_map, truth)


def test_negative_map_offset_falls_back(tmp_path: Path) -> None:
    """extractEntryLogMetadataFromIndex reads at the header's offset: a negative position is refused
    (FileChannel.read) and getEntryLogMetadata, which catches any Throwable, scans instead."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES)
    patch(p, 8, struct.pack(">q", -5))
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:offset")
    check(r, truth)


@pytest.mark.parametrize("length", [0x7FFFFFF0, (16 << 20) + 4])
def test_oversized_batch_length_is_not_read_into_memory(tmp_path: Path, length: int) -> None:
    """A damaged batch length running past the file is refused without reading the batch (then scanned like any bad
    map, as upstream's IndexOutOfBounds is): only the map's first window is read."""
    p = entry_log_path(tmp_path, 1)
    truth = write_entry_log(p, 1, ENTRIES, sparse_size=1 << 30)
    patch(p, truth.map_offset, struct.pack(">i", length))
    r = read(p)
    assert (r.read_via, r.reason) == ("scan", "map-invalid:truncated")
    assert r.meta_bytes_read <= 8 << 20
    check(r, truth)


def test_a_batch_longer_than_the_window_is_read_by_map_a_window_at_a_time(tmp_path: Path) -> None:
    """Upstream reads a batch of any length (extractEntryLogMetadataFromIndex grows its buffer to it): one batch of
    1,100,000 pairs (17.6 MB, past the 16 MiB window) is read by map, every pair, not refused and scanned (the
    16 MiB refusal scanned M5's 64 MiB batches over a sparse data region and found none of its 16M pairs)."""
    from pulsar_ops.testing.entrylog_writer import _header

    n = 1_100_000
    p = entry_log_path(tmp_path, 1)
    map_offset = 1024 + 20 * n  # a hole where the entries would be: only the map can account for them
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as fh:
        fh.write(_header(1, map_offset, n, direct=False))
        fh.seek(map_offset)
        fh.write(struct.pack(">iqqi", 20 + 16 * n, -1, -2, n))
        pairs = np.empty((n, 2), dtype=">i8")
        pairs[:, 0] = np.arange(n)
        pairs[:, 1] = 20
        fh.write(pairs.tobytes())
    r = read(p)
    assert (r.read_via, r.reason) == ("map", None)
    assert r.ledger_ids.tolist() == list(range(n))
    assert set(r.ledger_bytes.tolist()) == {20}
    assert r.data_bytes == 20 * n


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    body=st.binary(max_size=6000),
    version=st.integers(min_value=-2, max_value=3),
    map_offset=st.integers(min_value=-(2**40), max_value=2**40) | st.integers(min_value=0, max_value=7000),
    count=st.integers(min_value=-5, max_value=20_000),
    direct=st.booleans(),
)
def test_any_bytes_read_without_raising(
    tmp_path: Path, body: bytes, version: int, map_offset: int, count: int, direct: bool
) -> None:
    """Whatever a file holds, the reader returns a result (map or scan) and never raises: a damaged log is
    one row with a reason, not a failed scan. Every counted entry is at least L + 4 >= 5 bytes."""
    head = bytearray(4096 if direct else 1024)
    head[0:4] = b"BKLO"
    struct.pack_into(">iqi", head, 4, version, map_offset, count)
    if direct:
        struct.pack_into(">iq", head, 1024, 3068, -1)
    p = tmp_path / "current" / "f.log"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(bytes(head) + body)
    for force in (False, True):
        r = read(p, force_scan=force, chunk=64 * 1024)
        assert r.read_via in ("map", "scan")
        assert r.ledger_ids.shape == r.ledger_bytes.shape
        if r.read_via == "scan":
            assert bool(np.all(r.ledger_ids >= 0)) and bool(np.all(r.ledger_bytes >= 5))
            assert r.data_bytes <= len(body) + len(head)
