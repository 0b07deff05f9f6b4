"""BookKeeper ledger id <-> znode path (ZooKeeper ledger managers).

The default ``HierarchicalLedgerManager`` is a hybrid:

* id < 2147483647 (``Integer.MAX_VALUE``): legacy 2-4-4 layout, ``%010d`` split 2/4/4, last part prefixed
  ``L``: 123456789 -> ``/ledgers/01/2345/L6789``;
* id >= 2147483647: long 3-4-4-4-4 layout, ``%019d`` split 3/4/4/4/4: 2147483648 ->
  ``/ledgers/000/0000/0021/4748/L3648``.

Very old clusters use the flat manager: ``/ledgers/L%010d``.
"""

from __future__ import annotations

import re
from typing import Literal

from pulsar_ops.errors import DecodeError

INT32_MAX = 2147483647
INT64_MAX = 9223372036854775807

SPECIAL_CHILDREN: frozenset[str] = frozenset(
    {"available", "cookies", "LAYOUT", "INSTANCEID", "underreplication", "idgen", "idgen-long"}
)

_D2 = re.compile(r"[0-9]{2}")
_D3 = re.compile(r"[0-9]{3}")
_D4 = re.compile(r"[0-9]{4}")
_LEAF4 = re.compile(r"L([0-9]{4})")
_FLAT = re.compile(r"L([0-9]{10,19})")

ChildKind = Literal["legacy", "long", "flat-leaf", "special", "unknown"]


def is_special(name: str) -> bool:
    """True for the non-ledger children of the ledgers root (``available``, ``cookies``, ``ID-*`` ...)."""
    return name in SPECIAL_CHILDREN or name.startswith("ID-")


def classify_child(name: str) -> ChildKind:
    """Classify a top-level child of the ledgers root."""
    if _D2.fullmatch(name):
        return "legacy"
    if _D3.fullmatch(name):
        return "long"
    if is_special(name):
        return "special"
    if _FLAT.fullmatch(name):
        return "flat-leaf"
    return "unknown"


def _check_id(ledger_id: int) -> None:
    if not isinstance(ledger_id, int) or isinstance(ledger_id, bool) or not 0 <= ledger_id <= INT64_MAX:
        raise ValueError(f"ledger id must be an int in [0, 2^63-1], got {ledger_id!r}")


def ledger_path(ledger_id: int, root: str = "/ledgers", *, flat: bool = False) -> str:
    """The znode path of a ledger's metadata."""
    _check_id(ledger_id)
    base = root.rstrip("/")
    if flat:
        return f"{base}/L{ledger_id:010d}"
    if ledger_id < INT32_MAX:
        s = f"{ledger_id:010d}"
        return f"{base}/{s[0:2]}/{s[2:6]}/L{s[6:10]}"
    s = f"{ledger_id:019d}"
    return f"{base}/{s[0:3]}/{s[3:7]}/{s[7:11]}/{s[11:15]}/L{s[15:19]}"


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
