"""`scan-bookie --bookie-config bookkeeper.conf`: directories and bookie id from the bookie's own configuration, a
configured directory left out recorded and exiting 1, and a clear code for a missing/unreadable/unparseable file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app
from pulsar_ops.testing.entrylog_writer import LocalIndexRow, entry_log_path, write_entry_log, write_ledger_index


def bookie(root: Path) -> tuple[Path, Path, Path]:
    """Two ledger directories with relative names in the conf (as Pulsar ships it), the bookie's home ``root``."""
    d0, d1 = root / "data" / "l0", root / "data" / "l1"
    write_entry_log(entry_log_path(d0, 1), 1, [(1, 0, 5), (2, 0, 6)])
    write_entry_log(entry_log_path(d1, 1), 1, [(3, 0, 7)])
    write_ledger_index(d0, [LocalIndexRow(1), LocalIndexRow(2)])
    write_ledger_index(d1, [LocalIndexRow(3)])
    conf = root / "conf" / "bookkeeper.conf"
    conf.parent.mkdir()
    conf.write_text(
        "# Pulsar's bookkeeper.conf, shortened\nbookiePort=3181\nadvertisedAddress=10.1.2.3\n"
        "ledgerDirectories=data/l0,\\\n    data/l1\n# indexDirectories=data/bookkeeper/ledgers\n"
        "gcWaitTime=900000\nforceAllowCompaction=true\n"
    )
    return conf, d0, d1


def invoke(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, ["scan-bookie", "-q", *args])
    return r.exit_code, r.stdout, r.stderr


def test_the_configuration_is_enough(tmp_path: Path) -> None:
    conf, d0, d1 = bookie(tmp_path)
    out = tmp_path / "scan"
    code, stdout, stderr = invoke("--bookie-config", str(conf), "--bookie-home", str(tmp_path), "--out", str(out),
                                  "--json")  # fmt: skip
    assert code == 0, stderr
    m = json.loads(stdout)
    assert m["bookie_id"] == "10.1.2.3:3181" and m["complete"]
    assert m["ledger_dirs"] == [str(d0), str(d1)] and m["index_dirs"] == [str(d0), str(d1)]
    assert m["tables"]["entry_log_ledgers"] == 3 and m["tables"]["local_index"] == 3
    bc = m["bookie_config"]
    assert bc["source"] == str(conf) and bc["bookie_id_from"] == "advertisedAddress" and bc["index_dirs_default"]
    assert bc["not_scanned"] == {"ledger_dirs": [], "index_dirs": []}
    # its GC keys, for the plan's bookie-gc rule on this bookie (model.scan_layout reads them back)
    assert bc["gc"] == {"gcWaitTime": "900000", "forceAllowCompaction": "true"}
    from pulsar_ops.model.scan_layout import read_scan

    s = read_scan(out)
    assert s.config_gc == bc["gc"] and s.config_source == str(conf)


def test_a_configured_directory_left_out_is_recorded_and_exits_1(tmp_path: Path) -> None:
    conf, d0, d1 = bookie(tmp_path)
    out = tmp_path / "scan"
    code, _, stderr = invoke("--bookie-config", str(conf), "--bookie-home", str(tmp_path), "--ledger-dirs", str(d0),
                             "--bookie-id", "bk:3181", "--out", str(out))  # fmt: skip
    assert code == 1, stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["bookie_id"] == "bk:3181" and m["bookie_config"]["bookie_id_from"] == "--bookie-id"
    assert m["bookie_config"]["not_scanned"] == {"ledger_dirs": [str(d1)], "index_dirs": [str(d1)]}
    assert "not scanned" in stderr and str(d1) in stderr


def test_a_directory_given_through_another_name_is_the_same_directory(tmp_path: Path) -> None:
    conf, d0, d1 = bookie(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(d1)
    out = tmp_path / "scan"
    code, _, stderr = invoke("--bookie-config", str(conf), "--bookie-home", str(tmp_path), "--ledger-dirs",
                             f"{d0},{alias}", "--out", str(out))  # fmt: skip
    assert code == 0, stderr
    assert json.loads((out / "manifest.json").read_text())["bookie_config"]["not_scanned"]["ledger_dirs"] == []


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("missing", "bookie-config-missing"),
        ("directory", "bookie-config-unreadable"),
        ("binary", "bookie-config-invalid"),
        ("include", "bookie-config-invalid"),
        ("relative", "bookie-config-relative-dir"),
        ("mismatch", "bookie-config-invalid"),
        ("loopback", "bookie-id-unknown"),
        ("nothing", "scan-target-missing"),
    ],
)
def test_bad_configuration_has_a_code_and_writes_nothing(tmp_path: Path, setup: str, expected: str) -> None:
    conf = tmp_path / "bookkeeper.conf"
    text = {
        "binary": "ledgerDirectories=/x\x00",
        "include": "include=more.conf\n",
        "relative": "ledgerDirectories=data/bookkeeper/ledgers\nbookieId=b-0\n",
        "mismatch": "ledgerDirectories=/a,/b\nindexDirectories=/c\nbookieId=b-0\n",
        "loopback": f"ledgerDirectories={tmp_path}\nadvertisedAddress=127.0.0.1\n",
    }.get(setup)
    if text is not None:
        conf.write_text(text)
    elif setup == "directory":
        conf.mkdir()
    args = [] if setup == "nothing" else ["--bookie-config", str(conf)]
    code, _, stderr = invoke(*args, "--out", str(tmp_path / "o"))
    assert code == 3 and expected in stderr and "hint" in stderr, stderr
    assert not (tmp_path / "o").exists()
