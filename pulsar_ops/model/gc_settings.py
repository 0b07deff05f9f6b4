"""Which GC settings judge one bookie: the one resolution the plan (repair/kinds/bookie_gc.py) and the audit's
``stale-entry-log`` (sql/detect/stale_entry_log.sql, through ``audit/etl.scan_bookie_gc_sql``) both use.

A bookie's own settings first: the GC keys of its ``server_config`` the scrape kept (snapshot manifest
``bookie_gc``), else those of the bookkeeper.conf ``scan-bookie --bookie-config`` read (scan manifest
``bookie_config.gc``); keys it does not set take BookKeeper's code defaults (``ServerConfiguration``), as the
bookie does. Only when neither was read, the audit's settings (``--bookie-config`` of the audit, else Pulsar's
shipped defaults), and ``source`` says so. Settings ``GarbageCollectorThread``'s constructor would refuse (the
bookie would not start with them) resolve to no configuration, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pulsar_ops.errors import ModelError
from pulsar_ops.model.gc_config import GC_KEYS, GcConfig, gc_config

SCRAPED_SETTINGS = "server_config (scraped)"
AUDIT_SETTINGS = "audit (the bookie's configuration was not scraped)"


class ScanConfig(Protocol):
    """What a scan says of its bookie's configuration (model.scan_layout.BookieScan, audit.bookie_scans.ScanInfo)."""

    @property
    def path(self) -> object: ...

    @property
    def config_gc(self) -> Mapping[str, str] | None: ...

    @property
    def config_source(self) -> str | None: ...


@dataclass(frozen=True)
class PlanSettings:
    """One bookie's GC settings: ``cfg`` None when its configuration was read but does not validate (``error``:
    why); ``source``: where they came from."""

    cfg: GcConfig | None
    source: str
    error: str | None = None


def settings_of(config: Mapping[str, Any]) -> GcConfig:
    """GC settings from ``server_config`` (every key set, as strings); keys not set take BookKeeper's code
    defaults (``ServerConfiguration``), as the bookie does. Raises ModelError for a value it cannot read."""
    return gc_config({k: v for k, v in config.items() if k in GC_KEYS and str(v).strip() != ""})


def settings_for(
    bookie_id: str, scraped: Mapping[str, Mapping[str, Any]], scan: ScanConfig | None, audit_cfg: GcConfig
) -> PlanSettings:
    """The settings one bookie is judged and planned with (the module docstring's order)."""
    keys: Mapping[str, Any] | None = scraped.get(bookie_id)
    source = SCRAPED_SETTINGS
    if keys is None and scan is not None and scan.config_gc is not None:
        keys, source = scan.config_gc, f"bookkeeper.conf read by scan-bookie ({scan.config_source or scan.path})"
    if keys is None:
        return PlanSettings(audit_cfg, AUDIT_SETTINGS)
    try:
        return PlanSettings(settings_of(keys), source)
    except ModelError as e:
        return PlanSettings(None, source, e.message)
