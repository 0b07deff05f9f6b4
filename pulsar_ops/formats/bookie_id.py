"""What a BookieId may be, as BookKeeper decides it (``net/BookieId.java`` ``validateBookieId``): letters, digits
and the characters of ``:-_.`` (where ``:-_`` is read by Java's regex as the range ':'..'_'), and not ``readonly``
(the name of the read-only bookies' znode under ``/ledgers/available``). One rule for the ledger metadata decoder and
scan-bookie's ``--bookie-id`` and bookkeeper.conf checks."""

from __future__ import annotations

import re

_BOOKIE_ID = re.compile(r"[a-zA-Z0-9:-_.\-]+")


def valid_bookie_id(text: str) -> bool:
    """Whether ``text`` is a BookieId ``BookieId.validateBookieId`` accepts."""
    return _BOOKIE_ID.fullmatch(text) is not None and text.lower() != "readonly"
