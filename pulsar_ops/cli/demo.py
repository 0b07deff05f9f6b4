"""`pulsar-ops demo`: the whole story on an embedded cluster, running the same commands an operator runs.

Starts a real ZooKeeper (from pyspark's jars), seeds a synthetic Pulsar cluster with injected defects and every
bookie's ledger directories (``seed --bookie-dirs``), then runs `scrape`, `scan-bookie` per bookie, `audit
--bookie-scan ...`, `report` and `plan` exactly as printed; with `--apply` also both `apply` phases (quarantine 0)
and a second scrape + audit that shows the repaired leaks gone. Everything it writes stays under `--out`.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.cli.common import err_console, guarded
from pulsar_ops.errors import PulsarOpsError
from pulsar_ops.findings import Finding, read_findings

EXIT_MISMATCH = 1


class DemoStepFailed(PulsarOpsError):
    code = "demo-step-failed"
    default_hint = "re-run `pulsar-ops demo --debug` and read the step's own error above"


def _say(text: str = "", style: str | None = None) -> None:
    err_console.print(text, markup=False, highlight=False, emoji=False, style=style)


def _run(args: list[str], *, ok: tuple[int, ...] = (0,)) -> int:
    """Run one pulsar-ops command in-process, exactly as an operator would type it."""
    from pulsar_ops.cli.main import app

    _say("")
    _say("$ pulsar-ops " + " ".join(shlex.quote(a) for a in args), style="bold cyan")
    rv = app(args=args, standalone_mode=False, prog_name="pulsar-ops")
    code = int(rv) if isinstance(rv, int) else 0
    if code not in ok:
        raise DemoStepFailed(f"`pulsar-ops {args[0]}` exited with {code}")
    return code


def _findings(audit_dir: Path) -> list[Finding]:
    return list(read_findings(audit_dir).findings)


def _plannable_by_detection(findings: list[Finding]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        if f.plannable:
            out[f.detection] = out.get(f.detection, 0) + 1
    return out


def _after_apply(before: list[Finding], after: list[Finding]) -> str:
    """What the second audit says about the first plan: planned findings left, and ledgers newly released."""
    planned = {f.key() for f in before if f.plannable}
    left = [f for f in after if f.plannable and f.key() in planned]
    released = {
        int(i) for f in before if f.plannable and f.detection == "znode-leak" for i in f.evidence.get("ledgers") or []
    }
    new = [f for f in after if f.plannable and f.key() not in planned]
    text = f"{len(left)} of {len(planned)} planned findings remain"
    if new:
        from_schemas = sum(1 for f in new if f.ledger_id in released)
        text += (
            f"; {len(new)} new plannable orphan(s), {from_schemas} of them schema ledgers released by deleting "
            "leaked schema locators (plan again to remove them)"
        )
    return text


def _after_rewrites(plan: Path, after: list[Finding]) -> str:
    """What the second audit says about the plan's other actions: idle subscriptions gone, dropped missing ledgers
    no longer dangling, trimmed ledgers no longer past retention."""
    actions = json.loads(plan.read_text(encoding="utf-8")).get("actions") or []
    dropped = {r["ledger_id"] for a in actions if a["kind"] == "drop-missing-ledger" for r in a["rewrite"]["removed"]}
    trimmed = {r["ledger_id"] for a in actions if a["kind"] == "trim-unloaded" for r in a["rewrite"]["removed"]}
    loaded = {i for a in actions if a["kind"] == "load-topic" for i in a["admin"]["expect_trimmed"]}
    dangling = {f.ledger_id for f in after if f.detection == "dangling-ledger"}
    expired = {
        int(i) for f in after if f.detection == "expired-retention-unloaded" for i in f.evidence.get("ledger_ids") or []
    }
    subs = {(a["admin"]["topic"], a["admin"]["subscription"]) for a in actions if a["kind"] == "delete-subscription"}
    idle = {(f.topic, f.subscription) for f in after if f.detection == "inactive-subscription"}
    parts = []
    if subs:
        parts.append(f"{len(subs - idle)} of {len(subs)} idle subscription(s) deleted through the broker")
    if dropped:
        parts.append(f"{len(dropped - dangling)} of {len(dropped)} dropped missing ledger(s) no longer dangling")
    if trimmed:
        parts.append(f"{len(trimmed - expired)} of {len(trimmed)} offline-trimmed ledger(s) no longer past retention")
    if loaded:
        parts.append(f"{len(loaded - expired)} of {len(loaded)} ledger(s) trimmed by the broker after its loads")
    return "".join(f"; {p}" for p in parts)


def _scan_bookies(bookies_dir: Path, out: Path) -> list[Path]:
    """`scan-bookie` for each bookie the seeder wrote directories for (as an operator runs it on each host)."""
    from pulsar_ops.testing.bookie_dirs import LAYOUT_FILE

    layout = bookies_dir / LAYOUT_FILE
    if not layout.is_file():
        return []
    scans = []
    for b in json.loads(layout.read_text(encoding="utf-8"))["bookies"]:
        target = out / str(b["bookie_id"]).replace(":", "_")
        _run(
            ["scan-bookie", "--ledger-dirs", ",".join(b["ledger_dirs"]), "--bookie-id", b["bookie_id"],
             "--out", str(target), "--quiet"]
        )  # fmt: skip
        scans.append(target)
    return scans


def _default_out() -> Path:
    return Path("pulsar-ops-demo") / time.strftime("run-%Y%m%d-%H%M%S", time.gmtime())


def register(app: typer.Typer) -> None:
    """Add `demo` to the root app."""

    @app.command("demo")
    @guarded
    def demo(
        topics: int = typer.Option(200, "--topics", min=1, help="Healthy topics to seed (defects come on top)."),
        seed: int = typer.Option(1, "--seed", help="Seed of the synthetic cluster (same seed, same cluster)."),
        do_apply: bool = typer.Option(
            False, "--apply", help="Also run both apply phases (quarantine 0) and audit again."
        ),
        out: Path | None = typer.Option(None, "--out", help="Working directory (default ./pulsar-ops-demo/run-*)."),
    ) -> None:
        """Run scrape -> audit -> report -> plan (-> apply -> audit) on an embedded, seeded cluster."""
        from pulsar_ops.testing.demo_cluster import CLOCK_AHEAD_MS, DemoCluster
        from pulsar_ops.testing.truth import compare, summary_lines

        started = time.monotonic()
        work = (out or _default_out()).resolve()
        if work.exists() and any(work.iterdir()):
            raise DemoStepFailed(f"{work} is not empty", hint="pass --out NEW_DIR")
        snap, audit, plan = work / "snapshot", work / "audit", work / "plan.json"
        _say(f"pulsar-ops demo: working directory {work}", style="bold")
        with DemoCluster(work, topics=topics, seed=seed) as cluster:
            assert cluster.result is not None and cluster.zk is not None
            r = cluster.result
            _say(
                f"embedded ZooKeeper {cluster.zk.version()} on {cluster.zk.hosts} (chroot /pulsar); seeded "
                f"{r.znodes_written:,} znodes in {r.seconds:.1f}s: {topics} healthy topics plus injected defects"
            )
            _say(
                f"the seeded clock runs {CLOCK_AHEAD_MS // 3_600_000} h ahead, so the audit uses --now "
                f"{cluster.now_ms} (leaked znodes written seconds ago must look old enough to plan)"
            )
            now = str(cluster.now_ms)
            _run(["scrape", "--zookeeper", cluster.hosts, "--out", str(snap)])
            scans = _scan_bookies(cluster.bookies_dir, work / "bookie-scans")
            scan_args = [a for s in scans for a in ("--bookie-scan", str(s))]
            _run(["audit", str(snap), "--out", str(audit), "--now", now, *scan_args], ok=(0, 1, 2))
            findings = _findings(audit)
            diffs = compare(findings, cluster.ground_truth)
            _say("")
            _say("findings vs the seeder's ground truth:", style="bold")
            for line in summary_lines(diffs):
                _say(line)
            all_match = all(d.ok for d in diffs.values())
            _run(
                [
                    "report",
                    str(audit),
                    "--html",
                    str(work / "report.html"),
                    "--markdown",
                    str(work / "report.md"),
                    "--prometheus",
                    str(work / "pulsar_ops.prom"),
                ]
            )
            _run(
                [
                    "plan", str(audit), "--out", str(plan), "--include", "dangling-ledger",
                    "--include", "inactive-subscription", "--include", "expired-retention-unloaded",
                    "--offline-trim-namespace", "acme/idle-week-0", *scan_args,
                ]
            )  # fmt: skip
            before = _plannable_by_detection(findings)
            after: str | None = None
            if do_apply:
                from pulsar_ops.repair.executor import APPLY_NOW_ENV
                from pulsar_ops.testing.admin_server import AdminServer

                zk = ["--zookeeper", cluster.hosts]
                # apply's eligibility rules age ledgers and retention by the same seeded clock as the audit
                _say(f"$ export {APPLY_NOW_ENV}={now}  # apply's rules use the seeded clock too", style="bold cyan")
                os.environ[APPLY_NOW_ENV] = now
                from pulsar_ops.testing.bookie_server import seeded_bookies

                try:
                    # bookie-gc actions: each seeded bookie's HTTP API over its directories, forced GC included
                    # (pulsar_ops/testing/bookie_server.py)
                    with seeded_bookies(cluster.hosts, cluster.bookies_dir) as urls:
                        _say(f"embedded bookie HTTP APIs for bookie-gc: {len(urls)} bookies")
                        http = [a for bid, url in sorted(urls.items()) for a in ("--bookie-http", f"{bid}={url}")]
                        _run(["apply", str(plan), *zk, "--phase", "mark", "--apply", "--yes", *http])
                        # delete-subscription goes through a broker: the embedded one serves the admin REST API over
                        # the same ZooKeeper (pulsar_ops/testing/admin_server.py), as the cluster's only broker
                        with AdminServer(cluster.hosts, now_ms=lambda: cluster.now_ms, serves_owned=True) as broker:
                            _say(f"embedded broker admin REST API on {broker.url} (delete-subscription, load-topic)")
                            _run(
                                [
                                    "apply", str(plan), *zk, "--phase", "delete", "--quarantine", "0", "--apply",
                                    "--yes", "--admin-url", broker.url, "--bookie-gc-interval", "0", *http,
                                ]
                            )  # fmt: skip
                finally:
                    os.environ.pop(APPLY_NOW_ENV, None)
                snap2, audit2 = work / "snapshot-after", work / "audit-after"
                _run(["scrape", "--zookeeper", cluster.hosts, "--out", str(snap2)])
                _run(["audit", str(snap2), "--out", str(audit2), "--now", now], ok=(0, 1, 2))
                found_after = _findings(audit2)
                after = _after_apply(findings, found_after) + _after_rewrites(plan, found_after)
        _summary(work, before, after, all_match, time.monotonic() - started, do_apply)
        if not all_match:
            _say("the findings differ from the seeded ground truth (see above): please report this", style="red")
            raise typer.Exit(EXIT_MISMATCH)


def _summary(
    work: Path, before: dict[str, int], after: str | None, all_match: bool, seconds: float, applied: bool
) -> None:
    _say("")
    _say("demo summary", style="bold")
    rows: list[tuple[str, Any]] = [
        ("plannable before", ", ".join(f"{k}={v}" for k, v in sorted(before.items())) or "none"),
    ]
    if after is not None:
        rows.append(("after apply", after))
    rows += [
        ("ground truth", "every detection matches" if all_match else "MISMATCH"),
        ("snapshot", work / "snapshot"),
        ("bookie scans", work / "bookie-scans"),
        ("findings", work / "audit" / "findings.json"),
        ("reports", f"{work / 'report.html'}, {work / 'report.md'}, {work / 'pulsar_ops.prom'}"),
        ("plan", work / "plan.json"),
    ]
    if applied:
        rows += [("backups", work / "plan.json.backup"), ("journal", work / "plan.json.journal.jsonl")]
    rows.append(("took", f"{seconds:.1f}s (ZooKeeper stopped)"))
    for k, v in rows:
        _say(f"  {k:<22} {v}")
    if not applied:
        _say("  next: `pulsar-ops demo --apply` also runs both apply phases and audits again")
