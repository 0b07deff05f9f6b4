"""`pulsar-ops scan-bookie` on the command line: exit codes, --json on stdout, errors with a code and a hint."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.testing.bookie_dirs import skipped_of
from pulsar_ops.testing.entrylog_writer import LocalIndexRow, entry_log_path, write_entry_log, write_ledger_index


def test_complete_scan_exits_0_with_json(tmp_path: Path) -> None:
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5), (2, 0, 6)])
    write_ledger_index(d, [LocalIndexRow(1)])
    out = tmp_path / "scan"
    r = CliRunner().invoke(app, ["scan-bookie", "--ledger-dirs", str(d), "--bookie-id", "bk:3181", "--out", str(out),
                                 "--json", "-q"])  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["complete"] and doc["bookie_id"] == "bk:3181" and doc["tables"]["entry_log_ledgers"] == 2
    assert doc["index"]["status"] == "read" and (out / "manifest.json").exists()


def test_partial_scan_exits_1(tmp_path: Path) -> None:
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    (d / "current" / "zz.log").write_bytes(b"")
    r = CliRunner().invoke(app, ["scan-bookie", "--ledger-dirs", str(d), "--bookie-id", "b:1", "--out",
                                 str(tmp_path / "scan"), "--max-scan-mb-s", "5"])  # fmt: skip
    assert r.exit_code == 1, r.output
    assert "partial" in r.stderr and "zz.log" in r.stderr


def test_failure_exits_3_with_code_and_hint(tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app, ["scan-bookie", "--ledger-dirs", str(tmp_path), "--bookie-id", "b:1", "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 3
    assert "bookie-dir-invalid" in r.stderr and "hint" in r.stderr
    assert not (tmp_path / "o").exists()


def test_bad_throttle_and_bad_out_exit_3_with_their_codes(tmp_path: Path) -> None:
    """--max-scan-mb-s below the floor (a scan that would never end) and --out being a file are clear errors
    with a code, not a hang or an internal error; a log id past 2^63 only makes the scan partial (exit 1)."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    base = ["scan-bookie", "--ledger-dirs", str(d), "--bookie-id", "b:1", "-q"]
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "o"), "--max-scan-mb-s", "1e-9"])
    assert r.exit_code == 3 and "scan-throttle-invalid" in r.stderr and "hint" in r.stderr
    f = tmp_path / "file"
    f.write_text("x")
    r = CliRunner().invoke(app, [*base, "--out", str(f)])
    assert r.exit_code == 3 and "scan-out-invalid" in r.stderr
    write_entry_log(d / "current" / "ffffffffffffffff.log", 0, [(2, 0, 5)])
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "o2")])
    assert r.exit_code == 1 and "bad-id" in r.stderr and (tmp_path / "o2" / "manifest.json").exists()


def test_every_bad_throttle_value_gets_the_same_code_and_a_json_error(tmp_path: Path) -> None:
    """A negative or NaN --max-scan-mb-s is the same error as one below the floor (scan-throttle-invalid, exit 3,
    the error document on stdout with --json), not a usage error of another shape (exit 2, nothing on stdout)."""
    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    for i, value in enumerate(["-1", "nan", "-inf", "0.5"]):
        out = tmp_path / f"o{i}"
        r = CliRunner().invoke(app, ["scan-bookie", "--ledger-dirs", str(d), "--bookie-id", "b:1", "--out", str(out),
                                     "--json", "-q", "--max-scan-mb-s", value])  # fmt: skip
        assert r.exit_code == 3, (value, r.output)
        assert json.loads(r.stdout)["error"]["code"] == "scan-throttle-invalid", value
        assert not out.exists()


def test_out_inside_a_configured_journal_or_unscanned_dir_is_refused(tmp_path: Path) -> None:
    """With --bookie-config every directory the bookie owns is off limits to --out, not only those scanned: the
    journal directories (a full journal disk stops the bookie) and a ledger directory left out of the scan. Both
    were written into (exit 0)."""
    d1, d2, j = tmp_path / "d1", tmp_path / "d2", tmp_path / "journal"
    for d in (d1, d2):
        write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    (j / "current").mkdir(parents=True)
    conf = tmp_path / "bookkeeper.conf"
    conf.write_text(f"ledgerDirectories={d1},{d2}\njournalDirectories={j}\nadvertisedAddress=10.1.2.3\n")
    base = ["scan-bookie", "--bookie-config", str(conf), "--json", "-q"]
    for extra, out in (([], j / "current" / "scan"), (["--ledger-dirs", str(d1)], d2 / "current" / "scan")):
        r = CliRunner().invoke(app, [*base, *extra, "--out", str(out)])
        assert r.exit_code == 3, (out, r.output)
        assert "inside the scanned directory tree or the bookie's other directories" in r.stderr
        assert not out.exists()
    conf.write_text(f"ledgerDirectories={d1}\njournalDirectory={j}\nadvertisedAddress=10.1.2.3\n")
    r = CliRunner().invoke(app, [*base, "--out", str(j / "scan")])
    assert r.exit_code == 3 and not (j / "scan").exists()
    r = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "scan")])
    assert r.exit_code == 0, r.output


def test_a_bookie_id_or_directory_the_scan_cannot_record_is_a_clear_error(tmp_path: Path) -> None:
    """A --bookie-id upstream cannot register (BookieId.validateBookieId) and a ledger directory whose name is not
    UTF-8 (the manifest and tables store both as text) were an internal error after the whole scan (exit 3, no
    manifest, UnicodeEncodeError): now a code and a hint before anything is read."""
    import os

    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    bad_dir = Path(os.fsdecode(bytes(tmp_path) + b"/led\xffgers"))
    write_entry_log(entry_log_path(bad_dir, 1), 1, [(1, 0, 5)])
    cases = [
        (["--ledger-dirs", str(d), "--bookie-id", os.fsdecode(b"bk\xff:3181")], "bookie-id-invalid"),
        (["--ledger-dirs", str(d), "--bookie-id", "bk 0:3181"], "bookie-id-invalid"),
        (["--ledger-dirs", str(d), "--bookie-id", "readonly"], "bookie-id-invalid"),
        (["--ledger-dirs", str(bad_dir), "--bookie-id", "bk:3181"], "bookie-dir-invalid"),
    ]
    for i, (args, code) in enumerate(cases):
        out = tmp_path / f"o{i}"
        r = CliRunner().invoke(app, ["scan-bookie", *args, "--out", str(out), "--json", "-q"])
        assert r.exit_code == 3, (args, r.output)
        err = json.loads(r.stdout)["error"]
        assert err["code"] == code and err["hint"], args
        assert not out.exists()


def test_a_log_name_cannot_write_control_sequences_to_the_terminal(tmp_path: Path) -> None:
    """A name in current/ is printed in the summary's skipped lines: one holding ESC sequences or a newline went to
    the operator's terminal raw (colours, cursor moves, a forged line). Control characters and undecodable bytes
    are shown escaped; the manifest keeps the exact name."""
    import os

    d = tmp_path / "ledgers"
    write_entry_log(entry_log_path(d, 1), 1, [(1, 0, 5)])
    (d / "current" / "a\x1b[2J\nnext: rm -rf.log").write_bytes(b"")
    (d / "current" / os.fsdecode(b"\xff.log")).write_bytes(b"")
    out = tmp_path / "scan"
    r = CliRunner().invoke(app, ["scan-bookie", "--ledger-dirs", str(d), "--bookie-id", "b:1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    assert "\x1b" not in r.stderr and "\nnext: rm" not in r.stderr
    assert "a\\x1b[2J\\nnext: rm -rf.log" in r.stderr and "\\udcff.log" in r.stderr
    names = {s["file"] for s in json.loads((out / "manifest.json").read_text())["skipped"]["first"]}
    assert "current/a\x1b[2J\nnext: rm -rf.log" in names
    exact = {s["file"] for s in skipped_of(out)}  # the table keeps every name exactly, UTF-8 or not
    assert exact == {"current/a\x1b[2J\nnext: rm -rf.log", "current/" + os.fsdecode(b"\xff.log")}
