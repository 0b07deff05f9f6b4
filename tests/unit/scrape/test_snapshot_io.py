"""Snapshot writer (streaming parts), manifest (written last, atomically) and reader (refusals with hints)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import SnapshotError, SnapshotIncompleteError, SnapshotVersionError
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.manifest import MANIFEST_NAME, IncompleteScope, Manifest, write_manifest
from pulsar_ops.snapshot.reader import open_snapshot
from pulsar_ops.snapshot.writer import SnapshotWriter


def _manifest(**kw: object) -> Manifest:
    base: dict[str, object] = {
        "snapshot_id": "id-1",
        "cluster": "c1",
        "tool_version": "0.1.0",
        "schema_version": schema.SCHEMA_VERSION,
        "complete": True,
        "started_at_ms": 1,
        "finished_at_ms": 2,
        "zxid_range": {"local": {"min": 1, "max": 9}},
        "stores": {"local": {"hosts": "h:2181", "chroot": "/p"}},
        "ledgers_root": "/ledgers",
        "row_counts": {},
        "incomplete_scopes": (IncompleteScope("local", "/ledgers", "zookeeper-no-auth", "x: denied"),),
    }
    base.update(kw)
    return Manifest(**base)  # type: ignore[arg-type]


def _bookie(i: int) -> dict[str, object]:
    return {"bookie_id": f"bk{i}", "readonly": i % 2 == 0, "free_bytes": i, "total_bytes": None}


def test_rows_stream_into_bounded_parts_and_every_table_gets_a_part(tmp_path: Path) -> None:
    w = SnapshotWriter(tmp_path, batch_rows=3)
    for i in range(7):
        w.add("bookies", _bookie(i))
    counts = w.close()
    assert counts["bookies"] == 7 and counts["znodes"] == 0
    parts = sorted((tmp_path / "tables" / "bookies").glob("part-*.parquet"))
    assert [p.name for p in parts] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert [pq.read_metadata(p).num_rows for p in parts] == [3, 3, 1]
    for t in schema.TABLES:
        assert list((tmp_path / "tables" / t.name).glob("part-*.parquet")), t.name
    empty = pq.read_table(tmp_path / "tables" / "znodes" / "part-00000.parquet")
    assert empty.num_rows == 0 and empty.column_names == list(schema.ZNODES.column_names)


def test_list_and_null_columns_keep_their_types(tmp_path: Path) -> None:
    w = SnapshotWriter(tmp_path)
    w.add(
        "namespaces",
        {
            "path": "/admin/policies/t/ns",
            "tenant": "t",
            "namespace": "t/ns",
            "is_v1": False,
            "version": 0,
            "mzxid": 1,
            "ctime_ms": 1,
            "mtime_ms": 1,
            "data_length": 2,
            "bundle_boundaries": ["0x0", "0x1"],
            "num_bundles": 1,
            "deleted": False,
            "json": "{}",
        },
    )
    w.close()
    _write_ok_manifest(tmp_path)
    t = open_snapshot(tmp_path).table("namespaces")
    assert t.column("bundle_boundaries").to_pylist() == [["0x0", "0x1"]]
    assert t.column("retention_time_minutes").to_pylist() == [None]
    assert str(t.schema.field("retention_time_minutes").type) == "int64"


def test_int64_columns_and_the_hash_are_delta_encoded_and_read_back_as_written(tmp_path: Path) -> None:
    """int64 columns go DELTA_BINARY_PACKED, data_sha256 DELTA_LENGTH_BYTE_ARRAY, the dictionary columns stay
    dictionaries, the rest PLAIN; values at the int64 edges, nulls and jumps read back unchanged."""
    w = SnapshotWriter(tmp_path)
    edges = [-(2**63), 2**63 - 1, 0, -1, 2**62, None, 5]
    for i, v in enumerate(edges):
        w.add_tuple(
            "znodes",
            ("local", f"/p/{i}", "/p", str(i), 2, 1, 0, 0, v if v is not None else 0, 2**63 - 1 - i, -i, 1, 2, 3, 0,
             0, f"{i:064x}", "other", None),
        )  # fmt: skip
        w.add("bookies", {"bookie_id": f"b{i}", "readonly": False, "free_bytes": v, "total_bytes": None})
    w.close()
    path = tmp_path / "tables" / "znodes" / "part-00000.parquet"
    rg = pq.ParquetFile(path).metadata.row_group(0)
    enc = {rg.column(i).path_in_schema: rg.column(i).encodings for i in range(rg.num_columns)}
    assert "DELTA_BINARY_PACKED" in enc["czxid"] and "DELTA_BINARY_PACKED" in enc["mtime_ms"]
    assert "DELTA_LENGTH_BYTE_ARRAY" in enc["data_sha256"]
    assert "RLE_DICTIONARY" in enc["kind"] and "PLAIN" in enc["path"] and "PLAIN" in enc["version"]  # int32: PLAIN
    t = pq.read_table(path)
    assert t.column("czxid").to_pylist() == [v if v is not None else 0 for v in edges]
    assert t.column("mzxid").to_pylist() == [2**63 - 1 - i for i in range(len(edges))]
    assert t.column("data_sha256").to_pylist() == [f"{i:064x}" for i in range(len(edges))]
    b = pq.read_table(tmp_path / "tables" / "bookies")
    assert b.column("free_bytes").to_pylist() == edges and b.column("total_bytes").null_count == len(edges)


def test_null_in_a_required_column_is_refused(tmp_path: Path) -> None:
    w = SnapshotWriter(tmp_path)
    w.add("bookies", {"bookie_id": None, "readonly": False})
    with pytest.raises(SnapshotError, match=r"bookies\.bookie_id"):
        w.close()


def _write_ok_manifest(d: Path) -> None:
    write_manifest(d, _manifest())


def test_manifest_round_trip_and_atomic_write(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    m = _manifest()
    write_manifest(tmp_path, m)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left
    snap = open_snapshot(tmp_path)
    assert snap.manifest == m
    assert snap.table("bookies").num_rows == 0
    assert snap.table_dir("znodes") == tmp_path / "tables" / "znodes"
    doc = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert doc["incomplete_scopes"][0]["code"] == "zookeeper-no-auth"
    assert "password" not in json.dumps(doc)


def test_reader_refuses_a_snapshot_without_manifest(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    with pytest.raises(SnapshotIncompleteError) as ei:
        open_snapshot(tmp_path)
    assert ei.value.code == "snapshot-unfinished" and "pulsar-ops scrape" in ei.value.hint


def test_reader_refuses_a_manifest_not_marked_complete(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    write_manifest(tmp_path, _manifest(complete=False))
    with pytest.raises(SnapshotIncompleteError):
        open_snapshot(tmp_path)


def test_a_finished_snapshot_with_missing_scopes_is_not_complete_and_still_opens(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    write_manifest(tmp_path, _manifest(complete=False, finished=True))
    m = open_snapshot(tmp_path).manifest
    assert m.finished and not m.complete and not m.all_scopes_complete
    assert m.summary()["complete"] is False and m.summary()["finished"] is True


def test_a_manifest_from_before_finished_existed_reads_as_finished(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    doc = _manifest().to_json()
    del doc["finished"]
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    m = open_snapshot(tmp_path).manifest
    assert m.finished and m.complete and not m.all_scopes_complete  # it listed a missing scope


def test_reader_refuses_another_schema_version(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    write_manifest(tmp_path, _manifest(schema_version=schema.SCHEMA_VERSION + 1))
    with pytest.raises(SnapshotVersionError) as ei:
        open_snapshot(tmp_path)
    assert "pulsar-ops scrape" in ei.value.hint


def test_reader_refuses_missing_dir_and_missing_tables(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError):
        open_snapshot(tmp_path / "nope")
    (tmp_path / "tables").mkdir()
    write_manifest(tmp_path, _manifest())
    with pytest.raises(SnapshotError, match="table directories missing"):
        open_snapshot(tmp_path)


def test_garbage_manifest_is_a_snapshot_error(tmp_path: Path) -> None:
    SnapshotWriter(tmp_path).close()
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(SnapshotError, match="cannot read the manifest"):
        open_snapshot(tmp_path)


def test_add_znode_streams_rows_in_parts_and_refuses_a_wrong_width(tmp_path: Path) -> None:
    w = SnapshotWriter(tmp_path, batch_rows=2)
    width = len(schema.table("znodes").column_names)
    zrow = ("local", "/a", "/", "a", 1, *([0] * (width - 8)), "sha", "other", None)
    assert len(zrow) == width
    ack = ("/c", "t", "s", 0, 1, 2, 3, 4)
    for _ in range(3):
        w.add_znode(zrow, [("ack_ranges", ack)])
    with pytest.raises(ValueError, match="znodes: expected"):
        w.add_znode(zrow[:-1], [])
    with pytest.raises(ValueError, match="ack_ranges: expected"):
        w.add_znode(zrow, [("ack_ranges", ack[:-1])])
    counts = w.close()
    assert counts["znodes"] == 4 and counts["ack_ranges"] == 3  # the refused ack row's znode row was taken
    assert sorted(p.name for p in (tmp_path / "tables" / "znodes").iterdir()) == [
        "part-00000.parquet",
        "part-00001.parquet",
    ]
    assert pq.read_table(tmp_path / "tables" / "ack_ranges").num_rows == 3


def test_a_snapshot_older_than_an_added_table_opens_and_reads_it_as_empty(tmp_path: Path) -> None:
    """A snapshot scraped before ``service_unit_states`` existed (schema.ADDED_TABLES): it opens, the table reads as
    empty, the audit's summary names it; any other missing table is still refused."""
    import shutil

    from pulsar_ops.audit.manifest import manifest_summary

    SnapshotWriter(tmp_path).close()
    write_manifest(tmp_path, _manifest())
    assert "tables_read_as_empty" not in manifest_summary({}, tmp_path)
    shutil.rmtree(tmp_path / "tables" / "service_unit_states")
    snap = open_snapshot(tmp_path)
    assert snap.absent_tables() == ["service_unit_states"]
    assert snap.table("service_unit_states").num_rows == 0
    assert snap.table("service_unit_states").schema.names == [c.name for c in schema.SERVICE_UNIT_STATES.columns]
    assert snap.read("service_unit_states", ("namespace", "state")).column_names == ["namespace", "state"]
    assert list(manifest_summary({}, tmp_path)["tables_read_as_empty"]) == ["service_unit_states"]
    shutil.rmtree(tmp_path / "tables" / "topic_policies")
    with pytest.raises(SnapshotError, match="table directories missing: topic_policies"):
        open_snapshot(tmp_path)


def test_the_duckdb_bench_reads_an_added_table_the_snapshot_predates_as_empty(tmp_path: Path) -> None:
    import shutil

    pytest.importorskip("duckdb")
    from pulsar_ops.audit.params import AuditParams
    from pulsar_ops.bench.duckdb_sql import connect

    SnapshotWriter(tmp_path).close()
    write_manifest(tmp_path, _manifest())
    shutil.rmtree(tmp_path / "tables" / "service_unit_states")
    con = connect(tmp_path, AuditParams(now_ms=1), admin_scraped=False)
    assert con.execute("SELECT count(*) FROM src_service_unit_states").fetchall() == [(0,)]
    cols = [r[0] for r in con.execute("DESCRIBE src_service_unit_states").fetchall()]
    assert cols == [c.name for c in schema.SERVICE_UNIT_STATES.columns]


# ---- small tables built from buffers (snapshot.arrow_schema.small_array): pa.array's arrays, without pandas ------

_VALUES = {
    "string": st.one_of(st.none(), st.text(max_size=4)),
    "int64": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    "int32": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    "bool": st.one_of(st.none(), st.booleans()),
    "double": st.one_of(st.none(), st.floats(allow_nan=False)),
    "list<string>": st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=3)),
    "list<int64>": st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=3)),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(_VALUES)), st.data())
def test_a_small_array_is_pa_arrays(type_name: str, data: st.DataObject) -> None:
    from pulsar_ops.snapshot.arrow_schema import arrow_type, small_array

    values = data.draw(st.lists(_VALUES[type_name], max_size=20))
    t = arrow_type(type_name)
    got = small_array(values, t)
    got.validate(full=True)
    assert got.equals(pa.array(values, type=t))


def test_the_process_small_tables_do_not_import_pandas(tmp_path: Path) -> None:
    """The scrape's own process writes its few rows (scopes, bookies) without pyarrow's pandas shim importing
    pandas (0.2-0.4 CPU-s at the very end of a scrape), and the same table pa.array gives."""
    code = (
        "import sys, numpy, pyarrow.parquet as pq\n"
        "from pathlib import Path\n"
        "from pulsar_ops.snapshot.writer import SnapshotWriter\n"
        f"w = SnapshotWriter(Path({str(tmp_path)!r}))\n"
        "w.add_tuple('bookies', ('b1:3181', False, None, 7))\n"
        "w.add_tuple('bookies', ('b2:3181', True, 5, None))\n"
        "w.close()\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False"]
    rows = pq.read_table(tmp_path / "tables" / "bookies").to_pylist()
    assert sorted(r["bookie_id"] for r in rows) == ["b1:3181", "b2:3181"]
    assert {r["bookie_id"]: (r["readonly"], r["free_bytes"], r["total_bytes"]) for r in rows} == {
        "b1:3181": (False, None, 7),
        "b2:3181": (True, 5, None),
    }
