"""Rewrite a managed-ledger info without some of its ledgers, in the encoding it was read in. Pure.

What the repair actions ``drop-missing-ledger`` and ``trim-unloaded`` write. The broker itself removes ledgers
from the list the same way (``ManagedLedgerImpl.internalTrimLedgers`` for a trim; Pulsar's
``pulsar-managed-ledger-admin delete-ml-ledger-ids`` for a ledger that no longer exists): the rest of the
value is left as it was. Here that means, beyond what the broker does:

* fields this reader does not know (a newer broker's) are kept byte for byte (protobuf keeps unknown fields);
* the compression header is kept when the value had one, with the same codec (a broker configured for LZ4 keeps
  writing LZ4); a value without one stays plain.

Only a binary value is rewritten. An empty value or the legacy text format is refused (a current broker does
not read the text format: rewriting it would change more than the list), and so is a list that does not hold
every ledger asked for (the value is not the one the plan was made from), and so is a result this project's
own reader would not read back as exactly the kept list (e.g. every ledger removed from a value that also holds
fields it does not know: a value with no known field reads as undecodable).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats import proto
from pulsar_ops.formats._pb import parse_binary
from pulsar_ops.formats.compression import MAGIC, header_codec, unwrap, wrap
from pulsar_ops.formats.managed_ledger import LedgerInfo, decode_managed_ledger_info, ledger_info


@dataclass(frozen=True)
class Rewritten:
    data: bytes  # the new value
    removed: tuple[LedgerInfo, ...]  # the list entries removed, in list order
    kept: tuple[int, ...]  # ledger ids still listed, in order
    compression: str  # codec of both values ("NONE" for a plain value or a NONE header)


def rewrite_without_ledgers(data: bytes, remove: Collection[int], path: str) -> Rewritten:
    """``data`` with the list entries of ``remove`` taken out; DecodeError naming ``path`` when it cannot be."""
    wanted = set(remove)
    if not wanted:
        raise ValueError("rewrite_without_ledgers: no ledger to remove")
    if not data:
        raise DecodeError(path, "an empty managed-ledger info lists no ledger; nothing to remove")
    had_header = data[:2] == MAGIC and header_codec(data) is not None
    plain, codec = unwrap(bytes(data), path)
    msg = parse_binary(proto.ManagedLedgerInfo, plain, path, "ManagedLedgerInfo (binary, for a rewrite)")
    listed = [li.ledgerId for li in msg.ledgerInfo]
    absent = sorted(wanted - set(listed))
    if absent:
        raise DecodeError(path, f"ledger(s) {absent[:5]} are not in the managed-ledger info's list any more")
    removed = tuple(ledger_info(li) for li in msg.ledgerInfo if li.ledgerId in wanted)
    keep = [li for li in msg.ledgerInfo if li.ledgerId not in wanted]
    del msg.ledgerInfo[:]
    msg.ledgerInfo.extend(keep)
    payload = msg.SerializeToString()
    new = wrap(payload, codec, always_header=had_header)
    try:  # what is written must read back as exactly the kept list
        back = decode_managed_ledger_info(new, path).info.ledger_ids
    except DecodeError as e:
        raise DecodeError(path, f"the rewritten value would not read back ({e.reason}); not rewritten") from None
    if back != tuple(li.ledgerId for li in keep):
        raise DecodeError(path, "the rewritten value reads back another list; not rewritten")
    return Rewritten(
        data=new,
        removed=removed,
        kept=tuple(li.ledgerId for li in keep),
        compression=codec,
    )
