"""GC model and plan impact on measured layouts: logs written by the testing writer, scanned by the real scanner."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.bookiescan.run import ScanConfig, scan
from pulsar_ops.errors import ModelError
from pulsar_ops.model.facts import LedgerFacts
from pulsar_ops.model.gc import REASON_ACTIVE, REASON_NEVER, GcOptions
from pulsar_ops.model.gc_config import gc_config
from pulsar_ops.model.impact import plan_impact
from pulsar_ops.model.layout import Layout
from pulsar_ops.model.measured_gc import gc_with_scans
from pulsar_ops.model.scan_layout import BookieScan, read_scan, read_scans
from pulsar_ops.testing.entrylog_writer import entry_log_path, write_entry_log, write_last_id

BK = "bk1:3181"
P = 980  # payload bytes: each entry counts L + 4 = 16 + 980 + 4 = 1000 bytes
CFG = {
    "gcWaitTime": 60_000,
    "minorCompactionThreshold": 0.2,
    "minorCompactionInterval": 3600,
    "majorCompactionThreshold": 0.8,
    "majorCompactionInterval": 86400,
    "isThrottleByBytes": True,
    "compactionRateByBytes": 1000,
}
DELETED = {10: 0, 11: 0, 14: 0}  # long-retention ledger 12 and ledgers 13, 15 stay


def entries(*spec: tuple[int, int], payload: int = P) -> list[tuple[int, int, int]]:
    """(ledger, n entries) runs, interleaved round-robin as one bookie writes concurrent ledgers."""
    runs = [[(lid, e, payload) for e in range(n)] for lid, n in spec]
    out: list[tuple[int, int, int]] = []
    for i in range(max(len(r) for r in runs)):
        out.extend(r[i] for r in runs if i < len(r))
    return out


def make_bookie(root: Path) -> tuple[Path, Path]:
    """Dir d0: log 1 wholly deleted, log 2 pinned by long-retention ledger 12 (usage 0.9), log 3 below the minor
    threshold (usage 0.1), log 4 at usage 0.5, log 5 the active log; dir d1 holds another log 1 (wholly deleted)."""
    d0, d1 = root / "d0", root / "d1"
    write_entry_log(entry_log_path(d0, 1), 1, entries((10, 5), (11, 5)))
    write_entry_log(entry_log_path(d0, 2), 2, entries((10, 1), (12, 9)))
    write_entry_log(entry_log_path(d0, 3), 3, entries((11, 9), (13, 1)))
    write_entry_log(entry_log_path(d0, 4), 4, entries((14, 5), (15, 5)))
    write_entry_log(entry_log_path(d0, 5), 5, entries((13, 1), (10, 1)), with_map=False)
    write_last_id(d0, 5)
    write_entry_log(entry_log_path(d1, 1), 1, entries((14, 2)))
    write_last_id(d1, 1)
    for i in range(1, 6):  # log 5 is the newest of d0: the active one
        os.utime(entry_log_path(d0, i), ns=(i * 10**12, i * 10**12))
    return d0, d1


@pytest.fixture
def scanned(tmp_path: Path) -> Path:
    d0, d1 = make_bookie(tmp_path / "bookie")
    out = tmp_path / "scan"
    scan(ScanConfig(ledger_dirs=[d0, d1], bookie_id=BK, out=out))
    return out


def test_reader_takes_the_scanners_tables_keyed_by_dir_and_log(scanned: Path, tmp_path: Path) -> None:
    sc = read_scan(scanned)
    assert sc.bookie_id == BK and sc.complete and sc.notes == []
    d0, d1 = str(tmp_path / "bookie" / "d0"), str(tmp_path / "bookie" / "d1")
    logs = {(sc.ledger_dirs[d], int(i)): (int(b), bool(a)) for d, i, b, a in
            zip(sc.log_dirs, sc.log_ids, sc.data_bytes, sc.active, strict=True)}  # fmt: skip
    assert logs == {
        (d0, 1): (10_000, False),
        (d0, 2): (10_000, False),
        (d0, 3): (10_000, False),
        (d0, 4): (10_000, False),
        (d0, 5): (2_000, True),
        (d1, 1): (2_000, False),  # the same log id in the other directory is another log
    }
    pairs = {
        (sc.ledger_dirs[int(sc.log_dirs[k])], int(sc.log_ids[k]), int(lid)): int(b)
        for k, lid, b in zip(sc.pair_log, sc.pair_ledger, sc.pair_bytes, strict=True)
    }
    assert pairs[(d0, 2, 12)] == 9_000 and pairs[(d0, 2, 10)] == 1_000 and pairs[(d1, 1, 14)] == 2_000
    assert sum(pairs.values()) == int(sc.data_bytes.sum()) == 44_000


def test_gc_timeline_on_the_measured_layout_matches_the_hand_computed_case(scanned: Path) -> None:
    scans = read_scans([scanned])
    empty = Layout(bookies={}, group_times_ms=[0], entry_size=1000)
    m = gc_with_scans(empty, scans, DELETED, gc_config(CFG), GcOptions())
    r = m.result.bookies[BK]
    # garbage: d0 log1 10,000 + log2 1,000 + log3 9,000 + log4 5,000 + active log5 1,000; d1 log1 2,000
    assert r.deleted_bytes == 28_000
    # first run at gcWaitTime: both log 1s (one per directory) are wholly deleted
    # minor due after 3600 s (first run past it at 61 min): log 3 (usage 0.1) rewrites 1,000 B at 1,000 B/s
    # major due after 86400 s (first run past it: 3,721,000 + 1378 x 60,000): log 4 rewrites 5,000 B in 5 s
    assert r.reclaimed == {"deletion": 12_000, "minor": 9_000, "major": 5_000}
    assert (r.rewrite_bytes, r.compaction_seconds) == (6_000, 6.0)
    ev = [(e["t_ms"], e["end_ms"], e["reclaimed_bytes"], e["compaction"]) for e in r.timeline]
    assert ev == [
        (60_000, 60_000, 10_000, None),
        (60_000, 60_000, 2_000, None),
        (3_660_000, 3_661_000, 9_000, "minor"),
        (86_401_000, 86_406_000, 5_000, "major"),
    ]
    stuck = {(e["log_id"], e["reason"]): (e["garbage_bytes"], e.get("pinned_by")) for e in r.stuck}
    assert stuck == {
        (2, REASON_NEVER): (1_000, [{"ledger_id": 12, "bytes": 9_000}]),  # usage 0.9: pinned by ledger 12
        (5, REASON_ACTIVE): (1_000, [{"ledger_id": 13, "bytes": 1_000}]),
    }
    assert r.unreclaimable_by_reason == {REASON_NEVER: 1_000, REASON_ACTIVE: 1_000}
    assert m.sources[BK]["source"] == "measured"
    acc = m.accuracy[BK]
    assert acc["total_bytes"] == {"estimated": 0, "measured": 44_000, "error": -1.0}
    assert acc["live_fraction"]["measured"]["byte_weighted"] == pytest.approx(16_000 / 44_000, abs=1e-6)


def test_a_format_1_scan_reads_as_its_format_2_twin(scanned: Path) -> None:
    """A scan by an older scan-bookie (format 1: skipped names listed in the manifest, no skipped_logs table), e.g.
    the OLD side of `audit --compare-scans OLD NEW` across an upgrade, reads to the same layout and notes."""
    mf = scanned / "manifest.json"
    doc = json.loads(mf.read_text())
    skipped = [{"ledger_dir": "/d0", "file": "current/1.log", "reason": "read-error:EIO"}]
    mf.write_text(json.dumps({**doc, "complete": False, "skipped": {"total": 1, "by_reason": {"read-error:EIO": 1}}}))
    v2 = read_scan(scanned)
    tables = {k: v for k, v in doc["tables"].items() if k != "skipped_logs"}
    (scanned / "skipped_logs.parquet").unlink()
    mf.write_text(json.dumps({**doc, "format_version": 1, "complete": False, "skipped": skipped, "tables": tables}))
    v1 = read_scan(scanned)
    assert v1.notes == v2.notes and "1 log(s) not read" in v1.notes[0]
    cols = ("log_dirs", "log_ids", "data_bytes", "active", "pair_log", "pair_ledger", "pair_bytes")
    assert all((getattr(v1, c) == getattr(v2, c)).all() for c in cols) and v1.n_logs == v2.n_logs > 0


def test_incomplete_and_invalid_scans(scanned: Path, tmp_path: Path) -> None:
    mf = scanned / "manifest.json"
    doc = json.loads(mf.read_text())
    mf.write_text(json.dumps({**doc, "complete": False, "index": {"status": "error"}}))
    sc = read_scan(scanned)
    assert not sc.complete and "incomplete scan (local index error)" in sc.notes[0]
    assert sc.source_json()["complete"] is False
    with pytest.raises(ModelError, match="two --bookie-scan directories"):
        read_scans([scanned, scanned])
    mf.write_text(json.dumps({**doc, "format_version": 3}))
    with pytest.raises(ModelError, match="format version 3"):
        read_scan(scanned)
    mf.unlink()
    with pytest.raises(ModelError, match="did not finish"):
        read_scan(scanned)
    with pytest.raises(ModelError, match=r"no manifest\.json"):
        read_scan(tmp_path / "nowhere")


def _facts(lid: int, nbytes: int, bookies: tuple[str, ...]) -> LedgerFacts:
    return LedgerFacts(lid, nbytes, bookies, len(bookies), len(bookies), 0, "CLOSED", closed_ms=1, entries=None)


def test_plan_impact_per_bookie_equals_what_the_ground_truth_frees(tmp_path: Path) -> None:
    """Two bookies, each scanned; the plan deletes ledgers 10 and 11. Ground truth from the writer: logs holding
    only deleted ledgers go whole, the others keep their live ledgers' bytes."""
    bookies = ("a:3181", "b:3181")
    truth: dict[str, dict[str, int]] = {}
    scan_dirs = []
    for i, bk in enumerate(bookies):
        d = tmp_path / bk.replace(":", "_") / "ledgers"
        t1 = write_entry_log(entry_log_path(d, 1), 1, entries((10, 4 + i), (11, 3)))  # wholly deleted
        t2 = write_entry_log(entry_log_path(d, 2), 2, entries((11, 1), (12, 9)))  # pinned by 12 (usage 0.9)
        t3 = write_entry_log(entry_log_path(d, 3), 3, entries((10, 9), (12, 1)))  # usage 0.1: minor compaction
        write_entry_log(entry_log_path(d, 4), 4, entries((12, 2)))  # live only
        write_last_id(d, 4)
        truth[bk] = {
            "deletion": t1.data_bytes,
            "minor": t3.bytes_per_ledger[10],
            "stays": t2.bytes_per_ledger[11],
            "pinned_by_12": t2.bytes_per_ledger[12],
        }
        out = tmp_path / f"scan-{i}"
        scan(ScanConfig(ledger_dirs=[d], bookie_id=bk, out=out))
        scan_dirs.append(out)
    facts = [_facts(10, 10_000, bookies), _facts(11, 5_000, bookies), _facts(12, 20_000, bookies)]
    rep = plan_impact(
        facts[:2],
        facts,
        now_ms=0,
        config=gc_config(CFG),
        scans=read_scans(scan_dirs),
    )
    doc: dict[str, Any] = rep.to_json()["total"]
    for bk in bookies:
        pb = doc["per_bookie"][bk]
        assert pb["layout"] == "measured"
        assert pb["reclaimed_bytes"]["deletion"] == truth[bk]["deletion"]
        assert pb["reclaimed_bytes"]["minor"] == truth[bk]["minor"]
        assert pb["reclaimed_bytes"]["major"] == 0
        assert pb["unreclaimable_bytes"] == truth[bk]["stays"]
        [stuck] = pb["stuck_logs"]
        assert stuck["log_id"] == 2 and stuck["pinned_by"] == [{"ledger_id": 12, "bytes": truth[bk]["pinned_by_12"]}]
        assert pb["estimate_vs_measured"]["predicted_reclaim"]["measured"]["total"] == (
            truth[bk]["deletion"] + truth[bk]["minor"]
        )
    # bytes on disk of each deleted ledger: the scans' bytes, both bookies
    assert rep.per_ledger[11][0] == 2 * (3_000 + 1_000)
    assert rep.per_ledger[10][0] == (4_000 + 9_000) + (5_000 + 9_000)
    assert any("measured (scan) on 2 bookie(s)" in line for line in rep.summary_lines())


def test_without_scans_every_bookie_is_estimated() -> None:
    f = _facts(1, 10_000, ("a:3181",))
    rep = plan_impact([f], [f], now_ms=0)
    doc = rep.to_json()["total"]
    assert doc["per_bookie"]["a:3181"]["layout"] == "estimated" and doc["layout_sources"] == {}
    assert not np.isnan(doc["garbage_bytes"])


# ---------------------------------------------------------------------------------------------------------------
# Properties

LOGS = st.lists(  # per log: (directory 0/1, [(ledger, entries)])
    st.tuples(st.integers(0, 1), st.lists(st.tuples(st.integers(1, 12), st.integers(1, 4)), min_size=1, max_size=5)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=15, deadline=None)
@given(logs=LOGS, payload=st.integers(0, 300))
def test_reader_finds_what_the_writer_wrote_through_the_real_scanner(
    logs: list[tuple[int, list[tuple[int, int]]]], payload: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = [root / "d0", root / "d1"]
        truth: dict[tuple[str, int], tuple[int, dict[int, int]]] = {}
        next_id = [1, 1]
        for d, spec in logs:
            lid = next_id[d]
            next_id[d] += 1
            t = write_entry_log(entry_log_path(dirs[d], lid), lid, entries(*spec, payload=payload))
            truth[(str(dirs[d]), lid)] = (t.data_bytes, t.bytes_per_ledger)
        used = [x for x in dirs if x.exists()]
        scan(ScanConfig(ledger_dirs=used, bookie_id=BK, out=root / "out"))
        sc = read_scan(root / "out")
        got: dict[tuple[str, int], tuple[int, dict[int, int]]] = {
            (sc.ledger_dirs[int(d)], int(i)): (int(b), {})
            for d, i, b in zip(sc.log_dirs, sc.log_ids, sc.data_bytes, strict=True)
        }
        for k, lid, b in zip(sc.pair_log, sc.pair_ledger, sc.pair_bytes, strict=True):
            got[(sc.ledger_dirs[int(sc.log_dirs[k])], int(sc.log_ids[k]))][1][int(lid)] = int(b)
        assert got == truth


def synthetic_scan(logs: list[tuple[int, list[tuple[int, int]]]], active_last: bool) -> BookieScan:
    dirs, ids, data, pl, pled, pb = [], [], [], [], [], []
    next_id = [0, 0]
    for k, (d, spec) in enumerate(logs):
        dirs.append(d)
        ids.append(next_id[d])
        next_id[d] += 1
        sizes: dict[int, int] = {}
        for lid, n in spec:
            sizes[lid] = sizes.get(lid, 0) + n * 1000
        for lid, b in sizes.items():
            pl.append(k)
            pled.append(lid)
            pb.append(b)
        data.append(sum(sizes.values()))
    active = np.zeros(len(logs), dtype=np.bool_)
    if active_last:
        active[-1] = True
    return BookieScan(
        path="mem", bookie_id=BK, complete=True, finished_at_ms=0, ledger_dirs=("d0", "d1"),
        log_dirs=np.asarray(dirs, np.int64), log_ids=np.asarray(ids, np.int64), data_bytes=np.asarray(data, np.int64),
        active=active, pair_log=np.asarray(pl, np.int64), pair_ledger=np.asarray(pled, np.int64),
        pair_bytes=np.asarray(pb, np.int64),
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(logs=LOGS, deleted=st.sets(st.integers(1, 12)), active_last=st.booleans())
def test_garbage_is_reclaimed_or_stays_and_each_directory_is_its_own_gc_thread(
    logs: list[tuple[int, list[tuple[int, int]]]], deleted: set[int], active_last: bool
) -> None:
    sc = synthetic_scan(logs, active_last)
    delete_at = dict.fromkeys(deleted, 0)
    empty = Layout(bookies={}, group_times_ms=[0] if deleted else [], entry_size=1000)
    cfg = gc_config(CFG)
    r = gc_with_scans(empty, {BK: sc}, delete_at, cfg, GcOptions()).result.bookies[BK]
    garbage = int(sum(b for lid, b in zip(sc.pair_ledger, sc.pair_bytes, strict=True) if int(lid) in deleted))
    assert r.deleted_bytes == garbage
    assert sum(r.reclaimed.values()) + r.unreclaimable_bytes == garbage
    # the same logs split into one bookie per directory give the same figures, summed
    parts = []
    for d in (0, 1):
        m = sc.log_dirs == d
        if not m.any():
            continue
        idx = np.flatnonzero(m)
        remap = -np.ones(sc.n_logs, np.int64)
        remap[idx] = np.arange(idx.size)
        pm = m[sc.pair_log]
        sub = BookieScan(
            path="mem", bookie_id=f"d{d}", complete=True, finished_at_ms=0, ledger_dirs=(f"d{d}",),
            log_dirs=np.zeros(idx.size, np.int64), log_ids=sc.log_ids[m], data_bytes=sc.data_bytes[m],
            active=sc.active[m], pair_log=remap[sc.pair_log[pm]], pair_ledger=sc.pair_ledger[pm],
            pair_bytes=sc.pair_bytes[pm],
        )  # fmt: skip
        parts.append(
            gc_with_scans(empty, {sub.bookie_id: sub}, delete_at, cfg, GcOptions()).result.bookies[sub.bookie_id]
        )
    for kind in ("deletion", "minor", "major"):
        assert r.reclaimed[kind] == sum(p.reclaimed[kind] for p in parts)
    assert r.rewrite_bytes == sum(p.rewrite_bytes for p in parts)
