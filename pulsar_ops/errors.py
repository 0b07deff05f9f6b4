"""The one error tree of pulsar-ops.

Leaf module: imports nothing from the package. Every error carries a stable kebab-case ``code``, a human
``message`` and a ``hint`` naming the next command to run. Only the CLI boundary catches these.
"""

from __future__ import annotations

import os


def debug_enabled() -> bool:
    """``--debug`` (PULSAR_OPS_DEBUG): tracebacks instead of error codes and hints."""
    return os.environ.get("PULSAR_OPS_DEBUG", "") not in ("", "0", "false")


class PulsarOpsError(Exception):
    """Base of every error pulsar-ops raises on purpose."""

    code: str = "pulsar-ops-error"
    default_hint: str = "run the command again with --debug for a traceback"

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        if code is not None:
            self.code = code

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "hint": self.hint}

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class ConfigError(PulsarOpsError):
    code = "config-invalid"
    default_hint = "check the flags, PULSAR_OPS_* variables and the config file; see `pulsar-ops --help`"


class DecodeError(PulsarOpsError):
    """A znode value (or other input) could not be decoded. Always names the znode path."""

    code = "decode-failed"
    default_hint = "inspect the znode with `zkCli.sh get <path>`; the rest of the scrape continues without it"

    def __init__(self, path: str, reason: str, *, code: str | None = None, hint: str | None = None) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}", hint=hint, code=code)


class UnknownFormatVersionError(DecodeError):
    code = "format-version-unknown"


class TruncatedInputError(DecodeError):
    code = "input-truncated"


class OversizedInputError(DecodeError):
    code = "input-oversized"


class JavaMissingError(PulsarOpsError):
    code = "java-missing"
    default_hint = "install a Java 17 runtime (apt-get install openjdk-17-jre-headless) and run again"


class ZooKeeperError(PulsarOpsError):
    code = "zookeeper-unavailable"
    default_hint = "check --zookeeper HOSTS[/chroot] and that the ensemble is reachable, then re-run the command"


class ZooKeeperAuthError(ZooKeeperError):
    code = "zookeeper-auth-failed"
    default_hint = "check --zk-auth scheme:credentials (digest auth: digest:user:password)"


class HttpError(PulsarOpsError):
    code = "http-failed"
    default_hint = "check the --admin-url / --bookie-url and credentials, then re-run `pulsar-ops scrape`"


class SnapshotError(PulsarOpsError):
    code = "snapshot-invalid"
    default_hint = "take a fresh snapshot with `pulsar-ops scrape --zookeeper HOSTS --out DIR`"


class SnapshotIncompleteError(SnapshotError):
    code = "snapshot-unfinished"


class SnapshotVersionError(SnapshotError):
    code = "snapshot-version-unsupported"


class AuditError(PulsarOpsError):
    code = "audit-failed"
    default_hint = "re-run `pulsar-ops audit SNAPSHOT --out DIR --debug`"


class BookieScanError(AuditError):
    """A ``--bookie-scan`` directory the audit cannot use (no manifest, another format, damaged tables)."""

    code = "bookie-scan-invalid"
    default_hint = "run `pulsar-ops scan-bookie --ledger-dirs DIR --bookie-id ID --out OUT` to completion; pass OUT"


class FindingsError(PulsarOpsError):
    code = "findings-invalid"
    default_hint = "re-run `pulsar-ops audit SNAPSHOT --out DIR` to produce findings"


class PlanError(PulsarOpsError):
    code = "plan-invalid"
    default_hint = "create a new plan with `pulsar-ops plan AUDIT_DIR --out PLAN.json`"


class PlanChecksumError(PlanError):
    code = "plan-checksum-mismatch"
    default_hint = "the plan file was edited after review; re-create it with `pulsar-ops plan`"


class PlanUnsafeError(PlanError):
    code = "plan-unsafe"
    default_hint = (
        "this plan breaks a safety rule `pulsar-ops plan` never breaks (was it edited?); "
        "re-create it with `pulsar-ops plan AUDIT_DIR --out PLAN.json`"
    )


class ApplyError(PulsarOpsError):
    code = "apply-failed"
    default_hint = "inspect the journal, then re-run the same `pulsar-ops apply` command to resume"


class TargetMismatchError(PulsarOpsError):
    """The ZooKeeper named on the command line is not the cluster the plan (or backup) was made for."""

    code = "target-mismatch"
    default_hint = (
        "check --zookeeper / --config-zookeeper (hosts and chroot) against the plan's target "
        "(`target` in PLAN.json); nothing was journaled or changed"
    )


class QuarantineError(ApplyError):
    code = "quarantine-not-elapsed"
    default_hint = "wait for the quarantine to pass, then run `pulsar-ops apply PLAN --phase delete` again"


class JournalError(ApplyError):
    code = "journal-conflict"


class RestoreError(PulsarOpsError):
    code = "restore-failed"
    default_hint = "check the backup directory with `pulsar-ops restore BACKUP_DIR` (dry run) and retry"


class ModelError(PulsarOpsError):
    code = "model-input-invalid"
    default_hint = "check the model input file against the contract in `pulsar-ops model --help`"


class Aborted(PulsarOpsError):
    code = "aborted"
    default_hint = "nothing was changed; re-run with --yes to skip the confirmation"


class ReportError(PulsarOpsError):
    code = "report-write-failed"
    default_hint = "check that the output directory exists and is writable, then re-run `pulsar-ops report AUDIT_DIR`"


class SeedError(PulsarOpsError):
    code = "seed-failed"
    default_hint = "seed into a fresh, empty chroot: `pulsar-ops seed --zookeeper HOST:PORT/new-chroot --topics N`"


class SeedTargetNotEmptyError(SeedError):
    code = "seed-target-not-empty"


class DecodeWorkerError(PulsarOpsError):
    """A scrape decode worker process died or failed: the snapshot would miss rows, so the scrape fails."""

    code = "decode-worker-failed"
    default_hint = "re-run `pulsar-ops scrape` with --workers 0 (decode in-process) and --debug"


class ZkDataDirError(PulsarOpsError):
    """A ZooKeeper data directory (or snapshot file) that cannot be read into a snapshot."""

    code = "zk-data-dir-unusable"
    default_hint = "pass the server's dataDir (the directory holding version-2/), or --zk-snapshot FILE"
