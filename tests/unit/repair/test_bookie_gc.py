"""The bookie-gc kind: its rule on snapshot and live facts, the forced-run prediction on a measured layout, the
HTTP transaction's bounded wait, and the settings read from a bookie's server_config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from pulsar_ops.model.gc_config import gc_config
from pulsar_ops.model.scan_layout import BookieScan
from pulsar_ops.repair.kinds import bookie_gc as G

PULSAR = gc_config(pulsar_conf=True)
BK = gc_config()
NONE = gc_config({"majorCompactionInterval": 0, "minorCompactionInterval": 0, "forceAllowCompaction": False})


def _call(**kw: Any) -> G.BookieGcCall:
    base = G.BookieGcCall(
        bookie_id="b1:3181",
        url=None,
        force_major=True,
        force_minor=True,
        expect="major",
        scan="/scans/b1",
        scan_finished_at_ms=1,
        data_age_ms=10 * 86_400_000,
        garbage_ledgers=(7,),
    )
    return replace(base, **kw)


def _live(**kw: Any) -> G.GcFacts:
    base = G.GcFacts(
        live=True,
        scanned=True,
        settings=PULSAR,
        registered=True,
        in_force_gc=False,
        major_suspended=False,
        minor_suspended=False,
    )
    return replace(base, **kw)


@pytest.mark.parametrize(
    ("cfg", "major", "minor", "want"),
    [
        (PULSAR, True, True, "major"),  # forceAllowCompaction, threshold 0.5 in (0, 1)
        (BK, True, True, "major"),  # not force-allowed, but major compaction is enabled: force runs it
        (NONE, True, True, None),  # neither enabled nor force-allowed
        (gc_config({"majorCompactionInterval": 0, "minorCompactionInterval": 0, "forceAllowCompaction": True}),
         True, True, "major"),  # disabled periodically, allowed by force
        (PULSAR, False, True, "minor"),
        (PULSAR, False, False, None),
    ],
)  # fmt: skip
def test_forced_compaction_follows_run_with_flags(cfg: Any, major: bool, minor: bool, want: str | None) -> None:
    assert G.forced_compaction(cfg, major, minor) == want


def test_rule_allows_a_planned_call_and_refuses_each_broken_fact() -> None:
    call = _call()
    assert G.gc_rule(call, _live()) is None
    assert G.gc_rule(call, G.GcFacts(live=False, scanned=True, settings=PULSAR)) is None  # plan: live facts unjudged
    cases: list[tuple[G.BookieGcCall, G.GcFacts, str, bool]] = [
        (call, _live(scanned=False), G.NOT_SCANNED, True),
        (call, _live(registered=False), G.NOT_REGISTERED, False),
        (call, _live(registered=None), G.NOT_REGISTERED, False),
        (call, _live(identity="b2:3181"), G.IDENTITY, True),
        (call, _live(settings=None, settings_error="HTTP 500"), G.SETTINGS_UNKNOWN, False),
        (_call(data_age_ms=60_000), _live(), G.WITHIN_WAIT, True),
        (call, _live(settings=NONE), G.COMPACTION_DISABLED, True),
        (_call(expect=None), _live(), G.COMPACTION_CHANGED, True),
        (call, _live(major_suspended=True), G.SUSPENDED, False),
        (call, _live(major_suspended=None), G.SUSPENDED, False),
        (call, _live(in_force_gc=True), G.IN_FORCE_GC, False),
        (call, _live(in_force_gc=None), G.IN_FORCE_GC, False),
    ]
    for c, f, code, final in cases:
        got = G.gc_rule(c, f)
        assert got is not None and (got.code, got.final) == (code, final), (code, got)
    # a plain GC (no compaction) needs no compaction setting, and ignores a suspension
    plain = _call(force_major=False, force_minor=False, expect=None)
    assert G.gc_rule(plain, _live(settings=NONE, major_suspended=True, minor_suspended=True)) is None


def _scan() -> BookieScan:
    """One directory: log 0 all garbage (1200 B), log 1 20 garbage entries + 1 live (2520 B), log 2 active."""
    return BookieScan(
        path="/scans/b1",
        bookie_id="b1:3181",
        complete=True,
        finished_at_ms=1,
        ledger_dirs=("/d0",),
        log_dirs=np.zeros(3, dtype=np.int64),
        log_ids=np.arange(3, dtype=np.int64),
        data_bytes=np.array([1200, 2520, 600], dtype=np.int64),
        active=np.array([False, False, True]),
        pair_log=np.array([0, 1, 1, 2], dtype=np.int64),
        pair_ledger=np.array([7, 8, 100, 8], dtype=np.int64),
        pair_bytes=np.array([1200, 2400, 120, 600], dtype=np.int64),
    )


def test_prediction_is_one_forced_run_of_the_gc_model() -> None:
    s = _scan()
    p = G.predict(s, [7, 8], PULSAR, True, True)
    # log 0 deleted whole; log 1 (usage 1/21 < 0.5) compacted by the forced major; the active log never
    assert (p["deletion"], p["major"], p["minor"], p["total"]) == (1200, 2400, 0, 3600)
    assert p["rewrite"] == 120 and p["garbage"] == 1200 + 2400 + 600
    plain = G.predict(s, [7, 8], PULSAR, False, False)
    assert (plain["deletion"], plain["major"], plain["minor"]) == (1200, 0, 0)
    # compaction allowed only by forceAllowCompaction (both kinds disabled periodically) still runs when forced
    forced_only = gc_config({"majorCompactionInterval": 0, "minorCompactionInterval": 0, "forceAllowCompaction": True})
    assert G.predict(s, [7, 8], forced_only, True, True)["major"] == 2400
    assert G.predict(s, [7, 8], NONE, True, True)["major"] == 0


def test_settings_from_server_config_take_bookkeeper_defaults_for_unset_keys() -> None:
    cfg = G.settings_of({"bookiePort": "3181", "majorCompactionThreshold": "0.5", "forceAllowCompaction": "true"})
    assert cfg.gc_wait_time_ms == 600_000 and cfg.force_allow_compaction and cfg.major_compaction_threshold == 0.5
    assert not G.settings_of({}).force_allow_compaction
    assert G.identity_of({"bookieId": "bk-0"}) == "bk-0" and G.identity_of({"bookiePort": "3181"}) is None
    # bookieId=bk-0,bk-1 in bookkeeper.conf: server_config shows "[bk-0, bk-1]", getBookieId takes "bk-0"
    assert G.identity_of({"bookieId": "[bk-0, bk-1]"}) == "bk-0"


class FakeBookie:
    def __init__(self, put: G.HttpAnswer, states: list[Any]) -> None:
        self._put, self.states, self.calls = put, list(states), []  # type: list[tuple[str, str]]

    def get(self, path: str) -> G.HttpAnswer:
        self.calls.append(("GET", path))
        s = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return G.HttpAnswer(200, {"is_in_force_gc": s}) if isinstance(s, str) else s

    def put(self, path: str, body: Mapping[str, Any] | None) -> G.HttpAnswer:
        self.calls.append(("PUT", f"{path} {None if body is None else dict(body)}"))
        return self._put


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_trigger_waits_until_the_forced_run_ends_and_bounds_the_wait() -> None:
    ok = G.HttpAnswer(200, "Triggered GC on BookieServer: b1:3181")
    c = Clock()
    api = FakeBookie(ok, ["true", "true", "false"])
    r = G.trigger_and_wait(api, _call(), timeout_s=60, poll_s=2, sleep=c.sleep, clock=c.now)
    assert (r.outcome, r.details["polls"]) == ("committed", 3)
    # both kinds forced: a blank body, so each ledger directory keeps its own suspension (upstream enableForceGC())
    assert api.calls[0] == ("PUT", "/api/v1/bookie/gc None")
    plain = FakeBookie(ok, ["false"])
    G.trigger_and_wait(plain, replace(_call(), force_major=False, force_minor=False), timeout_s=4)
    assert plain.calls[0] == ("PUT", "/api/v1/bookie/gc {'forceMajor': False, 'forceMinor': False}")
    c = Clock()
    r = G.trigger_and_wait(FakeBookie(ok, ["true"]), _call(), timeout_s=10, poll_s=2, sleep=c.sleep, clock=c.now)
    assert (r.outcome, r.code) == ("failed", G.TIMEOUT) and c.t == 10
    unknown = FakeBookie(ok, [G.HttpAnswer(None, error="ConnectError")])
    r = G.trigger_and_wait(unknown, _call(), timeout_s=4, poll_s=2, sleep=c.sleep, clock=c.now)
    assert r.code == G.TIMEOUT  # an unanswered GET is never "ended"
    bad = FakeBookie(G.HttpAnswer(400, "Failed to handle the request, exception: x"), ["false"])
    assert G.trigger_and_wait(bad, _call(), timeout_s=4).code == G.HTTP_FAILED
    other = FakeBookie(G.HttpAnswer(200, "Triggered GC on BookieServer: b9:3181"), ["false"])
    assert G.trigger_and_wait(other, _call(), timeout_s=4).code == G.IDENTITY


def test_call_round_trips_and_shape_is_checked() -> None:
    call = _call(predicted={"total": 5, "deletion": 5})
    assert G.BookieGcCall.from_json(call.to_json(), "a") == replace(call, predicted={"total": 5, "deletion": 5})
    path = G.registration_path("/ledgers", call.bookie_id)
    assert G.shape_problem(path, "local", False, None, call, "/ledgers") is None
    assert G.shape_problem(path, "local", True, None, call, "/ledgers") is not None  # lists a znode
    assert G.shape_problem("/ledgers/available/other", "local", False, None, call, "/ledgers") is not None
    assert G.shape_problem(path, "local", False, None, _call(force_major=False), "/ledgers") is not None
    assert G.plan_problem(call, {"b1:3181": "/scans/b1"}) is None
    assert G.plan_problem(call, {"b2:3181": "/scans/b2"}) is not None
    assert G.plan_problem(call, {"b1:3181": "/elsewhere"}) is not None


class ScriptedBookie:
    """A bookie whose GET /gc answers follow a script; config and suspension as Pulsar ships them."""

    def __init__(self, force_states: list[str]) -> None:
        self.force_states = force_states
        self.puts = 0
        self.config: dict[str, str] = {"gcWaitTime": "900000", "forceAllowCompaction": "true",
                                       "majorCompactionThreshold": "0.5"}  # fmt: skip

    def get(self, path: str) -> G.HttpAnswer:
        if path == G.CONFIG_PATH:
            return G.HttpAnswer(200, self.config)
        if path == G.SUSPEND_PATH:
            return G.HttpAnswer(200, {"isMajorGcSuspended": "false", "isMinorGcSuspended": "false"})
        if path == G.GC_PATH:
            s = self.force_states.pop(0) if len(self.force_states) > 1 else self.force_states[0]
            return G.HttpAnswer(200, {"is_in_force_gc": s})
        return G.HttpAnswer(404, None)

    def put(self, path: str, body: Mapping[str, Any]) -> G.HttpAnswer:
        self.puts += 1
        return G.HttpAnswer(200, "Triggered GC on BookieServer: b1:3181")


def test_mark_then_act_journals_each_step_and_a_timed_out_run_is_committed_once_it_ended(tmp_path: Any) -> None:
    from pulsar_ops.bookiescan import schema
    from pulsar_ops.repair import journal as J
    from pulsar_ops.repair.backup import BackupStore

    (tmp_path / "scan").mkdir()
    (tmp_path / "scan" / schema.MANIFEST_NAME).write_text('{"bookie_id": "b1:3181"}')
    call = _call(scan=str(tmp_path / "scan"))
    scans = {"b1:3181": call.scan}
    # before the mark: GET says idle; the PUT's run is still going at every poll until the timeout
    bookie = ScriptedBookie(["false", "true"])
    c = Clock()
    gc = G.GcApply(clients=lambda _b, _u: bookie, interval_s=30, timeout_s=5, poll_s=1, sleep=c.sleep, clock=c.now)
    registered: G.Registered = lambda _b: True  # noqa: E731
    with J.Journal.open(tmp_path / "j.jsonl", plan_checksum="c" * 64, plan_id="p", actions=1, backup_dir=None) as j:
        backups = BackupStore.open(tmp_path / "b", create=True)
        assert G.mark_one(j, backups, "a1", call, scans, gc, registered)[0] == "marked"
        assert bookie.puts == 0 and j.state("a1").backup  # mark changes nothing and keeps what the bookie said
        bookie.force_states = ["false", "true"]
        outcome, why = G.delete_one(j, "a1", call, scans, gc, registered, j.state("a1"))
        assert (outcome, bookie.puts) == ("failed", 1) and why.startswith(G.TIMEOUT)
        # the next run: the forced GC has ended -> committed without a second request
        bookie.force_states = ["false"]
        outcome, why = G.delete_one(j, "a1", call, scans, gc, registered, j.state("a1"))
        assert (outcome, bookie.puts) == ("committed", 1) and "timed out" in why
        assert j.state("a1").state == J.COMMITTED


def test_forced_gcs_are_paced_one_bookie_at_a_time() -> None:
    c = Clock()
    gc = G.GcApply(clients=lambda _b, _u: None, interval_s=30, sleep=c.sleep, clock=c.now)
    gc.pace()
    assert c.t == 0  # the first request waits for nothing
    gc.ended()
    c.t += 10
    gc.pace()
    assert c.t == 30  # 30 s after the previous forced GC ended


def _finding(detection: str, **ev: Any) -> Any:
    from pulsar_ops.findings import Finding

    lid = ev.pop("ledger_id", None)
    return Finding(detection, "warning", ledger_id=lid, path="b1:3181", evidence={"bookie": "b1:3181", **ev})


def test_build_plans_one_call_per_bookie_and_says_why_not_otherwise() -> None:
    s = _scan()
    old = 10 * 86_400_000
    fs = [
        _finding(G.UNRECLAIMED, ledger_id=7, age_ms=old),
        _finding(G.UNRECLAIMED, ledger_id=8, age_ms=old),
        _finding(G.STALE, live_bytes=120, age_ms=old),
    ]
    built = G.build(fs, {"b1:3181": s}, PULSAR)
    (item,) = built.actions
    call = item["call"]
    assert (call.force_major, call.force_minor, call.expect) == (True, True, "major")
    assert call.garbage_ledgers == (7, 8) and call.predicted["total"] == 3600 and not built.not_planned
    # a stale log with nothing live: plain GC, no compaction asked
    plain = G.build([*fs[:2], _finding(G.STALE, live_bytes=0, age_ms=old)], {"b1:3181": s}, PULSAR).actions
    assert plain[0]["call"].body() == {"forceMajor": False, "forceMinor": False}
    # no scan of the bookie; a dangling ledger's data; data within gcWaitTime; nothing a forced run would free
    codes = {
        G.NOT_SCANNED: G.build(fs, {}, PULSAR),
        "dangling-ledger-data": G.build(
            [*fs, _finding(G.UNRECLAIMED, ledger_id=9, dangling=True)], {"b1:3181": s}, PULSAR
        ),
        G.WITHIN_WAIT: G.build([_finding(G.UNRECLAIMED, ledger_id=7, age_ms=1000)], {"b1:3181": s}, PULSAR),
        G.NOTHING: G.build([_finding(G.UNRECLAIMED, ledger_id=99, age_ms=old)], {"b1:3181": s}, PULSAR),
    }
    for code, b in codes.items():
        assert not b.actions and b.not_planned and {c for _, c, _ in b.not_planned} == {code}, code


def test_plan_decides_on_each_bookies_own_scraped_settings_and_apply_refuses_a_forged_one(tmp_path: Any) -> None:
    """The rule and prediction at plan time use the GC keys the scrape kept from the bookie's server_config
    (BookKeeper's ServerConfiguration defaults for keys it does not set), else those scan-bookie read from its
    bookkeeper.conf; the audit's settings only when neither was read, and the action says so."""
    from pulsar_ops.repair import journal as J
    from pulsar_ops.repair.backup import BackupStore

    old = 10 * 86_400_000
    fs = [
        _finding(G.UNRECLAIMED, ledger_id=7, age_ms=old),
        _finding(G.UNRECLAIMED, ledger_id=8, age_ms=old),
        _finding(G.STALE, live_bytes=120, age_ms=old),
    ]
    scan = _scan()
    audit = G.build(fs, {"b1:3181": scan}, PULSAR)
    (item,) = audit.actions
    assert item["call"].expect == "major" and item["call"].settings_source == G.AUDIT_SETTINGS
    assert any("audit's GC settings" in n for n in item["notes"])
    # scraped: compaction disabled on this bookie -> plain GC only, predicted without the compaction
    off = {"forceAllowCompaction": "false", "majorCompactionInterval": "0", "minorCompactionInterval": "0"}
    (own,) = G.build(fs, {"b1:3181": scan}, PULSAR, scraped={"b1:3181": off}).actions
    call = own["call"]
    assert (call.body(), call.expect, call.settings_source) == (
        {"forceMajor": False, "forceMinor": False},
        None,
        G.SCRAPED_SETTINGS,
    )
    assert call.predicted["total"] < item["call"].predicted["total"]
    assert call.settings["forceAllowCompaction"] is False and call.settings["gcWaitTime"] == 600_000  # BK default
    # scraped: a gcWaitTime longer than the data's age -> the bookie's own run is due, not planned
    late = G.build(
        fs,
        {"b1:3181": scan},
        PULSAR,
        scraped={
            "b1:3181": {
                "gcWaitTime": str(old + 1),
                "minorCompactionInterval": "1000000",
                "majorCompactionInterval": "2000000",
            }
        },
    )
    assert not late.actions and {c for _, c, _ in late.not_planned} == {G.WITHIN_WAIT}
    assert all(G.SCRAPED_SETTINGS in why for _, _, why in late.not_planned)
    # scan-bookie --bookie-config's keys when not scraped; scraped ones win
    conf = replace(scan, config_gc=off, config_source="/pulsar/conf/bookkeeper.conf")
    (fromconf,) = G.build(fs, {"b1:3181": conf}, PULSAR).actions
    assert fromconf["call"].expect is None and "/pulsar/conf/bookkeeper.conf" in fromconf["call"].settings_source
    (scraped,) = G.build(fs, {"b1:3181": conf}, PULSAR, scraped={"b1:3181": {}}).actions
    assert scraped["call"].expect == "major"  # BookKeeper's defaults: major compaction enabled
    # settings the bookie would refuse to start with: unplanned, never guessed
    bad = G.build(fs, {"b1:3181": scan}, PULSAR, scraped={"b1:3181": {"majorCompactionThreshold": "2"}})
    assert not bad.actions and {c for _, c, _ in bad.not_planned} == {G.SETTINGS_UNKNOWN}
    # a forged plan asking the compaction this bookie's settings disable is refused at mark, nothing called
    forged = replace(call, force_major=True, force_minor=True, expect="major", scan=str(tmp_path / "scan"))
    (tmp_path / "scan").mkdir()
    (tmp_path / "scan" / "manifest.json").write_text('{"bookie_id": "b1:3181"}')
    bookie = ScriptedBookie(["false"])
    bookie.config = {"gcWaitTime": "600000", **off}
    gc = G.GcApply(clients=lambda _b, _u: bookie)
    with J.Journal.open(tmp_path / "j.jsonl", plan_checksum="c" * 64, plan_id="p", actions=1, backup_dir=None) as j:
        backups = BackupStore.open(tmp_path / "b", create=True)
        outcome, why = G.mark_one(j, backups, "a1", forged, {"b1:3181": forged.scan}, gc, lambda _b: True)
    assert outcome == "skipped" and why.startswith(G.COMPACTION_DISABLED) and bookie.puts == 0


class ConfigBookie:
    """A bookie that answers its server_config with ``doc`` and nothing else."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc

    def get(self, path: str) -> G.HttpAnswer:
        return G.HttpAnswer(200, dict(self.doc)) if path == G.CONFIG_PATH else G.HttpAnswer(404)

    def put(self, path: str, body: Mapping[str, Any]) -> G.HttpAnswer:
        raise AssertionError("reading the facts never writes")


def test_a_padded_setting_is_read_the_same_at_plan_and_at_apply() -> None:
    # the server_config a bookie answers, values padded with blanks: the plan decides on what the scrape kept
    # (scrape/bookie.py, through httpx as it runs), apply on the bookie's answer now; one reader for both
    # (bookie_conf.server_config_gc: commons-configuration stores each value trimmed)
    import httpx

    from pulsar_ops.scrape.bookie import _server_config

    doc = {"forceAllowCompaction": " true ", "gcWaitTime": " 900000", "majorCompactionThreshold": "0.5 ", "x": "1"}
    answer = httpx.MockTransport(lambda r: httpx.Response(200, json=doc))
    client = httpx.Client(base_url="http://b1:8000", transport=answer)
    _, scraped = _server_config(client, "http://b1:8000")
    assert scraped == {"forceAllowCompaction": "true", "gcWaitTime": "900000", "majorCompactionThreshold": "0.5"}
    planned = G.settings_for("b1:3181", {"b1:3181": scraped}, None, gc_config())
    assert planned.source == G.SCRAPED_SETTINGS and planned.error is None and planned.cfg is not None
    facts, record = G.live_facts(ConfigBookie(doc), _call(), registered=True, scanned=True)
    assert facts.settings_error is None and facts.settings == planned.cfg
    assert planned.cfg.force_allow_compaction and planned.cfg.gc_wait_time_ms == 900_000
    assert record["server_config"]["forceAllowCompaction"] == " true "  # the journal keeps what the bookie said
