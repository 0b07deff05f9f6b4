from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.compression import CODECS, header_codec, unwrap, wrap
from pulsar_ops.formats.managed_ledger import (
    LedgerInfo,
    ManagedLedgerInfo,
    decode_managed_ledger_info,
    encode_managed_ledger_info,
    to_message,
)
from pulsar_ops.formats.ml_rewrite import rewrite_without_ledgers

from .strategies import ml_infos
from .wire import ld, vint

PATH = "/managed-ledgers/t/ns/persistent/x"
NEWER_FIELD = vint(90, 7) + ld(91, b"a newer broker's")  # field numbers ManagedLedgerInfo does not define


@st.composite
def rewrites(draw: st.DrawFn) -> tuple[ManagedLedgerInfo, str, bool, set[int]]:
    info = draw(ml_infos.filter(lambda i: len(set(i.ledger_ids)) == len(i.ledgers) and len(i.ledgers) > 0))
    remove = set(draw(st.lists(st.sampled_from(info.ledger_ids), min_size=1, unique=True)))
    return info, draw(st.sampled_from(CODECS)), draw(st.booleans()), remove


@given(rewrites())
def test_rewrite_removes_exactly_those_ledgers_and_keeps_the_rest_of_the_value(
    case: tuple[ManagedLedgerInfo, str, bool, set[int]],
) -> None:
    info, codec, header, remove = case
    plain = to_message(info).SerializeToString() + NEWER_FIELD
    data = wrap(plain, codec, always_header=header)
    if set(info.ledger_ids) == remove and not info.properties and info.terminated_position is None:
        with pytest.raises(DecodeError, match="would not read back"):  # only unknown fields would remain
            rewrite_without_ledgers(data, remove, PATH)
        return
    out = rewrite_without_ledgers(data, remove, PATH)
    got = decode_managed_ledger_info(out.data, PATH)
    assert got.info.ledgers == tuple(li for li in info.ledgers if li.ledger_id not in remove)
    assert got.info.properties == info.properties and got.info.terminated_position == info.terminated_position
    assert [r.ledger_id for r in out.removed] == [i for i in info.ledger_ids if i in remove]
    assert out.compression == got.compression == codec
    assert (header_codec(out.data) is not None) == (header or codec != "NONE")  # a header stays, none appears
    assert unwrap(out.data, PATH)[0].endswith(NEWER_FIELD)  # unknown fields kept byte for byte


def test_rewrite_refuses_what_it_cannot_rewrite_exactly() -> None:
    info = ManagedLedgerInfo((LedgerInfo(1, 5, 50, 10), LedgerInfo(2, None, None, None)))
    binary = encode_managed_ledger_info(info)
    with pytest.raises(DecodeError, match="not in the managed-ledger info's list"):
        rewrite_without_ledgers(binary, {3}, PATH)  # the value is not the one the plan saw
    with pytest.raises(DecodeError, match="binary"):
        rewrite_without_ledgers(encode_managed_ledger_info(info, text=True), {1}, PATH)  # legacy text
    with pytest.raises(DecodeError, match="empty"):
        rewrite_without_ledgers(b"", {1}, PATH)
    with pytest.raises(ValueError):
        rewrite_without_ledgers(binary, set(), PATH)
    assert rewrite_without_ledgers(binary, {1}, PATH).kept == (2,)
