"""Where `plan` and `apply` write, checked before they write anything: an existing directory given as a file (or a
file as a directory) is a stable error code naming the flag, never a half-written temp file or an
``internal-error``. Pure file-system checks: no ZooKeeper, nothing created."""

from __future__ import annotations

from pathlib import Path

from pulsar_ops.errors import ConfigError


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a directory (nothing can be created under it)."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_file_target(path: Path, flag: str, code: str) -> None:
    """``path`` can be written as a file: it is not a directory and no ancestor of it is a file."""
    if path.is_dir():
        raise ConfigError(
            f"{flag} {path} is a directory; a file is written there",
            code=code,
            hint=f"pass a file name to {flag} (e.g. {path / 'plan.json'}); nothing was written",
        )
    blocked = _blocking_file(path)
    if blocked is not None:
        raise ConfigError(
            f"{flag} {path}: {blocked} is a file, not a directory",
            code=code,
            hint=f"pass a path under a directory to {flag}; nothing was written",
        )


def check_dir_target(path: Path, flag: str, code: str) -> None:
    """``path`` can be (or is) a directory: it is not a file and no ancestor of it is a file."""
    blocked = path if path.exists() and not path.is_dir() else _blocking_file(path)
    if blocked is not None:
        raise ConfigError(
            f"{flag} {path}: {blocked} is a file, not a directory",
            code=code,
            hint=f"pass a directory (new or existing) to {flag}; nothing was written",
        )


def usable_recorded_dir(recorded: str | None) -> Path | None:
    """A backup directory an earlier run recorded in the journal, unless it cannot be one (a file, or under a
    file): no backup was ever written there, so it must not decide where this run's backups go."""
    if not recorded:
        return None
    path = Path(recorded)
    if (path.exists() and not path.is_dir()) or _blocking_file(path) is not None:
        return None
    return path
