"""The ``bookie-gc`` action kind: a forced garbage collection on one bookie, over its HTTP API. Everything about the
kind lives here (build from the storage findings, shape check, eligibility rule, HTTP transaction, dry-run text,
journal record, done-check); the plan builder, executor and plan loader call into it through :class:`BookieGc`
(the registry's kind). Its facts are the bookie's own (HTTP), not ZooKeeper's: :func:`gc_rule` on
:class:`GcFacts`, read by :func:`live_facts`; only the bookie's registration is read from ZooKeeper.

What the bookie does (apache/bookkeeper master at 9590a97f; ``S/`` = ``bookkeeper-server/src/main/java/org/
apache/bookkeeper/``):

* ``PUT /api/v1/bookie/gc`` (``S/server/http/service/TriggerGCService.java``): a blank body calls
  ``LedgerStorage.forceGC()``; a JSON body ``{"forceMajor": b, "forceMinor": b}`` calls ``forceGC(forceMajor,
  forceMinor)``, each flag defaulting to "that kind is not suspended" and read with ``Boolean.parseBoolean`` of
  its string form. The answer is the JSON string ``Triggered GC on BookieServer: <bookieId>`` (200); a body that
  does not parse is ``400 Failed to handle the request, exception: ...``; methods other than PUT/GET are 405.
  ``GET`` answers ``{"is_in_force_gc": "true"|"false"}``.
* DbLedgerStorage forwards both to every ledger directory's ``SingleDirectoryDbLedgerStorage``
  (``S/bookie/storage/ldb/DbLedgerStorage.java``); ``isInForceGC`` is true while any directory's is.
* ``S/bookie/GarbageCollectorThread.java``: ``enableForceGC(forceMajor, forceMinor)`` only acts when the
  ``forceGarbageCollection`` flag flips false -> true (a request while a forced run is pending is ignored, yet
  still answered 200), then submits ``runWithFlags(true, !forceMajor, !forceMinor)``, which clears the flag when
  it ends. A run is ledger GC, entry-log GC (a flushed log whose ledgers are all gone is deleted), then at most one
  compaction: major when not suspended and (``isForceMajorCompactionAllow`` or major compaction enabled), else
  minor under the same rule. ``isForce*CompactionAllow`` = ``forceAllowCompaction`` and that kind's threshold in
  (0, 1); a kind is enabled when its interval and threshold are > 0.
* Suspension is per ledger directory (each ``SingleDirectoryDbLedgerStorage`` has its own GC thread; the disk
  monitor's ``diskAlmostFull`` suspends major compaction in that directory alone), but ``DbLedgerStorage`` answers
  ``isMajorGcSuspended`` only when every directory's is (``allMatch``). Explicit flags override each directory's
  suspension (``enableForceGC(forceMajor, forceMinor)`` -> ``runWithFlags(true, !forceMajor, !forceMinor)``); a
  blank body runs each directory with its own (``enableForceGC()`` -> ``runWithFlags(true,
  suspendMajorCompaction.get(), suspendMinorCompaction.get())``). So a call forcing both kinds is sent with a blank
  body (:meth:`BookieGcCall.wire_body`): the same run where no directory is suspended, and no override of a
  suspension the HTTP answer cannot show. A call forcing none sends ``{"forceMajor": false, "forceMinor": false}``.
* ``GET /api/v1/config/server_config`` (``S/server/http/service/ConfigurationService.java``,
  ``AbstractConfiguration.asJson``): every key set on the bookie, each value a string; a key not set has the
  code default (``ServerConfiguration``: ``gcWaitTime`` 600000, ``forceAllowCompaction`` false, ...).
* ``GET /api/v1/bookie/gc/suspend_compaction`` (``SuspendCompactionService``): ``{"isMajorGcSuspended",
  "isMinorGcSuspended"}``. The explicit flags override a suspension (``runWithFlags(true, !forceMajor, ...)``),
  and LedgerDirsMonitor suspends compaction when the disk is almost full: this kind refuses to override it.

What the plan proposes and why: ``docs/repair.md``, "bookie-gc".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pulsar_ops import strict
from pulsar_ops.bookiescan.bookie_conf import from_server_config, server_config_gc
from pulsar_ops.errors import ApplyError, ModelError, PlanError, ZooKeeperError
from pulsar_ops.findings import Finding
from pulsar_ops.model.gc_config import GC_KEYS, GcConfig
from pulsar_ops.model.gc_settings import AUDIT_SETTINGS as AUDIT_SETTINGS
from pulsar_ops.model.gc_settings import SCRAPED_SETTINGS as SCRAPED_SETTINGS
from pulsar_ops.model.gc_settings import PlanSettings as PlanSettings
from pulsar_ops.model.gc_settings import settings_for as settings_for
from pulsar_ops.model.gc_settings import settings_of as settings_of
from pulsar_ops.model.scan_layout import BookieScan
from pulsar_ops.model.scan_layout import predict_forced_run as predict
from pulsar_ops.repair import journal as J
from pulsar_ops.repair.actions import Action, each, integer, opt_text, read_strict, reads, req_text
from pulsar_ops.repair.facts import Facts
from pulsar_ops.repair.kind import Kind

if TYPE_CHECKING:
    from pulsar_ops.repair.zk_writer import ZkSession

NAME = "bookie-gc"
UNRECLAIMED = "unreclaimed-ledger-data"
STALE = "stale-entry-log"
GC_PATH = "/api/v1/bookie/gc"
CONFIG_PATH = "/api/v1/config/server_config"
SUSPEND_PATH = "/api/v1/bookie/gc/suspend_compaction"
DETAILS_PATH = "/api/v1/bookie/gc_details"
_HINT = "plans are written by `pulsar-ops plan AUDIT_DIR --out PLAN.json --bookie-scan SCAN`; re-create it"

# refusal codes (journal ``code``; stable)
NOT_SCANNED = "bookie-not-scanned"
NOT_REGISTERED = "bookie-not-registered"
IDENTITY = "bookie-identity-mismatch"
SETTINGS_UNKNOWN = "bookie-gc-settings-unknown"
WITHIN_WAIT = "within-gc-wait-time"
COMPACTION_DISABLED = "compaction-disabled"
COMPACTION_CHANGED = "compaction-settings-changed"
SUSPENDED = "compaction-suspended"
IN_FORCE_GC = "bookie-gc-in-progress"
TIMEOUT = "bookie-gc-timeout"
HTTP_FAILED = "bookie-gc-http-failed"
NOTHING = "nothing-to-reclaim"  # plan only: the prediction is 0 bytes


# --- the call an action makes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BookieGcCall:
    """What a ``bookie-gc`` action asks one bookie, and what the plan expected of it."""

    bookie_id: str = field(metadata=reads(req_text))
    url: str | None = field(metadata=reads(opt_text))  # the snapshot's endpoint (apply --bookie-http ID=URL wins)
    force_major: bool
    force_minor: bool
    expect: str | None  # the compaction the planned settings make a forced run do: major | minor | None
    scan: str = field(metadata=reads(req_text))  # the scan directory the prediction comes from
    scan_finished_at_ms: int = field(metadata=reads(integer(lo=0)))
    data_age_ms: int = field(metadata=reads(integer(lo=0)))  # the oldest unreclaimed data's age at the scan
    garbage_ledgers: tuple[int, ...] = field(
        metadata=reads(lambda d, k, w: each(integer(lo=0))({k: d.get(k) or []}, k, w))
    )
    predicted: Mapping[str, int] = field(default_factory=dict)  # deletion / minor / major / total bytes
    settings: Mapping[str, Any] = field(default_factory=dict)  # the GC settings the prediction used
    settings_source: str = AUDIT_SETTINGS  # where they came from (:func:`settings_for`)

    @property
    def compaction(self) -> bool:
        return self.force_major or self.force_minor

    def body(self) -> dict[str, bool]:
        """What the plan asks (the plan file's ``body``)."""
        return {"forceMajor": self.force_major, "forceMinor": self.force_minor}

    def wire_body(self) -> dict[str, bool] | None:
        """What the request carries: None (a blank body, each directory's own suspension flags) when both kinds
        are forced, else the explicit flags (module docstring)."""
        return None if self.force_major and self.force_minor else self.body()

    def wire_text(self) -> str:
        body = self.wire_body()
        return "(blank body)" if body is None else json.dumps(body, separators=(", ", ": "))

    def to_json(self) -> dict[str, Any]:
        return {
            "bookie_id": self.bookie_id,
            "url": self.url,
            "body": self.body(),
            "expect_compaction": self.expect,
            "scan": self.scan,
            "scan_finished_at_ms": self.scan_finished_at_ms,
            "data_age_ms": self.data_age_ms,
            "garbage_ledgers": list(self.garbage_ledgers),
            "predicted_freed_bytes": dict(self.predicted),
            "settings": dict(self.settings),
            "settings_source": self.settings_source,
        }

    @classmethod
    def from_json(cls, d: Any, where: str) -> BookieGcCall:
        E = PlanError
        d = strict.obj(d, where, E, hint=_HINT)
        body = strict.obj(d.get("body"), f"{where}.body", E, hint=_HINT)
        extra = set(body) - {"forceMajor", "forceMinor"}
        if extra:
            raise E(f"{where}.body: unknown key {sorted(extra)[0]!r} (TriggerGCService reads two)", hint=_HINT)
        expect = strict.text(d, "expect_compaction", where, E, nullable=True, hint=_HINT)
        if expect not in (None, "major", "minor"):
            raise E(f"{where}.expect_compaction: {strict.describe(expect)} is not major, minor or null", hint=_HINT)
        ledgers = d.get("garbage_ledgers") or []
        if not isinstance(ledgers, list):
            raise E(f"{where}.garbage_ledgers: must be a list", hint=_HINT)
        predicted = strict.obj(d.get("predicted_freed_bytes") or {}, f"{where}.predicted_freed_bytes", E, hint=_HINT)
        return read_strict(
            cls,
            d,
            where,
            hint=_HINT,
            force_major=strict.boolean(body, "forceMajor", f"{where}.body", E, hint=_HINT),
            force_minor=strict.boolean(body, "forceMinor", f"{where}.body", E, hint=_HINT),
            expect=expect,
            predicted={
                str(k): strict.req_int(predicted, str(k), f"{where}.predicted_freed_bytes", E, lo=0, hint=_HINT)
                for k in predicted
            },
            settings=dict(strict.obj(d.get("settings") or {}, f"{where}.settings", E, hint=_HINT)),
            settings_source=strict.text(d, "settings_source", where, E, nullable=True, hint=_HINT) or AUDIT_SETTINGS,
        )


def registration_path(ledgers_root: str, bookie_id: str) -> str:
    """The action's ``path``: the bookie's registration znode (``<root>/available/<id>``); the action changes
    nothing in ZooKeeper, and apply requires the bookie to be registered (read-write or read-only)."""
    return f"{ledgers_root.rstrip('/')}/available/{bookie_id}"


# --- the rule, on facts (snapshot-backed at plan, live at apply) ----------------------------------------


@dataclass(frozen=True)
class GcFacts:
    """What the rule decides on. At plan time (``live=False``) the live-only facts are None and not judged; at
    apply (``live=True``) a None is unknown, and unknown is never taken as allowed."""

    live: bool
    scanned: bool  # the bookie is one of the plan's scans, and that scan names it
    settings: GcConfig | None
    settings_error: str | None = None
    registered: bool | None = None
    identity: str | None = None  # the bookie id its own configuration gives (None: it does not say)
    in_force_gc: bool | None = None
    major_suspended: bool | None = None
    minor_suspended: bool | None = None


@dataclass(frozen=True)
class Refusal:
    code: str
    reason: str
    final: bool = True

    def __str__(self) -> str:
        return f"{self.code}: {self.reason}"


def forced_compaction(cfg: GcConfig, force_major: bool, force_minor: bool) -> str | None:
    """The compaction a forced run with these flags does (``runWithFlags(true, !forceMajor, !forceMinor)``)."""
    if force_major and (cfg.force_major_allowed or cfg.major_enabled):
        return "major"
    if force_minor and (cfg.force_minor_allowed or cfg.minor_enabled):
        return "minor"
    return None


def gc_rule(call: BookieGcCall, f: GcFacts) -> Refusal | None:
    """Why ``call`` must not run on the facts ``f`` (None: it may). The one eligibility rule of the kind: the
    planner calls it on the audit's settings, apply at mark and again right before the request on live ones."""
    if not f.scanned:
        return Refusal(NOT_SCANNED, f"bookie {call.bookie_id} is not one of the plan's scans ({call.scan})")
    if f.live and f.registered is None:
        return Refusal(NOT_REGISTERED, "its registration could not be read; not evidence of anything", final=False)
    if f.registered is False:
        return Refusal(NOT_REGISTERED, f"bookie {call.bookie_id} is not registered (not running)", final=False)
    if f.identity is not None and f.identity != call.bookie_id:
        return Refusal(IDENTITY, f"the server at this endpoint is bookie {f.identity}, not {call.bookie_id}")
    cfg = f.settings
    if cfg is None:
        why = f.settings_error or "not read"
        return Refusal(SETTINGS_UNKNOWN, f"its GC settings are unknown ({why})", final=False)
    if call.data_age_ms <= cfg.gc_wait_time_ms:
        return Refusal(
            WITHIN_WAIT,
            f"the oldest unreclaimed data was {call.data_age_ms // 1000} s old at the scan, within gcWaitTime "
            f"({cfg.gc_wait_time_ms // 1000} s): the bookie's own GC run is due",
        )
    kind = forced_compaction(cfg, call.force_major, call.force_minor)
    if call.compaction and kind is None:
        return Refusal(
            COMPACTION_DISABLED,
            "the bookie's settings allow no forced compaction (forceAllowCompaction="
            f"{str(cfg.force_allow_compaction).lower()}, major threshold {cfg.major_compaction_threshold} interval "
            f"{cfg.major_compaction_interval_s} s, minor threshold {cfg.minor_compaction_threshold} interval "
            f"{cfg.minor_compaction_interval_s} s)",
        )
    if kind != call.expect:
        return Refusal(
            COMPACTION_CHANGED,
            f"the bookie's settings make this run do {kind or 'no'} compaction; the plan predicted "
            f"{call.expect or 'none'}: re-plan",
        )
    if kind is not None:
        suspended = f.major_suspended if kind == "major" else f.minor_suspended
        if f.live and suspended is None:
            return Refusal(SUSPENDED, f"whether {kind} compaction is suspended is unknown", final=False)
        if suspended:
            return Refusal(
                SUSPENDED,
                f"{kind} compaction is suspended on the bookie (its disk is almost full, or an operator did it); "
                "a forced request would override that: free space or resume compaction first",
                final=False,
            )
    if f.live and f.in_force_gc is not False:
        why = "unknown" if f.in_force_gc is None else "running"
        return Refusal(
            IN_FORCE_GC,
            f"a forced GC is {why} on the bookie; a request now would be ignored (enableForceGC)",
            final=False,
        )
    return None


# --- the settings a bookie's plan-time decision uses ------------------------------------------------------


# one resolution for the plan and the audit's stale-entry-log: model/gc_settings.py


# --- build from findings ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    actions: list[dict[str, Any]]  # (finding, call, bytes) per bookie, for the planner to wrap as Actions
    not_planned: list[tuple[Finding, str, str]]  # (finding, reason code, reason)


def build(
    findings: Sequence[Finding],
    scans: Mapping[str, BookieScan],
    cfg: GcConfig,
    *,
    endpoints: Mapping[str, Mapping[str, Any]] | None = None,
    scraped: Mapping[str, Mapping[str, Any]] | None = None,
) -> Built:
    """One call per scanned bookie with storage findings, the rule applied and the run predicted on that bookie's
    own GC settings (:func:`settings_for`: ``scraped``, the snapshot's ``bookie_gc``; else its scan's
    configuration), on ``cfg`` (the audit's) only when neither was read."""
    by_bookie: dict[str, list[Finding]] = {}
    for f in findings:
        if f.detection in (UNRECLAIMED, STALE):
            bid = str(f.evidence.get("bookie") or "")
            by_bookie.setdefault(bid, []).append(f)
    out: list[dict[str, Any]] = []
    skipped: list[tuple[Finding, str, str]] = []
    for bid, fs in sorted(by_bookie.items()):

        def refuse(code: str, why: str, fs: list[Finding] = fs) -> None:  # none of the bookie's findings planned
            skipped.extend((f, code, why) for f in fs)

        scan = scans.get(bid)
        if scan is None:
            refuse(NOT_SCANNED, f"bookie {bid!r} has no --bookie-scan in this plan")
            continue
        dangling = [f for f in fs if f.detection == UNRECLAIMED and f.evidence.get("dangling")]
        if dangling:
            lids = ", ".join(str(f.ledger_id) for f in dangling[:5])
            refuse(
                "dangling-ledger-data",
                f"bookie {bid} holds the data of dangling ledger(s) {lids} (a topic still lists them: "
                "recoverable); a forced GC would delete it. Recover or drop them first",
            )
            continue
        own = settings_for(bid, scraped or {}, scan, cfg)
        if own.cfg is None:
            refuse(SETTINGS_UNKNOWN, f"its GC settings ({own.source}) do not validate: {own.error}")
            continue
        bcfg = own.cfg
        unreclaimed = [f for f in fs if f.detection == UNRECLAIMED and f.ledger_id is not None]
        stale = [f for f in fs if f.detection == STALE]
        garbage = sorted({int(f.ledger_id) for f in unreclaimed if f.ledger_id is not None})
        ages = [int(f.evidence.get("age_ms") or 0) for f in fs]
        compaction = any(int(f.evidence.get("live_bytes") or 0) > 0 for f in stale)
        kind = forced_compaction(bcfg, compaction, compaction) if compaction else None
        fm = fmi = kind is not None
        pred = predict(scan, garbage, bcfg, fm, fmi)
        ep = (endpoints or {}).get(bid) or {}
        call = BookieGcCall(
            bookie_id=bid,
            url=str(ep["url"]) if ep.get("url") else None,
            force_major=fm,
            force_minor=fmi,
            expect=kind,
            scan=scan.path,
            scan_finished_at_ms=scan.finished_at_ms,
            data_age_ms=max(ages, default=0),
            garbage_ledgers=tuple(garbage),
            predicted=pred,
            settings=bcfg.to_json(),
            settings_source=own.source,
        )
        refusal = gc_rule(call, GcFacts(live=False, scanned=True, settings=bcfg))
        if refusal is None and pred["total"] <= 0:
            refusal = Refusal(
                NOTHING,
                "the GC model predicts one forced run frees nothing here (the data is in the active log, or in logs "
                "the settings never compact)",
            )
        if refusal is not None:
            refuse(refusal.code, f"{refusal.reason} [GC settings: {own.source}]")
            continue
        notes = [f"GC settings: {own.source}"]
        if own.source == AUDIT_SETTINGS:
            notes.append(
                "the rule and prediction used the audit's GC settings, not this bookie's own: apply re-reads the "
                "bookie's server_config and refuses when they make the run differ"
            )
        if compaction and kind is None:
            notes.append("stale logs still hold live bytes but the settings allow no forced compaction: plain GC only")
        out.append({"finding": (stale or unreclaimed)[0], "findings": fs, "call": call, "notes": notes})
    return Built(actions=out, not_planned=skipped)


def impact(call: BookieGcCall, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The action's predicted impact (``impact`` of the plan's action)."""
    p = call.predicted
    return {
        "predicted_freed_bytes": int(p.get("total", 0)),
        "predicted_by": {k: int(p.get(k, 0)) for k in ("deletion", "minor", "major")},
        "garbage_bytes": int(p.get("garbage", 0)),
        "rewrite_bytes": int(p.get("rewrite", 0)),
        "metadata_ops": 0,
        "note": "a forced GC run on the bookie (PUT /api/v1/bookie/gc); predicted by the GC model on the bookie's "
        "measured layout (its scan) for one forced run",
        **({"notes": list(notes)} if notes else {}),
    }


# --- shape (static) ---------------------------------------------------------------------------------------


def shape_problem(
    path: str, store: str, has_znodes: bool, ledger_id: int | None, call: BookieGcCall | None, ledgers_root: str
) -> str | None:
    """Why a ``bookie-gc`` action is malformed (None: it is well formed). Reads nothing."""
    if call is None:
        return "a bookie-gc action needs its bookie_gc call"
    if store != "local" or has_znodes or ledger_id is not None:
        return "a bookie-gc action changes no znode: local store, no znodes, no ledger"
    if path != registration_path(ledgers_root, call.bookie_id):
        return f"its path must be the bookie's registration {registration_path(ledgers_root, call.bookie_id)}"
    if call.expect == "major" and not call.force_major:
        return "expects a major compaction without forceMajor"
    if call.expect == "minor" and not call.force_minor:
        return "expects a minor compaction without forceMinor"
    return None


def plan_problem(call: BookieGcCall, scans: Mapping[str, Any]) -> str | None:
    """The plan-level check: the bookie is one of the plan's scans (``impact.bookie_scans``), at that path."""
    recorded = scans.get(call.bookie_id)
    if recorded is None:
        return f"bookie {call.bookie_id} is not one of the plan's scans ({', '.join(sorted(scans)) or 'none'})"
    if str(recorded) != call.scan:
        return f"its scan {call.scan} is not the plan's scan of bookie {call.bookie_id} ({recorded})"
    return None


def scan_names(path: str) -> str | None:
    """The bookie id a scan directory's manifest names (None: unreadable); read at mark."""
    from pulsar_ops.bookiescan import schema

    try:
        doc = json.loads((Path(path) / schema.MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    bid = doc.get("bookie_id") if isinstance(doc, dict) else None
    return bid if isinstance(bid, str) else None


# --- the bookie's HTTP API (implemented over httpx by repair/bookie_writer.py) --------------------------


@dataclass(frozen=True)
class HttpAnswer:
    status: int | None  # None: no answer
    body: Any = None  # decoded JSON, or the text
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def describe(self) -> str:
        if self.status is None:
            return f"no answer ({self.error})"
        return f"HTTP {self.status}" + (f" ({str(self.body)[:200]})" if not self.ok and self.body else "")


class BookieApi(Protocol):
    def get(self, path: str) -> HttpAnswer: ...

    def put(self, path: str, body: Mapping[str, Any] | None) -> HttpAnswer: ...


BookieClients = Callable[[str, str | None], BookieApi | None]  # (bookie id, planned url) -> client


def _flag(value: Any) -> bool | None:
    """A boolean as the bookie answers it (``"true"``/``"false"`` strings, or JSON booleans)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _in_force_gc(answer: HttpAnswer) -> bool | None:
    """``GET /api/v1/bookie/gc``'s ``is_in_force_gc`` (None: no such answer)."""
    return _flag(answer.body.get("is_in_force_gc")) if answer.ok and isinstance(answer.body, dict) else None


def identity_of(config: Mapping[str, Any]) -> str | None:
    """The bookie id the configuration sets explicitly (``bookieId``); None when it does not (then the id is
    derived from the host's address and ``bookiePort``, which this tool does not guess). ``server_config`` shows a
    list-valued key as ``[a, b]`` and the bookie's ``getBookieId`` (``getString``) takes its first value, so this
    reads it through :func:`from_server_config` as every other key is read."""
    bid = config.get("bookieId")
    if not isinstance(bid, str) or not bid.strip():
        return None
    return from_server_config({"bookieId": bid}, CONFIG_PATH).get("bookieId") or None


def live_facts(
    api: BookieApi, call: BookieGcCall, *, registered: bool | None, scanned: bool
) -> tuple[GcFacts, dict[str, Any]]:
    """Read the bookie now: its configuration, force-GC state, suspension state. (facts, the record journaled
    and kept as the action's "backup": what the bookie said before the request)."""
    record: dict[str, Any] = {}
    settings: GcConfig | None = None
    error: str | None = None
    identity: str | None = None
    conf = api.get(CONFIG_PATH)
    if conf.ok and isinstance(conf.body, dict):
        record["server_config"] = {k: conf.body[k] for k in sorted(conf.body) if k in GC_KEYS or k == "bookieId"}
        identity = identity_of(conf.body)
        try:
            # read as the scrape read the keys the plan decided on (bookie_conf.server_config_gc): one reader
            settings = settings_of(server_config_gc(conf.body, CONFIG_PATH))
        except ModelError as e:
            error = e.message
    else:
        error = f"GET {CONFIG_PATH}: {conf.describe()}"
    gc = api.get(GC_PATH)
    in_force = _in_force_gc(gc)
    record["is_in_force_gc"] = in_force
    sus = api.get(SUSPEND_PATH)
    major_s = minor_s = None
    if sus.ok and isinstance(sus.body, dict):
        major_s, minor_s = _flag(sus.body.get("isMajorGcSuspended")), _flag(sus.body.get("isMinorGcSuspended"))
    record["suspended"] = {"major": major_s, "minor": minor_s}
    details = api.get(DETAILS_PATH)
    if details.ok:
        record["gc_details"] = details.body
    facts = GcFacts(
        live=True,
        scanned=scanned,
        settings=settings,
        settings_error=error,
        registered=registered,
        identity=identity,
        in_force_gc=in_force,
        major_suspended=major_s,
        minor_suspended=minor_s,
    )
    return facts, record


# --- the transaction ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GcResult:
    outcome: str  # committed | failed
    code: str
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)


def trigger_and_wait(
    api: BookieApi,
    call: BookieGcCall,
    *,
    timeout_s: float,
    poll_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> GcResult:
    """``PUT /api/v1/bookie/gc`` with the call's body (:meth:`BookieGcCall.wire_body`), then ``GET`` it until the
    bookie is no longer in a forced GC, at most ``timeout_s``. An error answer is never success; a timeout is
    ``bookie-gc-timeout``."""
    put = api.put(GC_PATH, call.wire_body())
    if not put.ok:
        return GcResult("failed", HTTP_FAILED, f"PUT {GC_PATH}: {put.describe()}", {"status": put.status})
    said = str(put.body) if put.body is not None else ""
    if isinstance(put.body, str) and ": " in said and said.rsplit(": ", 1)[1] != call.bookie_id:
        return GcResult(
            "failed",
            IDENTITY,
            f"the bookie answered {said!r}: GC was triggered on another bookie than {call.bookie_id}",
            {"answer": said},
        )
    start = clock()
    polls = 0
    while True:
        got = api.get(GC_PATH)
        polls += 1
        state = _in_force_gc(got)
        if state is False:
            waited = round(clock() - start, 3)
            return GcResult(
                "committed",
                "",
                f"{said or 'triggered'}; the forced run ended (is_in_force_gc false after {waited} s)",
                {"answer": said, "waited_s": waited, "polls": polls},
            )
        if clock() - start >= timeout_s:
            seen = "true" if state else got.describe() if state is None else "?"
            return GcResult(
                "failed",
                TIMEOUT,
                f"still in a forced GC after {timeout_s:g} s (last answer: {seen}); the bookie goes on with it: "
                "re-run apply to wait again, then re-scan",
                {"answer": said, "waited_s": round(clock() - start, 3), "polls": polls},
            )
        sleep(poll_s)


def done(api: BookieApi) -> bool:
    """The done-check after an interrupted run: the bookie is no longer in a forced GC."""
    got = api.get(GC_PATH)
    return _in_force_gc(got) is False


def dry_run_text(call: BookieGcCall) -> str:
    what = f"{call.expect} compaction forced" if call.expect else "no compaction (ledger GC and log deletion)"
    if call.wire_body() is None:
        what += " where a ledger directory has not suspended it"
    return (
        f"re-read bookie {call.bookie_id}'s configuration and GC state, then PUT {GC_PATH} {call.wire_text()} "
        f"({what}) and "
        f"wait until it is no longer in force GC; predicted to free {int(call.predicted.get('total', 0))} bytes"
    )


# --- apply: mark and act (the executor calls these for this kind) -----------------------------------------


@dataclass(frozen=True)
class GcApply:
    """What apply needs for this kind: a client per bookie, the pacing and the bounded wait."""

    clients: BookieClients
    interval_s: float = 60.0  # at least this long between the end of one forced GC and the next request
    timeout_s: float = 3600.0  # how long to wait for one forced GC to end
    poll_s: float = 2.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    last_end: list[float] = field(default_factory=list)

    def pace(self) -> None:
        if self.last_end and self.interval_s > 0:
            wait = self.last_end[0] + self.interval_s - self.clock()
            if wait > 0:
                self.sleep(wait)

    def ended(self) -> None:
        self.last_end[:] = [self.clock()]


Registered = Callable[[str], bool | None]  # bookie id -> registered now (None: could not be read)


def _facts_now(
    gc: GcApply, call: BookieGcCall, scans: Mapping[str, Any], registered: Registered
) -> tuple[BookieApi | None, GcFacts | None, dict[str, Any], Refusal | None]:
    api = gc.clients(call.bookie_id, call.url)
    if api is None:
        return None, None, {}, Refusal(HTTP_FAILED, f"no HTTP endpoint for bookie {call.bookie_id}", final=False)
    scanned = plan_problem(call, scans) is None and scan_names(call.scan) == call.bookie_id
    facts, record = live_facts(api, call, registered=registered(call.bookie_id), scanned=scanned)
    return api, facts, record, gc_rule(call, facts)


def _skipped(journal: Any, action_id: str, phase: str, refusal: Refusal) -> tuple[str, str]:
    journal.record(action_id, J.SKIPPED, phase=phase, reason=str(refusal), code=refusal.code, final=refusal.final)
    return "skipped", f"{refusal} ({'final' if refusal.final else 'transient: the next run re-evaluates it'})"


def mark_one(
    journal: Any,
    backups: Any,
    action_id: str,
    call: BookieGcCall,
    scans: Mapping[str, Any],
    gc: GcApply,
    registered: Registered,
) -> tuple[str, str]:
    """Mark: re-read the bookie and decide with the rule; keep what it said (configuration, GC state, details)
    as the action's backup object and journal ``marked``. Changes nothing on the bookie. (outcome, reason)."""
    _, _, record, refusal = _facts_now(gc, call, scans, registered)
    if refusal is not None:
        return _skipped(journal, action_id, "mark", refusal)
    sha = backups.put_object(json.dumps({"bookie": call.bookie_id, "before": record}, sort_keys=True).encode())
    backups.flush()
    journal.record(action_id, J.MARKED, phase="mark", backup=[sha], znodes=0, bookie=call.bookie_id)
    return "marked", f"bookie {call.bookie_id}: settings and GC state read, the rule allows it"


def delete_one(
    journal: Any,
    action_id: str,
    call: BookieGcCall,
    scans: Mapping[str, Any],
    gc: GcApply,
    registered: Registered,
    state: Any,
) -> tuple[str, str]:
    """Act: re-read and re-decide, pace, ``PUT`` the forced GC, wait for it to end; journaled at each step.
    An interrupted request (journaled ``deleting``) whose bookie is no longer in a forced GC counts as done."""
    timed_out = state.live == J.FAILED and str(state.reason).startswith(TIMEOUT)
    if state.live == J.DELETING or timed_out:
        api = gc.clients(call.bookie_id, call.url)
        if api is not None and done(api):
            what = "that timed out in a previous run" if timed_out else "requested before an interruption"
            reason = f"the forced GC {what} has ended (is_in_force_gc false)"
            if timed_out:
                journal.record(action_id, J.DELETING, phase="delete", call="re-check of a timed-out forced GC")
            journal.record(action_id, J.COMMITTED, phase="delete", reason=reason, recovered=True)
            return "committed", reason
    api, _, record, refusal = _facts_now(gc, call, scans, registered)
    if refusal is not None:
        return _skipped(journal, action_id, "delete", refusal)
    assert api is not None
    gc.pace()
    if state.live != J.DELETING:
        journal.record(action_id, J.DELETING, phase="delete", call=f"PUT {GC_PATH} {call.wire_text()}")
    result = trigger_and_wait(api, call, timeout_s=gc.timeout_s, poll_s=gc.poll_s, sleep=gc.sleep, clock=gc.clock)
    gc.ended()
    after = api.get(DETAILS_PATH)
    details = {**result.details, "before": record, **({"gc_details_after": after.body} if after.ok else {})}
    if result.outcome == "committed":
        journal.record(action_id, J.COMMITTED, phase="delete", reason=result.reason, **details)
        return "committed", result.reason
    journal.record(
        action_id, J.FAILED, phase="delete", reason=f"{result.code}: {result.reason}", code=result.code, **details
    )
    return "failed", f"{result.code}: {result.reason}"


class BookieGc(Kind):
    """The registry's ``bookie-gc``: it runs its own mark and delete steps (:func:`mark_one`, :func:`delete_one`)
    instead of the executor's ZooKeeper backup and transaction."""

    name = NAME
    steps_itself = True

    def shape(self, a: Action, paths: Sequence[str], ledgers_root: str) -> str | None:
        return shape_problem(a.path, a.store, bool(paths), a.ledger_id, a.bookie_gc, ledgers_root)

    def rule(self, a: Action, facts: Facts) -> str | None:
        """Never decided on ZooKeeper facts: :func:`gc_rule` decides on the bookie's own, in :meth:`step`."""
        return "a bookie-gc action is decided by gc_rule on the bookie's own facts, at its mark and delete steps"

    def step(
        self, session: ZkSession, journal: Any, backups: Any, plan: Any, a: Action, clients: GcApply | None
    ) -> tuple[str, str]:
        """Mark (pending) or act (marked or later): (outcome, reason)."""
        call = a.bookie_gc
        assert call is not None
        if clients is None:
            raise ApplyError(
                f"{a.id} calls a bookie's HTTP API, but no bookie client was configured; nothing was called"
            )
        scans = plan.impact.get("bookie_scans") or {}

        def registered(bookie_id: str) -> bool | None:  # read-write or read-only; None: cannot be read
            paths = [registration_path(plan.ledgers_root, p) for p in (bookie_id, f"readonly/{bookie_id}")]
            try:
                return any(o.exists for o in session.read("local", paths))
            except ZooKeeperError:
                return None

        st = journal.state(a.id)
        if st.live == J.PENDING:
            return mark_one(journal, backups, a.id, call, scans, clients, registered)
        return delete_one(journal, a.id, call, scans, clients, registered, st)

    def dry_run_mark(self, a: Action) -> str:
        assert a.bookie_gc is not None
        return f"re-read bookie {a.bookie_gc.bookie_id}'s configuration and GC state; change nothing"

    def dry_run(self, a: Action) -> tuple[str, str]:
        assert a.bookie_gc is not None
        return "would-call", dry_run_text(a.bookie_gc)


KIND = BookieGc()
