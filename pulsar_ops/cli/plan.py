"""`pulsar-ops plan AUDIT_DIR --out PLAN.json`: a reviewed, checksummed dry-run plan. Never writes ZooKeeper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.cli.common import emit_json, err_console, guarded
from pulsar_ops.errors import ConfigError
from pulsar_ops.repair.output_paths import check_file_target
from pulsar_ops.repair.plan_builder import BuiltPlan, build_plan
from pulsar_ops.repair.planner import DEFAULT_SUBTREE_MAX_ZNODES, OPT_IN, PlanParams
from pulsar_ops.report.plan_view import kinds_of
from pulsar_ops.units import human_bytes, parse_size


def _say(line: str) -> None:
    err_console.print(line, markup=False, highlight=False, emoji=False)


def print_plan_summary(built: BuiltPlan) -> None:
    plan = built.plan
    s: dict[str, Any] = dict(plan.summary)
    _say(f"Plan {plan.plan_id} -> {built.path}")
    _say(f"  snapshot {plan.snapshot.get('id')}  checksum {built.checksum}")
    _say(f"Actions: {s['actions']} ({human_bytes(s['bytes'])}, {s['znodes']} znodes to delete)")
    for kind, k in s["by_kind"].items():
        line = f"  {kind}: {k['actions']} action(s), {human_bytes(k['bytes'])}, {k['znodes']} znode(s)"
        if k.get("rewrites"):
            line += f" to delete, {k['rewrites']} managed-ledger znode(s) rewritten"
            line += f" without {k['dropped_ledgers']} ledger(s)"
        _say(line)
    if s["ledger_kinds"]:
        _say("  ledger kinds: " + ", ".join(f"{k}={v}" for k, v in s["ledger_kinds"].items()))
    if s["leaks"]:
        _say("  znode leaks: " + ", ".join(f"{k}={v}" for k, v in s["leaks"].items()))
    _say(f"  actions that load topics: {s['loads_topics']} ({s['loads_topics_note']})")
    np_ = s["not_planned"]
    _say(f"Not planned: {np_['total']}")
    for reason, n in np_["by_reason"].items():
        _say(f"  not planned: {reason}: {n}")
    cut = s["cut"]
    if cut["actions"]:
        _say(f"Caps cut {cut['actions']} action(s) ({human_bytes(cut['bytes'])}); order: {s['order']}")
    _say("Predicted impact:")
    for line in built.impact_lines:
        _say(f"  {line}")
    kinds = kinds_of([a.to_json() for a in plan.actions])
    if kinds:
        _say("Per action kind (what changes; when the bookies get the bytes back: the GC lines above):")
    for k in kinds:
        line = (
            f"  {k.kind}: {k.actions} action(s), {k.metadata_ops} metadata-store op(s) "
            f"({k.znode_deletes} delete(s), {k.rewrites} rewrite(s)); {human_bytes(k.bytes_on_disk)} of bookie data "
            "(all copies) becomes garbage"
        )
        if k.kind == "drop-missing-ledger":
            line += f"; acknowledged loss {k.lost_entries} entries ({human_bytes(k.lost_bytes)}), no bytes freed"
        _say(line)
    for a in plan.actions:  # bookie-gc: what each bookie is asked, and the bytes the GC model predicts it frees
        if a.bookie_gc is not None:
            by = a.impact.get("predicted_by") or {}
            _say(
                f"  bookie-gc {a.bookie_gc.bookie_id}: PUT /api/v1/bookie/gc {a.bookie_gc.body()}; predicted to free "
                f"{human_bytes(int(a.impact.get('predicted_freed_bytes') or 0))} ("
                + ", ".join(f"{k} {human_bytes(int(v))}" for k, v in by.items())
                + ")"
            )
    if not s["actions"]:
        _say("Nothing to do: no finding is plannable (the plan file is written; applying it changes nothing).")
        return
    _say(f"Next: pulsar-ops apply {built.path} --zookeeper HOSTS --phase mark   (dry run; add --apply to act)")


def register(app: typer.Typer) -> None:
    """Add `plan` to the root app."""

    @app.command("plan")
    @guarded
    def plan(
        audit_dir: Path = typer.Argument(..., help="Audit directory written by `pulsar-ops audit`."),
        out: Path = typer.Option(..., "--out", help="Where to write the plan (JSON)."),
        max_actions: int | None = typer.Option(
            None, "--max-actions", min=0, help="Plan at most N actions (oldest first, then biggest)."
        ),
        max_bytes: str | None = typer.Option(
            None, "--max-bytes", help="Plan at most this many bytes, e.g. 10GB or 512GiB (oldest first)."
        ),
        max_subtree_znodes: int = typer.Option(
            DEFAULT_SUBTREE_MAX_ZNODES,
            "--max-subtree-znodes",
            min=1,
            help="Largest znode subtree deleted in one transaction; bigger leaks are not planned.",
        ),
        include: list[str] = typer.Option(
            [],
            "--include",
            help="Also repair this detection (opt-in; repeatable): dangling-ledger -> drop-missing-ledger "
            "(rewrites an unloaded topic's ledger list without ledgers BookKeeper no longer has: their data is "
            "lost, the topic can load again); inactive-subscription -> delete-subscription (through a broker); "
            "expired-retention-unloaded -> load-topic (a broker loads and trims it; --offline-trim instead "
            "rewrites the list without a broker).",
        ),
        offline_trim: bool = typer.Option(
            False,
            "--offline-trim",
            help="Repair expired-retention-unloaded without a broker (trim-unloaded): rewrite an unloaded topic's "
            "ledger list without the ledgers its first trim after a load would remove, then delete their metadata.",
        ),
        offline_trim_namespace: list[str] = typer.Option(
            [],
            "--offline-trim-namespace",
            metavar="TENANT/NS",
            help="--offline-trim for this namespace only (repeatable); with --include expired-retention-unloaded the "
            "other namespaces' topics are loaded through a broker (load-topic).",
        ),
        bookie_scan: list[Path] = typer.Option(
            [],
            "--bookie-scan",
            help="A `scan-bookie` output directory (repeat, one per bookie): the predicted impact on that bookie "
            "uses its measured entry-log layout instead of the estimate from ledger metadata, and its storage "
            "findings get a bookie-gc action (a forced GC, with the bytes it is predicted to free).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the plan summary as JSON on stdout."),
    ) -> None:
        """Write a dry-run plan from an audit's plannable findings. Never writes to ZooKeeper. Exit 0."""
        unknown = sorted(set(include) - set(OPT_IN))
        if unknown:
            raise ConfigError(
                f"--include {unknown[0]}: not an opt-in detection",
                hint=f"choose from: {', '.join(sorted(OPT_IN))}",
            )
        params = PlanParams(
            max_actions=max_actions,
            max_bytes=None if max_bytes is None else parse_size(max_bytes),
            subtree_max_znodes=max_subtree_znodes,
            include=frozenset(include),
            offline_trim=offline_trim,
            offline_trim_namespaces=frozenset(offline_trim_namespace),
        )
        check_file_target(out, "--out", "plan-out-invalid")  # before reading the audit: nothing half-written
        built = build_plan(audit_dir, out, params, bookie_scans=bookie_scan)
        print_plan_summary(built)
        if as_json:
            emit_json(
                {
                    "plan": str(built.path),
                    "plan_id": built.plan.plan_id,
                    "checksum": built.checksum,
                    "snapshot": dict(built.plan.snapshot),
                    "caps": dict(built.plan.caps),
                    "summary": dict(built.plan.summary),
                    "impact": dict(built.plan.impact),
                }
            )
