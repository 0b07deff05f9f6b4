"""With --json, a failure still prints exactly one JSON document on stdout and exits 3 (every such command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pulsar_ops.cli.main import app


def _cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    missing = str(tmp / "missing")
    bad_workload = tmp / "w.json"
    bad_workload.write_text("[1, 2")
    return {
        "scrape": (
            ["scrape", "--zookeeper", "127.0.0.1:1/x", "--out", str(tmp / "s"), "--zk-auth", "nocolon"],
            "config-invalid",
        ),
        "audit": (["audit", missing, "--out", str(tmp / "a")], "snapshot"),
        "plan": (["plan", missing, "--out", str(tmp / "p.json")], "findings"),
        "apply": (["apply", missing, "--zookeeper", "127.0.0.1:1", "--phase", "mark"], "plan-invalid"),
        "restore": (["restore", missing, "--zookeeper", "127.0.0.1:1"], "restore-failed"),
        "model gc": (["model", "gc", "--layout", missing, "--delete", "1"], "model-input-invalid"),
        "model cache": (["model", "cache", "--workload", str(bad_workload)], "model-input-invalid"),
        "model nack": (["model", "nack", "--rate", "10", "--delay", "5"], "model-input-invalid"),
        "bench audit": (["bench", "audit", "--snapshot", missing], "snapshot"),
        # a setting that is not KEY=VALUE: refused before the snapshot is read or a JVM starts
        "bench audit --spark-conf": (
            ["bench", "audit", "--snapshot", missing, "--spark-conf", "nokey"],
            "config-invalid",
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "scrape",
        "audit",
        "plan",
        "apply",
        "restore",
        "model gc",
        "model cache",
        "model nack",
        "bench audit",
        "bench audit --spark-conf",
    ],
)
def test_failure_with_json_is_one_error_document(name: str, tmp_path: Path) -> None:
    args, code_prefix = _cases(tmp_path)[name]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 3, (r.stdout, r.stderr)
    doc = json.loads(r.stdout)  # exactly one document: json.loads refuses trailing data
    assert set(doc) == {"error"} and set(doc["error"]) == {"code", "message", "hint"}
    assert doc["error"]["code"].startswith(code_prefix), doc
    assert doc["error"]["hint"]
    assert f"error[{doc['error']['code']}]" in r.stderr  # the human form still goes to stderr


def test_without_json_stdout_stays_empty(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["plan", str(tmp_path / "missing"), "--out", str(tmp_path / "p.json")])
    assert r.exit_code == 3 and r.stdout == ""
