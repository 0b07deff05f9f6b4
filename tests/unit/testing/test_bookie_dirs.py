"""The seeder's bookie directories place entries as BookKeeper stripes them (RoundRobinDistributionSchedule)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_ops.formats.ledger_metadata import LedgerMetadata
from pulsar_ops.testing.bookie_dirs import placements

POOL = tuple(f"b{i}:3181" for i in range(8))


def ledger(
    e: int, q: int, segments: list[tuple[int, tuple[str, ...]]], last: int, state: str = "CLOSED"
) -> LedgerMetadata:
    return LedgerMetadata(
        ledger_id=7, format_version=3, ensemble_size=e, write_quorum=q, ack_quorum=q, state=state,  # type: ignore[arg-type]
        length=0, last_entry_id=last, ensembles=tuple(segments), digest_type="CRC32C", password=b"",
        ctime_ms=None, custom_metadata=(), ctoken=None,
    )  # fmt: skip


def test_short_segment_leaves_positions_empty() -> None:
    md = ledger(3, 2, [(0, ("a", "b", "c"))], 0)  # one entry: positions 0 and 1
    assert set(placements(md)) == {"a", "b"}


def test_segment_boundaries_and_open_ledgers() -> None:
    md = ledger(2, 1, [(0, ("a", "c")), (10, ("a", "b"))], 10)  # entry 10 on position 0 of the second segment
    assert "b" not in placements(md)
    assert placements(ledger(2, 1, [(0, ("a", "c")), (10, ("a", "b"))], 11))["b"] == [(7, 11, 100)]
    # an open ledger: its first entries, on its last segment's ensemble
    assert set(placements(ledger(3, 2, [(0, ("a", "b", "c"))], -1, state="OPEN"))) == {"a", "b", "c"}


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_every_bookie_that_stores_an_entry_gets_one(data: st.DataObject) -> None:
    """Capping each segment at its first E entries still puts an entry on every bookie the full striping uses."""
    e = data.draw(st.integers(1, 5))
    q = data.draw(st.integers(1, e))
    firsts = sorted(set(data.draw(st.lists(st.integers(1, 40), max_size=3))))
    last = data.draw(st.integers(0, 60))
    segs = [(f, tuple(data.draw(st.permutations(POOL))[:e])) for f in [0, *firsts]]
    full: set[str] = set()
    for n, (first, members) in enumerate(segs):
        end = segs[n + 1][0] - 1 if n + 1 < len(segs) else last
        for i in range(first, end + 1):
            full |= {members[(i + k) % e] for k in range(q)}
    assert set(placements(ledger(e, q, segs, last))) == full
