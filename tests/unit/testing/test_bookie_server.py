"""The test bookie server answers as upstream's handlers do (apache/bookkeeper master at 9590a97f:
``server/http/service/TriggerGCService.java`` and its ``TriggerGCServiceTest``, ``ConfigurationService.java`` with
``conf/AbstractConfiguration.asJson``), and our readers take those answers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from pulsar_ops.bookiescan.bookie_conf import from_server_config, scraped_dirs
from pulsar_ops.repair.bookie_writer import bookie_client
from pulsar_ops.testing.bookie_server import BookieServer


def _call(url: str, method: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_error_bodies_are_plain_text_and_config_lists_read_as_java_prints_them(tmp_path: Path) -> None:
    dirs = [tmp_path / "l0", tmp_path / "l1"]
    with BookieServer("b1:3181", dirs, ledger_exists=lambda ids: ids) as b:
        gc = f"{b.url}/api/v1/bookie/gc"
        # TriggerGCServiceTest: "test" -> 400 with this text; POST -> 405 with that text; neither is JSON
        assert _call(gc, "PUT", b"test") == (
            400,
            b"Failed to handle the request, exception: Failed to deserialize Object from Json string",
        )
        assert _call(gc, "PUT", b"[1]")[0] == 400
        assert _call(gc, "PUT", b'{"forceMajor": null}')[0] == 400  # configMap.getOrDefault(...).toString()
        assert _call(gc, "POST") == (
            405,
            b"Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state.",
        )
        assert json.loads(_call(gc, "GET")[1]) == {"is_in_force_gc": "false"}
        assert b.runs == []  # none of them triggered a run
        # server_config: a list property is toString()'d as [a, b] (two ledger directories)
        conf = json.loads(_call(f"{b.url}/api/v1/config/server_config", "GET")[1])
        assert conf["ledgerDirectories"] == f"[{dirs[0]}, {dirs[1]}]"
        assert scraped_dirs(from_server_config(conf, "server_config"))["ledger_dirs"] == [str(d) for d in dirs]
        # the apply client keeps a plain-text error body as text
        ans = bookie_client(b.url).get("/api/v1/bookie/gc/nothing-here")
        assert ans.status == 404 and not ans.ok


def test_a_forced_gc_of_both_kinds_keeps_a_suspension_the_http_answer_cannot_show(tmp_path: Path) -> None:
    """DbLedgerStorage answers isMajorGcSuspended only when every directory's is (allMatch), while the disk monitor
    suspends one directory's (diskAlmostFull): explicit flags would override it there, a blank body does not."""
    from pulsar_ops.repair.kinds import bookie_gc as G

    dirs = [tmp_path / "l0", tmp_path / "l1"]
    for d in dirs:
        (d / "current").mkdir(parents=True)
    call = G.BookieGcCall(
        bookie_id="b1:3181", url=None, force_major=True, force_minor=True, expect="major", scan="s",
        scan_finished_at_ms=0, data_age_ms=1, garbage_ledgers=(),
    )  # fmt: skip
    with BookieServer("b1:3181", dirs, ledger_exists=lambda ids: ids) as b:
        b.suspended[0]["major"] = True  # l0's disk is almost full
        api = bookie_client(b.url)
        sus = api.get(G.SUSPEND_PATH).body
        assert sus == {"isMajorGcSuspended": "false", "isMinorGcSuspended": "false"}  # not every directory
        r = G.trigger_and_wait(api, call, timeout_s=30, poll_s=0.05)
        assert r.outcome == "committed"
        b.wait_idle()
        assert [(g.suspend_major, g.suspend_minor) for g in b.runs[0]] == [(True, False), (False, False)]
        # explicit flags (what a call forcing only some kinds sends) override every directory's suspension
        b.force_gc(True, True)
        b.wait_idle()
        assert [(g.suspend_major, g.suspend_minor) for g in b.runs[1]] == [(False, False), (False, False)]
