"""Bookie GC model pinned to reference/bookie-storage.md §4-§7."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.errors import ModelError
from pulsar_ops.model.gc import (
    REASON_ACTIVE,
    REASON_NEVER,
    REASON_SUSPENDED_FULL,
    GcOptions,
    simulate,
)
from pulsar_ops.model.gc_config import GcConfig, gc_config
from pulsar_ops.model.layout import layout_from_json, parse_delete_schedule

MB = 1_000_000
MIN = 60_000


def run(
    logs: list[dict[str, Any]],
    delete: list[Any],
    *,
    config: dict[str, Any] | None = None,
    pulsar: bool = False,
    disk: int | None = None,
    entry_size: int = 1000,
    horizon_ms: int | None = None,
    **opts: Any,
) -> dict[str, Any]:
    doc = {"bookies": {"b1": {"disk_bytes": disk, "entry_logs": logs}}}
    layout = layout_from_json(doc, parse_delete_schedule(delete), entry_size)
    cfg = gc_config(config, pulsar_conf=pulsar)
    return simulate(layout, cfg, GcOptions(horizon_ms=horizon_ms, **opts)).to_json()


def log(i: int, **ledgers: int) -> dict[str, Any]:
    return {"id": i, "ledgers": {k.lstrip("L"): v for k, v in ledgers.items()}}


def test_defaults_are_bookkeepers_and_the_pulsar_preset_differs_where_the_doc_says() -> None:
    bk = gc_config()
    assert (bk.gc_wait_time_ms, bk.major_compaction_threshold, bk.force_allow_compaction) == (600_000, 0.8, False)
    assert (bk.minor_compaction_threshold, bk.minor_compaction_interval_s) == (0.2, 3600)
    assert (bk.compaction_rate_by_entries, bk.compaction_rate_by_bytes) == (1000, 1_000_000)
    assert (bk.disk_usage_warn_threshold, bk.disk_usage_threshold, bk.lwm) == (0.90, 0.95, 0.95)
    p = gc_config(pulsar_conf=True)
    assert (p.gc_wait_time_ms, p.major_compaction_threshold, p.force_allow_compaction) == (900_000, 0.5, True)
    assert gc_config({"gcWaitTime": 1000}, pulsar_conf=True).gc_wait_time_ms == 1000


@pytest.mark.parametrize(
    "bad",
    [
        {"minorCompactionThreshold": 1.5},
        {"minorCompactionInterval": 60},  # < gcWaitTime (600 s)
        {"minorCompactionThreshold": 0.9},  # >= major threshold
        {"minorCompactionInterval": 90_000},  # >= major interval
        {"gcWaitTme": 1},  # typo: unknown key
        {"isThrottleByBytes": "maybe"},
    ],
)
def test_invalid_settings_are_rejected_like_bookkeeper(bad: dict[str, Any]) -> None:
    with pytest.raises(ModelError) as e:
        gc_config(bad)
    assert e.value.code == "model-input-invalid"


def test_fully_deleted_log_goes_at_the_first_run_and_the_active_log_never() -> None:
    out = run([log(1, L1=5 * MB), log(2, L1=1 * MB, L2=1 * MB), {**log(3, L1=2 * MB), "active": True}], [1])
    b = out["bookies"]["b1"]
    first = b["timeline"][0]
    assert first["t_ms"] == 600_000  # one gcWaitTime after the start
    assert first["reclaimed_by"]["deletion"] == 5 * MB and first["deleted_logs"] == 1
    assert b["reclaimed_bytes"]["deletion"] == 5 * MB
    reasons = {s["log_id"]: s["reason"] for s in b["stuck_logs"]}
    assert reasons[3] == REASON_ACTIVE
    # log 2 has usage 0.5 < 0.8 (BookKeeper's major threshold): it goes at the first major, after > 1 day
    major = [ev for ev in b["timeline"] if ev["compaction"] == "major"]
    assert major and major[0]["t_ms"] == 87_000_000  # first 10-min tick strictly after 86,400 s
    assert b["reclaimed_bytes"]["major"] == 1 * MB and b["rewrite_bytes"] == 1 * MB


@pytest.mark.parametrize(("pulsar", "first_minor_ms"), [(False, 4_200_000), (True, 4_500_000)])
def test_minor_compaction_comes_on_the_first_tick_strictly_after_the_interval(
    pulsar: bool, first_minor_ms: int
) -> None:
    out = run([log(1, L1=9 * MB, L2=1 * MB)], [1], pulsar=pulsar)  # usage 0.1 < 0.2
    ev = [e for e in out["bookies"]["b1"]["timeline"] if e["compaction"] == "minor"]
    assert ev[0]["t_ms"] == first_minor_ms
    assert ev[0]["reclaimed_by"]["minor"] == 9 * MB and ev[0]["rewrite_bytes"] == 1 * MB


def test_threshold_is_exclusive() -> None:
    # usage exactly 0.2 is not a minor candidate; with Pulsar's 0.5 major threshold, usage 0.5 is never compacted
    out = run([log(1, L1=8 * MB, L2=2 * MB)], [1], horizon_ms=5_000_000)
    assert out["total"]["reclaimed_bytes"]["minor"] == 0
    out = run([log(1, L1=5 * MB, L2=5 * MB)], [1], pulsar=True)
    b = out["bookies"]["b1"]
    assert out["total"]["reclaimed_bytes"] == {"deletion": 0, "minor": 0, "major": 0}
    assert b["stuck_logs"][0]["reason"] == REASON_NEVER and b["unreclaimable_bytes"] == 5 * MB
    # ... while BookKeeper's own 0.8 compacts it at the first major run
    out = run([log(1, L1=5 * MB, L2=5 * MB)], [1])
    assert out["total"]["reclaimed_bytes"]["major"] == 5 * MB and out["total"]["unreclaimable_bytes"] == 0


def test_compaction_order_is_usage_buckets_lowest_first_and_stops_after_max_time() -> None:
    # usages: log 1 = 0.15 (bucket 1), log 2 = 0.05 (bucket 0), log 3 = 0.12 (bucket 1), log 4 = 0.19 (bucket 1)
    logs = [
        log(1, L9=85 * MB, L1=15 * MB),
        log(2, L9=95 * MB, L2=5 * MB),
        log(3, L9=88 * MB, L3=12 * MB),
        log(4, L9=81 * MB, L4=19 * MB),
    ]
    # 1000-byte entries at 1000 entries/s: 1 MB of survivors costs 1 s. Budget 10 s: the check happens before
    # each log and stops once elapsed > max, so log 2 (5 s) and then log 1 (15 s, elapsed 20 s) run; 3, 4 wait.
    out = run(logs, [9], config={"minorCompactionMaxTimeMillis": 10_000}, horizon_ms=4_200_000)
    ev = next(e for e in out["bookies"]["b1"]["timeline"] if e["compaction"] == "minor")
    assert ev["compacted_logs"] == 2 and ev["rewrite_bytes"] == 20 * MB
    assert ev["compaction_seconds"] == pytest.approx(20.0)
    stuck = sorted(s["log_id"] for s in out["bookies"]["b1"]["stuck_logs"])
    assert stuck == [3, 4]


def test_throttle_arithmetic_by_entries_and_by_bytes_and_fixed_delay() -> None:
    logs = [log(1, L1=90 * MB, L2=10 * MB)]
    by_entries = run(logs, [1], entry_size=500, horizon_ms=5_000_000)["bookies"]["b1"]
    assert by_entries["compaction_seconds"] == pytest.approx(10 * MB / 500 / 1000)  # 20 s
    by_bytes = run(
        logs, [1], config={"isThrottleByBytes": True, "compactionRateByBytes": 2 * MB}, horizon_ms=5_000_000
    )["bookies"]["b1"]
    assert by_bytes["compaction_seconds"] == pytest.approx(5.0)
    # fixed delay: the run after a 20 s compaction starts gcWaitTime after it ended
    out = run(
        [log(1, L1=90 * MB, L2=10 * MB), log(2, L3=1 * MB)],
        [1],
        entry_size=500,
        horizon_ms=6_000_000,
        first_run_ms=600_000,
    )
    assert out["bookies"]["b1"]["gc_runs"] >= 1
    ev = out["bookies"]["b1"]["timeline"]
    minor = next(e for e in ev if e["compaction"] == "minor")
    assert minor["end_ms"] - minor["t_ms"] == 20_000


def test_disk_above_warn_suspends_major_above_full_suspends_both() -> None:
    logs = [log(1, L1=5 * MB, L2=5 * MB), log(2, L1=9 * MB, L2=1 * MB), log(3, L1=10 * MB)]
    # used 30 MB: warn (0.9) < 30/32.5 = 0.923 <= full (0.95): major suspended, minor still runs
    out = run(logs, [1], disk=32_500_000, horizon_ms=3 * 86_400_000)
    b = out["bookies"]["b1"]
    assert b["timeline"][0]["suspended"] == {"major": True, "minor": False}
    assert b["reclaimed_bytes"]["deletion"] == 10 * MB
    # after the deletion usage is 20/32.5 < warn, so major resumes and log 1 compacts later
    assert b["reclaimed_bytes"]["minor"] == 9 * MB and b["reclaimed_bytes"]["major"] == 5 * MB
    # full: used 30 MB of 31 MB, and only the partially-dead logs exist: nothing comes back by itself (#571)
    out = run([*logs[:2], log(3, L5=10 * MB)], [1], disk=31 * MB)
    b = out["bookies"]["b1"]
    assert b["timeline"][0]["suspended"] == {"major": True, "minor": True}
    assert sum(b["reclaimed_bytes"].values()) == 0
    assert {s["reason"] for s in b["stuck_logs"]} == {REASON_SUSPENDED_FULL}


def test_force_gc_when_no_space_compacts_at_once() -> None:
    logs = [log(1, L1=5 * MB, L2=5 * MB), log(2, L1=9 * MB, L2=1 * MB), log(3, L5=10 * MB)]
    # 30 MB used of 33 MB: above warn, so the disk monitor forces GC and major compaction runs at once
    out = run(logs, [1], disk=33 * MB, config={"isForceGCAllowWhenNoSpace": True})
    first = out["bookies"]["b1"]["timeline"][0]
    assert first["forced"] and first["compaction"] == "major" and first["t_ms"] == 600_000
    assert first["reclaimed_bytes"] == 14 * MB
    # above the full threshold survivors cannot be written first: the old logs are kept (reference §5.4)
    out = run(logs, [1], disk=31 * MB, config={"isForceGCAllowWhenNoSpace": True})
    first = out["bookies"]["b1"]["timeline"][0]
    assert first["forced"] and first["skipped_no_space"] == 2 and first["reclaimed_bytes"] == 0


def test_deletions_at_later_times_wait_for_their_time() -> None:
    out = run([log(1, L1=MB), log(2, L2=MB)], [{"id": 1, "at_ms": 0}, {"id": 2, "at_ms": 3_000_000}])
    ev = [(e["t_ms"], e["reclaimed_by"]["deletion"]) for e in out["bookies"]["b1"]["timeline"]]
    assert ev == [(600_000, MB), (3_000_000, MB)]


def test_bad_layout_is_a_model_error() -> None:
    with pytest.raises(ModelError):
        layout_from_json({"bookies": {"b": {"entry_logs": [{"id": 1}]}}}, {}, 1000)
    with pytest.raises(ModelError):
        layout_from_json({"bookies": {}}, {}, 1000)
    with pytest.raises(ModelError):
        parse_delete_schedule("1,2")
    with pytest.raises(ModelError):
        layout_from_json({"bookies": {"b": {"entry_logs": [{"id": 1, "ledgers": {"x": 1}}]}}}, {}, 1000)


_logs = st.lists(
    st.dictionaries(st.integers(1, 8), st.integers(1, 50 * MB), min_size=1, max_size=5), min_size=1, max_size=12
)


@settings(max_examples=60, deadline=None)
@given(_logs, st.sets(st.integers(1, 8)), st.booleans(), st.booleans())
def test_bytes_are_conserved(raw: list[dict[int, int]], dele: set[int], pulsar: bool, by_bytes: bool) -> None:
    logs = [{"id": i, "ledgers": {str(k): v for k, v in lg.items()}} for i, lg in enumerate(raw)]
    out = run(logs, sorted(dele), pulsar=pulsar, config={"isThrottleByBytes": by_bytes})
    b = out["bookies"]["b1"]
    garbage = sum(v for lg in raw for k, v in lg.items() if k in dele)
    assert b["garbage_bytes"] == garbage
    assert sum(b["reclaimed_bytes"].values()) + b["unreclaimable_bytes"] == garbage
    assert b["used_bytes_after"] == b["used_bytes_before"] - sum(b["reclaimed_bytes"].values())
    # every stuck log is stuck for the one rule that keeps it: usage at or above the top threshold
    top = 0.5 if pulsar else 0.8
    assert all(s["reason"] == REASON_NEVER and s["usage"] >= top for s in b["stuck_logs"])


def test_config_round_trips_in_bookkeeper_names() -> None:
    cfg = GcConfig().to_json()
    assert cfg["gcWaitTime"] == 600_000 and cfg["majorCompactionThreshold"] == 0.8
    assert gc_config(cfg) == GcConfig()


def test_compaction_rate_is_the_default_of_compaction_rate_by_entries() -> None:
    """ServerConfiguration.getCompactionRateByEntries: getInt(compactionRateByEntries, getCompactionRate())."""
    from pulsar_ops.bookiescan.bookie_conf import from_server_config, gc_keys
    from pulsar_ops.model.gc_settings import settings_of

    assert gc_config({"compactionRate": "500"}).compaction_rate_by_entries == 500
    assert gc_config({"compactionRate": "500", "compactionRateByEntries": "700"}).compaction_rate_by_entries == 700
    assert gc_config({}).compaction_rate_by_entries == 1000
    # a bookie whose server_config sets only compactionRate: kept by the scrape, read by plan and apply
    keys = gc_keys(from_server_config({"compactionRate": "250", "ledgerDirectories": "/d"}, "server_config"))
    assert keys == {"compactionRate": "250"} and settings_of(keys).compaction_rate_by_entries == 250


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("forceAllowCompaction", "yes", True),
        ("forceAllowCompaction", "ON", True),
        ("forceAllowCompaction", "t", True),
        ("forceAllowCompaction", "No", False),
        ("forceAllowCompaction", "f", False),
        ("gcWaitTime", "+900000", 900_000),
        ("gcWaitTime", "0x10", 16),
        ("gcWaitTime", "0B101", 5),
        ("majorCompactionThreshold", "0.5d", 0.5),
        ("majorCompactionThreshold", ".5", 0.5),
        ("majorCompactionThreshold", "5e-1", 0.5),
    ],
)
def test_settings_are_read_as_the_bookies_configuration_reads_them(key: str, text: str, value: object) -> None:
    """commons-configuration2's PropertyConverter: BooleanUtils.toBooleanObject, hex/binary prefixes, Long(String)
    and Double(String)."""
    assert gc_config({key: text}).to_json()[key] == value


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("forceAllowCompaction", "1"),
        ("forceAllowCompaction", "enabled"),
        ("gcWaitTime", "1_000"),
        ("gcWaitTime", "1e3"),
        ("gcWaitTime", "5.0"),
        ("gcWaitTime", "99999999999999999999"),
        ("majorCompactionThreshold", "1_0"),
        ("majorCompactionThreshold", "inf"),
    ],
)
def test_values_the_bookie_would_refuse_are_refused(key: str, text: str) -> None:
    with pytest.raises(ModelError, match="must be a"):
        gc_config({key: text})
