"""Audit parameters: durations, broker defaults, the JSON config file. Pure (no Spark, no I/O libraries).

Precedence: built-in defaults < ``--config FILE.json`` < ``--broker-config FILE`` < explicit flags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pulsar_ops.errors import ConfigError, ModelError
from pulsar_ops.model.gc_config import GC_KEYS, GcConfig, gc_config
from pulsar_ops.units import parse_duration_ms as parse_duration_ms

SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def parse_time_ms(text: str | int) -> int:
    """An ISO-8601 time (naive = UTC) or epoch milliseconds -> epoch milliseconds."""
    if isinstance(text, int):
        return text
    s = text.strip()
    if re.fullmatch(r"\d+", s):
        return int(s)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"not a time: {text!r}", hint="pass --now as ISO-8601 (2024-05-01T12:00:00Z) or epoch milliseconds"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


@dataclass(frozen=True)
class BrokerDefaults:
    """The broker.conf settings the detections depend on (Pulsar defaults)."""

    default_retention_time_minutes: int = 0
    default_retention_size_mb: int = 0
    ttl_duration_default_seconds: int = 0
    delayed_delivery_enabled: bool = True
    delayed_delivery_tick_ms: int = 1000
    delayed_delivery_max_delay_ms: int = 0
    max_unacked_ranges_metadata: int = 1000
    max_unacked_ranges_persist: int = 10000


# broker.conf key -> BrokerDefaults field
BROKER_KEYS: dict[str, str] = {
    "defaultRetentionTimeInMinutes": "default_retention_time_minutes",
    "defaultRetentionSizeInMB": "default_retention_size_mb",
    "ttlDurationDefaultInSeconds": "ttl_duration_default_seconds",
    "delayedDeliveryEnabled": "delayed_delivery_enabled",
    "delayedDeliveryTickTimeMillis": "delayed_delivery_tick_ms",
    "delayedDeliveryMaxDelayInMillis": "delayed_delivery_max_delay_ms",
    "managedLedgerMaxUnackedRangesToPersistInMetadataStore": "max_unacked_ranges_metadata",
    "managedLedgerMaxUnackedRangesToPersist": "max_unacked_ranges_persist",
}


def _coerce(key: str, value: Any, as_bool: bool) -> int | bool:
    text = str(value).strip().lower()
    if as_bool:
        if text in ("true", "1", "yes"):
            return True
        if text in ("false", "0", "no"):
            return False
        raise ConfigError(f"broker setting {key}: expected true/false, got {value!r}")
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"broker setting {key}: expected an integer, got {value!r}") from None


def broker_defaults_from_mapping(values: Mapping[str, Any], base: BrokerDefaults | None = None) -> BrokerDefaults:
    """Apply broker.conf keys (camelCase) or BrokerDefaults field names; unknown keys are ignored."""
    out = base or BrokerDefaults()
    fields = {v: v for v in BROKER_KEYS.values()} | BROKER_KEYS
    updates: dict[str, Any] = {}
    for key, value in values.items():
        name = fields.get(key)
        if name is None:
            continue
        updates[name] = _coerce(key, value, name == "delayed_delivery_enabled")
    return replace(out, **updates)


def parse_broker_config(text: str, source: str = "broker config") -> dict[str, str]:
    """A broker.conf (``key=value`` lines, ``#`` comments) or a JSON object -> raw key/value strings."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{source}: invalid JSON: {e}") from None
        if not isinstance(obj, dict):
            raise ConfigError(f"{source}: expected a JSON object")
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in obj.items()}
    out: dict[str, str] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise ConfigError(f"{source}:{n}: expected key=value, got {line!r}")
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class BookieSettings:
    """The bookkeeper.conf settings the storage detections use (``--bookie-config``)."""

    gc: GcConfig = field(default_factory=lambda: gc_config(pulsar_conf=True))
    # flushInterval: how long an entry may sit in the write cache before a checkpoint writes it to an entry log
    # and to the indexes (DbLedgerStorage's checkpoint, run by SyncThread). Pulsar's bookkeeper.conf: 60000.
    flush_interval_ms: int = 60_000


def bookie_settings(values: Mapping[str, Any]) -> BookieSettings:
    """``bookkeeper.conf`` keys over Pulsar's shipped defaults (reference bookie-storage.md §7); the keys the
    detections do not use are ignored (a real file has hundreds), the GC ones are validated as
    ``GarbageCollectorThread``'s constructor does (model/gc_config.py)."""
    gc_values = {k: v for k, v in values.items() if k in GC_KEYS and str(v).strip() != ""}
    try:
        gc = gc_config(gc_values, pulsar_conf=True)
    except ModelError as e:
        raise ConfigError(f"bookie config: {e.message}", hint="fix the GC settings of bookkeeper.conf") from None
    flush = values.get("flushInterval")
    flush_ms = 60_000
    if flush is not None and str(flush).strip():
        try:
            flush_ms = int(str(flush).strip())
        except ValueError:
            raise ConfigError(f"bookie config: flushInterval must be an integer, got {flush!r}") from None
    return BookieSettings(gc=gc, flush_interval_ms=flush_ms)


def load_bookie_config(path: Path) -> BookieSettings:
    """``--bookie-config``: a bookkeeper.conf or a JSON object of its keys. The file is read as the bookie reads it
    (``bookiescan.bookie_conf.load_bookie_conf``: commons-configuration2's properties syntax, ``key value`` and
    ``key: value`` included), each key's value its ``getString`` (the first of a repeated key's values: upstream
    ``conf/AbstractConfiguration.loadConf`` keeps them all as a list and ``getLong``/``getDouble`` read the first),
    not as a broker.conf (``java.util.Properties``: ``=`` only here, the last repeated value)."""
    try:
        text = path.read_text(encoding="iso-8859-1")
    except FileNotFoundError:
        raise ConfigError(f"bookie config not found: {path}", hint="pass the bookie's conf/bookkeeper.conf") from None
    if text.strip().startswith("{"):
        return bookie_settings(parse_broker_config(text, str(path)))
    from pulsar_ops.bookiescan.bookie_conf import load_bookie_conf

    conf = load_bookie_conf(path)
    return bookie_settings({k: v[0] for k, v in conf.values.items() if v})


@dataclass(frozen=True)
class AuditParams:
    """Everything a detection may depend on. ``now_ms`` None = the snapshot's ``finished_at_ms``."""

    now_ms: int | None = None
    min_age_ms: int = 24 * HOUR
    inactive_after_ms: int = 7 * DAY
    broker: BrokerDefaults = field(default_factory=BrokerDefaults)
    bookie: BookieSettings = field(default_factory=BookieSettings)

    def resolved(self, finished_at_ms: int) -> AuditParams:
        return self if self.now_ms is not None else replace(self, now_ms=finished_at_ms)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["broker"] = asdict(self.broker)
        d["bookie"] = {"gc": self.bookie.gc.to_json(), "flushInterval": self.bookie.flush_interval_ms}
        return d


def params_from_config(doc: Mapping[str, Any], base: AuditParams | None = None) -> AuditParams:
    """The JSON config file: ``{"now": ..., "min_age": "24h", "inactive_after": "7d", "broker": {...},
    "broker_config": "path"}`` (every key optional; see sql/README.md)."""
    p = base or AuditParams()
    known = {
        "now",
        "min_age",
        "inactive_after",
        "broker",
        "broker_config",
        "bookie_config",
        "master",
        "prometheus",
        "spark_conf",
    }
    unknown = set(doc) - known
    if unknown:
        raise ConfigError(f"audit config: unknown keys {sorted(unknown)}", hint=f"allowed keys: {sorted(known)}")
    if doc.get("now") is not None:
        p = replace(p, now_ms=parse_time_ms(doc["now"]))
    if doc.get("min_age") is not None:
        p = replace(p, min_age_ms=parse_duration_ms(doc["min_age"], flag="min_age"))
    if doc.get("inactive_after") is not None:
        p = replace(p, inactive_after_ms=parse_duration_ms(doc["inactive_after"], flag="inactive_after"))
    if doc.get("broker_config"):
        p = replace(p, broker=load_broker_config(Path(str(doc["broker_config"])), p.broker))
    if doc.get("bookie_config"):
        p = replace(p, bookie=load_bookie_config(Path(str(doc["bookie_config"]))))
    broker = doc.get("broker")
    if broker is not None:
        if not isinstance(broker, Mapping):
            raise ConfigError("audit config: `broker` must be an object of broker.conf keys")
        p = replace(p, broker=broker_defaults_from_mapping(broker, p.broker))
    return p


def load_config_file(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"audit config not found: {path}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"audit config {path}: invalid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"audit config {path}: expected a JSON object")
    return doc


def load_broker_config(path: Path, base: BrokerDefaults | None = None) -> BrokerDefaults:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"broker config not found: {path}") from None
    return broker_defaults_from_mapping(parse_broker_config(text, str(path)), base)
