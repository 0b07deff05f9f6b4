"""The apply journal: append-only JSONL, one fsync per record, keyed by plan checksum + action id.

States: ``pending`` (no record) -> ``marked`` -> ``deleting`` -> ``committed`` | ``failed`` | ``skipped`` (also
straight from pending). A ``skipped`` record is final (``"final": true``, or no ``final``: journals older than
transient skips) or transient (``false``: the next run resumes from the state it interrupted). Record shapes::

    {"type": "plan", "plan": "<checksum>", "plan_id", "actions": N, "backup_dir", "ts_ms"}
    {"type": "action", "plan": "<checksum>", "action": "<id>", "state": "...", "ts_ms", ...details}

A torn last line (a crash) is truncated away before anything is appended; a malformed record elsewhere is a
JournalError.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulsar_ops.errors import JournalError

PENDING = "pending"
MARKED = "marked"
DELETING = "deleting"
COMMITTED = "committed"
FAILED = "failed"
SKIPPED = "skipped"
STATES = (PENDING, MARKED, DELETING, COMMITTED, FAILED, SKIPPED)
SETTLED = frozenset({COMMITTED, SKIPPED, FAILED})  # nothing in flight (a transient skip is settled too)

_ALLOWED: dict[str, frozenset[str]] = {
    PENDING: frozenset({MARKED, SKIPPED}),
    MARKED: frozenset({DELETING, SKIPPED, FAILED}),
    DELETING: frozenset({COMMITTED, FAILED, SKIPPED}),
    FAILED: frozenset({DELETING, SKIPPED, FAILED}),
    COMMITTED: frozenset(),
    SKIPPED: frozenset(),
}


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class ActionState:
    state: str = PENDING
    marked_at_ms: int | None = None
    reason: str = ""
    backup: tuple[str, ...] = ()
    history: list[str] = field(default_factory=list)
    # a transient skip: the state it interrupted, which the next run resumes from (None otherwise)
    resume: str | None = None

    @property
    def final(self) -> bool:
        """Nothing more will be done: committed, or skipped for a reason that cannot pass."""
        return self.state == COMMITTED or (self.state == SKIPPED and self.resume is None)

    @property
    def transient(self) -> bool:
        """Skipped for a reason that can pass (the next run re-evaluates it)."""
        return self.state == SKIPPED and self.resume is not None

    @property
    def live(self) -> str:
        """The state the next run works from: a transient skip's resumed state, else the state."""
        return self.resume if self.resume is not None and self.state == SKIPPED else self.state

    def allowed(self) -> frozenset[str]:
        return _ALLOWED[self.live] | ({SKIPPED} if self.transient else frozenset())


@dataclass
class _PlanRecord:
    checksum: str
    plan_id: str
    actions: int
    backup_dir: str | None
    states: dict[str, ActionState] = field(default_factory=dict)

    def settled(self) -> int:
        return sum(1 for s in self.states.values() if s.state in SETTLED)

    def unfinished(self) -> bool:
        return self.settled() < self.actions


def _read_records(path: Path) -> Iterator[dict[str, Any]]:
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is a torn record (or empty)
    for n, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise JournalError(
                f"journal {path}: line {n} is not valid JSON ({e})",
                hint="the journal is corrupt; inspect it and keep it: it records what was deleted",
            ) from e
        if not isinstance(rec, dict) or rec.get("type") not in ("plan", "action"):
            raise JournalError(f"journal {path}: line {n} is not a journal record")
        yield rec


class Journal:
    """One journal file, possibly shared by several (finished) plans; this object serves one plan."""

    def __init__(self, path: Path, plan_checksum: str) -> None:
        self.path = Path(path)
        self.plan_checksum = plan_checksum
        self._plans: dict[str, _PlanRecord] = {}
        self._fh: Any = None

    # --- loading -------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: Path,
        *,
        plan_checksum: str,
        plan_id: str,
        actions: int,
        backup_dir: str | None,
        create: bool = True,
    ) -> Journal:
        """Load the journal; refuse when another plan is unfinished in it; append our header if new."""
        j = cls(path, plan_checksum)
        j._lock()
        try:
            j._start(plan_checksum, plan_id, actions, backup_dir, create)
        except BaseException:
            j.close()
            raise
        return j

    def _start(self, plan_checksum: str, plan_id: str, actions: int, backup_dir: str | None, create: bool) -> None:
        if self.path.stat().st_size:
            self._load()
        for other in self._plans.values():
            if other.checksum != plan_checksum and other.unfinished():
                raise JournalError(
                    f"journal {self.path} holds unfinished plan {other.plan_id} "
                    f"({other.settled()}/{other.actions} actions settled); refusing to start plan {plan_id}",
                    hint="finish that plan first (re-run its `pulsar-ops apply ... --phase delete`), or pass "
                    "a different --journal FILE",
                )
        if create and plan_checksum not in self._plans:
            self._append(
                {
                    "type": "plan",
                    "plan": plan_checksum,
                    "plan_id": plan_id,
                    "actions": actions,
                    "backup_dir": backup_dir,
                    "ts_ms": now_ms(),
                }
            )
            self._plans[plan_checksum] = _PlanRecord(plan_checksum, plan_id, actions, backup_dir)

    @classmethod
    def read_only(cls, path: Path, *, plan_checksum: str) -> Journal:
        """Load without appending anything (dry runs, reports). A missing file is an empty journal."""
        j = cls(path, plan_checksum)
        if j.path.exists():
            j._load(repair=False)
        return j

    def _lock(self) -> None:
        """Open the journal for appending and hold an exclusive lock: one apply per journal at a time."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.path, "ab")  # noqa: SIM115 - held for the run, closed in close()
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.close()
            raise JournalError(
                f"journal {self.path} is locked: another `pulsar-ops apply` is running with it",
                hint="wait for the other run to finish (or stop it), then re-run the same command",
            ) from None

    def _load(self, *, repair: bool = True) -> None:
        raw = self.path.read_bytes()
        if repair and raw and not raw.endswith(b"\n"):
            cut = raw.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)
                fh.flush()
                os.fsync(fh.fileno())
        for rec in _read_records(self.path):
            self._apply(rec)

    def _apply(self, rec: Mapping[str, Any]) -> None:
        checksum = str(rec.get("plan"))
        if rec["type"] == "plan":
            if checksum not in self._plans:
                self._plans[checksum] = _PlanRecord(
                    checksum, str(rec.get("plan_id")), int(rec.get("actions") or 0), rec.get("backup_dir")
                )
            return
        plan = self._plans.get(checksum)
        if plan is None:
            raise JournalError(f"journal {self.path}: action record before its plan header")
        aid = str(rec["action"])
        st = plan.states.setdefault(aid, ActionState())
        state = str(rec["state"])
        if state not in st.allowed():
            raise JournalError(f"journal {self.path}: action {aid} goes {st.state} -> {state}, which is illegal")
        # a transient skip resumes from the state it interrupted
        st.resume = st.live if state == SKIPPED and rec.get("final", True) is False else None
        st.state = state
        st.history.append(state)
        st.reason = str(rec.get("reason") or "")
        if state == MARKED:
            st.marked_at_ms = int(rec["ts_ms"])
            st.backup = tuple(rec.get("backup") or ())

    # --- queries ---------------------------------------------------------------------------------------
    def _mine(self) -> _PlanRecord | None:
        return self._plans.get(self.plan_checksum)

    def state(self, action_id: str) -> ActionState:
        plan = self._mine()
        return ActionState() if plan is None else plan.states.get(action_id, ActionState())

    def states(self) -> dict[str, ActionState]:
        plan = self._mine()
        return dict(plan.states) if plan else {}

    @property
    def backup_dir(self) -> str | None:
        plan = self._mine()
        return plan.backup_dir if plan else None

    # --- writing -------------------------------------------------------------------------------------
    def record(self, action_id: str, state: str, **details: Any) -> None:
        """Append one transition (validated against the state machine), flushed and fsynced."""
        if state not in STATES or state == PENDING:
            raise ValueError(f"cannot journal state {state!r}")
        if state == SKIPPED:  # a skip not said to be transient is final (as every skip once was)
            details = {**details, "final": details.get("final", True) is not False}
        rec = {
            "type": "action",
            "plan": self.plan_checksum,
            "action": action_id,
            "state": state,
            "ts_ms": now_ms(),
            **details,
        }
        current = self.state(action_id)
        if state not in current.allowed():
            raise JournalError(f"refusing to journal action {action_id}: {current.state} -> {state} is illegal")
        self._append(rec)
        self._apply(rec)

    def _append(self, rec: Mapping[str, Any]) -> None:
        if self._fh is None:
            raise JournalError(f"journal {self.path} was opened read-only")
        line = json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8") + b"\n"
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_journal_path(plan_path: Path) -> Path:
    plan_path = Path(plan_path)
    return plan_path.with_name(plan_path.name + ".journal.jsonl")
