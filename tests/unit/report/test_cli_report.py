"""`pulsar-ops report`: summary on stderr, files only when asked, clean errors (exit 3) that write nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from pulsar_ops.cli.main import app

from .conftest import FIXTURE, HOSTILE_TOPIC


def _audit_dir(tmp_path: Path) -> Path:
    d = tmp_path / "audit"
    d.mkdir()
    shutil.copy(FIXTURE, d / "findings.json")
    return d


def test_report_writes_every_format(tmp_path: Path) -> None:
    audit = _audit_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "report",
            str(audit),
            "--html",
            str(out / "r.html"),
            "--markdown",
            str(out / "r.md"),
            "--prometheus",
            str(out / "r.prom"),
            "--top",
            "2",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""  # human output goes to stderr
    err = result.stderr
    assert "Findings: 20 (1 critical, 14 warning, 5 info)" in err
    assert "Worst tenants by reclaimable bytes (top 2 of 5):" in err
    assert "Status: exit 2 = critical findings" in err
    assert sorted(p.name for p in out.iterdir()) == ["r.html", "r.md", "r.prom"]
    assert (out / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "## Worst tenants (top 2 of 5)" in (out / "r.md").read_text(encoding="utf-8")
    assert 'pulsar_ops_reclaimable_bytes{tenant="acme"} 300090000' in (out / "r.prom").read_text()


def test_report_without_outputs_prints_summary_only(tmp_path: Path) -> None:
    audit = _audit_dir(tmp_path)
    result = CliRunner().invoke(app, ["report", str(audit / "findings.json")])
    assert result.exit_code == 0
    assert "Largest findings (top 10 by bytes):" in result.stderr
    # markup-looking and hostile names are printed literally, not interpreted
    assert HOSTILE_TOPIC[:40] in result.stderr
    assert sorted(p.name for p in audit.iterdir()) == ["findings.json"]


def test_missing_findings_exit_3_with_hint(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 3
    assert "no findings.json here" in result.stderr
    assert "pulsar-ops audit SNAPSHOT --out DIR" in result.stderr


def test_malformed_findings_exit_3(tmp_path: Path) -> None:
    (tmp_path / "findings.json").write_text(json.dumps({"findings": [{"detection": "x", "severity": "bad"}]}))
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 3
    assert "severity: 'bad'" in result.stderr


def test_bad_output_directory_fails_before_writing_anything(tmp_path: Path) -> None:
    audit = _audit_dir(tmp_path)
    html_out = tmp_path / "r.html"
    result = CliRunner().invoke(
        app, ["report", str(audit), "--html", str(html_out), "--prometheus", str(tmp_path / "no" / "x.prom")]
    )
    assert result.exit_code == 3
    assert "no such directory" in result.stderr
    assert not html_out.exists()


def test_top_must_be_positive(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["report", str(_audit_dir(tmp_path)), "--top", "0"])
    assert result.exit_code == 2  # usage error from the option parser
