"""The walk sink: turns znode reads and read errors into snapshot rows, scope completeness and zxid ranges.

Pure bookkeeping over ``extract`` and the streaming ``SnapshotWriter``; no kazoo, so it is unit-testable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pulsar_ops.scrape import native_batch, packed
from pulsar_ops.scrape.classify import CLUSTERS, classify
from pulsar_ops.scrape.extract import ExtractConfig, Row
from pulsar_ops.scrape.extract_fast import extract_columns
from pulsar_ops.scrape.multiread import Stat
from pulsar_ops.snapshot import schema
from pulsar_ops.snapshot.writer import SnapshotWriter

_BOOKIE_COLUMNS = schema.table("bookies").column_names
NATIVE_MIN_BATCH = 64  # below this, the per-znode path (building the arrays costs more than it saves)
# the reads the other batches leave (directories, partitioned topics, bundles: ~10 us each on the per-znode path)
MISC_MIN_BATCH = 16


@dataclass
class ScopeState:
    znodes: int = 0
    error_code: str | None = None
    error: str | None = None

    @property
    def complete(self) -> bool:
        return self.error_code is None


@dataclass
class ScrapeCounters:
    znodes: int = 0
    errors: int = 0


@dataclass
class SnapshotSink:
    """Receives reads of one or more stores (set ``store`` before each walk)."""

    writer: SnapshotWriter
    cfg: ExtractConfig
    store: str = "local"
    scopes: dict[tuple[str, str], ScopeState] = field(default_factory=dict)
    zxid: dict[str, list[int]] = field(default_factory=dict)
    bookies: dict[str, Row] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)
    counters: ScrapeCounters = field(default_factory=ScrapeCounters)
    on_error: Callable[[str, str, str, str], None] | None = None

    def ensure_scope(self, store: str, scope: str) -> ScopeState:
        key = (store, scope)
        st = self.scopes.get(key)
        if st is None:
            st = self.scopes[key] = ScopeState()
        return st

    def node(self, path: str, data: bytes, stat: Stat) -> None:
        store = self.store
        zrow, info, rows, error = extract_columns(store, path, data, stat, self.cfg)
        if info.kind == "bk-internal" and rows:
            for _table, row in rows:
                self.bookies.setdefault(row[0], dict(zip(_BOOKIE_COLUMNS, row, strict=True)))
            rows = []
        self.writer.add_znode(zrow, rows)
        scope = self.scopes.get((store, info.scope))
        if scope is None:
            scope = self.ensure_scope(store, info.scope)
        scope.znodes += 1
        self.counters.znodes += 1
        if info.kind == "cluster" and info.root == CLUSTERS:
            self.clusters.append(info.segments[0])
        rng = self.zxid.get(store)
        mz = stat[1]
        if rng is None:
            self.zxid[store] = [mz, mz]
        elif mz < rng[0]:
            rng[0] = mz
        elif mz > rng[1]:
            rng[1] = mz
        if error is not None:
            # Read, but its value does not decode: the znode exists with unknown content. Its scope stays
            # complete (the listing is whole); the audit blocks only what depends on this znode.
            self._record_error(path, info.scope, error.code, error.reason, listing=False)

    def nodes(self, reads: list[tuple[str, bytes, Stat]] | bytes) -> None:
        """``node`` for each read, the hierarchical ledger znodes, then the topic and cursor znodes, then the schema
        locators, then the directories, partitioned topics and bundles, in native batches when they are built (the
        same rows, in another order within the tables).
        ``reads``: a list of (path, data, stat), or a packed chunk (``scrape.packed``'s layout, what a
        decode worker receives): the batches read it in place and only the reads they leave become tuples."""
        cfg = self.cfg
        count = packed.count(reads) if isinstance(reads, bytes) else len(reads)
        if count < NATIVE_MIN_BATCH or not native_batch.usable(cfg.ledgers_root):
            node = self.node
            for path, data, stat in packed.unpack(reads)[1] if isinstance(reads, bytes) else reads:
                node(path, data, stat)
            return
        store = self.store
        n, rest, zarrays, barrays, lo, hi = native_batch.bk_batch(store, reads, cfg.ledgers_root, cfg.max_znode_bytes)
        if n:
            self.writer.add_arrays("znodes", zarrays)
            self.writer.add_arrays("bk_ledgers", barrays)
            self._batched(n, lo, hi, {cfg.ledgers_root: n})
        if len(rest) >= NATIVE_MIN_BATCH:
            n, rest, arrays, lo, hi, scopes = native_batch.ml_batch(store, reads, cfg.max_znode_bytes, rest)
            for table, cols in arrays.items():
                self.writer.add_arrays(table, cols)
            self._batched(n, lo, hi, scopes)
        if len(rest) >= NATIVE_MIN_BATCH:
            n, rest, zarrays, sarrays, lo, hi, scopes = native_batch.schema_batch(
                store, reads, cfg.ledgers_root, cfg.max_znode_bytes, rest
            )
            if n:
                self.writer.add_arrays("znodes", zarrays)
                if sarrays:
                    self.writer.add_arrays("schema_index", sarrays)
                self._batched(n, lo, hi, scopes)
        if len(rest) >= MISC_MIN_BATCH:
            n, rest, arrays, lo, hi, scopes = native_batch.misc_batch(
                store, reads, cfg.ledgers_root, cfg.max_znode_bytes, rest
            )
            if n:
                for table, cols in arrays.items():
                    self.writer.add_arrays(table, cols)
                self._batched(n, lo, hi, scopes)
        if not rest:
            return
        node = self.node
        left = packed.unpack(reads, rest)[1] if isinstance(reads, bytes) else [reads[i] for i in rest]
        for path, data, stat in left:
            node(path, data, stat)

    def _batched(self, n: int, lo: int | None, hi: int | None, scopes: dict[str, int]) -> None:
        """Count what a native batch took: ``n`` znodes, per scope, and their mzxid range ``lo``..``hi``."""
        store = self.store
        for scope, count in scopes.items():
            self.ensure_scope(store, scope).znodes += count
        if not n:
            return
        self.counters.znodes += n
        assert lo is not None and hi is not None
        rng = self.zxid.get(store)
        self.zxid[store] = [lo, hi] if rng is None else [min(rng[0], lo), max(rng[1], hi)]

    def error(self, path: str, code: str, reason: str) -> None:
        """A znode that could not be read (NoAuth, connection lost for good, ...): its subtree is unknown."""
        scope = classify(path, self.cfg.ledgers_root).scope
        self._record_error(path, scope, code, reason)

    def _record_error(self, path: str, scope: str, code: str, reason: str, *, listing: bool = True) -> None:
        st = self.ensure_scope(self.store, scope)
        if listing and st.error_code is None:
            st.error_code, st.error = code, f"{path}: {reason}"
        self.counters.errors += 1
        self.writer.add(
            "scrape_errors", {"store": self.store, "path": path, "scope": scope, "code": code, "reason": reason}
        )
        if self.on_error is not None:
            self.on_error(self.store, path, code, reason)

    def scope_znodes(self, store: str, scope: str) -> int:
        st = self.scopes.get((store, scope))
        return st.znodes if st is not None else 0

    def mark_incomplete(self, store: str, scope: str, code: str, reason: str) -> None:
        """Mark a scope incomplete without a znode to blame (e.g. a root that should exist but does not)."""
        prev, self.store = self.store, store
        try:
            self._record_error(scope, scope, code, reason)
        finally:
            self.store = prev

    def scope_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "store": store,
                "scope": scope,
                "complete": st.complete,
                "znodes": st.znodes,
                "error_code": st.error_code,
                "error": st.error,
            }
            for (store, scope), st in sorted(self.scopes.items())
        ]
