"""`pulsar-ops seed`: write a synthetic Pulsar cluster (with injected defects) into ZooKeeper + ground truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops import zkconn
from pulsar_ops.cli.common import (
    ZK_AUTH,
    ZK_AUTH_FILE,
    ZK_SASL,
    ZK_SASL_FILE,
    ZK_TLS_CA,
    ZK_TLS_CERT,
    ZK_TLS_KEY,
    guarded,
    info,
)
from pulsar_ops.errors import ConfigError, ZooKeeperError
from pulsar_ops.zkconn import ZkSecurity, security_from_flags


def _connect(hosts: str, what: str, security: ZkSecurity) -> Any:
    """A started kazoo client (built by pulsar_ops.zkconn) for HOSTS[/chroot]; the chroot is created first."""
    servers, _, chroot = hosts.partition("/")
    if chroot.strip("/"):
        base = zkconn.connect(servers, security, where=f"{servers} ({what})")
        try:
            base.ensure_path("/" + chroot.strip("/"))
        except Exception as e:  # kazoo's errors: the seed cannot create its chroot
            raise ZooKeeperError(f"cannot create the chroot /{chroot.strip('/')} on {servers}: {e!r}") from e
        finally:
            zkconn.close(base)
    return zkconn.connect(hosts, security, where=f"{servers} ({what})")


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
    metadata_compression: str | None = typer.Option(
        None,
        "--metadata-compression",
        help="Write managed-ledger and cursor infos as a broker with managedLedgerInfoCompressionType / "
        "managedCursorInfoCompressionType = NONE|LZ4|ZLIB|ZSTD|SNAPPY does (default: a mix of all).",
    ),
    compression_threshold: int = typer.Option(
        0,
        "--compression-threshold",
        min=0,
        help="With --metadata-compression: only values longer than this many bytes are compressed "
        "(the broker's ...CompressionThresholdInBytes; Pulsar's default is 16384).",
    ),
    bookie_dirs: Path | None = typer.Option(
        None,
        "--bookie-dirs",
        help="Also write every bookie's ledger directories (entry logs, local index) here, consistent with the "
        "seeded metadata, with injected storage defects unless --defects none; DIR/bookies.json lists them.",
    ),
    load_manager: str = typer.Option(
        "modular",
        "--load-manager",
        help="modular (ModularLoadManagerImpl: ownership znodes under /namespace, default) | extensible "
        "(ExtensibleLoadManagerImpl: BrokerLookupData registrations, /loadbalance/extension/leader, no /namespace).",
    ),
    service_unit_state: str = typer.Option(
        "system-topic",
        "--service-unit-state",
        help="With --load-manager extensible, where bundle ownership lives: system-topic (upstream's default, "
        "unreadable from ZooKeeper) | metadata-store (/service_unit_state/<tenant>/<ns>/<bundle>).",
    ),
    zk_auth: str | None = ZK_AUTH,
    zk_auth_file: Path | None = ZK_AUTH_FILE,
    zk_sasl: str | None = ZK_SASL,
    zk_sasl_file: Path | None = ZK_SASL_FILE,
    zk_tls_ca: Path | None = ZK_TLS_CA,
    zk_tls_cert: Path | None = ZK_TLS_CERT,
    zk_tls_key: Path | None = ZK_TLS_KEY,
) -> None:
    """Seed a synthetic Pulsar cluster into an EMPTY ZooKeeper chroot and write its ground truth."""
    from pulsar_ops.testing.model_spec import SeedOptions, parse_defects
    from pulsar_ops.testing.seeder import seed_cluster

    if bookie_dirs is not None and bookie_dirs.exists() and any(bookie_dirs.iterdir()):
        raise ConfigError(f"--bookie-dirs {bookie_dirs} is not empty", hint="pass a new directory")
    if ground_truth is not None and not ground_truth.parent.exists():
        raise ConfigError(f"directory {ground_truth.parent} does not exist", hint="create it or pick another path")
    options = SeedOptions(
        topics=topics,
        seed=seed,
        defects=parse_defects(defects),
        now_ms=now,
        persistent_ownership=persistent_ownership,
        batch_size=batch,
        metadata_compression=metadata_compression,
        compression_threshold=compression_threshold,
        bookie_dirs=str(bookie_dirs) if bookie_dirs is not None else None,
        load_manager=load_manager,
        service_unit_state=service_unit_state,
    )
    security = security_from_flags(
        zk_auth=zk_auth,
        zk_auth_file=zk_auth_file,
        zk_sasl=zk_sasl,
        zk_sasl_file=zk_sasl_file,
        zk_tls_ca=zk_tls_ca,
        zk_tls_cert=zk_tls_cert,
        zk_tls_key=zk_tls_key,
    )
    local = _connect(zookeeper, "local", security)
    config = _connect(config_zookeeper, "configuration", security) if config_zookeeper else None
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
                zkconn.close(c)
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
