"""``pulsar-ops audit --compare-scans OLD=NEW ... [--plan PLAN] [--out FILE] [--json]``: what a reclaim freed, per
bookie, against the plan's prediction (:mod:`pulsar_ops.model.reclaim`). No Spark, no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pulsar_ops.cli.common import emit_json, err_console
from pulsar_ops.errors import ConfigError
from pulsar_ops.model import reclaim
from pulsar_ops.model.scan_layout import read_scan
from pulsar_ops.repair.plan_file import load_plan


def run_compare(pairs: list[str], plan_path: Path | None, out: Path | None, as_json: bool) -> int:
    predicted: dict[str, reclaim.Predicted] = {}
    if plan_path is not None:
        load_plan(plan_path)  # schema and checksum: a plan edited by hand is refused
        predicted = reclaim.predictions(json.loads(plan_path.read_text()))
    bookies: list[dict[str, Any]] = []
    seen: set[str] = set()
    for p in pairs:
        old, sep, new = p.partition("=")
        if not sep or not old or not new:
            raise ConfigError(
                f"--compare-scans {p!r}: expected OLD=NEW (two scan-bookie directories of one bookie)",
                hint="pulsar-ops audit --compare-scans scans/b1=rescans/b1 --plan plan.json",
                code="compare-scans-invalid",
            )
        a, b = read_scan(Path(old)), read_scan(Path(new))
        if a.bookie_id != b.bookie_id:
            raise ConfigError(
                f"--compare-scans {p!r}: the scans are of bookies {a.bookie_id} and {b.bookie_id}",
                hint="pair the two scans of one bookie",
                code="compare-scans-invalid",
            )
        if a.bookie_id in seen:
            raise ConfigError(f"--compare-scans: bookie {a.bookie_id} twice", code="compare-scans-invalid")
        seen.add(a.bookie_id)
        bookies.append(reclaim.compare(a, b, predicted.get(a.bookie_id)))
    doc = {
        "plan": None if plan_path is None else str(plan_path),
        "bookies": bookies,
        "not_compared": sorted(set(predicted) - seen),
        "freed_bytes": sum(b["freed_bytes"] for b in bookies),
        "predicted_freed_bytes": sum(p.freed_bytes for p in predicted.values()),
    }
    for line in reclaim.lines(doc):
        err_console.print(line, markup=False, highlight=False)
    if doc["not_compared"]:
        err_console.print(f"planned but not compared (no scan pair): {', '.join(doc['not_compared'])}", markup=False)
    if out is not None:
        out.write_text(json.dumps(doc, indent=2) + "\n")
    if as_json:
        emit_json(doc)
    return 0
