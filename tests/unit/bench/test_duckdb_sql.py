"""`bench audit`'s DuckDB side runs the audit SQL as written for Spark: every file must rewrite into SQL DuckDB
runs, or the benchmark's comparison fails at the size where someone measures it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pulsar_ops.audit.params import AuditParams
from pulsar_ops.audit.sql_files import detect_files, storage_files
from pulsar_ops.bench.duckdb_sql import MACROS, connect, rewrite, rewrite_storage, run_detections
from pulsar_ops.findings import DETECTIONS, STORAGE_DETECTIONS
from tests.spark.snapshot_builder import NOW, SnapshotBuilder


@pytest.mark.parametrize("path", ["/managed-ledgers/t/ns/persistent/topic", "/a", "/", "/a/b/", "a/b/c"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 9])
def test_substring_index_is_spark_s_for_a_positive_count(path: str, n: int) -> None:
    con = duckdb.connect()
    for m in MACROS:
        con.execute(m)
    got = con.execute(rewrite("SELECT substring_index(?, '/', ?)"), [path, n]).fetchone()
    # Spark: everything before the n-th '/', the whole string when it has fewer
    assert got == ("/".join(path.split("/")[:n]),)


def test_every_detection_runs_on_duckdb_over_a_snapshot(tmp_path: Path) -> None:
    b = SnapshotBuilder()
    b.namespace("t/live", boundaries=["0x00000000", "0x80000000", "0xffffffff"])
    for path in ("/managed-ledgers/t", "/managed-ledgers/t/live", "/managed-ledgers/t/live/persistent"):
        b.znode(path, num_children=1)
    b.topic("t/live", "ok-partition-0", ledgers=[(1, None, None, None)])
    b.znode("/managed-ledgers/t/live/persistent/ok-partition-0", data_length=40)
    b.znode("/managed-ledgers/t/gone", num_children=1, data_length=0)  # a deleted namespace's leftover
    b.znode("/managed-ledgers/t/gone/persistent", data_length=0)
    snap = b.write(tmp_path / "snap")
    con = connect(snap, AuditParams(now_ms=NOW).resolved(NOW), admin_scraped=False)
    counts = run_detections(con)
    assert set(counts) == set(DETECTIONS) - set(STORAGE_DETECTIONS)
    assert counts["znode-leak"] >= 1


def test_the_connection_draws_no_progress_bar_on_stdout(tmp_path: Path) -> None:
    # `bench audit --json` writes its document to stdout: DuckDB's progress bar (on by default when stdout is a
    # file or a pipe; pytest's capture turns it off, hence a process of its own) must not precede it
    snap = SnapshotBuilder().write(tmp_path / "snap")
    code = (
        "import sys; from pathlib import Path; from pulsar_ops.audit.params import AuditParams; "
        "from pulsar_ops.bench.duckdb_sql import connect; now = int(sys.argv[2]); "
        "con = connect(Path(sys.argv[1]), AuditParams(now_ms=now).resolved(now), admin_scraped=False); "
        "print(con.execute(\"SELECT current_setting('enable_progress_bar')\").fetchone()[0])"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", code, str(snap), str(NOW)], cwd=root, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_the_storage_sql_finds_on_duckdb_what_the_spark_audit_finds(tmp_path: Path) -> None:
    # the hand-built snapshot and scans of tests/spark/test_storage_detections.py, whose Spark findings that file
    # pins: the translated storage SQL (structs, 0-based indexes, collect_list without NULLs) must find the same
    from pulsar_ops.bench.duckdb_sql import register_scans, run_storage
    from tests.spark.test_storage_detections import B1, B2, scans, snapshot

    snap = snapshot().write(tmp_path / "snap")
    params = AuditParams(now_ms=NOW).resolved(NOW)
    con = connect(snap, params, admin_scraped=False)
    manifest = {"finished_at_ms": NOW, "started_at_ms": NOW}
    register_scans(con, scans(tmp_path), params, manifest)
    seconds: dict[str, float] = {}
    counts, rows = run_storage(con, seconds=seconds)
    assert counts == {"ledger-data-missing": 3, "stale-entry-log": 3, "unreclaimed-ledger-data": 4}
    # every query timed by the name of the Spark audit's step (bench audit sets them side by side); a view
    # (.view.sql: storage_ledgers) is no query of its own, its cost is in its readers'
    assert set(seconds) == {"storage"} | {f"storage {f.name}" for f in storage_files() if f.written or not f.shared}
    assert "storage storage_ledgers" not in seconds
    assert all(s >= 0 for s in seconds.values())
    missing = con.execute(
        rewrite_storage(next(f for f in detect_files() if f.name == "ledger-data-missing").text)
    ).fetchall()
    assert sorted((r[5], r[2]) for r in missing) == [(B2, 102), (B2, 108), (B2, 111)]
    stale = con.execute(rewrite_storage(next(f for f in detect_files() if f.name == "stale-entry-log").text)).fetchall()
    assert sorted(r[5] for r in stale) == [f"{B1}:/data/bk/current/3.log", f"{B1}:/data/bk/current/7.log",
                                           f"{B1}:/data/bk2/current/4.log"]  # fmt: skip
    assert rows["bookies"] == 2 and rows["storage_ledgers"] > 0


def test_spark_spellings_of_the_storage_sql_keep_their_meaning() -> None:
    con = duckdb.connect()
    for m in MACROS:
        con.execute(m)

    def one(sql: str) -> object:
        return con.execute(rewrite_storage(sql)).fetchone()[0]  # type: ignore[index]

    assert one("SELECT t.a[1] FROM (SELECT array(10, 20, 30) AS a) t") == 20  # Spark's subscript is 0-based
    assert one("SELECT transform(array(10, 20), (x, k) -> k)") == [0, 1]  # and so is a lambda's index
    assert one("SELECT named_struct('a', 1, 'b', 'x').b") == "x"
    assert one("SELECT collect_list(x) FROM (SELECT CAST(NULL AS INT) AS x UNION ALL SELECT 1)") == [1]
    assert one("SELECT collect_list(x) FROM (SELECT 1 AS x) WHERE false") == []  # [] over no row, not NULL
    assert one("SELECT exists(array(1, 2), v -> v > 1)") is True
    assert one("SELECT pmod(-1, 3)") == 2
    assert one("SELECT 7 DIV 2") == 3
    json_map = (
        "SELECT size(map_entries(from_json(t.j, 'MAP<STRING, ARRAY<STRING>>'))) "
        'FROM (SELECT \'{"0": ["b1"]}\' AS j) t'
    )
    assert one(json_map) == 1


def test_storage_queries_set_spark_beside_duckdb_by_step() -> None:
    from pulsar_ops.bench.audit import storage_queries

    steps = {
        "by_step": {
            "storage storage_ledgers": {"in_stages_s": 20.5, "task_cpu_s": 30.4},
            # the detections' statement: more seconds in stages than owners, less task CPU
            "storage": {"in_stages_s": 10.0, "task_cpu_s": 3.1, "wall_s": 44.4},
            "storage owners": {"in_stages_s": 9.1, "task_cpu_s": 14.0},
        }
    }
    got = storage_queries(steps, {"storage storage_ledgers": 4.1, "storage": 1.5, "storage owners": 0.0,
                                  "storage bookies": 0.2})  # fmt: skip
    # the heaviest by task CPU first: owners' 14.0 before the detections' 3.1, whose 10 s in stages count the other
    # driver thread's tasks running beside them
    assert [q["query"] for q in got] == ["storage_ledgers", "owners", "detections", "bookies"]
    assert got[0] == {"query": "storage_ledgers", "spark_in_stages_s": 20.5, "spark_task_cpu_s": 30.4,
                      "duckdb_s": 4.1, "ratio_task_cpu": 7.41, "ratio_in_stages": 5.0}  # fmt: skip
    assert got[1]["ratio_in_stages"] is None and got[1]["ratio_task_cpu"] is None  # DuckDB's 0 s: no division error
    assert got[2]["ratio_in_stages"] == 6.67 and got[2]["ratio_task_cpu"] == 2.07
    assert got[3]["spark_in_stages_s"] is None  # a step Spark did not report stays unknown, not 0
