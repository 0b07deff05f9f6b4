"""Bookie garbage collection and compaction over time (reference/bookie-storage.md §4-§6).

One ``GarbageCollectorThread`` per bookie (one ledger directory), simulated run by run:

* runs at a fixed delay of ``gcWaitTime`` after the previous run *ended* (a long compaction delays the next
  run); the first run comes ``first_run_ms`` after the start (default one ``gcWaitTime``);
* a run first applies ledger GC (ledgers whose metadata was deleted at or before the run's start), then
  entry-log GC: every flushed log (not the active one) whose ledgers are all gone is deleted ("deletion");
* then at most one compaction: major if not suspended and ((force and force-major allowed) or (major enabled and
  (force or time since last major > majorCompactionInterval))), else minor under the same rule;
  the last-compaction clocks are set when the compaction ends and a major also resets the minor clock;
* compaction takes logs with usage (remaining / total) strictly below the threshold, in 10 usage buckets lowest
  first (log id order within a bucket), stops once ``*CompactionMaxTimeMillis`` (> 0) is exceeded, and for each
  log rewrites the live bytes at the throttle (entries: live / entry_size / compactionRateByEntries seconds;
  bytes: live / compactionRateByBytes) into new logs before deleting the old one. A log whose survivors would
  push the disk above ``diskUsageThreshold`` is skipped (no writable directory: the old log is kept);
* the disk monitor: above ``diskUsageWarnThreshold`` major compaction is suspended; above
  ``diskUsageThreshold`` both are, minor resuming below the LWM; with ``isForceGCAllowWhenNoSpace`` nothing is
  suspended and force GC runs again ``diskCheckInterval`` after each run while above the warn level.

Logs still holding bytes of deleted ledgers at the end are reported with the reason they stay: usage at or above
the (highest enabled) compaction threshold is the "never" case (apache/bookkeeper #3711), the rest are the active
log, suspended compaction, or compaction not yet due within the horizon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pulsar_ops.model.gc_config import GcConfig
from pulsar_ops.model.layout import BookieLayout, Layout

DAY_MS = 86_400_000
MAX_LISTED_LOGS = 50

REASON_NEVER = "usage-at-or-above-compaction-threshold"
REASON_ACTIVE = "active-log-until-rollover"
REASON_SUSPENDED_WARN = "compaction-suspended-disk-above-warn"
REASON_SUSPENDED_FULL = "compaction-suspended-disk-full"
REASON_NO_SPACE = "no-space-to-rewrite-survivors"
REASON_PENDING = "compaction-not-due-within-horizon"
REASON_DISABLED = "compaction-disabled"


@dataclass(frozen=True)
class GcOptions:
    start_ms: int = 0
    horizon_ms: int | None = None  # default: last deletion + 2 x majorCompactionInterval + gcWaitTime
    first_run_ms: int | None = None  # delay of the first run after start; default gcWaitTime
    last_minor_ago_ms: int = 0  # time since the last minor compaction at start (0 = just ran: worst case)
    last_major_ago_ms: int = 0
    # The first run is a forced one (HTTP ``PUT /api/v1/bookie/gc`` with ``{"forceMajor", "forceMinor"}``):
    # upstream ``server/http/service/TriggerGCService.java`` calls ``forceGC(forceMajor, forceMinor)``, which
    # ``bookie/GarbageCollectorThread.java`` ``enableForceGC`` turns into ``runWithFlags(true, !forceMajor,
    # !forceMinor)``. None: every run is a scheduled one.
    forced: tuple[bool, bool] | None = None


@dataclass
class BookieGcResult:
    bookie_id: str
    disk_bytes: int | None
    used_before: int
    used_after: int = 0
    deleted_bytes: int = 0  # bytes that the deletions turned into garbage on this bookie
    reclaimed: dict[str, int] = field(default_factory=lambda: {"deletion": 0, "minor": 0, "major": 0})
    rewrite_bytes: int = 0
    compaction_seconds: float = 0.0
    runs: int = 0
    timeline: list[dict[str, Any]] = field(default_factory=list)
    stuck: list[dict[str, Any]] = field(default_factory=list)
    unreclaimable_by_reason: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def unreclaimable_bytes(self) -> int:
        return sum(self.unreclaimable_by_reason.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "disk_bytes": self.disk_bytes,
            "used_bytes_before": self.used_before,
            "used_bytes_after": self.used_after,
            "garbage_bytes": self.deleted_bytes,
            "reclaimed_bytes": dict(self.reclaimed),
            "unreclaimable_bytes": self.unreclaimable_bytes,
            "unreclaimable_by_reason": dict(self.unreclaimable_by_reason),
            "rewrite_bytes": self.rewrite_bytes,
            "compaction_seconds": round(self.compaction_seconds, 3),
            "gc_runs": self.runs,
            "timeline": self.timeline,
            "stuck_logs": self.stuck[:MAX_LISTED_LOGS],
            "stuck_logs_count": len(self.stuck),
            "notes": self.notes,
        }


@dataclass
class GcResult:
    bookies: dict[str, BookieGcResult]
    config: GcConfig
    start_ms: int
    horizon_ms: int

    def total(self) -> dict[str, Any]:
        rec = {"deletion": 0, "minor": 0, "major": 0}
        reasons: dict[str, int] = {}
        timeline: list[dict[str, Any]] = []
        for bid, r in self.bookies.items():
            for k in rec:
                rec[k] += r.reclaimed[k]
            for k, v in r.unreclaimable_by_reason.items():
                reasons[k] = reasons.get(k, 0) + v
            timeline.extend({"bookie": bid, **ev} for ev in r.timeline)
        timeline.sort(key=lambda ev: (ev["t_ms"], ev["bookie"]))
        cum = 0
        for ev in timeline:
            cum += ev["reclaimed_bytes"]
            ev["cumulative_reclaimed_bytes"] = cum
        return {
            "garbage_bytes": sum(r.deleted_bytes for r in self.bookies.values()),
            "reclaimed_bytes": rec,
            "unreclaimable_bytes": sum(reasons.values()),
            "unreclaimable_by_reason": reasons,
            "rewrite_bytes": sum(r.rewrite_bytes for r in self.bookies.values()),
            "compaction_seconds": round(sum(r.compaction_seconds for r in self.bookies.values()), 3),
            "timeline": timeline,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "start_ms": self.start_ms,
            "horizon_ms": self.horizon_ms,
            "config": self.config.to_json(),
            "bookies": {bid: r.to_json() for bid, r in self.bookies.items()},
            "total": self.total(),
        }


def default_horizon(layout: Layout, cfg: GcConfig, opts: GcOptions) -> int:
    last = max(layout.group_times_ms, default=opts.start_ms)
    span = 2 * max(cfg.major_compaction_interval_s, cfg.minor_compaction_interval_s, 3600) * 1000
    return max(last, opts.start_ms) + span + cfg.gc_wait_time_ms


def simulate(layout: Layout, cfg: GcConfig, opts: GcOptions | None = None) -> GcResult:
    opts = opts or GcOptions()
    horizon = opts.horizon_ms if opts.horizon_ms is not None else default_horizon(layout, cfg, opts)
    results = {
        bid: _simulate_dirs(bl, layout.group_times_ms, layout.entry_size, cfg, opts, horizon)
        for bid, bl in sorted(layout.bookies.items())
    }
    return GcResult(bookies=results, config=cfg, start_ms=opts.start_ms, horizon_ms=horizon)


def split_dirs(bl: BookieLayout) -> list[tuple[str | None, BookieLayout]]:
    """One layout per ledger directory: upstream ``bookie/storage/ldb/DbLedgerStorage.java`` ``initialize`` builds
    one ``SingleDirectoryDbLedgerStorage`` per ``ledgerDirectories`` entry, each with its own entry logger over a
    one-directory ``LedgerDirsManager``, and that class's constructor starts its own ``GarbageCollectorThread``:
    each directory is collected on its own schedule.

    The snapshot gives one disk capacity per bookie, not per directory: with more than one directory the disk
    thresholds are not applied (said in the notes)."""
    if bl.log_dirs is None or len(bl.ledger_dirs) <= 1:
        return [(bl.ledger_dirs[0] if bl.ledger_dirs else None, bl)]
    out: list[tuple[str | None, BookieLayout]] = []
    for i, d in enumerate(bl.ledger_dirs):
        m = bl.log_dirs == i
        out.append(
            (
                d,
                BookieLayout(
                    bookie_id=bl.bookie_id,
                    disk_bytes=None,
                    log_ids=bl.log_ids[m],
                    totals=bl.totals[m],
                    active=bl.active[m],
                    group_bytes=bl.group_bytes[m],
                    other_bytes=bl.other_bytes if i == 0 else 0,
                ),
            )
        )
    return out


def _simulate_dirs(
    bl: BookieLayout, times: list[int], entry_size: int, cfg: GcConfig, opts: GcOptions, horizon: int
) -> BookieGcResult:
    parts = split_dirs(bl)
    runs = [(d, _simulate_bookie(sub, times, entry_size, cfg, opts, horizon)) for d, sub in parts]
    for d, r in runs:
        if d is not None:
            for entry in r.stuck:
                entry["ledger_dir"] = d
            if len(runs) > 1:
                for ev in r.timeline:
                    ev["ledger_dir"] = d
    if len(runs) == 1:
        return runs[0][1]
    res = BookieGcResult(bookie_id=bl.bookie_id, disk_bytes=bl.disk_bytes, used_before=0)
    res.notes.extend(bl.notes)
    if bl.disk_bytes:
        res.notes.append(
            f"{len(runs)} ledger directories, each with its own GC thread; disk thresholds not applied (the "
            "snapshot gives one capacity per bookie, not per directory)"
        )
    reasons: dict[str, int] = {}
    for _, r in runs:
        res.used_before += r.used_before
        res.used_after += r.used_after
        res.deleted_bytes += r.deleted_bytes
        for k, v in r.reclaimed.items():
            res.reclaimed[k] = res.reclaimed.get(k, 0) + v
        res.rewrite_bytes += r.rewrite_bytes
        res.compaction_seconds += r.compaction_seconds
        res.runs += r.runs
        res.timeline.extend(r.timeline)
        res.stuck.extend(r.stuck)
        for k, v in r.unreclaimable_by_reason.items():
            reasons[k] = reasons.get(k, 0) + v
    res.timeline.sort(key=lambda ev: (ev["t_ms"], str(ev.get("ledger_dir"))))
    res.stuck.sort(key=lambda d: -d["garbage_bytes"])
    res.unreclaimable_by_reason = reasons
    return res


class _State:
    """Mutable per-bookie arrays; logs are appended by compaction, never reordered."""

    def __init__(self, bl: BookieLayout) -> None:
        self.ids = bl.log_ids.astype(np.int64).copy()
        self.totals = bl.totals.astype(np.int64).copy()
        self.groups = bl.group_bytes.astype(np.int64).copy()
        self.active = bl.active.astype(np.bool_).copy()
        self.alive = np.ones(self.ids.shape[0], dtype=np.bool_)
        self.other = bl.other_bytes
        self.n_layout = int(self.ids.shape[0])  # logs from the layout; later ones are compaction output

    def used(self) -> int:
        return self.other + int(self.totals[self.alive].sum())

    def dead(self, n_dead: int) -> np.ndarray[Any, np.dtype[np.int64]]:
        out: np.ndarray[Any, np.dtype[np.int64]] = np.minimum(self.groups[:, :n_dead].sum(axis=1), self.totals)
        return out

    def append(self, totals: np.ndarray[Any, Any], groups: np.ndarray[Any, Any]) -> None:
        n = totals.shape[0]
        start = int(self.ids.max()) + 1 if self.ids.size else 0
        self.ids = np.concatenate([self.ids, np.arange(start, start + n, dtype=np.int64)])
        self.totals = np.concatenate([self.totals, totals.astype(np.int64)])
        self.groups = np.concatenate([self.groups, groups.astype(np.int64)])
        self.active = np.concatenate([self.active, np.zeros(n, dtype=np.bool_)])
        self.alive = np.concatenate([self.alive, np.ones(n, dtype=np.bool_)])


def _usage(st: _State, dead: np.ndarray[Any, Any], cfg: GcConfig) -> np.ndarray[Any, Any]:
    rem = (st.totals - dead).astype(np.float64)
    tot = st.totals.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        usage = np.where(tot > 0, rem / np.where(tot > 0, tot, 1.0), 0.0)
        if cfg.use_target_entry_log_size_for_gc:
            target = np.maximum(tot, float(cfg.log_size_limit))
            usage = np.where(usage < 1.0, rem / target, usage)
    return usage


def _simulate_bookie(
    bl: BookieLayout, times: list[int], entry_size: int, cfg: GcConfig, opts: GcOptions, horizon: int
) -> BookieGcResult:
    st = _State(bl)
    n_groups = len(times)
    res = BookieGcResult(bookie_id=bl.bookie_id, disk_bytes=bl.disk_bytes, used_before=st.used())
    res.notes.extend(bl.notes)
    res.deleted_bytes = int(np.minimum(st.groups.sum(axis=1), st.totals).sum()) if n_groups else 0
    disk = bl.disk_bytes
    gc_wait = cfg.gc_wait_time_ms
    t = opts.start_ms + (opts.first_run_ms if opts.first_run_ms is not None else gc_wait)
    last_minor = opts.start_ms - opts.last_minor_ago_ms
    last_major = opts.start_ms - opts.last_major_ago_ms
    minor_ms = cfg.minor_compaction_interval_s * 1000
    major_ms = cfg.major_compaction_interval_s * 1000
    full_flag = False
    last_state: tuple[bool, bool, bool] | None = None
    n_dead_seen = -1
    idle = False  # the previous run changed nothing and nothing it depends on has changed since
    while t <= horizon:
        n_dead = int(np.searchsorted(np.asarray(times, dtype=np.int64), t, side="right")) if n_groups else 0
        major_due = cfg.major_enabled and t - last_major > major_ms
        minor_due = cfg.minor_enabled and t - last_minor > minor_ms
        if idle and n_dead == n_dead_seen and not major_due and not minor_due:
            t += gc_wait
            continue
        res.runs += 1
        used = st.used()
        usage_disk = used / disk if disk else 0.0
        if disk:
            if usage_disk > cfg.disk_usage_threshold:
                full_flag = True
            elif usage_disk < cfg.lwm:
                full_flag = False
        almost = bool(disk) and usage_disk > cfg.disk_usage_warn_threshold
        if opts.forced is not None and res.runs == 1:
            suspend_major, suspend_minor, force = not opts.forced[0], not opts.forced[1], True
        elif cfg.force_gc_allow_when_no_space:
            suspend_major = suspend_minor = False
            force = almost or full_flag
        else:
            suspend_major = almost or full_flag
            suspend_minor = full_flag
            force = False
        state = (suspend_major, suspend_minor, force)
        event: dict[str, Any] = {"t_ms": t, "forced": force}
        changed_state = state != last_state
        last_state = state

        # Ledger GC then entry-log GC (steps 2-4).
        dead = st.dead(n_dead)
        n_dead_seen = n_dead
        rem = st.totals - dead
        gone = st.alive & ~st.active & (rem <= 0)
        reclaimed_del = int(st.totals[gone].sum())
        st.alive[gone] = False
        res.reclaimed["deletion"] += reclaimed_del

        # Compaction decision (step 5).
        do_major = not suspend_major and (
            (force and cfg.force_major_allowed) or (cfg.major_enabled and (force or major_due))
        )
        do_minor = (
            (not do_major)
            and not suspend_minor
            and ((force and cfg.force_minor_allowed) or (cfg.minor_enabled and (force or minor_due)))
        )
        elapsed_s = 0.0
        kind = "major" if do_major else "minor" if do_minor else None
        compacted = skipped = 0
        reclaimed_cmp = rewrite = 0
        if kind is not None:
            thr = cfg.major_compaction_threshold if do_major else cfg.minor_compaction_threshold
            max_ms = cfg.major_compaction_max_time_ms if do_major else cfg.minor_compaction_max_time_ms
            usage = _usage(st, dead, cfg)
            cand = np.flatnonzero(st.alive & ~st.active & (usage < thr) & (rem > 0))
            if cand.size:
                bucket = np.minimum(9, np.floor(usage[cand] * 10)).astype(np.int64)
                cand = cand[np.lexsort((st.ids[cand], bucket))]
                surv_tot: list[int] = []
                surv_groups: list[np.ndarray[Any, Any]] = []
                used_now = st.used()
                for k in cand:
                    if max_ms > 0 and elapsed_s * 1000 > max_ms:
                        break
                    live = int(rem[k])
                    if disk and used_now + live > cfg.disk_usage_threshold * disk:
                        skipped += 1
                        continue
                    secs = (
                        live / cfg.compaction_rate_by_bytes
                        if cfg.throttle_by_bytes
                        else math.ceil(live / max(entry_size, 1)) / cfg.compaction_rate_by_entries
                    )
                    elapsed_s += secs
                    g = st.groups[k].copy()
                    g[:n_dead] = 0
                    surv_tot.append(live)
                    surv_groups.append(g)
                    reclaimed_cmp += int(dead[k])
                    rewrite += live
                    used_now -= int(dead[k])
                    st.alive[k] = False
                    compacted += 1
                if surv_tot:
                    _append_survivors(st, surv_tot, surv_groups, cfg.log_size_limit, n_groups)
            res.reclaimed[kind] += reclaimed_cmp
            res.rewrite_bytes += rewrite
            res.compaction_seconds += elapsed_s
        end = t + math.ceil(elapsed_s * 1000)
        if do_major:
            last_major = last_minor = end
        elif do_minor:
            last_minor = end
        did = reclaimed_del > 0 or compacted > 0 or skipped > 0
        if did or changed_state:
            used_after = st.used()
            event.update(
                {
                    "end_ms": end,
                    "deleted_logs": int(gone.sum()),
                    "reclaimed_bytes": reclaimed_del + reclaimed_cmp,
                    "reclaimed_by": {"deletion": reclaimed_del, kind or "compaction": reclaimed_cmp},
                    "compaction": kind,
                    "compacted_logs": compacted,
                    "skipped_no_space": skipped,
                    "rewrite_bytes": rewrite,
                    "compaction_seconds": round(elapsed_s, 3),
                    "used_bytes": used_after,
                    "disk_usage": round(used_after / disk, 6) if disk else None,
                    "suspended": {"major": suspend_major, "minor": suspend_minor},
                }
            )
            res.timeline.append(event)
        idle = not did and not force
        if n_dead == n_groups and reclaimed_del == 0 and compacted == 0:
            # Nothing changed and nothing else will: no deletion is pending and either no log can ever be a
            # candidate under the current disk state, or every candidate was just refused for lack of space.
            blocked = kind is not None and skipped > 0
            if blocked or not _work_possible(st, st.dead(n_dead), cfg, suspend_major, suspend_minor):
                break
        t = end + (cfg.disk_check_interval_ms if force else gc_wait)

    res.used_after = st.used()
    _classify_stuck(st, res, cfg, n_dead_seen if n_dead_seen >= 0 else 0, full_flag, bool(last_state and last_state[0]))
    return res


def _work_possible(st: _State, dead: np.ndarray[Any, Any], cfg: GcConfig, s_major: bool, s_minor: bool) -> bool:
    thresholds = []
    if cfg.major_enabled and not s_major:
        thresholds.append(cfg.major_compaction_threshold)
    if cfg.minor_enabled and not s_minor:
        thresholds.append(cfg.minor_compaction_threshold)
    if not thresholds:
        return False
    usage = _usage(st, dead, cfg)
    return bool((st.alive & ~st.active & (dead > 0) & (usage < max(thresholds))).any())


def _append_survivors(
    st: _State, surv_tot: list[int], surv_groups: list[np.ndarray[Any, Any]], limit: int, n_groups: int
) -> None:
    """Survivors are appended to new logs rolled at logSizeLimit; each new log carries the same group mix."""
    total = sum(surv_tot)
    if total <= 0:
        return
    n_new = max(1, math.ceil(total / limit))
    gsum = np.sum(np.stack(surv_groups), axis=0) if n_groups else np.zeros(0, dtype=np.int64)
    sizes = np.full(n_new, total // n_new, dtype=np.int64)
    sizes[: total - int(sizes.sum())] += 1
    frac = sizes.astype(np.float64) / total
    groups = np.floor(np.outer(frac, gsum.astype(np.float64))).astype(np.int64).reshape(n_new, n_groups)
    if n_groups:
        groups[-1] += gsum - groups.sum(axis=0)
    st.append(sizes, groups)


def _classify_stuck(
    st: _State, res: BookieGcResult, cfg: GcConfig, n_dead: int, full: bool, major_suspended: bool
) -> None:
    dead = st.dead(n_dead)
    usage = _usage(st, dead, cfg)
    idx = np.flatnonzero(st.alive & (dead > 0))
    top = (
        cfg.major_compaction_threshold
        if cfg.major_enabled
        else cfg.minor_compaction_threshold
        if cfg.minor_enabled
        else 0.0
    )
    reasons: dict[str, int] = {}
    for k in idx:
        if st.active[k]:
            reason = REASON_ACTIVE
        elif not (cfg.major_enabled or cfg.minor_enabled):
            reason = REASON_DISABLED
        elif usage[k] >= top:
            reason = REASON_NEVER
        elif full:
            reason = REASON_SUSPENDED_FULL
        elif major_suspended and usage[k] >= cfg.minor_compaction_threshold:
            reason = REASON_SUSPENDED_WARN
        elif res.disk_bytes and res.used_after + int(st.totals[k] - dead[k]) > (
            cfg.disk_usage_threshold * res.disk_bytes
        ):
            reason = REASON_NO_SPACE
        else:
            reason = REASON_PENDING
        reasons[reason] = reasons.get(reason, 0) + int(dead[k])
        res.stuck.append(
            {
                "log_id": int(st.ids[k]),
                "total_bytes": int(st.totals[k]),
                "garbage_bytes": int(dead[k]),
                "usage": round(float(usage[k]), 6),
                "reason": reason,
                "compaction_output": bool(k >= st.n_layout),
            }
        )
    res.stuck.sort(key=lambda d: -d["garbage_bytes"])
    res.unreclaimable_by_reason = reasons
