"""Inputs the models share: the facts about one ledger that the snapshot's ``bk_ledgers`` table gives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LedgerFacts:
    """One ledger as the planner sees it (``bk_ledgers`` row).

    ``closed_ms`` (the managed ledger's close ``timestamp_ms``) and ``entries`` (``last_entry_id + 1``) are
    optional refinements for the layout estimator: without ``closed_ms`` a CLOSED ledger is assumed to have been
    written for ``ledger_span_ms`` after its ctime; without ``entries`` the per-entry on-disk overhead is left out,
    and so is the placement per ensemble (``segments``).
    """

    ledger_id: int
    length: int
    bookies: tuple[str, ...]
    ensemble_size: int
    write_quorum: int
    ctime_ms: int
    state: str
    closed_ms: int | None = None
    entries: int | None = None
    # The ensembles (LedgerMetadata segments): (first entry id, bookies) in entry order. With more than one and
    # ``entries`` known, the layout estimator places each segment's entries on that segment's ensemble
    # (BookKeeper writes entry e to the ensemble of the last segment starting at or before e).
    segments: tuple[tuple[int, tuple[str, ...]], ...] | None = None

    @property
    def is_open(self) -> bool:
        return self.state.upper() != "CLOSED"
