"""The scrape summary line: a cluster without a name is said so, never "cluster None"."""

from __future__ import annotations

from pathlib import Path

import pytest

from pulsar_ops.cli import scrape
from pulsar_ops.snapshot.manifest import Manifest


def _manifest(cluster: str | None) -> Manifest:
    return Manifest(
        snapshot_id="s1",
        cluster=cluster,
        tool_version="0",
        schema_version=1,
        complete=True,
        started_at_ms=0,
        finished_at_ms=1000,
        zxid_range={},
        stores={},
        ledgers_root="/ledgers",
        row_counts={"znodes": 3},
    )


@pytest.mark.parametrize(("cluster", "shown"), [(None, "cluster not named: pass --cluster NAME"), ("c1", "cluster c1")])
def test_the_summary_names_the_cluster_or_says_it_has_none(
    cluster: str | None, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        scrape.err_console, "_file", None
    )  # rich then writes to the (captured) sys.stderr; `_file`, not
    # the `file` property, so the undo restores the original (None) instead of pinning the captured stream
    scrape.render_summary(_manifest(cluster), Path("/tmp/snap"))
    err = capsys.readouterr().err
    assert f"({shown}, multiRead off)" in err and "None" not in err
