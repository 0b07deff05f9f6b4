"""List one ledger directory's entry logs as upstream does, in memory bounded by the logs, not by the names.

Upstream lists by name (``DefaultEntryLogger.getEntryLogsSet``: every name ending in ``.log``, id = hex before the
first dot, ``fileName2LogId``; ``LedgerDirUtil.FILE_PATTERN`` / ``COMPACTED_FILE_PATTERN``;
``TransactionalEntryLogCompactor.COMPACTING_SUFFIX``). A name that is not a regular file (``not-regular:<kind>``),
whose id is not a hex ``long`` (``bad-name``, ``bad-id``), or a second name for an id already present
(``duplicate-id``: ``DefaultEntryLogger.findFile`` reads only ``Long.toHexString(id) + ".log"``) is not read: it is
handed to ``on_bad`` as the directory is read, never collected (500,000 junk names collected took 774 MB RSS).
The logs to read are kept as numpy columns, with a name only where it is not the one derived from the id (upper
case, leading zeros): about 17 bytes a log.
"""

from __future__ import annotations

import errno
import os
import re
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from pulsar_ops.bookiescan.fileio import file_kind

LOG_RE = re.compile(r"^([0-9a-fA-F]+)\.log$")
COMPACTING_RE = re.compile(r"^([0-9a-fA-F]+)\.log\.compacting$")
COMPACTED_RE = re.compile(r"^([0-9a-fA-F]+)\.log\.([0-9a-fA-F]+)\.compacted$")
MAX_LOG_ID = 2**63 - 1  # Long.parseLong(hex, 16) refuses more (fileName2LogId -> INVALID_LID)
PLAIN, COMPACTED, COMPACTING = 0, 1, 2  # the kinds, in the order they are listed for one id


def errno_name(e: OSError) -> str:
    return errno.errorcode.get(e.errno or 0, str(e.errno))


def canonical(log_id: int, kind: int, other: int) -> str:
    """The name the bookie itself gives a file of this kind (``Long.toHexString``: lower case, no leading zero)."""
    if kind == PLAIN:
        return f"{log_id:x}.log"
    if kind == COMPACTING:
        return f"{log_id:x}.log.compacting"
    return f"{log_id:x}.log.{other:x}.compacted"


@dataclass(frozen=True)
class LogFile:
    ledger_dir: str
    path: Path
    rel: str
    log_id: int
    compacting: bool


@dataclass(frozen=True)
class LogList:
    """One directory's logs to read, ordered by (id, kind, second id, name); ``LogFile`` objects are made one at a
    time as they are read."""

    ledger_dir: Path
    ids: npt.NDArray[np.int64]
    kinds: npt.NDArray[np.int8]
    others: npt.NDArray[np.int64]
    names: dict[int, str]  # position -> name, for names not derived from the id

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def name(self, i: int) -> str:
        got = self.names.get(i)
        return got if got is not None else canonical(int(self.ids[i]), int(self.kinds[i]), int(self.others[i]))

    def __iter__(self) -> Iterator[LogFile]:
        cur = self.ledger_dir / "current"
        label = str(self.ledger_dir)
        for i in range(len(self)):
            name = self.name(i)
            yield LogFile(label, cur / name, f"current/{name}", int(self.ids[i]), int(self.kinds[i]) != PLAIN)


def _classify(name: str) -> tuple[int, int, int] | str | None:
    """(id, kind, second id) of a log name; a skip reason for a name like a log that cannot be one; None for a
    name that is not a log's."""
    m = LOG_RE.match(name)
    kind = PLAIN
    if m is None:
        m = COMPACTING_RE.match(name)
        kind = COMPACTING
    if m is None:
        m = COMPACTED_RE.match(name)
        kind = COMPACTED
    if m is None:
        return "bad-name" if name.endswith(".log") else None
    values = [int(g, 16) for g in m.groups()]
    if any(v > MAX_LOG_ID for v in values):
        return "bad-id"
    return values[0], kind, values[1] if kind == COMPACTED else 0


def list_logs(ledger_dir: Path, on_bad: Callable[[str, str], None]) -> LogList:
    """The logs under ``<ledger_dir>/current`` to read; every log-like name that will not be read goes to
    ``on_bad(rel, reason)`` (see the module docstring). OSError from listing the directory propagates (the caller
    reports it; names already handed to ``on_bad`` stay reported)."""
    cur = Path(ledger_dir) / "current"
    ids: array[int] = array("q")
    kinds: array[int] = array("b")
    others: array[int] = array("q")
    odd: dict[int, str] = {}
    with os.scandir(cur) as it:
        for ent in it:
            name = ent.name
            got = _classify(name)
            if got is None:
                continue
            rel = f"current/{name}"
            if isinstance(got, str):
                on_bad(rel, got)
                continue
            try:
                st = ent.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as e:
                on_bad(rel, f"stat-error:{errno_name(e)}")
                continue
            kind = file_kind(st.st_mode)
            if kind != "regular":
                on_bad(rel, f"not-regular:{kind}")
                continue
            log_id, k, other = got
            if name != canonical(log_id, k, other):
                odd[len(ids)] = name
            ids.append(log_id)
            kinds.append(k)
            others.append(other)
    id_col = np.frombuffer(ids, dtype=np.int64) if len(ids) else np.zeros(0, dtype=np.int64)
    kind_col = np.frombuffer(kinds, dtype=np.int8) if len(kinds) else np.zeros(0, dtype=np.int8)
    other_col = np.frombuffer(others, dtype=np.int64) if len(others) else np.zeros(0, dtype=np.int64)
    order = np.lexsort((other_col, kind_col, id_col))
    if odd:
        order = _names_in_order(order, id_col, kind_col, other_col, odd)
    keep = np.ones(order.shape[0], dtype=np.bool_)
    if odd:
        _drop_duplicates(order, keep, id_col, kind_col, odd, on_bad)
    order = order[keep]
    names: dict[int, str] = {}
    if odd:
        at = np.full(id_col.shape[0], -1, dtype=np.int64)
        at[order] = np.arange(order.shape[0])
        names = {int(at[p]): name for p, name in odd.items() if at[p] >= 0}
    return LogList(Path(ledger_dir), id_col[order].copy(), kind_col[order].copy(), other_col[order].copy(), names)


def _runs(order: npt.NDArray[np.intp], *cols: npt.NDArray[np.generic]) -> Iterator[tuple[int, int]]:
    """[lo, hi) ranges of ``order`` holding two or more positions with equal ``cols``."""
    if order.shape[0] < 2:
        return
    same = np.ones(order.shape[0] - 1, dtype=np.bool_)
    for c in cols:
        v = c[order]
        same &= v[1:] == v[:-1]
    starts = np.flatnonzero(same & ~np.concatenate(([False], same[:-1])))
    for s in starts:
        e = int(s) + 1
        while e < same.shape[0] and same[e]:
            e += 1
        yield int(s), e + 1


def _names_in_order(
    order: npt.NDArray[np.intp],
    ids: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.int8],
    others: npt.NDArray[np.int64],
    odd: dict[int, str],
) -> npt.NDArray[np.intp]:
    """Within runs of equal (id, kind, second id), which only names not derived from the id make, order by name."""
    order = order.copy()
    for lo, hi in _runs(order, ids, kinds, others):
        run = order[lo:hi].tolist()
        run.sort(key=lambda p: odd.get(p) or canonical(int(ids[p]), int(kinds[p]), int(others[p])))
        order[lo:hi] = run
    return order


def _drop_duplicates(
    order: npt.NDArray[np.intp],
    keep: npt.NDArray[np.bool_],
    ids: npt.NDArray[np.int64],
    kinds: npt.NDArray[np.int8],
    odd: dict[int, str],
    on_bad: Callable[[str, str], None],
) -> None:
    """One plain log per id: the canonical name, else the first by name; the others are ``duplicate-id``."""
    for lo, hi in _runs(order, ids, kinds):
        first = int(order[lo])
        if int(kinds[first]) != PLAIN:
            continue
        run = [int(p) for p in order[lo:hi]]
        chosen = next((p for p in run if p not in odd), run[0])  # a name derived from the id is the canonical one
        for i, p in zip(range(lo, hi), run, strict=True):
            if p != chosen:
                keep[i] = False
                on_bad(f"current/{odd[p]}", "duplicate-id")
