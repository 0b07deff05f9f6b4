"""`pulsar-ops seed`: write a synthetic Pulsar cluster (with injected defects) into ZooKeeper + ground truth."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from pulsar_ops.cli.common import guarded, info
from pulsar_ops.errors import ConfigError, ZooKeeperError


def _connect(hosts: str, what: str) -> object:
    """A started KazooClient for HOSTS[/chroot]; the chroot is created first when missing."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    servers, _, chroot = hosts.partition("/")
    try:
        if chroot.strip("/"):
            base = KazooClient(hosts=servers, timeout=30.0)
            base.start(timeout=30)
            try:
                base.ensure_path("/" + chroot.strip("/"))
            finally:
                base.stop()
                base.close()
        client = KazooClient(hosts=hosts, timeout=30.0)
        client.start(timeout=30)
    except (KazooTimeoutError, KazooException) as e:
        raise ZooKeeperError(f"cannot connect to the {what} ZooKeeper {hosts}: {e!r}") from e
    return client


def seed_command(
    zookeeper: str = typer.Option(..., "--zookeeper", help="Local metadata store: HOST:PORT[,HOST:PORT][/chroot]."),
    config_zookeeper: str | None = typer.Option(
        None, "--config-zookeeper", help="Configuration store (default: the same as --zookeeper)."
    ),
    topics: int = typer.Option(100, "--topics", min=1, help="Healthy managed ledgers to create (partitions count)."),
    seed: int = typer.Option(1, "--seed", help="Random seed: the same seed gives the same cluster."),
    defects: str = typer.Option(
        "all", "--defects", help="all | none | comma list (orphan-ledger, ..., corrupt, corrupt-ledgers)."
    ),
    ground_truth: Path | None = typer.Option(None, "--ground-truth", help="Write the expected findings JSON here."),
    now: int | None = typer.Option(None, "--now-ms", help="Clock for the generated ages (default: wall clock)."),
    persistent_ownership: bool = typer.Option(
        True,
        "--persistent-ownership/--ephemeral-ownership",
        help="Bundle ownership, broker and bookie registrations as persistent znodes (they outlive this "
        "process, default) or ephemeral ones (vanish when seeding ends, as in a stopped cluster).",
    ),
    batch: int = typer.Option(1000, "--batch", min=1, max=5000, help="Znodes per multi-create request."),
) -> None:
    """Seed a synthetic Pulsar cluster into an EMPTY ZooKeeper chroot and write its ground truth."""
    from pulsar_ops.testing.model_spec import SeedOptions, parse_defects
    from pulsar_ops.testing.seeder import seed_cluster

    if ground_truth is not None and not ground_truth.parent.exists():
        raise ConfigError(f"directory {ground_truth.parent} does not exist", hint="create it or pick another path")
    options = SeedOptions(
        topics=topics,
        seed=seed,
        defects=parse_defects(defects),
        now_ms=now,
        persistent_ownership=persistent_ownership,
        batch_size=batch,
    )
    local = _connect(zookeeper, "local")
    config = _connect(config_zookeeper, "configuration") if config_zookeeper else None
    try:
        info(f"seeding {topics} topics (seed {seed}, defects: {', '.join(sorted(options.defects)) or 'none'})")
        result = seed_cluster(
            local,
            config,
            options,
            progress=lambda n: info(f"  {n:,} znodes"),
        )
    finally:
        for c in (local, config):
            if c is not None:
                c.stop()  # type: ignore[attr-defined]
                c.close()  # type: ignore[attr-defined]
    gt = result.ground_truth
    if ground_truth is not None:
        ground_truth.write_text(json.dumps(gt, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        info(f"ground truth: {ground_truth}")
    counts = {k: v for k, v in gt["counts"].items() if k in gt["expected"]}
    info(
        f"wrote {result.znodes_written:,} znodes in {result.seconds:.1f}s "
        f"({result.znodes_per_second:,.0f} znodes/s); expected findings: "
        + ", ".join(f"{k}={v}" for k, v in counts.items())
    )


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
    app.command("seed")(guarded(seed_command))
