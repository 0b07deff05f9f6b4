"""Golden comparison of ``plan.json`` across a refactor of ``pulsar_ops/repair/`` (issue 34).

    # once, from the code before the change (e.g. PYTHONPATH=/path/to/main), on a demo run's audit:
    pulsar-ops demo --out DEMO
    python tests/perf/plan_golden.py make DEMO/audit GOLDEN_DIR
    # after the change:
    python tests/perf/plan_golden.py compare DEMO/audit GOLDEN_DIR

Plans the demo's audit with every variant below (the default plan and each opt-in repair), with a fixed plan id
and clock, and writes (``make``) or compares (``compare``) each ``plan.json`` with the id, the creation time and
the checksum left out. Exit code 1 and a diff of the first differing plan when one differs.

    # the journal record shapes of two `pulsar-ops demo --apply` runs (before and after the change):
    python tests/perf/plan_golden.py journals OLD_DEMO_DIR NEW_DEMO_DIR

compares, per action kind (its id's prefix) and journal state, the set of keys its records carry (values aside:
ids, times and hashes differ).
"""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path
from typing import Any

from pulsar_ops.repair.plan_builder import build_plan
from pulsar_ops.repair.planner import PlanParams

NOW_MS = 1_795_915_804_124  # the demo's audit --now (seed 1)
VARIANTS: dict[str, PlanParams] = {
    "default": PlanParams(),
    "opt-in-load": PlanParams(
        include=frozenset({"dangling-ledger", "inactive-subscription", "expired-retention-unloaded"})
    ),
    "opt-in-offline": PlanParams(include=frozenset({"dangling-ledger", "inactive-subscription"}), offline_trim=True),
    "capped": PlanParams(max_actions=5, max_bytes=50_000_000),
    "bookie-scans": PlanParams(),  # with the demo's bookie scans (DEMO/bookie-scans/*): the bookie-gc actions
}
_VOLATILE = ("plan_id", "created_at_ms", "checksum")


def _normal(path: Path) -> str:
    doc: dict[str, Any] = json.loads(path.read_text())
    for key in _VOLATILE:
        doc.pop(key, None)
    return json.dumps(doc, indent=1, sort_keys=True)


def _plan(audit: Path, out: Path, params: PlanParams, scans: tuple[Path, ...] = ()) -> str:
    build_plan(audit, out, params, now_ms=NOW_MS, plan_id="golden", bookie_scans=scans)
    return _normal(out)


def _shapes(demo: Path) -> dict[str, list[list[str]]]:
    """``kind:state`` -> the distinct key sets of its records, over every journal under ``demo``."""
    shapes: dict[str, set[tuple[str, ...]]] = {}
    for journal in sorted(demo.rglob("*.journal.jsonl")):
        for line in journal.read_text().splitlines():
            rec = json.loads(line)
            kind = str(rec.get("action", "")).split("-")[0]  # the action id's prefix names its kind
            shapes.setdefault(f"{kind}:{rec.get('state', rec.get('type'))}", set()).add(tuple(sorted(rec)))
    return {k: sorted(list(t) for t in v) for k, v in sorted(shapes.items())}


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "journals":
        old, new = _shapes(Path(argv[1])), _shapes(Path(argv[2]))
        print(json.dumps(new, indent=1))
        print("journal record shapes: " + ("same" if old == new else f"DIFFER (before: {json.dumps(old)})"))
        return 0 if old == new and old else 1
    if len(argv) != 3 or argv[0] not in ("make", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, audit, golden = argv[0], Path(argv[1]), Path(argv[2])
    golden.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, params in VARIANTS.items():
        want = golden / f"{name}.json"
        scans = tuple(sorted((audit.parent / "bookie-scans").glob("*"))) if name == "bookie-scans" else ()
        if name == "bookie-scans" and not scans:
            continue
        if mode == "make":
            want.write_text(_plan(audit, want.with_suffix(".raw.json"), params, scans))
            print(f"{name}: written {want}")
            continue
        got = _plan(audit, golden / f"{name}.now.json", params, scans)
        expected = want.read_text()
        if got == expected:
            actions = len(json.loads(got)["actions"])
            print(f"{name}: same ({actions} actions)")
            continue
        failed += 1
        print(f"{name}: DIFFERS")
        diff = difflib.unified_diff(expected.splitlines(), got.splitlines(), "golden", "now", lineterm="", n=2)
        print("\n".join(list(diff)[:80]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
