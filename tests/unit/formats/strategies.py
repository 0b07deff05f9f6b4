"""Hypothesis strategies for the formats dataclasses."""

from __future__ import annotations

from hypothesis import strategies as st

from pulsar_ops.formats.cursor import ManagedCursorInfo, MessageRange, PositionInfo
from pulsar_ops.formats.ledger_metadata import LedgerMetadata, LedgerState
from pulsar_ops.formats.managed_ledger import LedgerInfo, ManagedLedgerInfo, OffloadInfo
from pulsar_ops.formats.schema_locator import SchemaIndexEntry, SchemaLocator

i64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
i32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
ids = st.integers(min_value=-1, max_value=2**63 - 1)
text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20)
positions = st.tuples(ids, i64)
kv = st.tuples(text, text)

offloads = st.builds(OffloadInfo, st.booleans(), st.booleans(), st.none() | i64)
ledger_infos = st.builds(
    LedgerInfo,
    ids,
    st.none() | i64,
    st.none() | i64,
    st.none() | i64,
    st.none() | offloads,
    st.lists(kv, max_size=3).map(tuple),
)
ml_infos = st.builds(
    ManagedLedgerInfo,
    st.lists(ledger_infos, max_size=6).map(tuple),
    st.none() | positions,
    st.lists(kv, max_size=3).map(tuple),
)
ranges = st.builds(MessageRange, positions, positions)
batched = st.tuples(positions, st.lists(i64, max_size=4).map(tuple))
cursor_infos = st.builds(
    ManagedCursorInfo,
    ids,
    st.none() | positions,
    st.lists(ranges, max_size=5).map(tuple),
    st.lists(st.tuples(text, i64), max_size=3).map(tuple),
    st.none() | i64,
    st.lists(batched, max_size=3).map(tuple),
    st.lists(kv, max_size=3).map(tuple),
)
position_infos = st.builds(
    PositionInfo,
    ids,
    i64,
    st.lists(ranges, max_size=5).map(tuple),
    st.lists(st.tuples(text, i64), max_size=3).map(tuple),
    st.lists(batched, max_size=3).map(tuple),
    st.lists(st.tuples(ids, st.lists(i64, max_size=4).map(tuple)), max_size=3).map(tuple),
)
bookie = st.builds(
    "{}:{}".format, st.text(alphabet="abcdefghij0123456789.-", min_size=1, max_size=12), st.integers(1, 65535)
)


@st.composite
def ledger_metadatas(draw: st.DrawFn, version: int = 3) -> LedgerMetadata:
    """Metadata BookKeeper's builder accepts: ``ensembleSize`` members per ensemble, increasing first entry ids,
    ``ensembleSize >= writeQuorum >= ackQuorum`` (``formats.ledger_metadata.check_built``)."""
    state: LedgerState = draw(st.sampled_from(["OPEN", "IN_RECOVERY", "CLOSED"]))
    ensemble_size = draw(st.integers(1, 5))
    write_quorum = draw(st.integers(1, ensemble_size))
    ack_quorum = draw(st.integers(1, write_quorum))
    firsts = sorted(draw(st.sets(st.integers(0, 2**62), min_size=1, max_size=3)))
    members = st.lists(bookie, min_size=ensemble_size, max_size=ensemble_size).map(tuple)
    ensembles = tuple((first, draw(members)) for first in firsts)
    digest = draw(st.none() | st.sampled_from(["CRC32", "HMAC", "CRC32C", "DUMMY"]))
    return LedgerMetadata(
        ledger_id=None,
        format_version=version,
        ensemble_size=ensemble_size,
        write_quorum=write_quorum,
        ack_quorum=ack_quorum,
        state=state,
        length=draw(st.integers(0, 2**62)),
        last_entry_id=draw(st.integers(-1, 2**62)),
        ensembles=ensembles,
        digest_type=digest,
        password=draw(st.binary(max_size=8)) if digest is not None else b"",
        ctime_ms=draw(st.none() | i64),
        custom_metadata=tuple(draw(st.lists(st.tuples(text, st.binary(max_size=16)), max_size=4))),
        ctoken=draw(st.none() | i64),
    )


index_entries = st.builds(SchemaIndexEntry, i64, ids, i64, st.binary(max_size=32))
schema_locators = st.builds(SchemaLocator, index_entries, st.lists(index_entries, max_size=5).map(tuple))
