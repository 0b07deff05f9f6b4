"""spark-submit entry point of the audit.

    spark-submit --master spark://HOST:7077 --py-files pulsar_ops.zip jobs/audit.py \
        --snapshot DIR --out DIR [--config FILE.json] [--bookie-scan OUT ...] [--bookie-config bookkeeper.conf]

extract (config + snapshot tables + staging/params/intermediate views) -> transform (every sql/detect/*.sql,
unioned) -> load (OUT/findings/ Parquet + OUT/findings.json): ``pulsar_ops.audit.etl`` driven by
``pulsar_ops.audit.runner.run_audit``. This script only finds the master spark-submit was given and hands over
to the `pulsar-ops audit` command, so errors, hints and exit codes (0/1/2, 3 on failure) are the CLI's.

Spark's PythonRunner merges the driver's stderr into its stdout, so under spark-submit the human summary and a
``--json`` document share one stream: scheduled jobs should read ``OUT/findings.json`` and the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jobs/audit.py", description="pulsar-ops audit as a Spark job")
    p.add_argument("--snapshot", required=True, type=Path, help="snapshot directory")
    p.add_argument("--out", required=True, type=Path, help="audit output directory")
    p.add_argument("--config", type=Path, help="JSON audit config (see sql/README.md)")
    p.add_argument(
        "--bookie-scan", action="append", default=[], type=Path, help="a scan-bookie output directory (repeatable)"
    )
    p.add_argument("--bookie-config", type=Path, help="the bookies' bookkeeper.conf (GC settings)")
    p.add_argument("--master", help="Spark master when not launched by spark-submit (default local[*])")
    p.add_argument("--json", action="store_true", help="print the findings document on stdout")
    return p.parse_args(argv)


def under_spark_submit() -> bool:
    """spark-submit starts the Python driver with a gateway to its own JVM and says so in the environment."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def submitted_master() -> str | None:
    """The master spark-submit was given (a system property of its JVM), if launched by spark-submit.

    ``SparkConf()`` only sees the JVM's properties once the gateway is attached, so attach first; without this
    the job would silently run on ``local[*]`` instead of the cluster.
    """
    if not under_spark_submit():
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # attach to spark-submit's gateway (no SparkContext is created)
    value = SparkConf().get("spark.master", None)
    return str(value) if value else None


def cli_args(args: argparse.Namespace, master: str | None) -> list[str]:
    out = ["audit", str(args.snapshot), "--out", str(args.out)]
    if args.config is not None:
        out += ["--config", str(args.config)]
    for scan in args.bookie_scan:
        out += ["--bookie-scan", str(scan)]
    if args.bookie_config is not None:
        out += ["--bookie-config", str(args.bookie_config)]
    if master:
        out += ["--master", master]
    if args.json:
        out.append("--json")
    return out


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    master = args.master or submitted_master()
    from pulsar_ops.cli.main import app

    app(args=cli_args(args, master), prog_name="pulsar-ops")


if __name__ == "__main__":
    main()
