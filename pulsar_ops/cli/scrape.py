"""`pulsar-ops scrape`: read both metadata stores into a snapshot directory (manifest written last).

Exit 0 when the snapshot is written and every scope was read completely; 1 when it is written but scopes are
missing (ZooKeeper, admin or bookie scopes: the manifest says ``"complete": false`` and lists them, stderr names
them; the snapshot can still be audited, nothing in those scopes is planned); 3 when the tool failed. Human
output and progress on stderr; ``--json`` prints the manifest on stdout.
"""

from __future__ import annotations

from pathlib import Path

import typer  # noqa: TID251 - typer/rich live in cli/

from pulsar_ops.cli.common import (
    ZK_AUTH,
    ZK_AUTH_FILE,
    ZK_SASL,
    ZK_SASL_FILE,
    ZK_TLS_CA,
    ZK_TLS_CERT,
    ZK_TLS_KEY,
    emit_json,
    err_console,
    escape,
    guarded,
)
from pulsar_ops.cli.progress import ProgressLine
from pulsar_ops.errors import ConfigError
from pulsar_ops.scrape.client_conf import read_client_conf
from pulsar_ops.scrape.run import ScrapeConfig, ScrapeProgress, scrape
from pulsar_ops.snapshot.manifest import Manifest
from pulsar_ops.zkconn import AUTH_HINT, security_from_flags

EXIT_SCOPES_MISSING = 1


def _scrape_line(p: ScrapeProgress) -> str:
    rate = p.znodes / p.seconds if p.seconds > 0 else 0.0
    return f"scraping {p.store} store: {p.znodes:,} znodes, {p.errors} errors, {rate:,.0f} znodes/s"


_ENDPOINT_WORDS = {
    "published": "published in its registration",
    "bookie-url-port": "nothing published: its host with --bookie-url's port",
    "none": "not reachable: custom BookieId or unusable registration, see the incomplete scopes",
}


def _render_bookie_endpoints(manifest: Manifest) -> None:
    """One line per bookie (up to 20): which HTTP endpoint was asked and where it came from."""
    eps = manifest.bookie_endpoints
    if not eps:
        return
    err_console.print(f"  bookie HTTP endpoints ({len(eps)}):")
    for bid, ep in list(eps.items())[:20]:
        source = str(ep.get("source"))
        url = ep.get("url") or "-"
        err_console.print(f"    {escape(bid)}: {escape(url)} ({escape(_ENDPOINT_WORDS.get(source, source))})")
    if len(eps) > 20:
        err_console.print(f"    ... and {len(eps) - 20} more (see manifest.json bookie_endpoints)")


def cluster_label(name: str | None) -> str:
    """How the summary names the cluster: ``/admin/clusters`` held none or several (and no ``--cluster``)."""
    return f"cluster {escape(name)}" if name else "cluster not named: pass --cluster NAME"


def render_summary(manifest: Manifest, out: Path) -> None:
    counts = manifest.row_counts
    err_console.print(
        f"snapshot [bold]{manifest.snapshot_id}[/] written to {escape(str(out))}"
        f" ({cluster_label(manifest.cluster)}, multiRead {'on' if manifest.multiread else 'off'})"
    )
    for store, servers in sorted(manifest.zookeeper_servers.items()):
        if len({bool(i.get("multiread")) for i in servers.values()}) > 1:  # a mixed ensemble: say who was slow
            err_console.print(
                f"  {store} store read from "
                + ", ".join(
                    f"{escape(name)} ({escape(str(i.get('version')))}, "
                    f"multiRead {'on' if i.get('multiread') else 'off'})"
                    for name, i in servers.items()
                )
            )
    secs = (manifest.finished_at_ms - manifest.started_at_ms) / 1000
    if manifest.started_at_ms == manifest.finished_at_ms and manifest.znodes_per_second:  # a data directory's
        secs = counts.get("znodes", 0) / manifest.znodes_per_second  # point in time: the read's own duration
    err_console.print(
        f"  {counts.get('znodes', 0):,} znodes in {secs:.1f}s; {counts.get('managed_ledgers', 0):,} topics, "
        f"{counts.get('cursors', 0):,} cursors, {counts.get('bk_ledgers', 0):,} ledgers, "
        f"{counts.get('namespaces', 0):,} namespaces, {manifest.errors_count} errors"
    )
    _render_bookie_endpoints(manifest)
    if manifest.incomplete_scopes:
        err_console.print(
            f"[bold yellow]warning[/]: {len(manifest.incomplete_scopes)} scope(s) incomplete; findings in them "
            "will not be plannable:"
        )
        for s in manifest.incomplete_scopes[:20]:
            err_console.print(f"  {s.store} {escape(s.scope)} {escape('[' + s.code + ']')} {escape(s.error)}")
        if len(manifest.incomplete_scopes) > 20:
            err_console.print(f"  ... and {len(manifest.incomplete_scopes) - 20} more (see manifest.json)")
        if any(s.code == "zookeeper-no-auth" for s in manifest.incomplete_scopes):
            err_console.print(f"  hint: {escape(AUTH_HINT)}")
    if manifest.errors_count:
        err_console.print(
            f"note: {manifest.errors_count} znode(s) could not be read or decoded (scrape_errors); an undecodable "
            "one is reported by the audit as undecodable-znode and blocks only what depends on it"
        )
    err_console.print(f"next: pulsar-ops audit {escape(str(out))} --out AUDIT_DIR")


def render_point_in_time(manifest: Manifest) -> None:
    """An offline scrape's point in time and how it was read (snapshot, fallbacks, logs, early stop)."""
    for store, d in sorted(manifest.zk_data_dirs.items()):
        when = d.get("last_txn_time_ms")
        err_console.print(
            f"  {store} store: {escape(str(d.get('directory')))} snapshot {escape(str(d.get('snapshot')))} "
            f"+ {d.get('replayed_txns', 0)} txns from {len(d.get('logs') or [])} log(s): zxid {int(d['zxid']):#x}"
            + (f", last txn at {_iso(int(when))}" if when is not None else ", no logged txn at or after it")
        )
        for fb in d.get("fallbacks") or []:
            err_console.print(
                f"  [bold yellow]warning[/]: newer snapshot {escape(fb['snapshot'])} skipped: {escape(fb['reason'])}"
            )
        stop = d.get("stopped_early")
        if stop:
            err_console.print(
                f"  [bold yellow]warning[/]: replay stopped at zxid {int(stop['zxid']):#x}: {escape(stop['log'])} "
                f"offset {stop['offset']} ({escape(stop['reason'])}: {escape(stop.get('detail') or '')})"
            )
        for part in d.get("partial_logs") or []:
            err_console.print(
                f"  note: {escape(part['log'])} ends with a partial record at offset {part['offset']} (read up to it)"
            )
        dig = d.get("digest")
        if dig and dig.get("matched") is False:
            err_console.print(
                f"  [bold yellow]warning[/]: the snapshot's digest at zxid {int(dig['zxid']):#x} does not match the "
                "tree (ZooKeeper reports the same as a digest mismatch)"
            )


def _iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def _scrape_offline(
    out: Path,
    zk_data_dir: Path | None,
    zk_snapshot: Path | None,
    config_zk_data_dir: Path | None,
    zk_data_log_dir: Path | None,
    zk_chroot: str | None,
    zk_ensemble: str | None,
    ledgers_root: str,
    cluster: str | None,
    workers: int | None,
    *,
    quiet: bool,
    json_out: bool,
) -> None:
    from pulsar_ops.scrape.offline import OfflineScrapeConfig, scrape_data_dir

    progress = ProgressLine(not quiet, "reading the data directory...", _scrape_line)
    try:
        manifest = scrape_data_dir(
            OfflineScrapeConfig(
                out=out,
                zk_data_dir=zk_data_dir,
                zk_snapshot=zk_snapshot,
                config_zk_data_dir=config_zk_data_dir,
                zk_data_log_dir=zk_data_log_dir,
                chroot=zk_chroot or "",
                ensemble=zk_ensemble or "",
                ledgers_root=ledgers_root,
                cluster=cluster,
                workers=workers,
                progress=progress,
            )
        )
    finally:
        progress.stop()
    render_summary(manifest, out)
    render_point_in_time(manifest)
    if json_out:
        emit_json(manifest.to_json())
    if not manifest.complete or manifest.incomplete_scopes:
        raise typer.Exit(EXIT_SCOPES_MISSING)


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""

    @app.command("scrape")
    @guarded
    def scrape_cmd(
        zookeeper: str = typer.Option(
            None, "--zookeeper", help="Local metadata store: HOST:PORT[,...][/chroot] (or --zk-data-dir)."
        ),
        out: Path = typer.Option(..., "--out", help="New snapshot directory (must not exist or be empty)."),
        config_zookeeper: str = typer.Option(
            None, "--config-zookeeper", help="Configuration store HOST:PORT[,...][/chroot] (default: --zookeeper)."
        ),
        ledgers_root: str = typer.Option("/ledgers", "--ledgers-root", help="BookKeeper ledgers root znode."),
        zk_auth: str | None = ZK_AUTH,
        zk_auth_file: Path | None = ZK_AUTH_FILE,
        zk_sasl: str | None = ZK_SASL,
        zk_sasl_file: Path | None = ZK_SASL_FILE,
        zk_tls_ca: Path | None = ZK_TLS_CA,
        zk_tls_cert: Path | None = ZK_TLS_CERT,
        zk_tls_key: Path | None = ZK_TLS_KEY,
        cluster: str = typer.Option(None, "--cluster", help="Cluster name (default: from /admin/clusters)."),
        batch: int = typer.Option(None, "--batch", min=1, max=100_000, help="Reads per multiRead batch."),
        multiread: bool = typer.Option(
            None,
            "--multiread/--no-multiread",
            help="Force multiRead on/off (default: decided per connected server; a server without it is read "
            "with single reads; forced on, such a server is an error).",
        ),
        workers: int = typer.Option(
            None, "--workers", min=0, max=64, help="Decode worker processes (0: in-process; default 2 on >= 2 CPUs)."
        ),
        connect_timeout: float = typer.Option(
            30.0, "--connect-timeout", min=0.5, help="Seconds to wait for the first ZooKeeper connection."
        ),
        admin_url: str | None = typer.Option(
            None, "--admin-url", help="Pulsar admin REST URL: learn which topics are loaded (no topic is loaded)."
        ),
        bookie_url: str = typer.Option(
            None, "--bookie-url", help="One bookie's HTTP admin URL: bookie ids, read-only state, disk space."
        ),
        bookie_http_port: int = typer.Option(
            None,
            "--bookie-http-port",
            help="HTTP port of a bookie that publishes no endpoint in its registration (default: the port of "
            "--bookie-url); a published httpserver endpoint wins.",
        ),
        token: str = typer.Option(
            None, "--token", envvar="PULSAR_OPS_TOKEN", help="Bearer token for the HTTP APIs (never printed)."
        ),
        http_timeout: float = typer.Option(10.0, "--http-timeout", min=0.5, help="Seconds per HTTP request."),
        broker_stats_wait: float = typer.Option(
            65.0,
            "--broker-stats-wait",
            min=0.0,
            help="Seconds to keep asking a broker whose topic listing is still empty (its stats are written "
            "every statsUpdateFrequencyInSecs, 60 s); then broker-stats-not-ready, its bundles not judged.",
        ),
        client_conf: Path | None = typer.Option(
            None,
            "--client-conf",
            envvar="PULSAR_OPS_CLIENT_CONF",
            help="Pulsar's client.conf, read as pulsar-admin reads it: webServiceUrl or serviceUrl (default "
            "--admin-url), authPlugin/authParams (token or TLS), tlsCertificateFilePath/tlsKeyFilePath, "
            "tlsTrustCertsFilePath, tlsAllowInsecureConnection, tlsEnableHostnameVerification (default false).",
        ),
        bookie_tls_ca: Path | None = typer.Option(
            None, "--bookie-tls-ca", help="CA bundle (PEM) that verifies the bookies' HTTPS admin endpoint."
        ),
        bookie_tls_cert: Path | None = typer.Option(
            None, "--bookie-tls-cert", help="Client certificate (PEM) for the bookies' HTTPS endpoint."
        ),
        bookie_tls_key: Path | None = typer.Option(None, "--bookie-tls-key", help="Key (PEM) of --bookie-tls-cert."),
        json_out: bool = typer.Option(False, "--json", help="Print the manifest as JSON on stdout."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress line."),
        zk_data_dir: Path | None = typer.Option(
            None,
            "--zk-data-dir",
            help="Read a ZooKeeper data directory (dataDir, or a copy / backup of one) instead of --zookeeper: "
            "the newest valid snapshot plus the transaction logs after it. Opens no connection.",
        ),
        zk_data_log_dir: Path | None = typer.Option(
            None,
            "--zk-data-log-dir",
            help="With --zk-data-dir: the server's dataLogDir, when its transaction logs are kept apart.",
        ),
        zk_snapshot: Path | None = typer.Option(
            None, "--zk-snapshot", help="Read one ZooKeeper snapshot file (snapshot.<zxid>[.gz|.snappy]), no logs."
        ),
        zk_chroot: str | None = typer.Option(
            None, "--zk-chroot", help="With --zk-data-dir/--zk-snapshot: the cluster's chroot (e.g. /pulsar)."
        ),
        config_zk_data_dir: Path | None = typer.Option(
            None, "--config-zk-data-dir", help="The configuration store's data directory, when it is another one."
        ),
        zk_ensemble: str | None = typer.Option(
            None,
            "--zk-ensemble",
            help="With --zk-data-dir: the ensemble (HOST:PORT,...) the directory belongs to. Recorded, never "
            "contacted; `apply` checks it (without it apply refuses the plan: target-unverifiable).",
        ),
    ) -> None:
        """Read ZooKeeper metadata (managed ledgers, ledgers, schemas, policies, bundles) into a snapshot."""
        offline = (zk_data_dir, zk_snapshot, config_zk_data_dir, zk_data_log_dir)
        if any(v is not None for v in offline):
            live = [
                f
                for f, v in (
                    ("--zookeeper", zookeeper),
                    ("--config-zookeeper", config_zookeeper),
                    ("--admin-url", admin_url),
                    ("--bookie-url", bookie_url),
                    ("--client-conf", client_conf),
                )
                if v
            ]
            if live:
                raise ConfigError(
                    f"{', '.join(live)} cannot be combined with --zk-data-dir / --zk-snapshot (an offline scrape "
                    "opens no connection: admin and bookie scopes stay unknown)",
                    hint="pulsar-ops scrape --zk-data-dir DIR [--zk-chroot /pulsar] --out SNAPSHOT",
                )
            _scrape_offline(
                out,
                zk_data_dir,
                zk_snapshot,
                config_zk_data_dir,
                zk_data_log_dir,
                zk_chroot,
                zk_ensemble,
                ledgers_root,
                cluster,
                workers,
                quiet=quiet,
                json_out=json_out,
            )
            return
        if not zookeeper:
            raise ConfigError(
                "pass --zookeeper HOST:PORT[/chroot] (or --zk-data-dir DIR to read a data directory)",
                hint="pulsar-ops scrape --zookeeper 127.0.0.1:2181 --out SNAPSHOT",
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
        extra = None
        conf = read_client_conf(client_conf) if client_conf else None
        admin_url = admin_url or (conf.admin_url() if conf else None)
        for warning in conf.warnings if conf else ():
            err_console.print(f"[bold yellow]warning[/]: {escape(warning)}")
        if conf is not None and not admin_url:
            err_console.print(
                f"note: {escape(str(client_conf))} names no webServiceUrl or serviceUrl and no --admin-url was "
                "given: the admin REST API is not scraped (no loaded-topic listing)"
            )
        if (bookie_tls_cert is None) != (bookie_tls_key is None):
            raise ConfigError("--bookie-tls-cert and --bookie-tls-key go together", hint="pass both, or neither")
        if admin_url or bookie_url:
            from pulsar_ops.scrape.http import HttpSettings, admin_settings
            from pulsar_ops.scrape.http_sources import http_sources
            from pulsar_ops.scrape.zk_bookies import registration_reader
            from pulsar_ops.scrape.zk_brokers import broker_registration_reader

            settings, insecure = admin_settings(conf, token, http_timeout)
            if insecure:
                err_console.print(
                    "[bold yellow]warning[/]: tlsAllowInsecureConnection=true: the broker is not verified"
                )
            extra = http_sources(
                admin_url=admin_url,
                bookie_url=bookie_url,
                cluster=cluster,
                settings=settings,
                bookie_http_port=bookie_http_port,
                bookie_settings=HttpSettings(
                    timeout_s=http_timeout,
                    token=token,
                    verify=str(bookie_tls_ca) if bookie_tls_ca else True,
                    cert=(str(bookie_tls_cert), str(bookie_tls_key)) if bookie_tls_cert and bookie_tls_key else None,
                ),
                bookie_registrations=registration_reader(
                    zookeeper, ledgers_root, security, connect_timeout=connect_timeout
                )
                if bookie_url
                else None,
                ledgers_root=ledgers_root,
                broker_registrations=broker_registration_reader(zookeeper, security, timeout=connect_timeout),
                broker_stats_wait_s=broker_stats_wait,
            )
        progress = ProgressLine(not quiet, "scraping...", _scrape_line)
        try:
            manifest = scrape(
                ScrapeConfig(
                    zookeeper=zookeeper,
                    out=out,
                    config_zookeeper=config_zookeeper,
                    ledgers_root=ledgers_root,
                    security=security,
                    cluster=cluster,
                    batch=batch,
                    multiread=multiread,
                    connect_timeout=connect_timeout,
                    workers=workers,
                    progress=progress,
                    extra=extra,
                )
            )
        finally:
            progress.stop()
        render_summary(manifest, out)
        if json_out:
            emit_json(manifest.to_json())
        if not manifest.complete or manifest.incomplete_scopes:
            raise typer.Exit(EXIT_SCOPES_MISSING)
