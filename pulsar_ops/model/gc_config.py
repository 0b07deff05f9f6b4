"""Bookie GC settings: BookKeeper's code defaults, Pulsar's shipped ``bookkeeper.conf`` preset, validation.

Keys are accepted under their BookKeeper names (``gcWaitTime``, ``majorCompactionThreshold``...) or the
snake_case field names below. Validation follows ``GarbageCollectorThread``'s constructor
(reference/bookie-storage.md §5.1): thresholds <= 1; an enabled kind's interval >= gcWaitTime; with both kinds
enabled, minor interval < major interval and minor threshold < major threshold.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pulsar_ops.errors import ModelError

GIB = 1 << 30


@dataclass(frozen=True)
class GcConfig:
    gc_wait_time_ms: int = 600_000
    minor_compaction_threshold: float = 0.2
    minor_compaction_interval_s: int = 3600
    major_compaction_threshold: float = 0.8
    major_compaction_interval_s: int = 86_400
    minor_compaction_max_time_ms: int = -1
    major_compaction_max_time_ms: int = -1
    throttle_by_bytes: bool = False
    compaction_rate_by_entries: float = 1000.0
    compaction_rate_by_bytes: float = 1_000_000.0
    force_allow_compaction: bool = False
    force_gc_allow_when_no_space: bool = False
    disk_usage_threshold: float = 0.95
    disk_usage_warn_threshold: float = 0.90
    disk_usage_lwm_threshold: float | None = None  # None = diskUsageThreshold
    disk_check_interval_ms: int = 10_000
    log_size_limit: int = GIB
    use_target_entry_log_size_for_gc: bool = False
    verify_metadata_on_gc: bool = False
    gc_metadata_op_rate_limit: float = 1000.0

    @property
    def lwm(self) -> float:
        return self.disk_usage_threshold if self.disk_usage_lwm_threshold is None else self.disk_usage_lwm_threshold

    @property
    def minor_enabled(self) -> bool:
        return self.minor_compaction_interval_s > 0 and self.minor_compaction_threshold > 0

    @property
    def major_enabled(self) -> bool:
        return self.major_compaction_interval_s > 0 and self.major_compaction_threshold > 0

    @property
    def force_minor_allowed(self) -> bool:
        return self.force_allow_compaction and 0 < self.minor_compaction_threshold < 1

    @property
    def force_major_allowed(self) -> bool:
        return self.force_allow_compaction and 0 < self.major_compaction_threshold < 1

    def validate(self) -> GcConfig:
        for name in ("minor_compaction_threshold", "major_compaction_threshold"):
            if getattr(self, name) > 1:
                raise ModelError(f"{name} must be <= 1, got {getattr(self, name)}", hint=_HINT)
        if self.gc_wait_time_ms <= 0:
            raise ModelError(f"gcWaitTime must be > 0 ms, got {self.gc_wait_time_ms}", hint=_HINT)
        for kind in ("minor", "major"):
            if getattr(self, f"{kind}_enabled"):
                interval_ms = getattr(self, f"{kind}_compaction_interval_s") * 1000
                if interval_ms < self.gc_wait_time_ms:
                    raise ModelError(
                        f"{kind}CompactionInterval ({interval_ms} ms) must be >= gcWaitTime "
                        f"({self.gc_wait_time_ms} ms), as BookKeeper requires",
                        hint=_HINT,
                    )
        if self.minor_enabled and self.major_enabled:
            if self.minor_compaction_interval_s >= self.major_compaction_interval_s:
                raise ModelError("minorCompactionInterval must be < majorCompactionInterval", hint=_HINT)
            if self.minor_compaction_threshold >= self.major_compaction_threshold:
                raise ModelError("minorCompactionThreshold must be < majorCompactionThreshold", hint=_HINT)
        if self.throttle_by_bytes and self.compaction_rate_by_bytes <= 0:
            raise ModelError("compactionRateByBytes must be > 0", hint=_HINT)
        if not self.throttle_by_bytes and self.compaction_rate_by_entries <= 0:
            raise ModelError("compactionRateByEntries must be > 0", hint=_HINT)
        if not 0 < self.disk_usage_warn_threshold <= self.disk_usage_threshold <= 1:
            raise ModelError("need 0 < diskUsageWarnThreshold <= diskUsageThreshold <= 1", hint=_HINT)
        if self.log_size_limit <= 0:
            raise ModelError("logSizeLimit must be > 0", hint=_HINT)
        return self

    def to_json(self) -> dict[str, Any]:
        return {_CAMEL_OF[f.name]: getattr(self, f.name) for f in fields(self)}


_HINT = 'fix the GC settings in the input\'s "config" object (BookKeeper key names), see `pulsar-ops model gc --help`'

# BookKeeper key -> field name. The two interval keys are in seconds, as in bookkeeper.conf.
_FIELD_OF: dict[str, str] = {
    "gcWaitTime": "gc_wait_time_ms",
    "minorCompactionThreshold": "minor_compaction_threshold",
    "minorCompactionInterval": "minor_compaction_interval_s",
    "majorCompactionThreshold": "major_compaction_threshold",
    "majorCompactionInterval": "major_compaction_interval_s",
    "minorCompactionMaxTimeMillis": "minor_compaction_max_time_ms",
    "majorCompactionMaxTimeMillis": "major_compaction_max_time_ms",
    "isThrottleByBytes": "throttle_by_bytes",
    "compactionRateByEntries": "compaction_rate_by_entries",
    "compactionRateByBytes": "compaction_rate_by_bytes",
    "forceAllowCompaction": "force_allow_compaction",
    "isForceGCAllowWhenNoSpace": "force_gc_allow_when_no_space",
    "diskUsageThreshold": "disk_usage_threshold",
    "diskUsageWarnThreshold": "disk_usage_warn_threshold",
    "diskUsageLwmThreshold": "disk_usage_lwm_threshold",
    "diskCheckInterval": "disk_check_interval_ms",
    "logSizeLimit": "log_size_limit",
    "useTargetEntryLogSizeForGc": "use_target_entry_log_size_for_gc",
    "verifyMetadataOnGC": "verify_metadata_on_gc",
    "gcMetadataOpRateLimit": "gc_metadata_op_rate_limit",
}
_CAMEL_OF = {v: k for k, v in _FIELD_OF.items()}
# Deprecated key -> the key it is the default of: ``ServerConfiguration.getCompactionRateByEntries`` is
# ``getInt(compactionRateByEntries, getCompactionRate())``, ``getCompactionRate`` ``getInt(compactionRate, 1000)``
# (bookkeeper-server/.../conf/ServerConfiguration.java), so a bookie setting only ``compactionRate`` compacts at it.
_FALLBACK_OF: dict[str, str] = {"compactionRate": "compactionRateByEntries"}
# the BookKeeper keys a bookie's configuration may set for its GC
GC_KEYS: tuple[str, ...] = (*_FIELD_OF, *_FALLBACK_OF)
_TYPES = {f.name: f.type for f in fields(GcConfig)}

# Pulsar's conf/bookkeeper.conf (reference/bookie-storage.md §7): only the keys that differ from BookKeeper.
PULSAR_CONF: dict[str, Any] = {
    "gcWaitTime": 900_000,
    "majorCompactionThreshold": 0.5,
    "forceAllowCompaction": True,
}


# A bookie reads its configuration with commons-configuration2 (ServerConfiguration extends AbstractConfiguration):
# ``PropertyConverter.toBoolean`` is commons-lang3's ``BooleanUtils.toBooleanObject`` (true/on/yes/y/t and
# false/off/no/n/f, any case); ``PropertyConverter.toNumber`` reads a ``0x``/``0X`` (hex) or ``0b``/``0B`` (binary)
# prefix as a BigInteger, else calls the target's String constructor (``Long(String)``: an optional sign and
# digits; ``Double(String)``: Java's floating-point literal, surrounding blanks, NaN, Infinity, an f/d suffix).
# Python's own int()/float() accept more ("1_000", "inf", "1e3" as an integer), so a value is read the Java way.
_JAVA_TRUE = frozenset({"true", "on", "yes", "y", "t"})
_JAVA_FALSE = frozenset({"false", "off", "no", "n", "f"})
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_PREFIXED = re.compile(r"0([xX][+-]?[0-9a-fA-F]+|[bB][+-]?[01]+)")


def _java_number(text: str, integer: bool) -> int | float | None:
    """``PropertyConverter.toNumber`` of a string for a Long/Integer (``integer``) or Double field; None: refused."""
    prefixed = _JAVA_PREFIXED.fullmatch(text)
    if prefixed is not None:
        digits = prefixed.group(1)
        return int(digits[1:], 16 if digits[0] in "xX" else 2)
    if integer:
        if _JAVA_LONG.fullmatch(text) is None or not -(1 << 63) <= int(text) < 1 << 63:
            return None  # Long(String) refuses anything else, a value past a long's range included
        return int(text)
    body = text.strip(" \t\n\r\x0b\x0c")  # Double(String) trims as String.trim does (blanks, controls)
    if _JAVA_DOUBLE.fullmatch(body) is None:
        return None
    return float(body.rstrip("fFdD").replace("Infinity", "inf"))


def _coerce(name: str, key: str, value: Any) -> Any:
    kind = str(_TYPES[name])
    if "bool" in kind:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _JAVA_TRUE | _JAVA_FALSE:
            return value.lower() in _JAVA_TRUE
        raise ModelError(f"config {key!r} must be a boolean, got {value!r}", hint=_HINT)
    if value is None and "None" in kind:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ModelError(f"config {key!r} must be a number, got {value!r}", hint=_HINT)
    num = _java_number(value, kind.startswith("int")) if isinstance(value, str) else value
    if num is None:
        raise ModelError(f"config {key!r} must be a number, got {value!r}", hint=_HINT)
    if kind.startswith("int"):
        if num != int(num):
            raise ModelError(f"config {key!r} must be an integer, got {value!r}", hint=_HINT)
        return int(num)
    return float(num)


def gc_config(overrides: Mapping[str, Any] | None = None, *, pulsar_conf: bool = False) -> GcConfig:
    """Defaults (BookKeeper's, or Pulsar's bookkeeper.conf with ``pulsar_conf``) < overrides; validated."""
    merged: dict[str, Any] = dict(PULSAR_CONF) if pulsar_conf else {}
    merged.update(overrides or {})
    for old, key in _FALLBACK_OF.items():
        if old in merged:
            merged.setdefault(key, merged.pop(old))
    values: dict[str, Any] = {}
    for key, value in merged.items():
        name = _FIELD_OF.get(key, key if key in _TYPES else "")
        if not name:
            raise ModelError(f"unknown GC setting {key!r}", hint=f"known keys: {', '.join(sorted(_FIELD_OF))}")
        values[name] = _coerce(name, key, value)
    return dataclasses.replace(GcConfig(), **values).validate()
