"""BookKeeper ledger id <-> znode path (ZooKeeper ledger managers).

The default ``HierarchicalLedgerManager`` is a hybrid:

* id < 2147483647 (``Integer.MAX_VALUE``): legacy 2-4-4 layout, ``%010d`` split 2/4/4, last part prefixed
  ``L``: 123456789 -> ``/ledgers/01/2345/L6789``;
* id >= 2147483647: long 3-4-4-4-4 layout, ``%019d`` split 3/4/4/4/4: 2147483648 ->
  ``/ledgers/000/0000/0021/4748/L3648``.

A cluster configured with ``LongHierarchicalLedgerManagerFactory`` (``LAYOUT`` names it) puts every ledger in the
long layout, small ids too: 5 -> ``/ledgers/000/0000/0000/0000/L0005`` (bookkeeper-server
``LongHierarchicalLedgerManager.getLedgerPath``: ``StringUtils.getLongHierarchicalLedgerPath``, where
``HierarchicalLedgerManager`` calls ``getHybridHierarchicalLedgerPath``). Very old clusters use the flat manager:
``/ledgers/L%010d``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pulsar_ops.errors import DecodeError

INT32_MAX = 2147483647
INT64_MAX = 9223372036854775807

SPECIAL_CHILDREN: frozenset[str] = frozenset(
    {"available", "cookies", "LAYOUT", "INSTANCEID", "underreplication", "idgen", "idgen-long"}
)

_D4 = re.compile(r"[0-9]{4}")
_LEAF4 = re.compile(r"L([0-9]{4})")

ChildKind = Literal["legacy", "long", "flat-leaf", "special", "unknown"]


def is_special(name: str) -> bool:
    """True for the non-ledger children of the ledgers root (``available``, ``cookies``, ``ID-*`` ...)."""
    return name in SPECIAL_CHILDREN or name.startswith("ID-")


def classify_child(name: str) -> ChildKind:
    """Classify a top-level child of the ledgers root (``_D2`` / ``_D3`` / ``_FLAT`` spelled as string tests:
    this runs once per scraped ledger znode)."""
    n = len(name)
    if (n == 2 or n == 3) and name.isascii() and name.isdigit():
        return "legacy" if n == 2 else "long"
    if is_special(name):
        return "special"
    if 11 <= n <= 20 and name[0] == "L":
        digits = name[1:]
        if digits.isascii() and digits.isdigit():
            return "flat-leaf"
    return "unknown"


def _check_id(ledger_id: int) -> None:
    if not isinstance(ledger_id, int) or isinstance(ledger_id, bool) or not 0 <= ledger_id <= INT64_MAX:
        raise ValueError(f"ledger id must be an int in [0, 2^63-1], got {ledger_id!r}")


def ledger_path(ledger_id: int, root: str = "/ledgers", *, flat: bool = False, long: bool = False) -> str:
    """The znode path of a ledger's metadata: hierarchical (the default manager), ``flat``, or ``long``
    (``LongHierarchicalLedgerManager``: the 3-4-4-4-4 layout for every id)."""
    _check_id(ledger_id)
    base = root.rstrip("/")
    if flat:
        return f"{base}/L{ledger_id:010d}"
    if ledger_id < INT32_MAX and not long:
        s = f"{ledger_id:010d}"
        return f"{base}/{s[0:2]}/{s[2:6]}/L{s[6:10]}"
    s = f"{ledger_id:019d}"
    return f"{base}/{s[0:3]}/{s[3:7]}/{s[7:11]}/{s[11:15]}/L{s[15:19]}"


def ledger_paths(ledger_id: int, root: str = "/ledgers") -> list[str]:
    """Every path a ledger's metadata may have, each once: the hierarchical one, the long hierarchical one (a
    cluster on ``LongHierarchicalLedgerManagerFactory``: the same for ids >= 2^31 - 1), then the flat one. A
    ledger absent from all of them is absent whichever manager the cluster runs."""
    return list(
        dict.fromkeys(
            (
                ledger_path(ledger_id, root),
                ledger_path(ledger_id, root, long=True),
                ledger_path(ledger_id, root, flat=True),
            )
        )
    )


def ledger_id_from_path(path: str, root: str = "/ledgers") -> int | None:
    """The ledger id of a ledger znode path, or None for any other node under (or outside) the root.

    Intermediate directories and special nodes give None. A node at leaf depth of the legacy (2-4-4) or long
    (3-4-4-4-4) tree whose name is not ``L<4 digits>``, or any node below leaf depth, raises DecodeError.
    """
    prefix = root.rstrip("/") + "/"
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split("/")
    top = parts[0]
    kind = classify_child(top)
    if kind == "flat-leaf":
        if len(parts) != 1:
            raise DecodeError(path, "unexpected child below a flat ledger node")
        flat_id = int(top[1:])
        if flat_id > INT64_MAX:
            raise DecodeError(path, "ledger id out of the signed 64-bit range")
        return flat_id
    if kind == "legacy":
        depth = 3
    elif kind == "long":
        depth = 5
    else:
        return None
    if len(parts) < depth:
        for mid in parts[1:]:
            if not _D4.fullmatch(mid):
                raise DecodeError(path, f"malformed ledger directory {mid!r} (expected 4 digits)")
        return None
    if len(parts) > depth:
        raise DecodeError(path, "unexpected node below ledger leaf depth")
    for mid in parts[1:-1]:
        if not _D4.fullmatch(mid):
            raise DecodeError(path, f"malformed ledger directory {mid!r} (expected 4 digits)")
    leaf = _LEAF4.fullmatch(parts[-1])
    if leaf is None:
        raise DecodeError(path, f"malformed ledger leaf {parts[-1]!r} (expected L + 4 digits)")
    value = int("".join(parts[:-1]) + leaf.group(1))
    if value > INT64_MAX:
        raise DecodeError(path, "ledger id out of the signed 64-bit range")
    return value


def _ascii_digits(s: str) -> bool:
    return s.isascii() and s.isdigit()


def ledger_id_from_parts(parts: Sequence[str], path: str, root: str = "/ledgers") -> int | None:
    """``ledger_id_from_path`` for a path already split below ``root`` (``parts``): the same result and errors.

    The well-formed legacy (2-4-L4) and long (3-4-4-4-L4) leaves are read straight from the parts (the scrape's
    hot path); everything else goes through ``ledger_id_from_path``.
    """
    n = len(parts)
    if n == 3:
        a, b, leaf = parts
        if len(a) == 2 and len(b) == 4 and len(leaf) == 5 and leaf[0] == "L":
            digits = a + b + leaf[1:]
            if _ascii_digits(digits):
                return int(digits)
    elif n == 5:
        a, b, c, d, leaf = parts
        if len(a) == 3 and len(b) == 4 and len(c) == 4 and len(d) == 4 and len(leaf) == 5 and leaf[0] == "L":
            digits = a + b + c + d + leaf[1:]
            if _ascii_digits(digits):
                value = int(digits)
                if value <= INT64_MAX:
                    return value
    return ledger_id_from_path(path, root)
